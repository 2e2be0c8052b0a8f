"""FineSettings.object_tilt: with roll and pitch a box's table contacts share its weight as a
rigid body's do, so an off-centre push turns it as Coulomb friction with a quarter of the
weight on each corner predicts (an independent model: the differentiable grid model with four
cells at the corners); without them MuJoCo's solver shares the weight to resist the turn."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parapush.identification.cell_grid import CellGrid, OutlinePart
from parapush.identification.grid_model import GridSlidingModel
from parapush.physics.fine import FineModel
from parapush.physics.fine_settings import FineSettings
from parapush.scene import scene_from_dict

HALF_EXTENTS = (0.0545, 0.077)  # m, the benchmark box
MASS, SUPPORT_FRICTION, PUSHER_FRICTION = 0.8, 0.6, 0.45
PUSHER_RADIUS, SPEED, DURATION = 0.0145, 0.05, 1.5  # m, m/s, s


def box_scene(offset: float):
    """The box at the origin; the pusher 2 mm behind its -x face, ``offset`` m sideways of its centre."""
    return scene_from_dict({
        "name": "tilt",
        "table": {"length": 0.8, "width": 1.0, "friction": SUPPORT_FRICTION},
        "pusher": {"radius": PUSHER_RADIUS, "friction": PUSHER_FRICTION,
                   "position": [-HALF_EXTENTS[0] - PUSHER_RADIUS - 0.002, offset]},
        "objects": [{"name": "box", "shape": "box", "half_extents": list(HALF_EXTENTS), "height": 0.0245,
                     "mass": MASS, "friction": SUPPORT_FRICTION, "pose": [0.0, 0.0, 0.0]}],
    })


def fine_push(offset: float, tilt: bool) -> np.ndarray:
    """(3,) the box's pose after pushing along +x for DURATION s in the fine model."""
    model = FineModel(box_scene(offset), FineSettings(support="collider", object_tilt=tilt))
    start = model.layout.compose(np.array([model.scene.pusher.position]), np.zeros((1, 1, 3)))
    final = model.propagate(start, np.array([[SPEED, 0.0]]), np.array([DURATION]))[0]
    return final[model.layout.object_pose(0)]


def four_corner_push(offset: float) -> np.ndarray:
    """(3,) the same push in the differentiable Coulomb model with the weight on the four corners."""
    half_x, half_y = HALF_EXTENTS
    corners = np.array([[-half_x, -half_y], [half_x, -half_y], [-half_x, half_y], [half_x, half_y]])
    grid = CellGrid(parts=(OutlinePart(shape="box", half_extents=HALF_EXTENTS),), cell_size=0.01, centers=corners,
                    neighbours=np.zeros((0, 2), dtype=int))
    model = GridSlidingModel(grid, PUSHER_RADIUS)
    pusher = np.array([[-half_x - PUSHER_RADIUS - 0.002, offset]])
    poses, _ = model.rollout(np.zeros((1, 3)), np.zeros((1, 3)), pusher, np.array([[[SPEED, 0.0]]]), [DURATION],
                             np.full(4, MASS / 4), np.full(4, SUPPORT_FRICTION), PUSHER_FRICTION)
    return poses[0, -1].detach().numpy()


@pytest.fixture(scope="module")
def off_centre():
    offset = 0.03
    return {"tilt": fine_push(offset, True), "planar": fine_push(offset, False), "coulomb": four_corner_push(offset)}


def test_with_tilt_an_off_centre_push_turns_the_box_as_coulomb_friction_on_its_corners(off_centre):
    tilt, coulomb = off_centre["tilt"], off_centre["coulomb"]
    assert math.degrees(coulomb[2]) < -15.0  # it does turn (clockwise: pushed left of its centre's path)
    assert abs(math.degrees(tilt[2] - coulomb[2])) < 2.0
    assert np.linalg.norm(tilt[:2] - coulomb[:2]) < 0.003


def test_without_tilt_the_solver_shares_the_weight_to_resist_the_turn(off_centre):
    planar, tilt = off_centre["planar"], off_centre["tilt"]
    assert abs(planar[2]) < 0.5 * abs(tilt[2])


def test_a_centred_push_is_the_same_with_and_without_tilt():
    tilt, planar = fine_push(0.0, True), fine_push(0.0, False)
    assert np.linalg.norm(tilt[:2] - planar[:2]) < 0.0005
    assert abs(tilt[2]) < 1e-3 and abs(planar[2]) < 1e-3
    assert tilt[0] > 0.06  # pushed about SPEED * DURATION less the 2 mm gap


def test_the_planar_state_leaves_roll_and_pitch_out():
    model = FineModel(box_scene(0.0), FineSettings(support="collider", object_tilt=True))
    assert model.mj_model.nv == 2 + 6
    assert model.layout.dimension == 10
    assert model.mj_model.joint("object0_roll").qposadr[0] == model.mj_model.joint("object0_yaw").qposadr[0] + 1
