"""Planar outlines: validation, mass properties against closed forms, convex parts, distances."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from parapush.scene import ObjectSpec, Obstacle, SceneError, scene_from_dict
from parapush.scene.outline import CONVEX_PART_RESOLUTION, Outline, plate_mass_properties

SHARED_OUTLINES = Path(__file__).resolve().parents[2].parent / "shared" / "real_pushes" / "outlines.npz"
"""The MIT pushing dataset's outlines, beside the repository (not copied into it)."""

STEEL = 7952.0  # kg/m^3, the MIT plates (0.8374 kg for the 90 x 90 x 13 mm square)
THICKNESS = 0.013


def regular_polygon(count, circumradius, phase=0.0):
    angles = phase + 2.0 * math.pi * np.arange(count) / count
    return np.stack([circumradius * np.cos(angles), circumradius * np.sin(angles)], axis=-1)


def l_shape():
    return np.array([[0, 0], [0.08, 0], [0.08, 0.03], [0.03, 0.03], [0.03, 0.09], [0, 0.09]], dtype=float)


def star(points=7, inner=0.02, outer=0.06, seed=3):
    rng = np.random.default_rng(seed)
    angles = math.pi * np.arange(2 * points) / points + rng.uniform(-0.1, 0.1, 2 * points)
    radii = np.where(np.arange(2 * points) % 2 == 0, outer, inner) * rng.uniform(0.85, 1.0, 2 * points)
    return np.stack([radii * np.cos(angles), radii * np.sin(angles)], axis=-1)


def shoelace(points):
    return 0.5 * float(np.sum(points[:, 0] * np.roll(points[:, 1], -1) - np.roll(points[:, 0], -1) * points[:, 1]))


# -- mass properties -----------------------------------------------------------------------
@pytest.mark.parametrize("as_polygon", [False, True])
def test_the_mit_square_plate_has_the_datasets_mass_and_inertia(as_polygon):
    outline = (Outline.polygon([[0.045, 0.045], [-0.045, 0.045], [-0.045, -0.045], [0.045, -0.045]])
               if as_polygon else Outline.rectangle(0.045, 0.045))
    mass, centroid, inertia = plate_mass_properties(outline, THICKNESS, STEEL)
    assert mass == pytest.approx(0.8374, abs=1e-4)
    assert inertia == pytest.approx(1.131e-3, abs=1e-6)
    assert inertia == pytest.approx(mass * (0.09**2 + 0.09**2) / 12.0, rel=1e-12)
    np.testing.assert_allclose(centroid, 0.0, atol=1e-15)


def test_a_regular_hexagon_plate_has_five_twelfths_m_r_squared():
    radius = 0.0605
    outline = Outline.polygon(regular_polygon(6, radius, phase=-math.pi / 2))
    mass, centroid, inertia = plate_mass_properties(outline, THICKNESS, STEEL)
    # area 3 sqrt(3) / 2 R^2; polar moment about the centre (5 sqrt(3) / 8) R^4
    assert outline.area == pytest.approx(1.5 * math.sqrt(3.0) * radius**2, rel=1e-12)
    assert mass == pytest.approx(STEEL * THICKNESS * outline.area, rel=1e-12)
    assert inertia == pytest.approx(5.0 / 12.0 * mass * radius**2, rel=1e-12)
    assert inertia == pytest.approx(0.001497 * mass / 0.9827, rel=2e-3)  # the dataset's figure, scaled to this mass
    np.testing.assert_allclose(centroid, 0.0, atol=1e-15)


def test_an_ellipse_plate_is_m_a2_b2_over_4_and_its_48_gon_within_the_polygons_error():
    a, b = 0.0525, 0.0785
    ellipse = Outline.ellipse(a, b)
    mass, _, inertia = plate_mass_properties(ellipse, THICKNESS, STEEL)
    assert inertia == pytest.approx(mass * (a * a + b * b) / 4.0, rel=1e-12)
    assert mass == pytest.approx(STEEL * THICKNESS * math.pi * a * b, rel=1e-12)
    polygon = Outline.polygon(ellipse.convex_parts()[0])
    assert len(ellipse.convex_parts()[0]) == CONVEX_PART_RESOLUTION
    assert polygon.polar_moment() == pytest.approx(ellipse.polar_moment(), rel=5e-3)
    assert polygon.area == pytest.approx(ellipse.area, rel=5e-3)


