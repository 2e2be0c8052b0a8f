"""PushGoal: the push_object action's goal fields as typed values, checked against the scene (no ROS)."""

from __future__ import annotations

import math

import pytest
from test_planning_fixtures import tiny_scene

from parapush.planning.push_goal import PushGoal
from parapush.scene import GoalRegion
from parapush.scene.uncertainty import ParameterSpread

SCENE = tiny_scene(others=((0.0, 0.3),))
FIELDS = {"goal_x": 0.2, "goal_y": -0.1, "goal_radius": 0.04}  # the rest: the interface's "unset"


def test_unset_fields_become_none_and_the_goal_replaces_the_scenes_goal_and_target() -> None:
    goal = PushGoal.from_interface(SCENE, **FIELDS)
    assert (goal.planner, goal.model, goal.iterations, goal.max_controls) == (None, None, None, None)
    assert goal.scene.goal == GoalRegion(center=(0.2, -0.1), radius=0.04)
    assert goal.scene.target == "target" and goal.scene.objects == SCENE.objects
    assert SCENE.goal == GoalRegion(center=(0.15, 0.05), radius=0.02)  # the node's scene is unchanged


def test_set_fields_are_kept_typed() -> None:
    goal = PushGoal.from_interface(SCENE, target_object="other_0", max_controls=7, model="fine", iterations=0,
                                   planner="isrr2019", **FIELDS)
    assert goal.scene.target == "other_0"
    assert (goal.planner, goal.model, goal.iterations, goal.max_controls) == ("isrr2019", "fine", 0, 7)
    assert PushGoal.from_interface(SCENE, iterations=3, **FIELDS).iterations == 3


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"target_object": "ghost"}, r"target_object: unknown object 'ghost'; the scene has \['target', 'other_0'\]"),
        ({"goal_x": math.nan}, "goal_x: must be finite"),
        ({"goal_y": math.inf}, "goal_y: must be finite"),
        ({"goal_radius": math.nan}, "goal_radius: must be finite"),
        ({"goal_radius": 0.0}, "goal_radius: must be > 0, got 0.0"),
        ({"goal_x": 5.0}, r"goal_x, goal_y: \(5.0, -0.1\) is not on the table"),
        ({"model": "oracle"}, r"model: expected one of \['coarse', 'parareal', 'fine'\], got 'oracle'"),
        ({"iterations": -2}, "iterations: expected an integer >= 0, got -2"),
        ({"planner": "telepathy"}, "unknown planner preset 'telepathy'"),
        ({"uncertainty": [0.1, 0.1]}, r"uncertainty: expected 4 values \(mass, support_friction, pusher_friction, "
                                      r"com_offset\) or none, got 2"),
        ({"uncertainty": [1.5, 0.1, 0.0, 0.01]}, "uncertainty.mass: expected a finite number >= 0 and < 1"),
        ({"uncertainty": [0.1, 0.1, 0.0, math.nan]}, "uncertainty.com_offset"),
    ],
)
def test_an_invalid_field_is_a_value_error_naming_it(fields, message) -> None:
    with pytest.raises(ValueError, match=message):
        PushGoal.from_interface(SCENE, **{**FIELDS, **fields})


def test_typed_values_are_validated_too() -> None:
    assert PushGoal(scene=SCENE).scene is SCENE
    with pytest.raises(ValueError, match="max_controls: expected an integer >= 1, got 0"):
        PushGoal(scene=SCENE, max_controls=0)
    with pytest.raises(ValueError, match="iterations: expected an integer >= 0, got -1"):
        PushGoal(scene=SCENE, iterations=-1)
    with pytest.raises(TypeError, match="scene: expected Scene"):
        PushGoal(scene="tiny")


def test_robust_planning_fields_become_the_goal_s_planner_overrides() -> None:
    assert PushGoal.from_interface(SCENE, **FIELDS).planner_overrides() == {}  # 0 and "": the planner file's
    goal = PushGoal.from_interface(SCENE, risk_samples=4, risk="cvar", **FIELDS)
    assert (goal.risk_samples, goal.risk) == (4, "cvar")
    assert goal.planner_overrides() == {"robust": {"samples": 4, "risk": {"kind": "cvar"}}}
    assert PushGoal.from_interface(SCENE, risk="worst", **FIELDS).planner_overrides() == {
        "robust": {"risk": {"kind": "worst"}}}
    with pytest.raises(ValueError, match="risk: expected one of"):
        PushGoal.from_interface(SCENE, risk="median", **FIELDS)
    with pytest.raises(ValueError, match="risk_samples"):
        PushGoal.from_interface(SCENE, risk_samples=65, **FIELDS)


def test_the_goal_s_uncertainty_replaces_the_target_s_in_the_scene() -> None:
    goal = PushGoal.from_interface(SCENE, target_object="other_0", uncertainty=(0.1, 0.05, 0.0, 0.004), **FIELDS)
    spread = goal.scene.objects[goal.scene.object_index("other_0")].uncertainty
    assert spread == ParameterSpread(mass=0.1, support_friction=0.05, pusher_friction=0.0, com_offset=0.004)
    assert goal.scene.objects[goal.scene.object_index("target")] == SCENE.objects[SCENE.object_index("target")]
    assert PushGoal.from_interface(SCENE, uncertainty=(), **FIELDS).scene.objects == SCENE.objects  # empty: unset
