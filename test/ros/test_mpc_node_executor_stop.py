"""The MPC node and the executor's latched stop (issue 17): when ``executor_status``
(diagnostic_msgs/DiagnosticStatus, transient local) reports ``stop_latched`` True, the
running goal ends with the executor's reason and the MPC sends no further motion; a status
whose stop was cleared lets goals run again. The plant and the node start-up are those of
``test_mpc_node``; the status is published by a test node as the executor publishes it
(:func:`parapush.nodes.conversions.report_to_status` of
:func:`parapush.execution.executor_diagnostics.executor_report`).
"""

from __future__ import annotations

import threading
import time

import rclpy
import test_mpc_node
from diagnostic_msgs.msg import DiagnosticStatus
from parareal_pushing.action import PushObject
from rclpy.qos import DurabilityPolicy, QoSProfile
from test_mpc_node import goal, start, wait

from parapush.execution.executor_diagnostics import CountsSnapshot, executor_report
from parapush.nodes.conversions import report_to_status

files = test_mpc_node.files  # the scene and planner files fixture

REASON = "pusher not following: 0.031 m from the commanded path for 0.20 s"


def executor_status(latch_reason: str | None) -> DiagnosticStatus:
    """What the executor publishes: a latched stop with ``latch_reason``, or ready (None)."""
    report = executor_report("executor", base_frame="base", counts=CountsSnapshot({}, {}, {}),
                             stop_latched=latch_reason is not None, latch_reason=latch_reason or "",
                             controls_queued=0, state_age_s=0.01, stale_state_timeout_s=0.1)
    return report_to_status(report)


def status_publisher(context, spinning):
    node = rclpy.create_node("fake_executor_status", context=context)
    spinning.add(node)
    return node.create_publisher(DiagnosticStatus, "executor_status",
                                 QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))


def test_latched_executor_stop_ends_the_goal_with_its_reason(ros_context, spinning, files):
    publisher = status_publisher(ros_context, spinning)
    publisher.publish(executor_status(None))
    node, plant, client = start(ros_context, spinning, files)
    try:
        first_feedback = threading.Event()
        latched_at = []

        def on_feedback(_message) -> None:
            if not first_feedback.is_set():
                first_feedback.set()
                latched_at.append(time.monotonic())
                publisher.publish(executor_status(REASON))  # the executor latched a stop mid-goal

        handle = wait(client.send_goal_async(goal(goal_x=0.3), feedback_callback=on_feedback))
        assert handle.accepted
        result = wait(handle.get_result_async(), timeout=30).result
        assert first_feedback.is_set()
        assert not result.success and result.outcome == PushObject.Result.OUTCOME_ERROR
        assert result.failure_reason == f"stop latched: {REASON}", result.failure_reason
        assert plant.stopped(), "the pusher was not stopped"
        with plant.lock:
            moving_after = [message for message, received in zip(plant.controls, plant.received, strict=True)
                            if received > latched_at[0] + 0.5 and len(message.controls)]
        assert not moving_after, "the MPC kept sending controls after the executor latched a stop"
        # the executor's stop is cleared (~/reset): the next goal runs
        publisher.publish(executor_status(None))
        deadline = time.monotonic() + 5.0
        while node.executor_stop() is not None:
            assert time.monotonic() < deadline, "the cleared status never reached the MPC"
            time.sleep(0.01)
        handle = wait(client.send_goal_async(goal()))
        result = wait(handle.get_result_async(), timeout=60).result
        assert result.success, result.failure_reason
    finally:
        node.close()


def test_a_stop_latched_before_the_goal_ends_it_without_motion(ros_context, spinning, files):
    publisher = status_publisher(ros_context, spinning)
    publisher.publish(executor_status(REASON))  # transient local: reaches the MPC when it starts
    node, plant, client = start(ros_context, spinning, files)
    try:
        deadline = time.monotonic() + 5.0
        while node.executor_stop() is None:
            assert time.monotonic() < deadline, "the latched status never reached the MPC"
            time.sleep(0.01)
        handle = wait(client.send_goal_async(goal()))
        result = wait(handle.get_result_async(), timeout=30).result
        assert not result.success and result.failure_reason == f"stop latched: {REASON}", result.failure_reason
        assert result.controls_executed == 0
        with plant.lock:
            assert all(len(message.controls) == 0 for message in plant.controls), "a control was sent"
    finally:
        node.close()