def test_an_off_centre_polygon_has_its_centroid_and_parallel_axis_moment():
    square = np.array([[0.0, 0.0], [0.04, 0.0], [0.04, 0.02], [0.0, 0.02]])
    outline = Outline.polygon(square + [0.01, -0.03])
    np.testing.assert_allclose(outline.centroid, [0.03, -0.02], atol=1e-15)
    assert outline.polar_moment() == pytest.approx((0.04**2 + 0.02**2) / 12.0, rel=1e-12)
    xx, yy, xy = outline.second_moments()
    assert (xx, yy) == pytest.approx((0.04**2 / 12.0, 0.02**2 / 12.0), rel=1e-12)
    assert xy == pytest.approx(0.0, abs=1e-18)
    # an L shape has a product of inertia
    assert Outline.polygon(l_shape()).second_moments()[2] < 0.0
    assert outline.bounding_radius == pytest.approx(math.hypot(0.05, 0.03))


def test_plate_mass_properties_reject_non_positive_thickness_and_density():
    with pytest.raises(ValueError, match="thickness"):
        plate_mass_properties(Outline.disc(0.05), 0.0, STEEL)
    with pytest.raises(ValueError, match="density"):
        plate_mass_properties(Outline.disc(0.05), THICKNESS, -1.0)


# -- validation ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("vertices", "message"),
    [
        ([[0, 0], [1, 0]], "at least 3 distinct"),
        ([[0, 0], [1, 0], [1, 0], [0, 0]], "at least 3 distinct"),
        ([[0, 0], [1, 0], [2, 0]], "doubles back"),
        ([[0, 0], [1, 1], [1, 0], [0, 1]], "not simple"),
        ([[0, 0], [2, 0], [2, 2], [1, -1], [0, 2]], "not simple"),
        ([[0, 0], [1, 0], [float("nan"), 1]], r"vertices\[2\]"),
        ([[0, 0], [1, 0, 0], [0, 1]], r"vertices\[1\]"),
        ("square", "list of"),
    ],
)
def test_invalid_polygons_are_refused_naming_the_field(vertices, message):
    with pytest.raises(ValueError, match=f"^vertices.*{message}|^vertices\\[.*{message}|{message}"):
        Outline("polygon", vertices=vertices)


def test_polygons_are_normalised_counter_clockwise_without_repeats():
    clockwise = [[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]]
    outline = Outline("polygon", vertices=clockwise)
    assert len(outline.vertices) == 4
    assert shoelace(outline.boundary()) > 0.0
    assert outline.area == pytest.approx(1.0)


def test_other_kinds_validate_their_sizes():
    with pytest.raises(ValueError, match="^kind"):
        Outline("triangle")
    with pytest.raises(ValueError, match="^radius"):
        Outline("disc", radius=0.0)
    with pytest.raises(ValueError, match=r"^half_extents\[1\]"):
        Outline("ellipse", half_extents=(0.1, float("inf")))


