"""Analytical coarse model (ISRR 2019 Eq 5-8) against hand-computed pushes.

Geometry used throughout: pusher radius 0.0145 m, cylinder radius 0.0512 m, so the pusher
centre touches a cylinder at a centre distance of 0.0657 m.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.physics.propagator import Propagator
from parapush.scene import scene_from_dict

R_TOUCH = 0.0145 + 0.0512


def scene_with(*objects):
    return scene_from_dict({
        "name": "coarse",
        "pusher": {"radius": 0.0145},
        "objects": [dict(obj, name=f"o{i}") for i, obj in enumerate(objects)],
    })


CYLINDER = {"shape": "cylinder", "radius": 0.0512, "pose": [0.0, 0.0, 0.0]}
BOX = {"shape": "box", "half_extents": [0.05, 0.03], "pose": [0.0, 0.0, 0.0]}


def push(model, pusher, poses, control, duration=1.0, twists=None):
    layout = model.layout
    states = layout.compose(np.array([pusher], float), np.array([poses], float), None,
                            None if twists is None else np.array([twists], float))
    out = model.propagate(states, np.array([control], float), np.array([duration]))[0]
    return out, layout


def test_is_a_propagator():
    assert isinstance(AnalyticalCoarseModel(scene_with(CYLINDER)), Propagator)


def test_no_contact_leaves_objects_unchanged_and_moves_the_pusher():
    model = AnalyticalCoarseModel(scene_with(CYLINDER))
    twist = [0.01, -0.02, 0.3]  # Eq 7: kept when there is no contact
    out, layout = push(model, (-0.2, 0.0), [(0.0, 0.0, 0.5)], (0.1, 0.0), twists=[twist])
    np.testing.assert_array_equal(out[layout.object_pose(0)], [0.0, 0.0, 0.5])
    np.testing.assert_array_equal(out[layout.object_twist(0)], twist)
    np.testing.assert_allclose(out[layout.pusher_position], [-0.1, 0.0])  # Eq 8
    np.testing.assert_array_equal(out[layout.pusher_velocity], [0.1, 0.0])


def test_central_push_translates_for_the_contact_fraction_without_rotation():
    model = AnalyticalCoarseModel(scene_with(CYLINDER), resolve_overlaps=False)
    # path -0.2 -> 0.0; contact from x = -0.0657: p_c = 0.0657 / 0.2 = 0.3285
    states = model.layout.compose(np.array([[-0.2, 0.0]]), np.array([[[0.0, 0.0, 0.0]]]))
    assert model.contact_fractions(states, [[0.2, 0.0]], [1.0])[0, 0] == pytest.approx(0.3285)
    out, layout = push(model, (-0.2, 0.0), [(0.0, 0.0, 0.0)], (0.2, 0.0))
    np.testing.assert_allclose(out[layout.object_pose(0)], [0.0657, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(out[layout.object_twist(0)], [0.2, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(out[layout.pusher_position], [0.0, 0.0], atol=1e-12)


def test_starting_in_contact_gives_full_fraction_and_pulling_away_gives_none():
    model = AnalyticalCoarseModel(scene_with(CYLINDER), resolve_overlaps=False)
    out, layout = push(model, (-R_TOUCH, 0.0), [(0.0, 0.0, 0.0)], (0.05, 0.0))
    np.testing.assert_allclose(out[layout.object_pose(0)], [0.05, 0.0, 0.0], atol=1e-12)  # p_c = 1
    out, layout = push(model, (-R_TOUCH, 0.0), [(0.0, 0.0, 0.0)], (-0.05, 0.0))
    np.testing.assert_array_equal(out[layout.object_pose(0)], [0.0, 0.0, 0.0])


@pytest.mark.parametrize("side", [-1.0, 1.0])
def test_side_push_rotates_with_the_hand_computed_rate(side):
    """Pusher line y = side * 0.03, u = (0.2, 0) for 1 s.

    Entry x = -sqrt(0.0657^2 - 0.03^2) = -0.0584508; p_c = 1 - (0.2 - 0.0584508) / 0.2.
    sin(theta) = -side * 0.03 / 0.0657 (r_c points from the contact to the centre);
    omega = 0.1 * 0.2 * sin(theta) / 0.0512. Below the centre (side = -1) it turns CCW.
    """
    model = AnalyticalCoarseModel(scene_with(CYLINDER), resolve_overlaps=False)
    entry_x = -math.sqrt(0.0657**2 - 0.03**2)
    fraction = 1.0 - (entry_x + 0.2) / 0.2
    omega = 0.1 * 0.2 * (-side * 0.03 / 0.0657) / 0.0512
    out, layout = push(model, (-0.2, side * 0.03), [(0.0, 0.0, 0.0)], (0.2, 0.0))
    x, y, yaw = out[layout.object_pose(0)]
    assert x == pytest.approx(0.2 * fraction, abs=1e-12)
    assert y == 0.0
    assert yaw == pytest.approx(omega * fraction, rel=1e-9)
    assert np.sign(yaw) == -side
    assert abs(omega * fraction) == pytest.approx(0.0521286, abs=1e-7)


def test_rotation_gain_and_clip():
    fast = AnalyticalCoarseModel(scene_with(CYLINDER), rotation_gain=0.2, resolve_overlaps=False)
    clipped = AnalyticalCoarseModel(scene_with(CYLINDER), angular_speed_limit=0.05, resolve_overlaps=False)
    base = AnalyticalCoarseModel(scene_with(CYLINDER), resolve_overlaps=False)
    args = ((-0.2, -0.03), [(0.0, 0.0, 0.0)], (0.2, 0.0))
    omega = push(base, *args)[0][base.layout.object_twist(0)][2]
    assert push(fast, *args)[0][fast.layout.object_twist(0)][2] == pytest.approx(2 * omega)
    assert push(clipped, *args)[0][clipped.layout.object_twist(0)][2] == pytest.approx(0.05)
    with pytest.raises(ValueError, match="rotation_gain"):
        AnalyticalCoarseModel(scene_with(CYLINDER), rotation_gain=-1.0)


def test_box_central_push_stops_at_the_inflated_face():
    model = AnalyticalCoarseModel(scene_with(BOX), resolve_overlaps=False)
    # face at x = -0.05 - 0.0145 = -0.0645: the box moves 0.0645 m, no rotation
    out, layout = push(model, (-0.2, 0.0), [(0.0, 0.0, 0.0)], (0.2, 0.0))
    np.testing.assert_allclose(out[layout.object_pose(0)], [0.0645, 0.0, 0.0], atol=1e-12)
    # turned by 90 degrees the box is 0.03 deep along x: it moves 0.0445 m
    out, layout = push(model, (-0.2, 0.0), [(0.0, 0.0, math.pi / 2)], (0.2, 0.0))
    np.testing.assert_allclose(out[layout.object_pose(0)], [0.0445, 0.0, math.pi / 2], atol=1e-12)


def test_box_corner_push_uses_the_rounded_corner_and_turns_clockwise():
    """Line y = 0.04 passes 0.01 above the corner (-0.05, 0.03): it meets the corner's
    disc of radius 0.0145 at x = -0.05 - sqrt(0.0145^2 - 0.01^2) = -0.0605. r_c = (0.05,
    -0.03), omega = 0.1 * cross((0.2, 0), r_c) / |r_c|^2 = 0.1 * -0.006 / 0.0034."""
    model = AnalyticalCoarseModel(scene_with(BOX), resolve_overlaps=False)
    out, layout = push(model, (-0.2, 0.04), [(0.0, 0.0, 0.0)], (0.2, 0.0))
    fraction = 0.0605 / 0.2
    omega = 0.1 * -0.006 / 0.0034
    np.testing.assert_allclose(out[layout.object_pose(0)], [0.0605, 0.0, omega * fraction], atol=1e-12)
    np.testing.assert_allclose(out[layout.object_twist(0)], [0.2, 0.0, omega], atol=1e-12)


def test_several_objects_each_pushed_from_its_own_entry_then_separated():
    scene = scene_with(CYLINDER, dict(CYLINDER, pose=[0.15, 0.0, 0.0]), dict(CYLINDER, pose=[0.0, 0.3, 0.0]))
    raw = AnalyticalCoarseModel(scene, resolve_overlaps=False)
    # u = (0.3, 0): A enters at -0.0657 (moves 0.1657), B at 0.15 - 0.0657 (moves 0.0157); C is missed.
    # Every object hit head-on ends touching the final pusher, so A and B coincide (raw model)
    out, layout = push(raw, (-0.2, 0.0), [(0, 0, 0), (0.15, 0, 0), (0, 0.3, 0)], (0.3, 0.0))
    np.testing.assert_allclose(layout.poses(out)[:, :2], [[0.1657, 0.0], [0.1657, 0.0], [0.0, 0.3]], atol=1e-12)


def test_projection_after_the_push_separates_the_objects_it_overlapped():
    """B sits 2 cm off the pusher line: entry x = 0.15 - sqrt(0.0657^2 - 0.02^2), so it moves
    0.3 - (entry + 0.2) = 0.0125777 m; A ends at x = 0.1657 as above, inside B."""
    scene = scene_with(CYLINDER, dict(CYLINDER, pose=[0.15, 0.02, 0.0]), dict(CYLINDER, pose=[0.0, 0.3, 0.0]))
    raw = AnalyticalCoarseModel(scene, resolve_overlaps=False)
    start = [(0, 0, 0), (0.15, 0.02, 0), (0, 0.3, 0)]
    out, layout = push(raw, (-0.2, 0.0), start, (0.3, 0.0))
    b_move = 0.3 - (0.15 - math.sqrt(0.0657**2 - 0.02**2) + 0.2)
    np.testing.assert_allclose(layout.poses(out)[1, :2], [0.15 + b_move, 0.02], atol=1e-12)
    projected = AnalyticalCoarseModel(scene)
    out, layout = push(projected, (-0.2, 0.0), start, (0.3, 0.0))
    poses = layout.poses(out)
    assert projected.projector.penetration(out[None])[0] <= 0.0
    assert poses[1, 1] > 0.02 and poses[0, 1] < 0.0  # B slides off to +y, A to -y
    np.testing.assert_array_equal(poses[2], [0.0, 0.3, 0.0])  # C never touched


def test_batch_rows_are_independent_and_nan_rows_stay_nan():
    model = AnalyticalCoarseModel(scene_with(CYLINDER))
    layout = model.layout
    rng = np.random.default_rng(11)
    states = layout.compose(rng.uniform(-0.3, -0.1, (6, 2)), np.zeros((6, 1, 3)))
    controls = rng.uniform(-0.1, 0.2, (6, 2))
    durations = rng.uniform(0.5, 2.0, 6)
    states[3] = np.nan
    batch = model.propagate(states, controls, durations)
    assert np.all(np.isnan(batch[3]))
    for row in (0, 1, 2, 4, 5):
        np.testing.assert_array_equal(batch[row], model.propagate(states[row:row + 1], controls[row:row + 1],
                                                                  durations[row:row + 1])[0])


# -- polygons and ellipses -------------------------------------------------------------------
HEX_R = 0.06
HEXAGON = {"shape": "polygon", "pose": [0.0, 0.0, 0.0],  # flat edges facing +-x, at the apothem
           "vertices": [[HEX_R * math.cos(a), HEX_R * math.sin(a)] for a in math.pi / 6 + math.pi / 3 * np.arange(6)]}
APOTHEM = HEX_R * math.cos(math.pi / 6)


def test_a_path_entering_a_hexagons_edge_gives_the_entry_fraction_and_a_straight_push():
    model = AnalyticalCoarseModel(scene_with(HEXAGON))
    start = -APOTHEM - 0.0145 - 0.02  # 2 cm before touching the flat -x edge
    out, layout = push(model, (start, 0.0), [[0.0, 0.0, 0.0]], (0.08, 0.0), duration=0.5)  # 4 cm path
    states = layout.compose(np.array([[start, 0.0]]), np.zeros((1, 1, 3)), None, None)
    fraction = model.contact_fractions(states, np.array([[0.08, 0.0]]), np.array([0.5]))
    assert fraction[0, 0] == pytest.approx(0.5)
    np.testing.assert_allclose(out[layout.object_pose(0)], [0.02, 0.0, 0.0], atol=1e-9)  # through the centre


def test_a_path_entering_a_hexagon_at_a_vertex_enters_its_rounded_corner():
    model = AnalyticalCoarseModel(scene_with(dict(HEXAGON, pose=[0.0, 0.0, math.pi / 6])))  # vertex at -x
    offset = 0.005  # in the vertex's normal cone: the pusher's disc meets the vertex itself
    start = -0.1
    states = model.layout.compose(np.array([[start, offset]]), np.array([[[0.0, 0.0, math.pi / 6]]]), None, None)
    fraction = model.contact_fractions(states, np.array([[0.1, 0.0]]), np.array([1.0]))
    touch = -HEX_R - math.sqrt(0.0145**2 - offset**2)  # pusher centre 0.0145 from the vertex
    assert fraction[0, 0] == pytest.approx(1.0 - (touch - start) / 0.1, rel=1e-9)
    out, layout = push(model, (start, offset), [[0.0, 0.0, math.pi / 6]], (0.1, 0.0))
    # the contact point is the vertex, on the centre line: Eq 6 gives no turn
    assert out[layout.object_pose(0)][2] == pytest.approx(math.pi / 6, abs=1e-12)
    # further off the line the pusher meets the upper edge, above the centre: clockwise
    out, layout = push(model, (start, 0.012), [[0.0, 0.0, math.pi / 6]], (0.1, 0.0))
    assert out[layout.object_pose(0)][2] < math.pi / 6 - 1e-3


def test_an_ellipse_is_pushed_from_its_48_gon():
    ellipse = {"shape": "ellipse", "half_extents": [0.05, 0.08], "pose": [0.0, 0.0, 0.0]}
    model = AnalyticalCoarseModel(scene_with(ellipse))
    edge = 0.05 * math.cos(math.pi / 48)  # the flat edge facing -x
    states = model.layout.compose(np.array([[-0.1, 0.0]]), np.zeros((1, 1, 3)), None, None)
    fraction = model.contact_fractions(states, np.array([[0.1, 0.0]]), np.array([1.0]))
    assert fraction[0, 0] == pytest.approx(1.0 - (0.1 - edge - 0.0145) / 0.1, rel=1e-9)
