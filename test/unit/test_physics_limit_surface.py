"""Quasi-static pushing with an ellipsoidal limit surface (parapush.physics.limit_surface) and the
analytical coarse model's ``rotation="limit_surface"``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.physics.limit_surface import (
    NO_PUSH,
    SLIDE,
    STICK,
    outline_contacts,
    push_outline,
    quasi_static_push,
    uniform_pressure_radius,
)
from parapush.physics.planar_geometry import cross, rotate
from parapush.scene import scene_from_dict
from parapush.scene.outline import Outline

C = 0.03  # limit surface radius used by the single-contact tests, m
PUSHER_RADIUS = 0.005


def grid_mean_distance(outline: Outline, spacing: float) -> float:
    """integral |r - centroid| dA / area on a grid of cell centres (the reference)."""
    half = outline.bounding_radius
    axis = np.arange(-half + 0.5 * spacing, half, spacing)
    points = np.stack(np.meshgrid(axis, axis), axis=-1).reshape(-1, 2)
    inside = points[outline.contains(points)]
    return float(np.mean(np.linalg.norm(inside - outline.centroid, axis=-1)))


# -- c ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("radius", [0.01, 0.0525, 0.3])
def test_c_of_a_disc_is_two_thirds_of_its_radius(radius):
    assert uniform_pressure_radius(Outline.disc(radius)) == pytest.approx(2.0 * radius / 3.0, rel=1e-12)
    assert uniform_pressure_radius(Outline.ellipse(radius, radius)) == pytest.approx(2.0 * radius / 3.0, rel=1e-9)
    polygon = Outline.polygon(Outline.disc(radius).boundary(512))  # inscribed 512-gon
    assert uniform_pressure_radius(polygon) == pytest.approx(2.0 * radius / 3.0, rel=1e-4)


@pytest.mark.parametrize("side", [0.09, 1.0])
def test_c_of_a_square_is_0_3826_of_its_side(side):
    square = Outline.rectangle(side / 2, side / 2)
    assert uniform_pressure_radius(square) == pytest.approx(0.3826 * side, rel=1e-2)
    assert uniform_pressure_radius(square) == pytest.approx((math.sqrt(2.0) + math.asinh(1.0)) / 6.0 * side, rel=1e-12)
    # a square polygon whose frame's origin is a corner: about its centroid all the same
    corner = Outline.polygon([[0.0, 0.0], [side, 0.0], [side, side], [0.0, side]])
    assert uniform_pressure_radius(corner) == pytest.approx(uniform_pressure_radius(square), rel=1e-12)


@pytest.mark.parametrize("outline", [
    Outline.ellipse(0.0525, 0.0785),
    Outline.rectangle(0.05, 0.02),
    Outline.polygon([[0.0, 0.0], [0.08, 0.0], [0.08, 0.03], [0.03, 0.03], [0.03, 0.07], [0.0, 0.07]]),  # an L
], ids=["ellipse", "rectangle", "L"])
def test_c_matches_a_fine_grid(outline):
    assert uniform_pressure_radius(outline) == pytest.approx(grid_mean_distance(outline, 2e-4), rel=1e-3)


def test_c_refuses_a_non_outline():
    with pytest.raises(TypeError, match="outline"):
        uniform_pressure_radius(0.05)


# -- one contact -------------------------------------------------------------------------------
def contact_matrix(contact, radius=C):
    rx, ry = contact
    return np.array([[1 + ry * ry / radius**2, -rx * ry / radius**2], [-rx * ry / radius**2, 1 + rx * rx / radius**2]])


def test_push_through_the_centroid_along_the_normal_translates_without_turning():
    response = quasi_static_push([-0.04, 0.0], [1.0, 0.0], [0.1, 0.0], C, 0.3)
    assert int(response.mode) == STICK
    np.testing.assert_allclose(response.twist, [0.1, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(response.contact_velocity, [0.1, 0.0], atol=1e-15)


@pytest.mark.parametrize("friction", [0.0, 0.25, 1.0])
def test_an_off_centre_push_turns_the_object_away_from_the_pusher(friction):
    below = quasi_static_push([-0.04, -0.02], [1.0, 0.0], [0.1, 0.0], C, friction)
    above = quasi_static_push([-0.04, 0.02], [1.0, 0.0], [0.1, 0.0], C, friction)
    assert below.twist[2] > 0.0 > above.twist[2]  # +x below the centroid: counter-clockwise
    # the centroid translates less than the pusher, along it
    assert 0.0 < below.twist[0] < 0.1


def test_the_twist_is_the_limit_surface_of_the_force():
    contact = np.array([-0.04, -0.015])
    response = quasi_static_push(contact, [1.0, 0.0], [0.1, 0.01], C, 0.5)
    force = response.force
    np.testing.assert_allclose(response.twist, [*force, (contact[0] * force[1] - contact[1] * force[0]) / C**2])
    np.testing.assert_allclose(response.contact_velocity, contact_matrix(contact) @ force)


@pytest.mark.parametrize("contact", [(-0.04, -0.02), (-0.03, 0.025), (-0.05, 0.0)])
@pytest.mark.parametrize("friction", [0.1, 0.25, 0.8])
@pytest.mark.parametrize("side", [1.0, -1.0])
def test_sticking_inside_the_motion_cone_and_sliding_just_outside(contact, friction, side):
    normal = np.array([1.0, 0.0])
    edge_force = rotate(normal, side * math.atan(friction))
    edge_motion = contact_matrix(contact) @ edge_force
    edge_motion = 0.1 * edge_motion / np.linalg.norm(edge_motion)
    inside = rotate(edge_motion, -side * 1e-3)
    outside = rotate(edge_motion, side * 1e-3)
    sticking = quasi_static_push(contact, normal, inside, C, friction)
    assert int(sticking.mode) == STICK
    np.testing.assert_allclose(sticking.contact_velocity, inside, atol=1e-14)  # moves with the pusher
    sliding = quasi_static_push(contact, normal, outside, C, friction)
    assert int(sliding.mode) == SLIDE
    # the force on the friction cone's edge on that side, the normal velocities equal
    assert abs(cross(sliding.force, edge_force)) < 1e-14
    assert sliding.force @ edge_force > 0.0
    assert sliding.contact_velocity @ normal == pytest.approx(outside @ normal, rel=1e-12)
    assert abs(cross(sliding.contact_velocity, edge_motion)) < 1e-14  # along the cone's edge
    # continuous across the boundary
    np.testing.assert_allclose(quasi_static_push(contact, normal, rotate(edge_motion, side * 1e-9), C, friction).twist,
                               quasi_static_push(contact, normal, rotate(edge_motion, -side * 1e-9), C, friction).twist,
                               atol=1e-8)


def test_far_outside_the_cone_the_pusher_slides_on_the_edge_on_its_side():
    plus = quasi_static_push([-0.04, 0.0], [1.0, 0.0], [0.05, 0.1], C, 0.25)  # pusher slides towards +y
    minus = quasi_static_push([-0.04, 0.0], [1.0, 0.0], [0.05, -0.1], C, 0.25)
    assert int(plus.mode) == int(minus.mode) == SLIDE
    assert plus.force[1] > 0.0 > minus.force[1]
    assert plus.force[1] / plus.force[0] == pytest.approx(0.25)
    assert plus.contact_velocity[0] == pytest.approx(0.05)


@pytest.mark.parametrize("velocity", [(0.1, 0.0), (0.1, 0.05), (0.05, -0.1), (0.1, 1e-9)])
def test_without_friction_the_force_is_along_the_normal(velocity):
    normal = rotate(np.array([1.0, 0.0]), 0.3)
    response = quasi_static_push([-0.04, -0.01], normal, velocity, C, 0.0)
    assert abs(cross(response.force, normal)) < 1e-15
    assert response.force @ normal > 0.0
    assert response.contact_velocity @ normal == pytest.approx(np.dot(velocity, normal), rel=1e-12)


@pytest.mark.parametrize("velocity", [(-0.1, 0.0), (0.0, 0.1), (-0.01, -0.1)])
def test_a_pusher_moving_away_or_along_does_not_push(velocity):
    response = quasi_static_push([-0.04, -0.01], [1.0, 0.0], velocity, C, 0.5)
    assert int(response.mode) == NO_PUSH
    np.testing.assert_array_equal(response.twist, [0.0, 0.0, 0.0])


def test_mirrored_pushes_give_mirrored_twists():
    contacts = np.array([[-0.04, -0.02], [-0.03, 0.01], [-0.05, -0.03]])
    velocities = np.array([[0.1, 0.0], [0.1, 0.03], [0.05, -0.1]])
    normals = np.array([[1.0, 0.0], rotate(np.array([1.0, 0.0]), 0.2), [1.0, 0.0]])
    mirror = np.array([1.0, -1.0])
    first = quasi_static_push(contacts, normals, velocities, C, 0.25)
    second = quasi_static_push(contacts * mirror, normals * mirror, velocities * mirror, C, 0.25)
    np.testing.assert_allclose(second.twist, first.twist * [1.0, -1.0, -1.0], atol=1e-15)
    np.testing.assert_array_equal(second.mode, first.mode)


def test_batched_equals_one_by_one():
    rng = np.random.default_rng(0)
    contacts = rng.uniform(-0.05, 0.05, (20, 2))
    normals = rotate(np.array([1.0, 0.0]), rng.uniform(-np.pi, np.pi, 20))
    velocities = rng.uniform(-0.1, 0.1, (20, 2))
    radii = rng.uniform(0.02, 0.04, 20)
    batch = quasi_static_push(contacts, normals, velocities, radii, 0.3)
    for row in range(20):
        single = quasi_static_push(contacts[row], normals[row], velocities[row], radii[row], 0.3)
        np.testing.assert_allclose(batch.twist[row], single.twist, rtol=1e-14, atol=1e-18)


def test_friction_is_validated():
    with pytest.raises(ValueError, match="friction"):
        quasi_static_push([-0.04, 0.0], [1.0, 0.0], [0.1, 0.0], C, -0.1)


# -- contacts on posed outlines ------------------------------------------------------------------
L_SHAPE = Outline.polygon([[0.0, 0.0], [0.08, 0.0], [0.08, 0.03], [0.03, 0.03], [0.03, 0.07], [0.0, 0.07]])


@pytest.mark.parametrize("outline", [Outline.disc(0.05), Outline.rectangle(0.05, 0.03), Outline.ellipse(0.0525, 0.0785),
                                     L_SHAPE], ids=["disc", "rectangle", "ellipse", "L"])
def test_outline_contacts_are_the_closest_boundary_points(outline):
    rng = np.random.default_rng(1)
    pose = np.array([0.1, -0.2, 0.7])
    angles = rng.uniform(-np.pi, np.pi, 200)
    local = outline.centroid + (outline.bounding_radius + rng.uniform(0.001, 0.02, 200))[:, None] * np.stack(
        [np.cos(angles), np.sin(angles)], axis=-1)
    points = pose[:2] + rotate(local, pose[2])
    contacts, normals, gaps = outline_contacts(points, pose[:2], pose[2], outline)
    back = rotate(contacts - pose[:2], -pose[2])
    np.testing.assert_allclose(outline.signed_distance(back), 0.0, atol=1e-9)  # on the boundary
    np.testing.assert_allclose(gaps, outline.signed_distance(local), atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(contacts - points, axis=-1), gaps, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(normals, axis=-1), 1.0)
    # into the object: a little past the contact along the normal is inside
    assert np.all(outline.contains(rotate(contacts + 1e-4 * normals - pose[:2], -pose[2])))


# -- pushes along a path -------------------------------------------------------------------------
def box_push(offset, friction=0.25, speed=0.1, duration=0.5, yaw=0.0):
    outline = Outline.rectangle(0.045, 0.045)
    start = np.array([[-0.045 - PUSHER_RADIUS, offset]])
    return push_outline(start, [[speed, 0.0]], [duration], [[0.0, 0.0, yaw]], outline, PUSHER_RADIUS, friction)


def test_a_centred_push_of_a_box_moves_it_with_the_pusher():
    poses, rates = box_push(0.0)
    np.testing.assert_allclose(poses, [[0.05, 0.0, 0.0]], atol=1e-15)
    np.testing.assert_allclose(rates, [[0.1, 0.0, 0.0]], atol=1e-15)


def test_off_centre_pushes_turn_the_box_away_and_mirror():
    below, _ = box_push(-0.02)
    above, _ = box_push(0.02)
    assert below[0, 2] > 0.1  # about 10 degrees over 50 mm
    np.testing.assert_allclose(above, below * [1.0, -1.0, -1.0], atol=1e-15)
    assert 0.0 < below[0, 0] < 0.05


@pytest.mark.parametrize("offset", [-0.03, 0.0, 0.02])
def test_the_pusher_stays_on_the_turning_box(offset):
    poses, _ = box_push(offset, duration=0.5)  # up to 35 degrees in 50 mm
    pusher = np.array([[-0.045 - PUSHER_RADIUS + 0.05, offset]])
    _, _, gaps = outline_contacts(pusher, poses[:, :2], poses[:, 2], Outline.rectangle(0.045, 0.045))
    assert abs(gaps[0] - PUSHER_RADIUS) < 1e-4  # one 5 mm substep's drift at most (second order in the substep)


def test_pushes_are_rate_independent():
    slow, slow_rates = box_push(-0.02, speed=0.05, duration=1.0)
    fast, fast_rates = box_push(-0.02, speed=0.1, duration=0.5)
    np.testing.assert_allclose(fast, slow, atol=1e-15)
    np.testing.assert_allclose(fast_rates, 2.0 * slow_rates, atol=1e-14)


def test_substeps_converge():
    outline = Outline.rectangle(0.045, 0.045)
    start = np.array([[-0.045 - PUSHER_RADIUS, -0.03]])
    results = [push_outline(start, [[0.1, 0.02]], [0.5], [[0.0, 0.0, 0.0]], outline, PUSHER_RADIUS, 0.25,
                            substep_travel=travel)[0][0] for travel in (0.002, 0.0001)]
    assert np.linalg.norm(results[0][:2] - results[1][:2]) < 5e-4
    assert abs(results[0][2] - results[1][2]) < math.radians(0.5)


def test_a_polygon_turns_about_its_centroid_not_its_frame_origin():
    # a square whose frame's origin is its corner: a push through the centroid only translates
    square = Outline.polygon([[0.0, 0.0], [0.09, 0.0], [0.09, 0.09], [0.0, 0.09]])
    start = np.array([[-PUSHER_RADIUS, 0.045]])
    poses, _ = push_outline(start, [[0.1, 0.0]], [0.5], [[0.0, 0.0, 0.0]], square, PUSHER_RADIUS, 0.25)
    np.testing.assert_allclose(poses, [[0.05, 0.0, 0.0]], atol=1e-12)
    # the same push below the centroid turns it as the centred box above
    start = np.array([[-PUSHER_RADIUS, 0.025]])
    poses, _ = push_outline(start, [[0.1, 0.0]], [0.5], [[0.0, 0.0, 0.0]], square, PUSHER_RADIUS, 0.25)
    centred, _ = box_push(-0.02)
    centroid = poses[0, :2] + rotate(np.array([0.045, 0.045]), poses[0, 2])
    np.testing.assert_allclose([*(centroid - 0.045), poses[0, 2]], centred[0], atol=1e-12)


def test_a_pusher_that_slides_off_a_corner_stops_pushing():
    # far off-centre with little friction: the pusher slides along the face and leaves it
    poses, rates = box_push(-0.044, friction=0.0, duration=2.0)
    assert np.all(rates == 0.0)
    assert poses[0, 0] < 0.2 - 0.01  # the pusher went 200 mm, the box far less


# -- the analytical coarse model --------------------------------------------------------------
def scene_with(*objects, friction=0.25):
    return scene_from_dict({
        "name": "limit_surface",
        "pusher": {"radius": PUSHER_RADIUS, "friction": friction},
        "objects": [dict(obj, name=f"o{i}") for i, obj in enumerate(objects)],
    })


BOX = {"shape": "box", "half_extents": [0.045, 0.045], "pose": [0.0, 0.0, 0.0]}
HEXAGON = {"shape": "polygon", "pose": [0.0, 0.0, 0.0],
           "vertices": [[0.0605 * math.cos(k * math.pi / 3), 0.0605 * math.sin(k * math.pi / 3)] for k in range(6)]}


def test_rotation_is_validated():
    with pytest.raises(ValueError, match="rotation"):
        AnalyticalCoarseModel(scene_with(BOX), rotation="lynch")
    with pytest.raises(ValueError, match="substep_travel"):
        AnalyticalCoarseModel(scene_with(BOX), rotation="limit_surface", substep_travel=0.0)


def random_states(model, count, seed):
    rng = np.random.default_rng(seed)
    layout = model.layout
    pusher = np.column_stack([rng.uniform(-0.2, -0.06, count), rng.uniform(-0.06, 0.06, count)])
    poses = np.zeros((count, layout.object_count, 3))
    poses[:, :, 0] = rng.uniform(-0.01, 0.01, (count, layout.object_count)) + 0.12 * np.arange(layout.object_count)
    poses[:, :, 2] = rng.uniform(-np.pi, np.pi, (count, layout.object_count))
    states = layout.compose(pusher, poses)
    controls = np.column_stack([rng.uniform(0.05, 0.1, count), rng.uniform(-0.03, 0.03, count)])
    return states, controls, rng.uniform(0.5, 3.0, count)


def test_isrr_stays_the_default():
    scene = scene_with(BOX, HEXAGON)
    states, controls, durations = random_states(AnalyticalCoarseModel(scene), 64, 2)
    np.testing.assert_array_equal(AnalyticalCoarseModel(scene).propagate(states, controls, durations),
                                  AnalyticalCoarseModel(scene, rotation="isrr").propagate(states, controls, durations))


def test_the_limit_surface_model_keeps_the_entry_and_the_pusher():
    scene = scene_with(BOX, HEXAGON)
    isrr = AnalyticalCoarseModel(scene, resolve_overlaps=False)
    model = AnalyticalCoarseModel(scene, rotation="limit_surface", resolve_overlaps=False)
    states, controls, durations = random_states(model, 64, 3)
    states[5] = np.nan
    ours, theirs = model.propagate(states, controls, durations), isrr.propagate(states, controls, durations)
    layout = model.layout
    assert np.all(np.isnan(ours[5]))
    np.testing.assert_array_equal(ours[:, layout.pusher_position], theirs[:, layout.pusher_position])
    moved = np.any(ours != states, axis=1)
    hit = isrr.contact_fractions(states, controls, durations) > 0.0
    for index in range(2):
        pose = layout.object_pose(index)
        untouched = ~hit[:, index] & ~np.isnan(states[:, 0])
        np.testing.assert_array_equal(ours[untouched, pose], states[untouched, pose])
    assert np.count_nonzero(moved) > 10


def test_the_limit_surface_model_pushes_a_box_quasi_statically():
    model = AnalyticalCoarseModel(scene_with(BOX), rotation="limit_surface", resolve_overlaps=False)
    layout = model.layout
    # pusher 30 mm before the box, 20 mm below its centre; 80 mm of travel, 50 mm in contact
    states = layout.compose(np.array([[-0.08, -0.02], [-0.08, 0.02]]), np.zeros((2, 1, 3)))
    out = model.propagate(states, [[0.1, 0.0], [0.1, 0.0]], [0.8, 0.8])
    expected, rates = box_push(-0.02)
    np.testing.assert_allclose(out[0, layout.object_pose(0)], expected[0], atol=1e-12)
    np.testing.assert_allclose(out[0, layout.object_twist(0)], rates[0], atol=1e-10)
    np.testing.assert_allclose(out[1, layout.object_pose(0)], expected[0] * [1.0, -1.0, -1.0], atol=1e-12)