def test_scene_errors_name_the_body_and_the_field():
    with pytest.raises(SceneError, match=r"^objects\[hex\]\.vertices: the polygon is not simple"):
        ObjectSpec("hex", shape="polygon", vertices=[[0, 0], [1, 1], [1, 0], [0, 1]])
    with pytest.raises(SceneError, match=r"^obstacles\[wall\]\.vertices: a polygon needs at least 3"):
        Obstacle("wall", shape="polygon", vertices=[[0, 0], [1, 0]])
    with pytest.raises(SceneError, match=r"^objects\[box\]\.vertices: only polygons"):
        ObjectSpec("box", shape="box", vertices=[[0, 0], [1, 0], [0, 1]])
    with pytest.raises(SceneError, match=r"^objects\[e\]\.half_extents\[0\]"):
        ObjectSpec("e", shape="ellipse", half_extents=(-0.1, 0.1))
    with pytest.raises(SceneError, match=r"objects\[l\]\.patches\[0\]: the region must lie inside"):
        # a patch across the L's notch: its corners are inside, the notch's corner is in it
        ObjectSpec("l", shape="polygon", vertices=l_shape().tolist(),
                   patches=[{"center": [0.04, 0.04], "half_extents": [0.02, 0.02], "mass": 0.1}])


def test_a_yaml_scene_reads_ellipses_and_polygons():
    scene = scene_from_dict({
        "name": "shapes",
        "objects": [
            {"name": "hex", "shape": "polygon", "vertices": regular_polygon(6, 0.06).tolist(), "pose": [0.1, 0, 0]},
            {"name": "egg", "shape": "ellipse", "half_extents": [0.05, 0.07], "pose": [-0.1, 0, 0]},
        ],
        "obstacles": [{"name": "wedge", "shape": "polygon", "vertices": [[0, 0], [0.1, 0], [0, 0.1]],
                       "pose": [0, 0.3, 0]}],
    })
    hexagon, egg = scene.objects
    assert hexagon.outline.kind == "polygon" and len(hexagon.vertices) == 6
    assert egg.outline.kind == "ellipse" and egg.bounding_radius == pytest.approx(0.07)
    assert egg.contains((0.0, 0.069)) and not egg.contains((0.04, 0.06))
    assert scene.obstacles[0].outline.area == pytest.approx(0.005)
    with pytest.raises(SceneError, match=r"objects\[0\]: unknown field\(s\) \['vertex'\]"):
        scene_from_dict({"name": "bad", "objects": [{"name": "x", "vertex": [[0, 0]]}]})


def test_cylinders_and_boxes_have_the_outlines_they_always_had():
    cylinder = ObjectSpec("c", radius=0.05)
    box = ObjectSpec("b", shape="box", half_extents=(0.03, 0.04))
    assert cylinder.outline == Outline.disc(0.05) and box.outline == Outline.rectangle(0.03, 0.04)
    assert box.bounding_radius == pytest.approx(0.05) and cylinder.bounding_radius == 0.05
    assert box.contains((0.03, -0.04)) and not box.contains((0.031, 0.0))


# -- convex parts --------------------------------------------------------------------------
def check_convex_parts_cover_exactly(outline, samples=20000, seed=0):
    parts = outline.convex_parts()
    for part in parts:
        edges = np.roll(part, -1, axis=0) - part
        turns = edges[:, 0] * np.roll(edges, -1, axis=0)[:, 1] - edges[:, 1] * np.roll(edges, -1, axis=0)[:, 0]
        assert np.all(turns > 0.0), "every part convex, counter-clockwise, without collinear vertices"
        assert np.all(outline.contains(part, tolerance=1e-12)), "every part's vertices are in the outline"
    assert sum(shoelace(part) for part in parts) == pytest.approx(outline.area, rel=1e-12)
    rng = np.random.default_rng(seed)
    radius = outline.bounding_radius
    points = rng.uniform(-radius, radius, (samples, 2))
    margin = 1e-9 * radius
    # points clearly inside the outline lie in exactly one part (parts meet only at their
    # edges); points clearly outside in none
    inside = outline.signed_distance(points) < -margin
    outside = outline.signed_distance(points) > margin
    counts = np.zeros(samples, dtype=int)
    for part in parts:
        counts += Outline.polygon(part).signed_distance(points) < -margin
    on_a_diagonal = np.zeros(samples, dtype=bool)
    for part in parts:
        on_a_diagonal |= np.abs(Outline.polygon(part).signed_distance(points)) <= margin
    assert np.all(counts[inside & ~on_a_diagonal] == 1)
    assert np.all(counts[outside] == 0)
    assert np.count_nonzero(inside) > samples // 10
    return parts


