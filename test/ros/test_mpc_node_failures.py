"""The MPC node when things go wrong: the state stream stops, the prediction service is
absent or hangs, a second goal arrives while one runs, the node shuts down mid-goal.

Every case must end the goal with a result that says why, and leave the pusher stopped
(an empty ControlSequence on ``controls``). The plant, the files and the node start-up are
those of ``test_mpc_node``.
"""

from __future__ import annotations

import threading
import time

import pytest
import rclpy
import test_mpc_node
from parareal_pushing.action import PushObject
from parareal_pushing.srv import PredictTrajectory
from rclpy.parameter import Parameter
from test_mpc_node import goal, wait

from parapush.nodes.prediction_service import SERVICE_QOS, PredictionServiceNode

files = test_mpc_node.files  # the scene and planner files fixture


class InterruptiblePlant(test_mpc_node.Plant):
    """The test plant whose scene_state stream can be cut (a dead estimator)."""

    def __init__(self, context, scene):
        self.streaming = threading.Event()
        self.streaming.set()
        super().__init__(context, scene)

    def publish(self) -> None:
        if self.streaming.is_set():
            super().publish()


@pytest.fixture
def start(monkeypatch):
    monkeypatch.setattr(test_mpc_node, "Plant", InterruptiblePlant)
    return test_mpc_node.start


def assert_stopped(plant) -> None:
    assert plant.stopped(), "the pusher was not stopped"


def test_state_stream_lost_mid_goal_aborts_with_the_reason(ros_context, spinning, files, start):
    node, plant, client = start(ros_context, spinning, files, state_timeout=0.5)
    try:
        first_feedback = threading.Event()

        def on_feedback(_message) -> None:
            plant.streaming.clear()  # the estimator dies while the first control runs
            first_feedback.set()

        handle = wait(client.send_goal_async(goal(goal_x=0.3), feedback_callback=on_feedback))
        assert handle.accepted
        result = wait(handle.get_result_async(), timeout=30).result
        assert first_feedback.is_set()
        assert not result.success and result.outcome == PushObject.Result.OUTCOME_ERROR
        assert "no scene state on 'scene_state' within 0.5 s" in result.failure_reason, result.failure_reason
        assert result.controls_executed == 1
        assert_stopped(plant)
    finally:
        node.close()


def test_absent_prediction_service_aborts_with_the_reason(ros_context, spinning, files, start):
    node, plant, client = start(ros_context, spinning, files, prediction_source="service", service_timeout=0.5,
                                on_service_loss="abort")
    try:
        handle = wait(client.send_goal_async(goal()))
        assert handle.accepted
        result = wait(handle.get_result_async(), timeout=30).result
        assert not result.success and result.outcome == PushObject.Result.OUTCOME_ERROR
        assert "the service is not available within" in result.failure_reason, result.failure_reason
        assert result.controls_executed == 0
        with plant.lock:
            assert all(len(message.controls) == 0 for message in plant.controls), "a control was sent"
    finally:
        node.close()


def test_hung_prediction_service_times_out_and_aborts(ros_context, spinning, files, start):
    release = threading.Event()
    calls = []

    def never_answers(request, response):
        calls.append(request)
        release.wait(10)  # a service that accepted the call and hangs
        return response

    service_node = rclpy.create_node("hung_prediction_service", context=ros_context)
    service_node.create_service(PredictTrajectory, "predict_trajectory", never_answers, qos_profile=SERVICE_QOS)
    spinning.add(service_node)
    node, plant, client = start(ros_context, spinning, files, prediction_source="service", service_timeout=0.5,
                                on_service_loss="abort")
    try:
        handle = wait(client.send_goal_async(goal()))
        result = wait(handle.get_result_async(), timeout=30).result
        assert calls, "the MPC never called the service"
        assert not result.success and result.outcome == PushObject.Result.OUTCOME_ERROR
        # the per-call deadline is the re-plan budget: one control period (0.25 s) when pipelined
        assert "no answer within 0.25 s" in result.failure_reason, result.failure_reason
        assert result.controls_executed == 0
    finally:
        release.set()
        node.close()


