"""Issue 17: one fault injected mid-goal into the whole stack, each run as a user would run it:
``python -m parapush.programs.demo --fault NAME`` on test_demo's short scene and planner.

Each test prints the measured time to a safe stop and the goal's outcome (from the demo's
``metrics.json``), asserts the outcome README.md states for the fault (SUCCESS for
``prediction_service_killed``, ``pusher_untracked``, ``target_untracked`` and ``natnet_loss``;
ERROR with the executor's latched reason for ``gripper_fault`` and ``arm_fault``), and checks
that the MCAP recording of the faulted run is complete and readable with the
``mcap``/``mcap_ros2`` readers (not the project's code).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from test_demo import demo_command, describe

from node_exits import unclean_exits

pytestmark = pytest.mark.slow


def run_fault(tmp_path: Path, fault: str, *extra: str) -> tuple[dict, Path, subprocess.CompletedProcess]:
    """The demo with ``--fault fault``; returns (metrics, run folder, completed process)."""
    out = tmp_path / "run"
    # The executor's first Modbus requests to the simulated gripper, which is still loading its
    # world, timed out at the default 0.25 s on the loaded CI machine (2 of 8 runs: the executor
    # exits 3 at start-up); a longer request timeout does not delay the fault detection (polled).
    command = [*demo_command(tmp_path, out), "--fault", fault, "--no-video",
               "--param", "executor.gripper.request_timeout=1.0", *extra]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=240, env=dict(os.environ))
    metrics_path = out / "metrics.json"
    assert metrics_path.is_file(), describe(completed, out)
    metrics = json.loads(metrics_path.read_text())
    entry = metrics["fault"]
    assert entry["name"] == fault and entry["injected"], (entry, describe(completed, out))
    print(f"\n{fault}: {entry['detail']}; first zero arm command {entry['first_zero_twist_after_s']} s after the "
          f"injection, the zero that ended the motion {entry['stop_twist_after_s']} s; executor stop received "
          f"{entry['executor_stop_after_s']} s ({entry['executor_stop_reason'] or '-'}); time to safe stop "
          f"{entry['time_to_safe_stop_s']} s; outcome {metrics['outcome']} ({metrics.get('failure_reason') or '-'}); "
          f"{metrics.get('controls_executed')} controls, task {metrics.get('task_time_s')} s")
    return metrics, out, completed


def recorded(out: Path) -> dict[str, list[tuple[float, object]]]:
    """{topic: [(log time s, decoded)]}: reading the whole MCAP also checks it is complete."""
    messages: dict[str, list[tuple[float, object]]] = {}
    with (out / "recording.mcap").open("rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        assert reader.get_summary() is not None, "the MCAP has no summary (not closed)"
        for _schema, channel, message, decoded in reader.iter_decoded_messages():
            messages.setdefault(channel.topic, []).append((message.log_time * 1e-9, decoded))
    assert {"/scene_state", "/controls", "/servo_node/delta_twist_cmds"} <= set(messages), sorted(messages)
    return messages


def is_zero(twist) -> bool:
    return twist.twist.linear.x == 0.0 and twist.twist.linear.y == 0.0 and twist.twist.linear.z == 0.0


def assert_success(metrics: dict, completed: subprocess.CompletedProcess, out: Path) -> None:
    """The goal ended SUCCESS (what README.md states for the faults the stack rides out)."""
    assert metrics["outcome"] == "SUCCESS", \
        (metrics["outcome"], metrics.get("failure_reason"), describe(completed, out))


def clean_exit(metrics: dict, out: Path) -> None:
    """Every node exited 0, or -2 (SIGINT: the fault that stops one)."""
    assert not (unclean := unclean_exits(metrics["node_exit_codes"], out / "logs", clean=(0, -2))), unclean


def test_prediction_service_killed_mid_goal(tmp_path):
    metrics, out, completed = run_fault(tmp_path, "prediction_service_killed")
    assert_success(metrics, completed, out)
    assert "prediction service lost" in completed.stdout and "local engine" in completed.stdout, \
        completed.stdout[-3000:]  # it re-planned with a local engine
    recorded(out)


def test_pusher_untracked_for_half_a_second(tmp_path):
    metrics, out, completed = run_fault(tmp_path, "pusher_untracked",
                                        "--param", "executor.limits.stale_state_timeout=0.1",  # the robot's
                                        "--param", "state_estimator.stale_timeout=0.1")  # profile values
    messages = recorded(out)
    states = messages["/scene_state"]
    injected = metrics["fault"]["injected_at_unix_s"]  # the MCAP's log times are wall-clock too
    lost = [moment for moment, state in states if not state.pusher.valid and moment >= injected]
    assert lost, "the estimator never marked the pusher untracked"
    last_seen = max(moment for moment, state in states if state.pusher.valid and moment < lost[0])
    recovered = min([moment for moment, state in states if state.pusher.valid and moment > lost[0]] or [lost[-1]])
    twists = messages["/servo_node/delta_twist_cmds"]
    before = [twist for moment, twist in twists if moment <= last_seen]
    moving = bool(before) and not is_zero(before[-1])  # the executor publishes on change: the last one holds
    zero = [moment for moment, twist in twists if moment > last_seen and is_zero(twist)]
    to_zero = (zero[0] - last_seen if zero else float("inf")) if moving else 0.0
    late = [moment - last_seen for moment, twist in twists
            if last_seen + 0.15 < moment < recovered and not is_zero(twist)]
    print(f"pusher lost: the estimator's last valid state {last_seen - injected:.3f} s after the mocap lost it, "
          f"untracked for {recovered - lost[0]:.3f} s; the pusher was {'moving' if moving else 'at rest'}; zero "
          f"arm command {to_zero:.3f} s after the last valid state")
    assert to_zero <= 0.15, to_zero
    assert not late, f"non-zero arm commands while the pusher was untracked, at {late} s"
    assert_success(metrics, completed, out)


def test_target_untracked_for_three_seconds(tmp_path):
    metrics, out, completed = run_fault(tmp_path, "target_untracked")
    recorded(out)
    assert "paused:" in completed.stdout and "resumed after" in completed.stdout, completed.stdout[-3000:]
    assert_success(metrics, completed, out)


def test_natnet_loss_for_the_whole_goal(tmp_path):
    metrics, out, completed = run_fault(tmp_path, "natnet_loss")
    recorded(out)
    assert_success(metrics, completed, out)


@pytest.mark.parametrize(("fault", "named"), [("gripper_fault", "gripper"), ("arm_fault", "follow")])
def test_actuator_fault_stops_the_pusher_and_names_the_fault(tmp_path, fault, named):
    metrics, out, completed = run_fault(tmp_path, fault)
    recorded(out)
    entry = metrics["fault"]
    assert entry["executor_stop_after_s"] is not None, (entry, describe(completed, out))
    # the executor zeroes the command at its latch (its first zero command's stamp); the demo hears
    # of the latch later (executor_status has no stamp): the stop is within 200 ms of that
    assert entry["stop_twist_after_s"] is not None, entry
    assert entry["stop_twist_after_s"] <= entry["executor_stop_after_s"] + 0.2, entry
    assert entry["last_motion_after_executor_stop_s"] is None, entry  # never moved again
    # the goal ends ERROR with the executor's latched reason (the MPC's result carries it unchanged)
    assert metrics["outcome"] == "ERROR", (metrics["outcome"], metrics["failure_reason"])
    assert metrics["failure_reason"] == entry["executor_stop_reason"], (metrics["failure_reason"], entry)
    assert named in metrics["failure_reason"].lower(), metrics["failure_reason"]
    clean_exit(metrics, out)
