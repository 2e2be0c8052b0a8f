"""Feasibility projection (ISRR Eq 9) and the planar geometry under it, hand-checked."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parapush.physics.planar_geometry import (
    NO_HIT,
    disc_rectangle_penetration,
    rectangle_rectangle_penetration,
    segment_disc_entry,
    segment_rounded_rectangle_entry,
)
from parapush.physics.projection import FeasibilityProjector
from parapush.scene import scene_from_dict

CLEARANCE = 1e-7
CYLINDER = {"shape": "cylinder", "radius": 0.0512}
BOX = {"shape": "box", "half_extents": [0.05, 0.03]}


def projector_for(*objects, obstacles=()):
    scene = scene_from_dict({
        "name": "projection",
        "pusher": {"radius": 0.0145},
        "objects": [dict(obj, name=f"o{i}") for i, obj in enumerate(objects)],
        "obstacles": [dict(obs, name=f"b{i}") for i, obs in enumerate(obstacles)],
    })
    return FeasibilityProjector(scene, clearance=CLEARANCE)


def make_state(projector, pusher, poses, twists=None):
    layout = projector.layout
    twists = np.zeros((len(poses), 3)) if twists is None else np.array(twists, float)
    return layout.compose(np.array([pusher], float), np.array([poses], float), np.array([[0.01, 0.02]]),
                          twists[None])


# -- geometry ---------------------------------------------------------------------------------
def test_segment_disc_entry_hand_values():
    starts = np.array([[-1.0, 0.0], [-1.0, 0.6], [-1.0, 0.0], [0.5, 0.0], [0.5, 0.0], [-1.0, 0.0]])
    moves = np.array([[2.0, 0.0], [2.0, 0.0], [0.2, 0.0], [-1.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    entries = segment_disc_entry(starts, moves, np.zeros(2), 0.5)
    # enters at x = -0.5: s = 0.25; line y = 0.6 misses; too short; inside moving in: 0; inside
    # moving out: none; no motion: none
    np.testing.assert_array_equal(entries, [0.25, NO_HIT, NO_HIT, 0.0, NO_HIT, NO_HIT])


def test_segment_rounded_rectangle_entry_faces_and_corners():
    half = np.array([0.05, 0.03])
    starts = np.array([[-0.2, 0.0], [-0.2, 0.04], [-0.2, 0.05], [0.0, -0.2]])
    moves = np.array([[0.2, 0.0], [0.2, 0.0], [0.2, 0.0], [0.0, 0.4]])
    entries = segment_rounded_rectangle_entry(starts, moves, np.zeros((4, 2)), np.zeros(4), half, 0.0145)
    corner_x = -0.05 - math.sqrt(0.0145**2 - 0.01**2)
    np.testing.assert_allclose(entries[:2], [(0.2 - 0.0645) / 0.2, (corner_x + 0.2) / 0.2], atol=1e-12)
    assert entries[2] == NO_HIT  # passes 0.02 > 0.0145 above the box
    assert entries[3] == pytest.approx((0.2 - 0.0445) / 0.4)


def test_disc_rectangle_penetration_outside_and_inside():
    half = np.array([0.05, 0.03])
    discs = np.array([[0.0, 0.07], [0.06, 0.04], [0.04, 0.0]])
    depth, normal = disc_rectangle_penetration(discs, 0.0512, np.zeros((3, 2)), np.zeros(3), half)
    # above the face: 0.0512 - 0.04; beyond the corner: 0.0512 - |(0.01, 0.01)|; centre inside:
    # nearest face x = 0.05 at 0.01, depth 0.0512 + 0.01, the box leaves towards -x
    np.testing.assert_allclose(depth, [0.0112, 0.0512 - math.sqrt(2) * 0.01, 0.0612], atol=1e-12)
    np.testing.assert_allclose(normal, [[0, -1], [-math.sqrt(0.5), -math.sqrt(0.5)], [-1, 0]], atol=1e-12)


def test_rectangle_rectangle_penetration_separating_axes():
    half = np.array([0.05, 0.03])
    depth, normal = rectangle_rectangle_penetration(
        np.zeros((2, 2)), np.zeros(2), half, np.array([[0.09, 0.01], [0.09, 0.0]]),
        np.array([0.0, math.pi / 4]), np.array([0.03, 0.03]),
    )
    # a 0.03 square, aligned: along x 0.05 + 0.03 - 0.09 = -0.01, separated
    assert depth[0] == pytest.approx(-0.01)
    # the square turned 45 degrees reaches 0.03 sqrt(2) along x: overlap 0.05 + 0.0424264 - 0.09
    assert depth[1] == pytest.approx(0.05 + 0.03 * math.sqrt(2) - 0.09)
    np.testing.assert_allclose(normal[1], [1.0, 0.0], atol=1e-12)


# -- projection -------------------------------------------------------------------------------
def test_pusher_pushes_a_cylinder_out_along_the_centre_line_by_the_depth():
    projector = projector_for(CYLINDER)
    state = make_state(projector, (0.0, 0.0), [(0.03, 0.04, 0.7)], [[0.1, 0.2, 0.3]])
    out = projector.project(state)[0]
    # centre distance 0.05 < 0.0657: moved to 0.0657 along (0.6, 0.8); pusher, yaw, velocities kept
    np.testing.assert_allclose(out[2:4], [0.6 * 0.0657, 0.8 * 0.0657], atol=2 * CLEARANCE)
    assert math.hypot(*out[2:4]) == pytest.approx(0.0657 + CLEARANCE, abs=1e-12)
    np.testing.assert_array_equal(out[[0, 1, 4]], state[0, [0, 1, 4]])
    np.testing.assert_array_equal(out[5:], state[0, 5:])


def test_two_cylinders_each_move_half_the_depth():
    projector = projector_for(CYLINDER, CYLINDER)
    out = projector.project(make_state(projector, (0.0, -0.5), [(0.0, 0.0, 0.0), (0.1, 0.0, 0.0)]))[0]
    # 0.1024 needed, 0.1 given: 0.0012 each
    np.testing.assert_allclose(out[[2, 5]], [-0.0012, 0.1012], atol=CLEARANCE)
    np.testing.assert_array_equal(out[[3, 6]], [0.0, 0.0])


def test_cylinder_and_box_separate_along_the_face_normal():
    projector = projector_for(BOX, CYLINDER)
    out = projector.project(make_state(projector, (0.0, -0.5), [(0.0, 0.0, 0.0), (0.0, 0.07, 0.0)]))[0]
    # the disc is 0.04 from the face y = 0.03: depth 0.0112, 0.0056 each
    np.testing.assert_allclose(out[[2, 3, 5, 6]], [0.0, -0.0056, 0.0, 0.0756], atol=CLEARANCE)


def test_two_boxes_separate_along_the_axis_of_least_overlap():
    projector = projector_for(BOX, {"shape": "box", "half_extents": [0.03, 0.03]})
    poses = [(0.0, 0.0, 0.0), (0.09, 0.0, math.pi / 4)]
    out = projector.project(make_state(projector, (0.0, -0.5), poses))[0]
    half_depth = 0.5 * (0.05 + 0.03 * math.sqrt(2) - 0.09)
    np.testing.assert_allclose(out[[2, 3, 5, 6]], [-half_depth, 0.0, 0.09 + half_depth, 0.0], atol=CLEARANCE)
    assert out[7] == math.pi / 4  # orientations kept


def test_obstacle_is_fixed_and_the_object_leaves_it_entirely():
    projector = projector_for(CYLINDER, obstacles=[{"shape": "cylinder", "radius": 0.0375, "pose": [0, 0, 0]}])
    out = projector.project(make_state(projector, (0.5, 0.5), [(0.0, 0.08, 0.0)]))[0]
    np.testing.assert_allclose(out[2:4], [0.0, 0.0887], atol=2 * CLEARANCE)


def test_chain_pinned_by_the_pusher_moves_the_free_object_only():
    projector = projector_for(CYLINDER, CYLINDER)
    # A touches the pusher (0.0657 away); B overlaps A by 0.0024: only B can give way
    out = projector.project(make_state(projector, (0.0, 0.0), [(0.0657, 0.0, 0.0), (0.1657, 0.0, 0.0)]))[0]
    np.testing.assert_allclose(out[[2, 5]], [0.0657, 0.1681], atol=2 * CLEARANCE)


def test_separated_states_are_returned_bit_identical():
    projector = projector_for(CYLINDER, BOX)
    rng = np.random.default_rng(4)
    state = make_state(projector, (-0.3, 0.0), [(0.0, 0.0, 0.3), (0.0, 0.2, 1.1)], rng.normal(size=(2, 3)))
    touching = make_state(projector, (-0.0657, 0.0), [(0.0, 0.0, 0.3), (0.0, 0.2, 1.1)])
    batch = np.concatenate([state, touching, np.full_like(state, np.nan)])
    out = projector.project(batch)
    np.testing.assert_array_equal(out, batch)
    assert out is not batch


def test_projection_is_idempotent_and_reports_penetration():
    projector = projector_for(CYLINDER, CYLINDER, BOX)
    state = make_state(projector, (0.0, 0.0), [(0.05, 0.0, 0.0), (0.12, 0.03, 0.0), (0.1, -0.07, 0.2)])
    assert projector.penetration(state)[0] > 0.01
    once = projector.project(state)
    assert projector.penetration(once)[0] <= 0.0
    np.testing.assert_array_equal(projector.project(once), once)


def test_rejects_bad_arguments():
    projector = projector_for(CYLINDER)
    with pytest.raises(ValueError, match="states"):
        projector.project(np.zeros((2, 7)))
    with pytest.raises(ValueError, match="passes"):
        FeasibilityProjector(projector.scene, passes=0)


# -- polygons --------------------------------------------------------------------------------
HEX_R = 0.06
HEXAGON = {"shape": "polygon",
           "vertices": [[HEX_R * math.cos(a), HEX_R * math.sin(a)] for a in math.pi / 6 + math.pi / 3 * np.arange(6)]}
APOTHEM = HEX_R * math.cos(math.pi / 6)


def test_two_overlapping_hexagons_are_separated_by_half_the_depth_each():
    projector = projector_for(HEXAGON, HEXAGON)
    overlap = 0.004
    before = make_state(projector, (0.0, 0.5), [(0.0, 0.0, 0.0), (2 * APOTHEM - overlap, 0.001, 0.0)])
    assert projector.penetration(before)[0] == pytest.approx(overlap)
    after = projector.project(before)
    assert projector.penetration(after)[0] <= 0.0
    poses = projector.layout.poses(after)[0]
    np.testing.assert_allclose(poses[:, 0], [-overlap / 2, 2 * APOTHEM - overlap / 2], atol=1e-6)
    np.testing.assert_allclose(poses[:, 1:], [[0.0, 0.0], [0.001, 0.0]], atol=1e-12)


def test_overlapping_rotated_hexagons_and_a_non_convex_outline_end_separated():
    l_shape = {"shape": "polygon", "vertices": [[0, 0], [0.08, 0], [0.08, 0.03], [0.03, 0.03], [0.03, 0.09],
                                                [0, 0.09]]}
    projector = projector_for(HEXAGON, dict(HEXAGON), l_shape, obstacles=[dict(HEXAGON, pose=[0.3, 0.0, 0.2])])
    rng = np.random.default_rng(5)
    poses = rng.uniform([-0.05, -0.05, -math.pi], [0.05, 0.05, math.pi], (3, 3))
    poses[2, :2] += [0.05, 0.0]
    states = np.concatenate([make_state(projector, (0.5, 0.5), poses) for _ in range(1)])
    assert projector.penetration(states)[0] > 0.01
    after = FeasibilityProjector(projector.scene, passes=50, clearance=CLEARANCE).project(states)
    assert projector.penetration(after)[0] <= 1e-9


def test_a_pusher_inside_a_hexagons_edge_moves_it_along_the_edge_normal():
    projector = projector_for(HEXAGON)
    depth = 0.003
    before = make_state(projector, (-APOTHEM - 0.0145 + depth, 0.01), [(0.0, 0.0, 0.0)])
    after = projector.project(before)
    np.testing.assert_allclose(projector.layout.poses(after)[0, 0], [depth + CLEARANCE, 0.0, 0.0], atol=1e-9)


def test_clearances_to_polygon_obstacles_are_exact():
    from parapush.physics.planar_geometry import (
        disc_obstacle_clearance,
        object_obstacle_clearance,
        segment_obstacle_clearance,
    )
    from parapush.scene import ObjectSpec, Obstacle

    obstacle = Obstacle("hex", shape="polygon", vertices=HEXAGON["vertices"], pose=(0.0, 0.0, 0.0))
    assert disc_obstacle_clearance(np.array([APOTHEM + 0.05, 0.0]), 0.01, obstacle) == pytest.approx(0.04)
    crossing = segment_obstacle_clearance(np.array([[-0.2, 0.0]]), np.array([[0.2, 0.0]]), 0.01, obstacle)
    assert crossing[0] == pytest.approx(-0.01)
    hexagon = ObjectSpec("h", shape="polygon", vertices=HEXAGON["vertices"])
    gap = object_obstacle_clearance(hexagon, np.array([2 * APOTHEM + 0.02, 0.0, 0.0]), obstacle)
    assert gap == pytest.approx(0.02)
    assert object_obstacle_clearance(hexagon, np.array([2 * APOTHEM - 0.01, 0.0, 0.0]), obstacle) == 0.0
    ellipse = ObjectSpec("e", shape="ellipse", half_extents=(0.05, 0.08))
    edge = 0.05 * math.cos(math.pi / 48)  # the 48-gon's flat edge
    gap = object_obstacle_clearance(ellipse, np.array([APOTHEM + edge + 0.03, 0.0, 0.0]), obstacle)
    assert gap == pytest.approx(0.03)
    cylinder_obstacle = Obstacle("post", radius=0.02, pose=(0.0, 0.0, 0.0))
    assert object_obstacle_clearance(hexagon, np.array([APOTHEM + 0.03, 0.0, 0.0]), cylinder_obstacle) == \
        pytest.approx(0.01)