def test_a_second_goal_while_one_runs_is_rejected_and_the_first_goes_on(ros_context, spinning, files, start):
    node, plant, client = start(ros_context, spinning, files)
    try:
        feedback = []
        first_feedback = threading.Event()

        def on_feedback(message) -> None:
            feedback.append(message)
            first_feedback.set()

        first = wait(client.send_goal_async(goal(), feedback_callback=on_feedback))
        assert first.accepted
        assert first_feedback.wait(30), "no feedback from the first goal within 30 s"  # it is running
        second = wait(client.send_goal_async(goal(goal_y=0.02)))
        assert not second.accepted, "a second goal was accepted while the first ran"
        result = wait(first.get_result_async()).result
        assert result.success, result.failure_reason  # the first goal was not disturbed
        assert result.controls_executed == len(feedback)
    finally:
        node.close()


def test_shutdown_mid_goal_stops_the_pusher_and_ends_the_goal(ros_context, spinning, files, start):
    node, plant, client = start(ros_context, spinning, files)
    first_feedback = threading.Event()
    handle = wait(client.send_goal_async(goal(goal_x=0.3), feedback_callback=lambda _: first_feedback.set()))
    assert handle.accepted and first_feedback.wait(30)
    node.close()  # what run_node does on SIGINT, while the executor still spins
    result = wait(handle.get_result_async(), timeout=30).result
    assert not result.success
    assert result.outcome == PushObject.Result.OUTCOME_CANCELED, (result.outcome, result.failure_reason)
    assert "the node is shutting down" in result.failure_reason, result.failure_reason
    assert_stopped(plant)


def test_lost_prediction_service_replans_with_a_local_engine(ros_context, spinning, files, start):
    """A service that hangs (as a killed one looks until DDS forgets it): the first call misses its
    deadline, the MPC says so in the feedback, re-plans with a local engine of the same model
    config, and the goal goes on to succeed."""
    release = threading.Event()
    service_node = rclpy.create_node("hung_prediction_service", context=ros_context)
    service_node.create_service(PredictTrajectory, "predict_trajectory", lambda request, response: (
        release.wait(10), response)[1], qos_profile=SERVICE_QOS)
    spinning.add(service_node)
    node, plant, client = start(ros_context, spinning, files, prediction_source="service", service_timeout=0.5)
    try:
        feedback = []
        handle = wait(client.send_goal_async(goal(), feedback_callback=lambda message: feedback.append(message)))
        result = wait(handle.get_result_async(), timeout=60).result
        assert result.success, result.failure_reason
        events = [message.feedback.event for message in feedback]
        assert "prediction service lost" in events[0] and "local engine" in events[0], events
        assert "no answer within 0.25 s" in events[0], events[0]
        assert not any("prediction service lost" in event for event in events[1:]), "reported twice"
    finally:
        release.set()
        node.close()


def test_waiting_for_a_lost_prediction_service_ends_the_goal_after_the_wait_limit(ros_context, spinning, files,
                                                                                  start):
    node, plant, client = start(ros_context, spinning, files, prediction_source="service", service_timeout=0.5,
                                on_service_loss="wait", service_wait_limit=1.0)
    try:
        handle = wait(client.send_goal_async(goal()))
        result = wait(handle.get_result_async(), timeout=30).result
        assert not result.success and result.outcome == PushObject.Result.OUTCOME_ERROR
        assert "no answer from the prediction service for 1 s" in result.failure_reason, result.failure_reason
        with plant.lock:
            assert all(len(message.controls) == 0 for message in plant.controls), "moved without a plan"
    finally:
        node.close()


def test_a_prediction_service_that_comes_back_is_waited_for(ros_context, spinning, files, start):
    node, plant, client = start(ros_context, spinning, files, prediction_source="service", service_timeout=0.5,
                                on_service_loss="wait", service_wait_limit=30.0)
    scene_path, _planner = files
    service = PredictionServiceNode(context=ros_context, parameter_overrides=[
        Parameter("scene_file", value=str(scene_path)), Parameter("model.name", value="coarse"),
        Parameter("model.coarse_model", value="analytical")])
    try:
        feedback = []
        handle = wait(client.send_goal_async(goal(), feedback_callback=lambda message: feedback.append(message)))
        time.sleep(1.5)  # the goal waits for the absent service meanwhile
        with plant.lock:
            assert all(len(message.controls) == 0 for message in plant.controls), "moved without a plan"
        spinning.add(service)
        result = wait(handle.get_result_async(), timeout=60).result
        assert result.success, result.failure_reason
        event = feedback[0].feedback.event
        assert "prediction service lost" in event and "waiting for it" in event and "answering again" in event, event
    finally:
        node.close()
