"""Translate a :class:`~parapush.scene.Scene` into MuJoCo's MJCF XML.

The model (world frame = table frame, z up, table top at z = 0):

- **Table**: an infinite plane at z = 0. Objects do not physically fall off it; "off the
  table" is decided from the planar state by
  :func:`parapush.physics.table_support.objects_off_table` (the object's centre beyond an
  edge, i.e. where a real object would tip over). The planar state has no height, so a
  physically falling object could not be represented anyway.
- **Objects**: one body each, with joints slide x, slide y, slide z, hinge z in this
  order (so the slides move along table axes and the hinge is the yaw). The slide z joint
  exists only so that the table contact carries the object's weight: with pure planar
  joints the contact normal has no degree of freedom to act on and the Coulomb friction
  would not scale with the weight. Object (x, y, yaw) and their rates are the joints'
  qpos/qvel directly (bodies sit at the origin, qpos0 = 0). With
  ``FineSettings.object_tilt`` two more hinges follow the yaw, roll about the body's x and
  pitch about its y (small: the contacts' compliance), so the weight is shared among the
  table contacts as on a rigid body resting on them; the planar state leaves them out (a
  state sets them to 0).
  Cylinders rest on the plane with MuJoCo's cylinder/plane collider (3 rim contacts),
  boxes with the box/plane collider (4 corners). An object with patches
  (``ObjectSpec.patches``: regions with their own mass and support friction) is the same
  body with one more box geom per patch, resting on the table with its own mass and its own
  table pair (4 more corner contacts); the body's inertia is then MuJoCo's sum of the geoms'.
- **Ellipses and polygons** are prisms of the object's height: one ``<asset><mesh>`` per
  convex part of the outline (:meth:`parapush.scene.outline.Outline.convex_parts`; an
  ellipse is its inscribed 48-gon, flat edges facing its axes), each used by one support
  geom and one lateral collider geom (``object<i>_support``, ``object<i>_support_part<k>``,
  ...: :func:`object_geom_names`), every part with its own table pair. The inertial is
  explicit, at the outline's centroid (a polygon's body origin need not be it): yaw
  ``mass * polar_moment`` (a plate of that outline; the exact ellipse), roll and pitch those
  of a plate of the object's height, products of inertia from the outline's second moments.
  With patches the support parts carry ``base_mass`` split by area and MuJoCo sums the
  meshes'. Obstacles of these shapes are the same prisms, ``OBSTACLE_HEIGHT`` tall.
- **What MuJoCo's mesh colliders do** (MuJoCo 4.0.0, measured with a regular hexagon of
  circumradius 60.5 mm, 13 mm high, and a 5 mm pusher penetrating 1 mm):
  *mesh/plane* (the table support): at most 4 contacts per mesh, at bottom vertices (the
  deepest found and up to 3 more), not placed symmetrically: the hexagon resting flat gets 4
  of its 6 corners (at 0, 60, 120 and 240 deg for a vertex on +x), whose mean is 15 mm off
  the centroid; the ellipse's 48-gon 4 vertices point-symmetric about its centre. Without
  ``object_tilt`` the solver shares the weight about equally among them, so the centre of
  friction is off the centroid: that hexagon pushed through its centroid at the middle of an
  edge turns 0.058 rad over 97 mm (0.047 with ``object_tilt``), where a box, or the same
  square as a polygon, does not turn (< 1e-5 rad). A non-convex polygon gets up to 4
  contacts per convex part (the MIT 'butter' outline: 23 parts, about 6.8x a box's step
  cost). *mesh/cylinder and mesh/capsule* (the pusher; MuJoCo's native convex collider): at
  an edge, exact: the edge's outward normal and depth, 2 contacts (at the bottom and the top
  of the face). At a vertex (the pusher in the vertex's normal cone, +-30 deg for the
  hexagon) the normal snaps to one adjacent face's normal for the whole cone, not the true
  normal from the vertex to the pusher's axis (up to 60 deg off for the hexagon, 7.5 deg for
  the 48-gon), with the true depth's projection on it (capsule: 0.87 mm for 1 mm) or less
  (cylinder: 0.60-0.99 mm); so a push at a vertex gets a lateral force component. With
  MuJoCo's ``nativeccd`` flag disabled (libccd) the normal comes closer (16 deg for a
  pusher at 20 deg) with 3 contacts; the ``multiccd`` flag changes nothing. Mesh/mesh
  (object/object and object/obstacle) uses the same convex collider.
- **Lateral colliders**: contacts between pusher, objects and obstacles use a *separate*
  geom per body, either the cylinder itself or a vertical capsule of the same radius
  whose axis segment spans the object's height (``FineSettings.object_collider`` /
  ``pusher_collider``). Two vertical segments with overlapping height ranges have their
  closest points at equal height, so capsule contacts have exactly the planar geometry
  of the cylinders (normal horizontal, distance = centre distance - radii) and use
  MuJoCo's analytic capsule colliders. Boxes always collide as boxes, ellipses and
  polygons as their convex mesh parts.
- **Friction, per pair**: MuJoCo combines two geoms' coefficients by taking the larger,
  so with the authors' numbers (slider 1.0 for the table, pusher 0.2) the pusher/slider
  contact would silently get 1.0. Every contact is therefore an explicit ``<pair>`` with
  its own coefficient (and geoms have ``contype = conaffinity = 0``):
  object/table ``max(table.friction, object.friction)`` (the scene's documented rule),
  pusher/object and pusher/obstacle ``pusher.friction``, object/object and
  object/obstacle ``scene.object_friction``. The pusher has no pair with the table.
- **Pusher**: a body with slide x, slide y joints, mass ``pusher.mass`` plus
  ``FineSettings.pusher_armature`` of reflected arm inertia, driven by MuJoCo velocity
  actuators (ctrl = commanded velocity, m/s) with gain
  ``kv = pusher_servo_ratio * (mass + armature) / timestep``. The authors' kv = 1e6 on 8 kg
  gives timestep*kv/m = 125, unstable for explicit Euler (needs < 2) and RK4 (< 2.8); a
  ratio of 1 is dead-beat for Euler, and the large reflected inertia keeps the velocity
  error under a contact force F at F / kv (about 0.1 mm/s for 5 N with the defaults).
- **Obstacles**: geoms of the world body, 0.1 m tall.
- **Contact behaviour to know**: MuJoCo's contact model is soft and convex, so a sliding
  contact separates at about mu * |slip speed|; an object pushed at 5 cm/s on mu = 1 rises
  and sinks by ~0.1 mm and its speed chatters around the pusher's (+-20 %) while its
  position follows the push smoothly. The authors' free-joint model behaves the same; we
  keep MuJoCo's default contact parameters (solref, solimp) as they did, but not its
  default pyramidal cone (see ``FineSettings.cone``). Measured with this model: a disc
  sliding off at 0.5 m/s stops after 13.1 mm (Coulomb, mu g: 12.7 mm);
  without the slide z joint it stopped after 4.6 mm, set by the contact penetration rather
  than by the weight, which is why the joint is there.
- ``autoreset`` is disabled so that a diverging simulation yields NaN (which the fine
  model reports as a NaN row) instead of a silent reset to the initial pose.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from typing import TYPE_CHECKING

import numpy as np

from parapush.physics.limit_surface import uniform_pressure_radius
from parapush.physics.support_layout import even_support_points
from parapush.scene import ObjectSpec, Obstacle, Outline, Scene

if TYPE_CHECKING:
    from parapush.physics.fine_settings import FineSettings

SUPPORT_SPHERE_RADIUS = 0.001
"""Radius of the support spheres of ``support: points`` and ``torsion``, m (they touch the table
at the plate's underside: their centres are this high)."""

OBSTACLE_HEIGHT = 0.1
"""Height of the obstacle geoms, m (the scene gives none; taller than every object)."""

DISABLED_PAIRS_ANCHOR = "disabled_pairs_anchor"
"""Geom of the gravity-compensated model that switched-off contact pairs point at."""

_MJCF_INTEGRATORS = {"euler": "Euler", "implicitfast": "implicitfast", "rk4": "RK4"}


def _numbers(*values: float) -> str:
    return " ".join(repr(float(value)) for value in values)


def object_body_name(index: int) -> str:
    """MuJoCo body name of object ``index`` (scene names may hold any characters)."""
    return f"object{index}"


def _element(parent: ElementTree.Element, tag: str, **attributes: str) -> ElementTree.Element:
    return ElementTree.SubElement(parent, tag, attributes)


def _vertical_collider(
    parent: ElementTree.Element, name: str, kind: str, radius: float, bottom: float, top: float
) -> None:
    """A capsule or cylinder of ``radius`` whose axis spans heights [bottom, top]."""
    if kind == "capsule":
        _element(parent, "geom", name=name, type="capsule", size=_numbers(radius),
                 fromto=_numbers(0, 0, bottom, 0, 0, top))
    else:
        _element(parent, "geom", name=name, type="cylinder", size=_numbers(radius, 0.5 * (top - bottom)),
                 pos=_numbers(0, 0, 0.5 * (top + bottom)))


def part_geom_names(prefix: str, outline: Outline) -> tuple[str, ...]:
    """Names of the geoms ``prefix`` (e.g. ``object0_support``) of a body of ``outline``: the
    prefix itself, then ``<prefix>_part<k>`` for the further convex parts of a non-convex
    polygon (cylinders, boxes, ellipses and convex polygons have one geom)."""
    count = len(outline.convex_parts()) if outline.kind == "polygon" else 1
    return (prefix, *(f"{prefix}_part{part}" for part in range(1, count)))


def object_geom_names(index: int, spec: ObjectSpec, role: str, settings: FineSettings | None = None) -> tuple[str, ...]:
    """Geoms of object ``index`` in ``role`` ``"support"`` (its table contacts: needs the fine
    ``settings``, whose ``support`` lays them out) or ``"collider"`` (its lateral contacts):
    ``object<i>_<role>`` then ``_part<k>`` per further convex part, or for a ``points`` support
    ``_point<k>`` per further point."""
    if role not in ("support", "collider"):
        raise ValueError(f"role: expected 'support' or 'collider', got {role!r}")
    prefix = f"{object_body_name(index)}_{role}"
    if role == "collider":
        return part_geom_names(prefix, spec.outline)
    if settings is None:
        raise ValueError("settings: the support geoms depend on the fine settings' support")
    if settings.support == "collider":
        return part_geom_names(prefix, spec.outline)
    if settings.support == "torsion":
        return (prefix,)
    return (prefix, *(f"{prefix}_point{point}" for point in range(1, settings.support_points)))


def obstacle_geom_names(index: int, obstacle: Obstacle) -> tuple[str, ...]:
    """Collider geoms of obstacle ``index``: ``obstacle<j>_collider`` then ``_part<k>``."""
    return part_geom_names(f"obstacle{index}_collider", obstacle.outline)


def _uses_mesh(outline: Outline) -> bool:
    return outline.kind in ("ellipse", "polygon")


def _add_prism_meshes(root: ElementTree.Element, prefix: str, outline: Outline, height: float) -> list[str]:
    """One ``<asset><mesh>`` per convex part of ``outline``: the part extruded from z = 0
    to ``height``; returns the mesh names."""
    asset = root.find("asset")
    if asset is None:
        asset = ElementTree.Element("asset")
        root.insert(list(root).index(root.find("worldbody")), asset)
    names = []
    for number, part in enumerate(outline.convex_parts()):
        name = f"{prefix}_mesh{number}"
        points = [(x, y, z) for z in (0.0, height) for x, y in part]
        _element(asset, "mesh", name=name, vertex=_numbers(*(value for point in points for value in point)))
        names.append(name)
    return names


def _object_inertia(spec: ObjectSpec) -> tuple[float, float, float]:
    """Principal moments of inertia (kg m^2) of a uniform cylinder or box about its centre."""
    if spec.shape == "cylinder":
        lateral = spec.mass * (3 * spec.radius**2 + spec.height**2) / 12.0
        return (lateral, lateral, 0.5 * spec.mass * spec.radius**2)
    half_x, half_y = spec.half_extents
    return (
        spec.mass * (4 * half_y**2 + spec.height**2) / 12.0,
        spec.mass * (4 * half_x**2 + spec.height**2) / 12.0,
        spec.mass * (half_x**2 + half_y**2) / 3.0,
    )


def _add_object(
    root: ElementTree.Element, index: int, spec: ObjectSpec, settings: FineSettings, gravity_compensated: bool
) -> None:
    world = root.find("worldbody")
    name = object_body_name(index)
    body = _element(world, "body", name=name, pos="0 0 0")
    if gravity_compensated:
        body.set("gravcomp", "1")
    _element(body, "joint", name=f"{name}_x", type="slide", axis="1 0 0")
    _element(body, "joint", name=f"{name}_y", type="slide", axis="0 1 0")
    _element(body, "joint", name=f"{name}_z", type="slide", axis="0 0 1")
    _element(body, "joint", name=f"{name}_yaw", type="hinge", axis="0 0 1")
    if settings.object_tilt:
        _element(body, "joint", name=f"{name}_roll", type="hinge", axis="1 0 0")
        _element(body, "joint", name=f"{name}_pitch", type="hinge", axis="0 1 0")
    meshes = _add_prism_meshes(root, name, spec.outline, spec.height) if _uses_mesh(spec.outline) else []
    if not spec.patches:
        _add_object_inertial(body, spec)
    _add_object_support(body, index, spec, settings, meshes)
    _add_object_colliders(body, index, spec, settings, meshes)
    _add_object_patches(body, index, spec)


def _add_object_inertial(body: ElementTree.Element, spec: ObjectSpec) -> None:
    """A uniform object's inertial: a cylinder's or a box's about its centre; another outline's
    at its centroid with the yaw inertia of a plate of that outline (mass * polar moment) and the
    roll and pitch moments of a plate of the object's height."""
    half_height = 0.5 * spec.height
    if not _uses_mesh(spec.outline):
        _element(body, "inertial", pos=_numbers(0, 0, half_height), mass=_numbers(spec.mass),
                 diaginertia=_numbers(*_object_inertia(spec)))
        return
    centroid = spec.outline.centroid
    xx, yy, xy = spec.outline.second_moments()
    thickness = spec.height**2 / 12.0
    moments = (spec.mass * (yy + thickness), spec.mass * (xx + thickness), spec.mass * (xx + yy))
    inertia = ({"diaginertia": _numbers(*moments)} if xy == 0.0
               else {"fullinertia": _numbers(*moments, -spec.mass * xy, 0.0, 0.0)})
    _element(body, "inertial", pos=_numbers(*centroid, half_height), mass=_numbers(spec.mass), **inertia)


def _add_object_support(
    body: ElementTree.Element, index: int, spec: ObjectSpec, settings: FineSettings, meshes: list[str]
) -> None:
    """The plate's geoms and the geoms resting on the table (their pairs with it:
    :func:`object_geom_names` ``"support"``). With ``support: collider`` they are one: the
    cylinder, box or convex-part meshes. With ``points`` or ``torsion`` the plate's geoms are
    ``object<i>_plate[_part<k>]`` (no pair: mass and inertia only) and the support is massless
    spheres of :data:`SUPPORT_SPHERE_RADIUS` touching the table at :func:`even_support_points`
    or at the centroid. Without an inertial (an object with patches) the plate's geoms carry
    ``base_mass`` (split among the convex parts by area) and MuJoCo sums the geoms' inertia."""
    name = object_body_name(index)
    half_height = 0.5 * spec.height
    plate = settings.support == "collider"
    geoms = object_geom_names(index, spec, "support", settings) if plate else part_geom_names(
        f"{name}_plate", spec.outline)
    # A uniform object: its inertial given; with patches MuJoCo sums the geoms' (support: the
    # mass spread over the footprint, each patch: its own mass), so the centre of mass moves.
    mass = {"mass": _numbers(spec.base_mass)} if spec.patches else {}
    if spec.shape == "cylinder":
        _element(body, "geom", name=geoms[0], type="cylinder",
                 size=_numbers(spec.radius, half_height), pos=_numbers(0, 0, half_height), **mass)
    elif spec.shape == "box":
        half_x, half_y = spec.half_extents
        _element(body, "geom", name=geoms[0], type="box",
                 size=_numbers(half_x, half_y, half_height), pos=_numbers(0, 0, half_height), **mass)
    else:
        parts = spec.outline.convex_parts()
        areas = [abs(_polygon_area(part)) for part in parts]
        for geom, mesh, area in zip(geoms, meshes, areas, strict=True):
            part_mass = {"mass": _numbers(spec.base_mass * area / sum(areas))} if spec.patches else {}
            _element(body, "geom", name=geom, type="mesh", mesh=mesh, **part_mass)
    if plate:
        return
    points = (spec.outline.centroid[None] if settings.support == "torsion"
              else even_support_points(spec.outline, settings.support_points))
    for geom, (x, y) in zip(object_geom_names(index, spec, "support", settings), points, strict=True):
        _element(body, "geom", name=geom, type="sphere", size=_numbers(SUPPORT_SPHERE_RADIUS),
                 pos=_numbers(x, y, SUPPORT_SPHERE_RADIUS), mass="0")


def _add_object_colliders(
    body: ElementTree.Element, index: int, spec: ObjectSpec, settings: FineSettings, meshes: list[str]
) -> None:
    """The geoms of the lateral contacts (pusher, objects, obstacles): ``object<i>_collider[_part<k>]``."""
    name = object_body_name(index)
    half_height = 0.5 * spec.height
    if spec.shape == "cylinder":
        _vertical_collider(body, f"{name}_collider", settings.object_collider, spec.radius, 0.0, spec.height)
    elif spec.shape == "box":
        half_x, half_y = spec.half_extents
        _element(body, "geom", name=f"{name}_collider", type="box",
                 size=_numbers(half_x, half_y, half_height), pos=_numbers(0, 0, half_height))
    else:
        for geom, mesh in zip(object_geom_names(index, spec, "collider"), meshes, strict=True):
            _element(body, "geom", name=geom, type="mesh", mesh=mesh)


def _add_object_patches(body: ElementTree.Element, index: int, spec: ObjectSpec) -> None:
    """One box geom per patch, with its own mass and table pair (``object<i>_patch<k>``)."""
    name = object_body_name(index)
    half_height = 0.5 * spec.height
    for number, patch in enumerate(spec.patches):
        _element(body, "geom", name=f"{name}_patch{number}", type="box",
                 size=_numbers(*patch.half_extents, half_height), pos=_numbers(*patch.center, half_height),
                 mass=_numbers(patch.mass))


def _polygon_area(points: object) -> float:
    vertices = np.asarray(points, dtype=float)
    following = np.roll(vertices, -1, axis=0)
    return 0.5 * float(np.sum(vertices[:, 0] * following[:, 1] - vertices[:, 1] * following[:, 0]))


def _add_obstacle(root: ElementTree.Element, index: int, obstacle: Obstacle, settings: FineSettings) -> None:
    world = root.find("worldbody")
    x, y, yaw = obstacle.pose
    name = f"obstacle{index}"
    if _uses_mesh(obstacle.outline):
        meshes = _add_prism_meshes(root, name, obstacle.outline, OBSTACLE_HEIGHT)
        holder = _element(world, "body", name=name, pos=_numbers(x, y, 0), euler=_numbers(0, 0, yaw))
        for geom, mesh in zip(obstacle_geom_names(index, obstacle), meshes, strict=True):
            _element(holder, "geom", name=geom, type="mesh", mesh=mesh)
    elif obstacle.shape == "cylinder":
        holder = _element(world, "body", name=name, pos=_numbers(x, y, 0))
        _vertical_collider(holder, f"{name}_collider", settings.object_collider, obstacle.radius,
                           0.0, OBSTACLE_HEIGHT)
    else:
        half_x, half_y = obstacle.half_extents
        holder = _element(world, "body", name=name, pos=_numbers(x, y, 0),
                          euler=_numbers(0, 0, yaw))
        _element(holder, "geom", name=f"{name}_collider", type="box",
                 size=_numbers(half_x, half_y, 0.5 * OBSTACLE_HEIGHT), pos=_numbers(0, 0, 0.5 * OBSTACLE_HEIGHT))


def pusher_servo_gain(scene: Scene, settings: FineSettings) -> float:
    """Velocity gain kv of the pusher actuators, N s/m."""
    return settings.pusher_servo_ratio * (scene.pusher.mass + settings.pusher_armature) / settings.timestep


def scene_to_mjcf(scene: Scene, settings: FineSettings, *, gravity_compensated: bool = False) -> str:
    """MJCF XML of the scene for the fine model (see the module docstring for the choices).

    ``gravity_compensated`` gives every object body ``gravcomp="1"`` and adds a tiny sphere
    ``DISABLED_PAIRS_ANCHOR`` far from everything: the base of the fidelity variants
    (:meth:`parapush.physics.fine.FineModel.fidelity_model`), in which a static object floats
    exactly in place without its table contacts (a pair is switched off by pointing it at
    the anchor, which MuJoCo's bounding-sphere test then skips); a variant that sets an
    object's ``body_gravcomp`` back to 0 simulates it exactly as the plain model does.

    Bodies: ``pusher`` (joints ``pusher_x``, ``pusher_y``; actuators ``pusher_vx``,
    ``pusher_vy``), ``object<i>`` (joints ``object<i>_x|_y|_z|_yaw``,
    then ``_roll|_pitch`` with ``object_tilt``), ``obstacle<j>``.
    """
    root = ElementTree.Element("mujoco", model=f"parapush_{scene.name}")
    _element(root, "compiler", angle="radian", autolimits="true")
    option = _element(root, "option", timestep=_numbers(settings.timestep),
                      integrator=_MJCF_INTEGRATORS[settings.integrator], cone=settings.cone)
    _element(option, "flag", autoreset="disable", **({} if settings.native_ccd else {"nativeccd": "disable"}))
    _element(root, "default").append(ElementTree.Element("geom", contype="0", conaffinity="0", density="0"))
    world = _element(root, "worldbody")
    half_length, half_width = scene.table.half_extents
    _element(world, "geom", name="table", type="plane", size=_numbers(half_length, half_width, 0.05))

    pusher = scene.pusher
    pusher_body = _element(world, "body", name="pusher", pos="0 0 0")
    for axis, direction in (("x", "1 0 0"), ("y", "0 1 0")):
        _element(pusher_body, "joint", name=f"pusher_{axis}", type="slide", axis=direction,
                 armature=_numbers(settings.pusher_armature))
    _element(pusher_body, "inertial", pos=_numbers(0, 0, 0.5 * pusher.height), mass=_numbers(pusher.mass),
             diaginertia=_numbers(*(pusher.mass * pusher.radius**2 / 2.0,) * 3))
    # The collider spans heights [0, pusher.height]: it overlaps every object's height band and
    # cannot touch the table (no pusher/table pair exists).
    _vertical_collider(pusher_body, "pusher_collider", settings.pusher_collider, pusher.radius,
                       0.0, pusher.height)

    for index, spec in enumerate(scene.objects):
        _add_object(root, index, spec, settings, gravity_compensated)
    for index, obstacle in enumerate(scene.obstacles):
        _add_obstacle(root, index, obstacle, settings)
    if gravity_compensated:
        _element(world, "geom", name=DISABLED_PAIRS_ANCHOR, type="sphere", size="0.001",
                 pos=_numbers(1.0e6, 1.0e6, 0.0))

    contact = _element(root, "contact")

    def pair(firsts: str | tuple[str, ...], seconds: tuple[str, ...], friction: float, torsion: float = 0.0) -> None:
        # sliding x2, torsional (a length: the torque per newton of normal force), rolling x2;
        # condim 3 uses the sliding coefficient only, condim 4 (torsion > 0) the torsional too
        for first in (firsts,) if isinstance(firsts, str) else firsts:
            for second in seconds:
                _element(contact, "pair", geom1=first, geom2=second, condim="4" if torsion else "3",
                         friction=_numbers(friction, friction, torsion or 0.005, 0.0001, 0.0001))

    colliders = [object_geom_names(index, spec, "collider") for index, spec in enumerate(scene.objects)]
    obstacles = [obstacle_geom_names(index, obstacle) for index, obstacle in enumerate(scene.obstacles)]
    for index, spec in enumerate(scene.objects):
        name = object_body_name(index)
        support = max(scene.table.friction, spec.friction)
        torsion = support * uniform_pressure_radius(spec.outline) if settings.support == "torsion" else 0.0
        pair("table", object_geom_names(index, spec, "support", settings), support, torsion)
        for number, patch in enumerate(spec.patches):
            pair("table", (f"{name}_patch{number}",), max(scene.table.friction, patch.friction))
        pair("pusher_collider", colliders[index], pusher.friction)
        for other in range(index + 1, len(scene.objects)):
            pair(colliders[index], colliders[other], scene.object_friction)
        for other in range(len(scene.obstacles)):
            pair(colliders[index], obstacles[other], scene.object_friction)
    for other in range(len(scene.obstacles)):
        pair("pusher_collider", obstacles[other], pusher.friction)

    actuators = _element(root, "actuator")
    gain = _numbers(pusher_servo_gain(scene, settings))
    for axis in ("x", "y"):
        _element(actuators, "velocity", name=f"pusher_v{axis}", joint=f"pusher_{axis}", kv=gain)

    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode")

