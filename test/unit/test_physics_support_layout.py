"""How an object's weight rests on the table in the fine model (FineSettings.support,
parapush.physics.support_layout): even support points, the torsion contact, and what they change."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

from parapush.identification import ObjectModelVariants, ObjectParameters
from parapush.physics.fine import FineModel
from parapush.physics.fine_settings import FineSettings
from parapush.physics.limit_surface import uniform_pressure_radius
from parapush.physics.mjcf import SUPPORT_SPHERE_RADIUS, object_geom_names, scene_to_mjcf
from parapush.physics.support_layout import even_support_points
from parapush.scene import Outline, scene_from_dict

HEXAGON = [(0.0605 * math.cos(k * math.pi / 3), 0.0605 * math.sin(k * math.pi / 3)) for k in range(6)]
L_SHAPE = [(0.0, 0.0), (0.1, 0.0), (0.1, 0.03), (0.03, 0.03), (0.03, 0.08), (0.0, 0.08)]


def plate_scene(shape: dict, *, table_friction: float = 0.14) -> dict:
    return {"name": "plate", "table": {"friction": table_friction},
            "pusher": {"radius": 0.005, "friction": 0.25, "position": [-0.3, 0.0]},
            "objects": [{"name": "plate", "height": 0.013, "mass": 0.98, "friction": table_friction, **shape}]}


@pytest.mark.parametrize("outline", [Outline.disc(0.0512), Outline.rectangle(0.045, 0.045),
                                     Outline.polygon(HEXAGON), Outline.polygon(L_SHAPE)],
                         ids=["disc", "square", "hexagon", "L"])
@pytest.mark.parametrize("count", [4, 8, 12])
def test_even_support_points_cover_the_outline_in_cells_of_nearly_equal_area(outline, count):
    points = even_support_points(outline, count)
    assert points.shape == (count, 2)
    assert np.all(outline.contains(points))
    # the cells (grid points nearest each support point) have nearly equal areas
    low, high = outline.boundary().min(axis=0), outline.boundary().max(axis=0)
    grid = np.stack(np.meshgrid(*(np.linspace(low[a], high[a], 300) for a in range(2))), -1).reshape(-1, 2)
    grid = grid[outline.contains(grid)]
    cells = np.bincount(np.argmin(np.linalg.norm(grid[:, None] - points[None], axis=-1), axis=1), minlength=count)
    assert cells.min() > 0.6 * cells.mean() and cells.max() < 1.4 * cells.mean()
    # so their area-weighted mean is the centroid: the weight is spread evenly about it
    centres = np.array([grid[np.argmin(np.linalg.norm(grid[:, None] - points[None], axis=-1), axis=1) == c].mean(0)
                        for c in range(count)])
    np.testing.assert_allclose((cells[:, None] * centres).sum(0) / cells.sum(), outline.centroid, atol=1e-3)
    np.testing.assert_array_equal(even_support_points(outline, count), points)  # deterministic


def test_one_support_point_is_at_the_centroid_and_bad_counts_are_refused():
    np.testing.assert_allclose(even_support_points(Outline.polygon(L_SHAPE), 1)[0],
                               Outline.polygon(L_SHAPE).centroid, atol=2e-3)
    for count in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="count: expected an integer >= 1"):
            even_support_points(Outline.disc(0.05), count)


def test_torsion_with_tilt_is_refused_naming_the_setting():
    with pytest.raises(ValueError, match="support: 'torsion' rests each object on one centre contact"):
        FineSettings(support="torsion", object_tilt=True)


def table_pairs(xml: str) -> list[ElementTree.Element]:
    return [pair for pair in ElementTree.fromstring(xml).iter("pair") if pair.get("geom1") == "table"]


def test_the_support_layouts_in_the_mjcf():
    scene = scene_from_dict(plate_scene({"shape": "polygon", "vertices": HEXAGON}))
    spec = scene.objects[0]
    points = FineSettings(support="points", support_points=8, object_tilt=True)
    pairs = table_pairs(scene_to_mjcf(scene, points))
    assert [pair.get("geom2") for pair in pairs] == list(object_geom_names(0, spec, "support", points))
    assert len(pairs) == 8 and all(pair.get("condim") == "3" for pair in pairs)
    spheres = {geom.get("name"): geom for geom in ElementTree.fromstring(scene_to_mjcf(scene, points)).iter("geom")
               if geom.get("type") == "sphere"}
    for name, (x, y) in zip(object_geom_names(0, spec, "support", points), even_support_points(spec.outline, 8),
                            strict=True):
        assert spheres[name].get("mass") == "0"
        np.testing.assert_allclose([float(v) for v in spheres[name].get("pos").split()], [x, y, SUPPORT_SPHERE_RADIUS])
    torsion = FineSettings(support="torsion")
    (pair,) = table_pairs(scene_to_mjcf(scene, torsion))
    friction = [float(value) for value in pair.get("friction").split()]
    assert pair.get("condim") == "4"
    assert friction[:3] == pytest.approx([0.14, 0.14, 0.14 * uniform_pressure_radius(spec.outline)])
    # the plate itself (mass, inertia) keeps its shape but rests on the table through the support only
    assert "object0_plate" in {geom.get("name") for geom in ElementTree.fromstring(scene_to_mjcf(scene, torsion))
                               .iter("geom")}


def pushed_turn(shape: dict, settings: FineSettings, offset: float, travel: float = 0.05) -> float:
    """rad the plate turns when pushed +x at 2 cm/s with the pusher ``offset`` m off its centre line."""
    scene = scene_from_dict(plate_scene(shape))
    model = FineModel(scene, settings)
    start = -scene.objects[0].outline.extent_along(np.array([-1.0, 0.0])) - scene.pusher.radius - 5e-4
    state = model.layout.compose(np.array([float(start), offset]), np.zeros((1, 3)))
    final = model.propagate(state[None], np.array([[0.02, 0.0]]), np.array([travel / 0.02]))[0]
    return float(final[4])


def test_an_even_support_turns_an_off_centre_push_more_than_the_rim():
    disc = {"shape": "cylinder", "radius": 0.0525}
    rim = pushed_turn(disc, FineSettings(support="collider"), -0.02)
    torsion = pushed_turn(disc, FineSettings(support="torsion"), -0.02)
    points = pushed_turn(disc, FineSettings(support="points", object_tilt=True), -0.02)
    # pushed below the centre line +x: counter-clockwise; the rim resists the turn most
    assert rim > 0.0 and torsion > 1.2 * rim and points > 1.2 * rim


@pytest.mark.parametrize("settings", [FineSettings(support="torsion"),
                                      FineSettings(support="points", object_tilt=True, native_ccd=False)],
                         ids=["torsion", "points"])
def test_a_hexagon_pushed_at_the_middle_of_an_edge_goes_straight_on_an_even_support(settings):
    # HEXAGON has a vertex on +x, so its -x side is a vertex too: turn it by 30 deg to put an edge there
    turned = {"shape": "polygon", "vertices": [
        (x * math.cos(math.pi / 6) - y * math.sin(math.pi / 6), x * math.sin(math.pi / 6) + y * math.cos(math.pi / 6))
        for x, y in HEXAGON]}
    # MuJoCo's mesh/plane collider rests it on 4 of its 6 corners, off its centroid: it turns
    lopsided = abs(pushed_turn(turned, FineSettings(support="collider"), 0.0))
    assert lopsided > 0.02
    assert abs(pushed_turn(turned, settings, 0.0)) < 0.3 * lopsided


def test_identified_support_friction_reaches_every_support_contact():
    settings = FineSettings(support="points", support_points=6, object_tilt=True)
    model = FineModel(scene_from_dict(plate_scene({"shape": "box", "half_extents": [0.045, 0.045]})), settings)
    variants = ObjectModelVariants(model, 0)
    parameters = ObjectParameters(mass=0.98, support_friction=0.3, pusher_friction=0.25, com_offset=(0.0, 0.0))
    variants.apply(model.mj_model, parameters)
    mj = model.mj_model
    table = mj.geom("table").id
    supports = {mj.geom(name).id for name in object_geom_names(0, model.scene.objects[0], "support", settings)}
    frictions = [mj.pair_friction[p, 0] for p in range(mj.npair)
                 if mj.pair_geom1[p] == table and mj.pair_geom2[p] in supports]
    assert frictions == pytest.approx([0.3] * 6)
    assert variants.current().support_friction == pytest.approx(0.3)


def test_the_torsional_friction_follows_the_identified_support_friction():
    settings = FineSettings(support="torsion")
    model = FineModel(scene_from_dict(plate_scene({"shape": "cylinder", "radius": 0.0525})), settings)
    variants = ObjectModelVariants(model, 0)
    parameters = ObjectParameters(mass=0.98, support_friction=0.3, pusher_friction=0.25, com_offset=(0.0, 0.0))
    variants.apply(model.mj_model, parameters)
    (pair,) = [p for p in range(model.mj_model.npair) if model.mj_model.pair_dim[p] == 4]
    radius = uniform_pressure_radius(model.scene.objects[0].outline)
    assert model.mj_model.pair_friction[pair, :3] == pytest.approx([0.3, 0.3, 0.3 * radius])
