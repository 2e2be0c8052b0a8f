"""Settings of the fine MuJoCo model (:class:`FineSettings`): how a scene becomes a MuJoCo
model and how it is stepped. Plain data, so that :mod:`parapush.physics.mjcf` and
:mod:`parapush.physics.fine` both import it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

from parapush.settings import check_settings, setting

INTEGRATORS = ("euler", "implicitfast", "rk4")
COLLIDERS = ("capsule", "cylinder")
CONES = ("pyramidal", "elliptic")
SUPPORTS = ("collider", "points", "torsion")


@dataclass(frozen=True)
class FineSettings:
    """How the scene is turned into a MuJoCo model and stepped.

    Defaults chosen by ``python bench/fine_model_defaults.py`` (2-core machine shared with
    other jobs, so costs are CPU time of the single-threaded serial reference):

    - ``cone="elliptic"``: MuJoCo's default pyramidal cone makes table friction depend on
      the sliding direction. A disc launched at 0.5 m/s stops after 13.2 / 16.0 / 18.2 mm
      along 0 / 22.5 / 45 deg with the pyramidal cone, 13.1 mm in every direction with the
      elliptic one (Coulomb: 12.7 mm). The cone changes 4 s push predictions by 16-55 mm
      (median), far more than any integrator or collider choice, at a similar cost.
    - ``integrator="euler"``: per 1 s control, euler 5.9 / 4.0 / 9.8 ms, implicitfast 6.2 /
      4.3 / 10.4 ms, rk4 22.9 / 14.8 / 36.6 ms (one cylinder / one box / four cylinders).
      Median end-position difference to rk4 after 4 s pushes at 5 cm/s: 0.04 / 0.12 /
      0.10 mm (max 0.1 / 0.3 / 1.7 mm), below the ~0.1 mm per second that contact chaos
      gives anyway. Euler also makes the pusher servo dead-beat (implicitfast does not).
    - ``timestep=0.001`` (kept by ``python bench/fine_model_cost.py``, reference in
      ``bench/reference/fine_model_cost.json``): 2 ms halves the cost but moves Table 1
      pushes by up to 1.2 mm after 6 s (p95 1.0 mm; the servo's kv, hence its tracking
      under contact, halves with the step) and the planner's 4 s pushes by 3.3 mm p95
      (the reference itself: 2.0 mm p95 from a 1 um different start); 5 and 10 ms are
      4-11 mm p95 off on Table 1. Implicitfast costs as much as Euler at every step.
    - ``pusher_collider = object_collider = "cylinder"``: vertical capsules are analytic
      but save under 10 % of the step (5.4 vs 5.9 ms, 9.2 vs 9.8 ms: the constraint solver
      dominates) and change predictions by ~1 mm median (0.6 mm with four objects, and one
      box-corner push by 60 mm) relative to the cylinder collider. At a box's corner the
      capsule has the true normal (from the vertical edge to the pusher's axis) and MuJoCo's
      cylinder/box collider a face's (``test_physics_fine.py``), which is that push: the
      cylinder is kept for the shipped learned model, trained with it.

    Attributes:
        timestep: simulation step, s (papers and authors' code: 1 ms).
        integrator: MuJoCo integrator, one of ``"euler"``, ``"implicitfast"``, ``"rk4"``.
        pusher_collider: the pusher's contact geometry, ``"capsule"`` or ``"cylinder"``
            (a vertical capsule has the cylinder's planar cross-section wherever it
            overlaps the objects' height band, and an analytic collider).
        object_collider: lateral contact geometry of cylindrical objects and obstacles,
            ``"capsule"`` or ``"cylinder"``. Boxes always collide as boxes, ellipses and
            polygons as prisms of their convex parts (MuJoCo meshes; what their colliders do
            is in :mod:`parapush.physics.mjcf`).
        cone: MuJoCo friction cone, ``"elliptic"`` (isotropic Coulomb friction) or
            ``"pyramidal"`` (MuJoCo's default, used by the authors; its friction is weaker
            for sliding diagonal to the table axes, see above).
        pusher_armature: reflected inertia of the arm added to the pusher's slide joints, kg.
        pusher_servo_ratio: timestep * kv / (pusher mass + armature) of the pusher's
            velocity servo, in (0, 2); 1 makes an explicit Euler step dead-beat.
        speed_limit: a final body speed above this (m/s or rad/s) marks the row as unstable.
        object_tilt: give every object roll and pitch hinges (after its yaw), so that its table
            contacts share its weight as a resting rigid body's do: by the contacts' compliance
            and the balance of moments. Without them (the default, the papers' planar model
            with a vertical slide) the share of each contact is statically undetermined and
            MuJoCo's solver picks the one that resists the motion most: a box pushed 3 cm off
            its centre at 5 cm/s turns 7 deg in 1.5 s, with tilt 19.5 deg, and Coulomb friction
            with a quarter of the weight on each corner (the differentiable model of
            :mod:`parapush.identification.grid_model`) 19.1 deg
            (``test_physics_object_tilt.py``). Centred pushes are the same either way (with
            ``support: collider``; ``torsion`` has one contact and refuses tilt).
        support: how an object's weight rests on the table (:mod:`parapush.physics.support_layout`):
            ``collider`` (the geometry's own contacts: a cylinder's 3 rim points, a box's 4
            corners, at most 4 corners per mesh part: the largest torque a support resists),
            ``points`` (``support_points`` contacts spread evenly over the outline; with
            ``object_tilt`` they share the weight evenly) or ``torsion`` (one contact under the centre
            of mass, where a rigid object's pressure centre lies, whose torsional friction is an
            even pressure's: an ellipsoidal limit surface; an identified or drawn centre-of-mass
            offset moves it, :class:`~parapush.identification.model_variants.ObjectModelVariants`).
        support_points: contacts per object with ``support: points``.
        native_ccd: MuJoCo's native convex collision (false: libccd; at a box's or polygon's corner
            its normal is near the true one, the native one snaps to a face's).

    The contact defaults were chosen against 62 recorded real pushes of five steel plates on ABS
    (``python bench/real_pushes.py --choose``, leave one object out; README "How well the physics
    matches reality"). The protocol's own choice, ``points`` (8) with tilt and libccd, is what the
    simulated world uses (``config/sim_world.yaml``): its median errors on the held-out objects are
    1.6-3.5 mm and 0.7-3.2 deg. As the planner's default it would cost 2.4-2.6x per control (one
    and four cylinders); ``torsion`` with native collision, the best of the candidates that cost no
    more than the old default (``collider``: 0.8x), roughly halves the old default's errors.
    """

    timestep: float = setting(0.001, "fine-model time step", unit="s", above=0.0, maximum=0.01)
    integrator: str = setting("euler", "MuJoCo integrator of the fine model", choices=INTEGRATORS)
    pusher_collider: str = setting("cylinder", "the pusher's contact geometry", choices=COLLIDERS)
    object_collider: str = setting("cylinder", "lateral contact geometry of cylinders and obstacles", choices=COLLIDERS)
    cone: str = setting("elliptic", "MuJoCo friction cone", choices=CONES)
    pusher_armature: float = setting(50.0, "reflected arm inertia on the pusher's slide joints", unit="kg",
                                     minimum=0.0)
    pusher_servo_ratio: float = setting(1.0, "timestep * kv / (pusher mass + armature) of the pusher servo",
                                        above=0.0, below=2.0)
    speed_limit: float = setting(20.0, "a final body speed above this marks the row unstable", unit="m/s or rad/s",
                                 above=0.0)

    object_tilt: bool = setting(
        False, "roll and pitch hinges on every object (its table contacts share its weight as a rigid body's do)"
    )
    support: str = setting(
        "torsion", "how an object rests on the table: collider (its geometry's own contacts), points "
        "(support_points contacts spread evenly over its outline), torsion (one contact under the centre of "
        "mass with the torsional friction of an even pressure)", choices=SUPPORTS)
    support_points: int = setting(8, "table contacts per object with support: points", minimum=1, maximum=64)
    native_ccd: bool = setting(
        True, "MuJoCo's native convex collision (its nativeccd flag); false: libccd, whose normal at a box's or "
        "polygon's corner is close to the true one (native: a face's)")

    def __post_init__(self) -> None:
        check_settings(self)
        if self.support == "torsion" and self.object_tilt:
            raise ValueError("support: 'torsion' rests each object on one centre contact, on which roll and pitch "
                             "(object_tilt: true) would topple it; use support 'points' with object_tilt")