def test_an_l_shape_splits_into_two_convex_parts_that_cover_it_exactly():
    outline = Outline.polygon(l_shape())
    assert not outline.is_convex
    parts = check_convex_parts_cover_exactly(outline)
    assert len(parts) == 2


def test_a_star_splits_into_convex_parts_that_cover_it_exactly():
    outline = Outline.polygon(star())
    parts = check_convex_parts_cover_exactly(outline)
    assert 2 <= len(parts) <= 2 * 7 + 1  # Hertel-Mehlhorn: at most 2 r + 1 parts for r reflex vertices


def test_convex_outlines_are_one_part():
    hexagon = Outline.polygon(regular_polygon(6, 0.06))
    assert hexagon.is_convex and len(hexagon.convex_parts()) == 1
    np.testing.assert_array_equal(hexagon.convex_parts()[0], hexagon.boundary())
    ellipse = Outline.ellipse(0.05, 0.08)
    (part,) = ellipse.convex_parts()
    assert part.shape == (CONVEX_PART_RESOLUTION, 2)
    # inscribed, symmetric about both axes, a flat edge facing +x
    assert np.all(np.abs((part[:, 0] / 0.05) ** 2 + (part[:, 1] / 0.08) ** 2 - 1.0) < 1e-12)
    assert part[0, 0] == pytest.approx(part[-1, 0]) and part[0, 1] == pytest.approx(-part[-1, 1])


@pytest.mark.skipif(not SHARED_OUTLINES.exists(), reason=f"the MIT outlines are not at {SHARED_OUTLINES}")
def test_the_real_butter_outline_splits_into_convex_parts_that_cover_it_exactly():
    butter = Outline.polygon(np.load(SHARED_OUTLINES)["butter"])
    assert not butter.is_convex
    parts = check_convex_parts_cover_exactly(butter, samples=40000)
    assert len(parts) <= 2 * 22 + 1  # its 22 reflex vertices


# -- distances and support -----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["disc", "rectangle", "ellipse", "hexagon", "l_shape"])
def test_signed_distance_matches_a_dense_boundary_and_contains_its_sign(kind):
    outline = {
        "disc": Outline.disc(0.05), "rectangle": Outline.rectangle(0.03, 0.05),
        "ellipse": Outline.ellipse(0.03, 0.08), "hexagon": Outline.polygon(regular_polygon(6, 0.06)),
        "l_shape": Outline.polygon(l_shape() - 0.03),
    }[kind]
    rng = np.random.default_rng(1)
    points = rng.uniform(-0.1, 0.1, (150, 2))
    if kind in ("disc", "ellipse"):
        curve = outline.boundary(60000)
    else:
        polygon = outline.boundary()
        following = np.roll(polygon, -1, axis=0)
        fractions = np.linspace(0.0, 1.0, 5001)[:, None, None]
        curve = (polygon + fractions * (following - polygon)).reshape(-1, 2)
    dense = np.min(np.linalg.norm(points[:, None, :] - curve[None], axis=-1), axis=1)
    distance = outline.signed_distance(points)
    np.testing.assert_allclose(np.abs(distance), dense, atol=1e-5)  # the dense boundary's own error
    assert np.all(outline.contains(points) == (distance <= 0.0))


def test_extent_along_is_the_support_function():
    rng = np.random.default_rng(2)
    angles = rng.uniform(-math.pi, math.pi, 200)
    directions = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    for outline in (Outline.disc(0.05), Outline.rectangle(0.03, 0.05), Outline.ellipse(0.03, 0.08),
                    Outline.polygon(l_shape())):
        dense = outline.boundary(20000) if outline.kind in ("disc", "ellipse") else outline.boundary()
        expected = np.max(directions @ dense.T, axis=-1)
        np.testing.assert_allclose(outline.extent_along(directions), expected, atol=1e-9)
