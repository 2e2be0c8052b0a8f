"""Live tuning (issue 31): the MPC node's cost weights and planner settings are writable
parameters, changed on the running node over real DDS as ``ros2 param set /mpc ...`` does
(here with rclpy's parameter client, the same SetParameters service).

A change applies from the running goal's next re-plan and its feedback's event reports it; a
value the settings refuse leaves the old one with a reason naming the parameter; a structural
setting (the horizon) says that it applies from the next goal, and does.
"""

from __future__ import annotations

import time

import pytest
import rclpy
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.parameter_client import AsyncParameterClient
from test_mpc_node import SCENE_DATA, goal, start, wait, write_files

from parapush.planning.presets import PRESETS

GOAL_X = 0.2  # m: far enough for ~8 controls of 0.25 s, so a change lands during the goal


@pytest.fixture
def files(tmp_path):
    return write_files(tmp_path, {**SCENE_DATA, "goal": {"center": [GOAL_X, 0.0], "radius": 0.03}})


@pytest.fixture
def parameters(ros_context, spinning):
    """An rclpy parameter client of ``/mpc`` (what ``ros2 param set /mpc ...`` calls)."""
    node = rclpy.create_node("tuner", context=ros_context)
    spinning.add(node)
    client = AsyncParameterClient(node, "mpc")
    yield client


def set_parameter(client, name, value):
    assert client.wait_for_services(timeout_sec=10.0)
    [result] = wait(client.set_parameters([Parameter(name, value=value)]), timeout=10.0).results
    return result


def get_parameter(client, name):
    [value] = wait(client.get_parameters([name]), timeout=10.0).values
    return parameter_value_to_python(value)


def send_goal(client, **fields):
    feedback = []
    handle = wait(client.send_goal_async(goal(**{"goal_x": GOAL_X, **fields}),
                                         feedback_callback=lambda message: feedback.append(message.feedback)))
    assert handle.accepted
    return handle, feedback


def first_feedback(feedback, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not feedback:
        assert time.monotonic() < deadline, "no feedback"
        time.sleep(0.005)


@pytest.mark.parametrize("planner", ["", "isrr2019"])  # "": the node's default (realtime, pipelined)
def test_a_cost_weight_changed_during_a_goal_is_used_from_the_next_plan(ros_context, spinning, files, parameters,
                                                                       planner):
    node, _plant, client = start(ros_context, spinning, files)
    try:
        handle, feedback = send_goal(client, planner=planner)
        first_feedback(feedback)
        changed = set_parameter(parameters, "costs.goal_distance.weight", 1000.0)
        assert changed.successful, changed.reason
        # (rclpy returns no reason with a success: the feedback's event and the description say when)
        assert set_parameter(parameters, "optimizer.horizon", 6).successful
        result = wait(handle.get_result_async(), timeout=120).result
        assert result.success, result.failure_reason
        events = [step.event for step in feedback]
        changes = [index for index, event in enumerate(events)
                   if "parameters changed: costs.goal_distance.weight 1.0 -> 1000.0 (from this re-plan)" in event]
        assert len(changes) == 1, events
        assert any("optimizer.horizon 4 -> 6 (applies from the next goal)" in event for event in events), events
        assert changes[0] >= 1  # set after the first feedback
        # the plan made after the change (a late plan's fallback may carry the event) weighs the goal
        # distance 1000x: its cost jumps (the target is still far from the goal: the goal term dominates)
        k = next(index for index in range(changes[0], len(feedback)) if not feedback[index].fallback)
        before = [step.cost for step in feedback[:k] if not step.fallback]
        assert feedback[k].cost > 20.0 * before[-1], [step.cost for step in feedback]
        # the running goal kept its horizon (4 controls: 5 predicted states)
        assert all(len(step.predicted_trajectory.states) == 5 for step in feedback if not step.fallback)
        assert get_parameter(parameters, "costs.goal_distance.weight") == 1000.0
        # the next goal (the puck is in the first one's goal: another one) plans 6 controls ahead
        handle, feedback = send_goal(client, planner=planner, max_controls=1, goal_y=0.15)
        wait(handle.get_result_async(), timeout=120)
        assert feedback and len(feedback[0].predicted_trajectory.states) == 7
        assert "parameters changed" not in feedback[0].event
    finally:
        node.close()


def test_refused_values_leave_the_old_ones_with_a_reason_naming_the_parameter(ros_context, spinning, files,
                                                                             parameters):
    node, _plant, _client = start(ros_context, spinning, files)
    try:
        # out of the declared range (the weight's own check: >= 0): rclpy's descriptor refuses it
        refused = set_parameter(parameters, "costs.smoothness.weight", -1.0)
        assert not refused.successful and "costs.smoothness.weight" in refused.reason
        # in the declared range but refused by OptimizerSettings (> 0): the node's callback refuses it
        refused = set_parameter(parameters, "optimizer.exploration_variance", 0.0)
        assert not refused.successful
        assert refused.reason.startswith("parameter 'optimizer.exploration_variance': "), refused.reason
        assert "> 0" in refused.reason
        assert get_parameter(parameters, "costs.smoothness.weight") == 1.0
        variance = PRESETS["realtime"].optimizer_overrides["exploration_variance"]  # the node's preset's
        assert get_parameter(parameters, "optimizer.exploration_variance") == pytest.approx(variance)
        assert node.tuning.value("optimizer.exploration_variance") == pytest.approx(variance)
        # the preset and the model stay read-only
        refused = set_parameter(parameters, "planner", "isrr2019")
        assert not refused.successful and "read-only" in refused.reason.lower()
        # descriptors: writable, with the settings' ranges
        described = wait(parameters.describe_parameters(["costs.smoothness.weight", "optimizer.samples"]),
                         timeout=10.0).descriptors
        assert [d.read_only for d in described] == [False, False]
        assert described[0].floating_point_range[0].from_value == 0.0
        assert described[1].integer_range[0].from_value == 1
        # each description says from when a change applies
        assert "applies from the next re-plan" in described[0].description
        [horizon] = wait(parameters.describe_parameters(["optimizer.horizon"]), timeout=10.0).descriptors
        assert "applies from the next goal" in horizon.description
        # the realtime preset's value is the initial one (samples 30 over the file's 12)
        assert get_parameter(parameters, "optimizer.samples") == 30
        accepted = set_parameter(parameters, "costs.smoothness.weight", 0.5)
        assert accepted.successful and get_parameter(parameters, "costs.smoothness.weight") == 0.5
    finally:
        node.close()
