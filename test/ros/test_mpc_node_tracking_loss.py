"""The MPC node when the estimator loses a body mid-goal (issue 17): the goal pauses with the
pusher stopped, resumes when the body is tracked again (re-planning from the observation if
the body reappears elsewhere), and ends with a reason if the body stays lost longer than
``state_timeout``. The plant and the node start-up are those of ``test_mpc_node``; the plant
here marks the target untracked (``valid`` false) on request, as the estimator does for an
occluded body.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import test_mpc_node
from parareal_pushing.action import PushObject
from test_mpc_node import goal, wait

from parapush.nodes.conversions import state_to_msg

files = test_mpc_node.files  # the scene and planner files fixture


class OccludingPlant(test_mpc_node.Plant):
    """The test plant whose target can be hidden (published with ``valid`` false) and moved."""

    def __init__(self, context, scene):
        self.hidden = threading.Event()
        self.hidden_since: list[float] = []
        super().__init__(context, scene)

    def publish(self) -> None:
        if not self.hidden.is_set():
            super().publish()
            return
        with self.lock:  # the pusher stands where it is while the estimator is blind to the target
            self.velocity = self.stream.sample(time.monotonic()).velocity * 0.0
            valid = [name != self.scene.target for name in self.scene.object_names]
            message = state_to_msg(self.state, self.scene, stamp=self.node.get_clock().now().nanoseconds * 1e-9,
                                   object_valid=valid)
        self.publisher.publish(message)

    def hide(self) -> None:
        with self.lock:
            self.hidden_since.append(time.monotonic())
        self.hidden.set()

    def move_target(self, offset) -> None:
        """Bump the target by ``offset`` (2,) m (while hidden: the estimator does not see it)."""
        layout = self.scene.layout
        index = self.scene.object_names.index(self.scene.target)
        with self.lock:
            state = self.state.copy()
            state[layout.object_pose(index)][:2] += offset
            self.state = state


@pytest.fixture
def start(monkeypatch):
    monkeypatch.setattr(test_mpc_node, "Plant", OccludingPlant)
    return test_mpc_node.start


def stops_after(plant, moment: float) -> list[float]:
    with plant.lock:
        return [received for message, received in zip(plant.controls, plant.received, strict=True)
                if received >= moment and len(message.controls) == 0]


def test_target_untracked_pauses_the_goal_then_it_resumes_and_replans(ros_context, spinning, files, start):
    node, plant, client = start(ros_context, spinning, files, state_timeout=3.0)
    try:
        feedback = []

        def on_feedback(message) -> None:
            feedback.append(message.feedback)
            if len(feedback) == 2:
                plant.hide()

        handle = wait(client.send_goal_async(goal(goal_x=0.2), feedback_callback=on_feedback))
        assert handle.accepted
        deadline = time.monotonic() + 30
        while not plant.hidden_since:
            assert time.monotonic() < deadline, "no second feedback"
            time.sleep(0.01)
        hidden_at = plant.hidden_since[0]
        stops = stops_after(plant, hidden_at)
        while not stops and time.monotonic() < hidden_at + 2.5:  # within a control period and a margin
            time.sleep(0.01)
            stops = stops_after(plant, hidden_at)
        assert stops, "the pusher was not stopped within 2.5 s while the target was untracked"
        time.sleep(0.5)  # it stays stopped
        with plant.lock:
            moving = [received for message, received in zip(plant.controls, plant.received, strict=True)
                      if received > stops[0] and len(message.controls)]
        assert not moving, "the MPC moved the pusher while the target was untracked"
        plant.move_target(np.array([0.0, 0.02]))  # bumped while occluded: 20 mm sideways
        plant.hidden.clear()
        result = wait(handle.get_result_async(), timeout=60).result
        assert result.success, result.failure_reason
        events = " | ".join(message.event for message in feedback)
        assert "paused: objects[" in events and "is not tracked" in events, events
        assert "resumed after" in events, events
        assert result.replans_from_observation >= 1, "no re-plan from the observation after the target moved"
        print(f"paused {stops[0] - hidden_at:.3f} s after the target was lost; events: {events}")
    finally:
        node.close()


def test_target_untracked_longer_than_state_timeout_ends_the_goal(ros_context, spinning, files, start):
    node, plant, client = start(ros_context, spinning, files, state_timeout=0.5)
    try:
        handle = wait(client.send_goal_async(goal(goal_x=0.3), feedback_callback=lambda _: plant.hide()))
        assert handle.accepted
        result = wait(handle.get_result_async(), timeout=30).result
        assert not result.success and result.outcome == PushObject.Result.OUTCOME_ERROR
        assert "scene state unusable" in result.failure_reason and "is not tracked" in result.failure_reason, \
            result.failure_reason
        assert plant.stopped(), "the pusher was not stopped"
    finally:
        node.close()
