"""The back-off plan (parapush.planning.back_off): straight away from the nearest body, turned
when that is blocked, never into another body or off the table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parapush.physics.planar_geometry import to_body_frame
from parapush.planning.back_off import BACK_OFF_STOP_REASON, BackOff
from parapush.planning.optimizer import OptimizerSettings
from parapush.scene import GoalRegion, ObjectSpec, Obstacle, Pusher, Scene, Table

SETTINGS = OptimizerSettings(horizon=4, control_duration=1.0, max_speed=0.1)
PUSHER_RADIUS = 0.0145


def scene_with(objects, obstacles=(), pusher=(-0.2, 0.0)) -> Scene:
    return Scene(
        name="back_off", table=Table(length=0.8, width=1.0), pusher=Pusher(position=pusher),
        objects=tuple(objects), obstacles=tuple(obstacles), goal=GoalRegion(center=(0.25, 0.0), radius=0.05),
        target=objects[0].name,
    )


def state_of(scene: Scene, pusher, poses=None) -> np.ndarray:
    poses = [spec.pose for spec in scene.objects] if poses is None else poses
    return scene.layout.compose(np.array(pusher, dtype=float), np.array(poses, dtype=float))


def gap(scene: Scene, state: np.ndarray, index: int) -> float:
    """m between the pusher disc and object ``index`` in ``state``."""
    pose = scene.layout.poses(state[None])[0, index]
    local = to_body_frame(state[scene.layout.pusher_position], pose[:2], pose[2])
    return float(scene.objects[index].outline.signed_distance(local)) - PUSHER_RADIUS


def test_a_pusher_touching_a_cylinder_backs_straight_away_from_its_centre() -> None:
    target = ObjectSpec(name="target", pose=(0.0, 0.0, 0.0))
    scene = scene_with([target])
    touching = (-0.0512 - PUSHER_RADIUS) * np.array([math.cos(0.7), math.sin(0.7)])
    control = BackOff(scene, 0.02).control(state_of(scene, touching), SETTINGS)
    np.testing.assert_allclose(control, 0.02 * touching / np.linalg.norm(touching), atol=1e-6)


def test_a_pusher_inside_a_box_leaves_it_through_the_nearest_side_not_through_the_post_behind() -> None:
    # the box jammed against a post on its +x side; the pusher's centre 1.4 cm inside its -x side
    box = ObjectSpec(name="box", shape="box", pose=(-0.073, 0.0, 0.0))
    post = Obstacle(name="post", radius=0.0375, pose=(0.0165, 0.0, 0.0))
    scene = scene_with([box], [post])
    state = state_of(scene, (-0.073 - 0.0545 + 0.014, 0.004))
    back_off = BackOff(scene, 0.02)
    np.testing.assert_allclose(back_off.direction(state), [-1.0, 0.0], atol=1e-6)
    plan = back_off.plan(state, SETTINGS)
    assert plan.stop_reason == BACK_OFF_STOP_REASON and math.isnan(plan.cost) and plan.iterations == 0
    np.testing.assert_allclose(plan.controls[0], [-0.02, 0.0], atol=1e-6)
    np.testing.assert_array_equal(plan.controls[1:], 0.0)
    end = plan.trajectory[1]
    assert gap(scene, end, 0) > gap(scene, state, 0) + 0.019
    # kinematic: the objects stay, the pusher stays after the first control
    poses = plan.trajectory[:, scene.layout.object_poses]
    np.testing.assert_array_equal(poses, np.broadcast_to(state[scene.layout.object_poses], poses.shape))
    np.testing.assert_array_equal(plan.trajectory[2:], np.repeat(end[None], SETTINGS.horizon - 1, axis=0))


def test_an_object_behind_the_pusher_turns_the_back_off_aside_without_touching_it() -> None:
    target = ObjectSpec(name="target", pose=(0.0, 0.0, 0.0))
    # another cylinder 1.5 cm behind the pusher, straight on the line away from the target
    pusher_x = -0.0512 - PUSHER_RADIUS
    behind = ObjectSpec(name="behind", pose=(pusher_x - PUSHER_RADIUS - 0.015 - 0.0512, 0.0, 0.0))
    scene = scene_with([target, behind], pusher=(pusher_x, 0.0))
    state = state_of(scene, (pusher_x, 0.0))
    control = BackOff(scene, 0.02).control(state, SETTINGS)
    assert np.linalg.norm(control) == pytest.approx(0.02)
    assert control[0] < 0.0 and abs(control[1]) > 0.0  # turned: away from the target, not straight
    end = state.copy()
    end[scene.layout.pusher_position] += control * SETTINGS.control_duration
    assert gap(scene, end, 1) >= 0.0 and gap(scene, end, 0) > gap(scene, state, 0)


def test_a_pusher_at_the_table_edge_backs_off_along_it() -> None:
    target = ObjectSpec(name="target", pose=(-0.4 + 2 * PUSHER_RADIUS + 0.0512, 0.0, 0.0))
    pusher = (-0.4 + PUSHER_RADIUS, 0.0)  # touching the target and the table's -x edge
    scene = scene_with([target], pusher=pusher)
    control = BackOff(scene, 0.02).control(state_of(scene, pusher), SETTINGS)
    assert control[0] == pytest.approx(0.0, abs=1e-9) and abs(control[1]) == pytest.approx(0.02)


def test_a_pusher_boxed_in_with_no_clear_direction_stands_still() -> None:
    # the target at +x, the table's edge at -x, two more cylinders touching it at +y and -y
    pusher = (-0.4 + PUSHER_RADIUS, 0.0)
    target = ObjectSpec(name="target", pose=(-0.4 + 2 * PUSHER_RADIUS + 0.0512, 0.0, 0.0))
    sides = [ObjectSpec(name=f"side_{sign}", pose=(pusher[0], sign * (PUSHER_RADIUS + 0.0512), 0.0))
             for sign in (1, -1)]
    scene = scene_with([target, *sides], pusher=pusher)
    np.testing.assert_array_equal(BackOff(scene, 0.02).control(state_of(scene, pusher), SETTINGS), [0.0, 0.0])


def test_the_back_off_is_capped_by_the_speed_limit() -> None:
    target = ObjectSpec(name="target", pose=(0.0, 0.0, 0.0))
    scene = scene_with([target], pusher=(-0.0512 - PUSHER_RADIUS, 0.0))
    slow = OptimizerSettings(horizon=4, control_duration=0.5, max_speed=0.01)
    control = BackOff(scene, 0.02).control(state_of(scene, (-0.0512 - PUSHER_RADIUS, 0.0)), slow)
    np.testing.assert_allclose(control, [-0.01, 0.0], atol=1e-9)


@pytest.mark.parametrize("distance", [0.0, -0.01, math.nan, True, "0.02"])
def test_a_distance_that_is_not_positive_is_refused_by_name(distance) -> None:
    scene = scene_with([ObjectSpec(name="target", pose=(0.0, 0.0, 0.0))])
    with pytest.raises(ValueError, match="distance"):
        BackOff(scene, distance)


def test_the_realtime_planner_plans_again_once_the_pusher_has_backed_off_a_box_jammed_against_a_post() -> None:
    """The state a box-obstacle run ended ERROR in, as found by a search over jammed states: the
    box pressed against the post, the pusher's centre 4 cm inside the box (the projector cannot
    free a body wedged between the pusher and an obstacle). Every corrected elite of the realtime
    planner fails from it (the fine model's stability check); one back-off, and it plans. No time
    budget: the same searches on any machine."""
    import dataclasses

    from parapush.physics.projection import FeasibilityProjector
    from parapush.planning import AllPredictionsFailedError
    from parapush.planning.stack_planner import PlannerSources, build_planner

    box = ObjectSpec(name="box", shape="box", pose=(-0.2, 0.0, 0.0))
    post = Obstacle(name="post", radius=0.0375, pose=(0.0165, -0.0226, 0.0))
    scene = Scene(name="jammed", table=Table(length=0.8, width=1.0), pusher=Pusher(position=(-0.28, 0.0)),
                  objects=(box,), obstacles=(post,), goal=GoalRegion(center=(0.1953, -0.0614), radius=0.05),
                  target="box")
    projector = FeasibilityProjector(scene)
    jammed = projector.project(state_of(scene, (-0.10881, -0.00263), [(-0.09557, -0.00474, 0.06777)])[None])[0]
    assert projector.penetration(jammed[None])[0] > 0.03  # still inside: the box is pinned by the post
    with build_planner(scene, PlannerSources.load(), seed=0) as built:
        planner = built.planner
        planner.retune(dataclasses.replace(planner.settings, time_budget=None), planner.multifidelity)
        controls = np.zeros((planner.settings.horizon, 2))
        with pytest.raises(AllPredictionsFailedError, match="no corrected elite could be predicted"):
            planner.optimize(jammed, controls, built.model, built.loop.cost)
        backed_off = built.loop.back_off.plan(jammed, planner.settings).trajectory[1]
        plan = planner.optimize(projector.project(backed_off[None])[0], controls, built.model, built.loop.cost)
    assert np.isfinite(plan.cost) and np.all(np.isfinite(plan.trajectory))
