"""In-stack real-time benchmark: PushObject goals against the whole stack, as users run it.

Brings the graph's ``sim`` profile up exactly as ``bash scripts/run demo`` does
(:func:`parapush.programs.bringup.isolated_bringup`: simulated driver, state estimator, prediction
service, identification, MPC, executor, visualizer as configured in ``config/graph.yaml``, on a
domain and device ports of their own) plus the demo's in-process MCAP recorder (its topics, to a
temporary folder), sends ``PushObject`` goals with the MPC node's defaults (planner, model,
controls) and reports per scene:

- success with its 95 % Wilson interval;
- the re-plan wall times (each control's feedback ``planning_time``), pooled over the scene's
  runs: p50 and p95 (s);
- the waiting share: the time the pusher stood still waiting for a plan (result
  ``waiting_time``) over the task time (``total_time``), summed over the runs;
- late plans per run: the result's ``fallbacks`` (controls run as a late plan's fallback);
- CPU seconds per task second, per node and in total: each node's process and its descendants
  (the prediction service's workers), ``utime + stime`` of ``/proc/<pid>/stat`` (with the
  children they reaped) read before and after each goal; ``bench`` is this process (its goal
  client and the recorder). The busy processes of ``--cpu-hogs`` are not counted.

One stack per scene runs several goals: between two goals the world is reset
(``/sim_driver/reset_world``) and the next goal waits until the estimator's ``/scene_state``
shows every body back at the scene file's pose (valid, within 5 mm / 0.05 rad, for 0.5 s);
after a goal that did not succeed, a latched executor stop is cleared (``/executor/reset``); a
stack that failed (a node out of restarts, no answer) is brought up again for the next goal.

Scenes: the graph's default scene and ``NEW_SCENES`` scenes drawn by
``bench/make_benchmark_scenes.py``'s generators (obstacle and clutter, alternately) with the
NEW seed ``SCENE_SEED`` (``--seed``; the committed scenes use 2019, 2026, 2027 and 2029),
written to a temporary folder. Runs: ``FULL_RUNS`` (``--quick``: ``QUICK_RUNS``) goals per
scene, ``--runs`` for all. ``--cpu-hogs N`` starts N busy processes (one per core) beside the
stack for the whole bench: the overload measurement (default scene only, ``OVERLOAD_RUNS``
goals), written as ``stack_realtime_overload.json``.

Timing: the bench takes ``/tmp/parapush-timing.lock`` (flock; waits while another timing bench
holds it), prints the load average at start and end and stores both.

    bash scripts/run bench stack_realtime --quick        # bench/results/stack_realtime.json
    bash scripts/run bench stack_realtime                # the same, FULL_RUNS per scene
    bash scripts/run bench stack_realtime --cpu-hogs 2   # bench/results/stack_realtime_overload.json
    bash scripts/run bench stack_realtime --quick --reference   # + bench/reference/stack_realtime_quick.json
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference as bench_reference  # noqa: E402
from make_benchmark_scenes import clutter_scene, obstacle_scene, scene_yaml  # noqa: E402
from parareal_common import RESULTS, bench_arguments, environment, format_table, wilson_interval  # noqa: E402

BENCH = "stack_realtime"
SCENE_SEED = 2030
"""Generator seed of the drawn scenes (new: the committed scenes use 2019, 2026, 2027, 2029)."""
NEW_SCENES = 4
"""Scenes drawn per bench: obstacle 1, clutter 1, obstacle 2, clutter 2, ..."""
FULL_RUNS = {"default": 20, "drawn": 10}
QUICK_RUNS = {"default": 20, "drawn": 3}
OVERLOAD_RUNS = 5
LOCK_FILE = Path("/tmp/parapush-timing.lock")
POSE_TOLERANCE = 0.005
"""m: a body counts as back at its initial position within this."""
YAW_TOLERANCE = 0.05
"""rad: ... and its initial yaw within this."""
PRE_RESET_PAUSE = 1.0
"""s between a goal's result and the world reset."""
RESET_SETTLE = 0.5
"""s the reset pose must be observed before the next goal (the estimator's filter restarts on the jump)."""
STALE_OR_LOST = ("stale", "not tracked", "lost", "no answer")
"""Failure-reason fragments of the failures the overload run must not show."""
ROW_FIELDS = ("scene", "runs", "successes", "success_ci95", "replan_p50_s", "replan_p95_s", "waiting_share",
              "late_plans_per_run", "cpu_s_per_task_s")
"""The fields every summary row has (the issue's schema); rows carry a few more."""
STACK_ERROR = "STACK_ERROR"


# -- statistics (pure) --------------------------------------------------------------------------------
@dataclass(frozen=True)
class GoalRecord:
    """One PushObject goal's outcome and costs.

    Attributes:
        scene: the scene's name.
        index: the goal's index within its scene (0-based).
        outcome: the result's outcome name (``SUCCESS``, ``MAX_CONTROLS``, ...) or ``STACK_ERROR``
            (the stack did not answer; no result).
        success: the target reached the goal.
        failure_reason: the result's reason (or the stack error), empty on success.
        controls: controls executed.
        task_time_s: s, goal acceptance to result (the result's ``total_time``; 0 without a result).
        waiting_time_s: s the pusher stood still waiting for a plan.
        planning_time_s: s, summed re-plan wall time (overlaps the motion when pipelined).
        execution_time_s: s the pusher moved.
        replan_times_s: s, each control's re-plan wall time (feedback ``planning_time``).
        fallbacks: controls run as a late plan's fallback.
        replan_p50_s: s, the node's own median of this goal's re-plan times.
        replan_p95_s: s, its 95th percentile.
        final_distance_m: m, target centre to goal centre at the end (NaN without a result).
        cpu_s: CPU s per node (process and descendants) over the goal, ``bench`` for this process.
        wall_s: s, goal sent to result, as this process saw it.
        reset_s: s from the previous goal's result to this goal (pause, world reset, reset pose observed
            and settled, a latched stop cleared; 0: the first goal of a stack).
        load_before: the 1-minute load average when the goal was sent.
        events: the feedback's non-empty ``event`` sentences.
        executor_stop_cleared: the reason of the executor's latched stop cleared before this goal, else "".
        coarse_model: the coarse model the goal's plans were searched with (the result's
            ``coarse_model``; "" without a result).
    """

    scene: str
    index: int
    outcome: str
    success: bool
    failure_reason: str = ""
    controls: int = 0
    task_time_s: float = 0.0
    waiting_time_s: float = 0.0
    planning_time_s: float = 0.0
    execution_time_s: float = 0.0
    replan_times_s: tuple[float, ...] = ()
    fallbacks: int = 0
    replan_p50_s: float = math.nan
    replan_p95_s: float = math.nan
    final_distance_m: float = math.nan
    cpu_s: Mapping[str, float] = field(default_factory=dict)
    wall_s: float = 0.0
    reset_s: float = 0.0
    load_before: float = 0.0
    events: tuple[str, ...] = ()
    executor_stop_cleared: str = ""
    coarse_model: str = ""

    def __post_init__(self) -> None:
        if not self.scene:
            raise ValueError("scene: must not be empty")
        if self.index < 0:
            raise ValueError(f"index: must be >= 0, got {self.index}")
        if not self.outcome:
            raise ValueError("outcome: must not be empty")
        if self.success and self.outcome != "SUCCESS":
            raise ValueError(f"success: true with outcome {self.outcome!r}")
        for name in ("controls", "fallbacks"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be >= 0, got {getattr(self, name)}")
        for name in ("task_time_s", "waiting_time_s", "planning_time_s", "execution_time_s", "wall_s", "reset_s",
                     "load_before"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"{name}: must be finite and >= 0 s, got {value}")
        object.__setattr__(self, "replan_times_s", tuple(float(value) for value in self.replan_times_s))
        if not all(math.isfinite(value) and value >= 0.0 for value in self.replan_times_s):
            raise ValueError(f"replan_times_s: must be finite and >= 0 s, got {self.replan_times_s}")
        cpu = {str(name): float(value) for name, value in self.cpu_s.items()}
        if not all(math.isfinite(value) and value >= 0.0 for value in cpu.values()):
            raise ValueError(f"cpu_s: must be finite and >= 0 s per node, got {cpu}")
        object.__setattr__(self, "cpu_s", cpu)
        object.__setattr__(self, "events", tuple(self.events))

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["replan_times_s"] = list(self.replan_times_s)
        data["events"] = list(self.events)
        return _finite_or_none(data)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GoalRecord:
        values = {name: (math.nan if value is None else value) for name, value in data.items()}
        return cls(**{**values, "replan_times_s": tuple(data["replan_times_s"]), "events": tuple(data["events"])})


def summary_row(scene: str, records: Sequence[GoalRecord]) -> dict[str, Any]:
    """One summary row over ``records`` (pooled: re-plan times, waiting and task times, CPU)."""
    runs = len(records)
    if runs == 0:
        raise ValueError(f"records: no runs for scene {scene!r}")
    successes = sum(record.success for record in records)
    replans = np.array([value for record in records for value in record.replan_times_s], dtype=float)
    task = sum(record.task_time_s for record in records)
    nodes = sorted({name for record in records for name in record.cpu_s})
    cpu = {name: sum(record.cpu_s.get(name, 0.0) for record in records) / task if task > 0 else math.nan
           for name in nodes}
    cpu["total"] = sum(cpu.values()) if task > 0 else math.nan
    outcomes: dict[str, int] = {}
    coarse_models: dict[str, int] = {}
    for record in records:
        outcomes[record.outcome] = outcomes.get(record.outcome, 0) + 1
        if record.coarse_model:
            coarse_models[record.coarse_model] = coarse_models.get(record.coarse_model, 0) + 1
    succeeded = [record.task_time_s for record in records if record.success]
    return {
        "scene": scene,
        "runs": runs,
        "successes": int(successes),
        "success_ci95": list(wilson_interval(int(successes), runs)),
        "replan_p50_s": float(np.percentile(replans, 50)) if replans.size else math.nan,
        "replan_p95_s": float(np.percentile(replans, 95)) if replans.size else math.nan,
        "waiting_share": sum(record.waiting_time_s for record in records) / task if task > 0 else math.nan,
        "late_plans_per_run": sum(record.fallbacks for record in records) / runs,
        "cpu_s_per_task_s": cpu,
        "replans": int(replans.size),
        "task_time_mean_s": task / runs,
        "task_time_success_mean_s": float(np.mean(succeeded)) if succeeded else math.nan,
        "waiting_time_mean_s": sum(record.waiting_time_s for record in records) / runs,
        "outcomes": outcomes,
        "coarse_models": coarse_models,
        "stale_or_lost_failures": sum(
            1 for record in records
            if not record.success and any(text in record.failure_reason.lower() for text in STALE_OR_LOST)),
    }


def summarize(records: Sequence[GoalRecord]) -> list[dict[str, Any]]:
    """One row per scene (in order of first appearance), then the ``all`` row (every run pooled)."""
    scenes = list(dict.fromkeys(record.scene for record in records))
    if "all" in scenes:
        raise ValueError("records: a scene may not be named 'all' (the pooled row)")
    rows = [summary_row(scene, [record for record in records if record.scene == scene]) for scene in scenes]
    if records:
        rows.append(summary_row("all", records))
    return rows


def check_summary(rows: Sequence[Mapping[str, Any]]) -> None:
    """Raise ValueError unless ``rows`` follow the schema: the issue's fields, one ``all`` row last."""
    if not rows or rows[-1].get("scene") != "all":
        raise ValueError("summary: expected one row per scene and an 'all' row last")
    for row in rows:
        missing = [name for name in ROW_FIELDS if name not in row]
        if missing:
            raise ValueError(f"summary row {row.get('scene')!r}: missing {missing}")
        low, high = row["success_ci95"]
        if row["runs"] < 1 or not 0 <= row["successes"] <= row["runs"]:
            raise ValueError(f"summary row {row['scene']!r}: successes {row['successes']} of {row['runs']} runs")
        if not (low is None or (0.0 <= low <= row["successes"] / row["runs"] <= high <= 1.0)):
            raise ValueError(f"summary row {row['scene']!r}: success_ci95 {row['success_ci95']}")
        if "total" not in row["cpu_s_per_task_s"]:
            raise ValueError(f"summary row {row['scene']!r}: cpu_s_per_task_s has no 'total'")
    if sum(row["runs"] for row in rows[:-1]) != rows[-1]["runs"]:
        raise ValueError("summary: the 'all' row's runs are not the scenes' sum")


def readme_figures(rows: Sequence[Mapping[str, Any]], minutes: float, loads: Sequence[float]) -> dict[str, float]:
    """The README's figures: per row (``<scene>_<figure>``; ``all_`` pooled) successes, runs,
    replan_p50_s, replan_p95_s, waiting_share, late_plans_per_run, cpu_total (CPU s per task s),
    task_time_mean_s; the bench's length in minutes and the load average's range."""
    figures: dict[str, float] = {}
    for row in rows:
        for name in ("successes", "runs", "replan_p50_s", "replan_p95_s", "waiting_share", "late_plans_per_run",
                     "task_time_mean_s", "stale_or_lost_failures"):
            value = row[name]
            if value is not None and math.isfinite(value):
                figures[f"{row['scene']}_{name}"] = value
        total = row["cpu_s_per_task_s"].get("total")
        if total is not None and math.isfinite(total):
            figures[f"{row['scene']}_cpu_total"] = total
    figures.update(benchmark_minutes=minutes, load_min=min(loads), load_max=max(loads))
    return figures


def _finite_or_none(value: Any) -> Any:
    """``value`` with NaN and infinities as None (valid JSON)."""
    if isinstance(value, dict):
        return {str(key): _finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(item) for item in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def table(rows: Sequence[Mapping[str, Any]], nodes: Sequence[str]) -> str:
    headers = ["scene", "success", "95% CI", "replan p50 s", "p95 s", "waiting", "late/run", "task s",
               *[f"cpu {name}" for name in nodes], "cpu total"]

    def number(value: float | None, text: str) -> str:
        return "-" if value is None or not math.isfinite(value) else text.format(value)

    body = []
    for row in rows:
        low, high = row["success_ci95"]
        cpu = row["cpu_s_per_task_s"]
        body.append([
            row["scene"], f"{row['successes']}/{row['runs']}",
            "-" if low is None or not math.isfinite(low) else f"{100 * low:.0f}-{100 * high:.0f}%",
            number(row["replan_p50_s"], "{:.3f}"), number(row["replan_p95_s"], "{:.3f}"),
            number(row["waiting_share"], "{:.1%}"), f"{row['late_plans_per_run']:.2f}",
            f"{row['task_time_mean_s']:.1f}",
            *[number(cpu.get(name, math.nan), "{:.2f}") for name in nodes], number(cpu["total"], "{:.2f}"),
        ])
    return format_table(headers, body)


def at_pose(state: np.ndarray, reference: np.ndarray, layout) -> bool:
    """Every body of ``state`` within ``POSE_TOLERANCE`` (m) and ``YAW_TOLERANCE`` (rad) of ``reference``
    (two states of ``layout``, a :class:`parapush.scene.state.StateLayout`; velocities ignored)."""
    from parapush.scene.state import wrap_angle

    error = np.asarray(state, dtype=float) - np.asarray(reference, dtype=float)
    poses = layout.poses(error)
    return bool(np.all(np.abs(error[layout.pusher_position]) <= POSE_TOLERANCE)
                and np.all(np.abs(poses[:, :2]) <= POSE_TOLERANCE)
                and np.all(np.abs(wrap_angle(poses[:, 2])) <= YAW_TOLERANCE))


# -- process CPU (pure parsing, /proc reading) -----------------------------------------------------------
def parse_stat(text: str) -> tuple[int, int, int]:
    """(pid, parent pid, CPU clock ticks) of a ``/proc/<pid>/stat`` line: utime + stime + cutime +
    cstime (its own and its reaped children's). The command name may hold spaces and parentheses."""
    head, separator, tail = text.rpartition(")")
    if not separator:
        raise ValueError(f"text: not a /proc/<pid>/stat line: {text[:80]!r}")
    fields = tail.split()
    if len(fields) < 15:
        raise ValueError(f"text: too few fields after the command name: {text[:80]!r}")
    pid = int(head.split("(", 1)[0])
    # fields[0] is the state (field 3); utime..cstime are fields 14-17
    return pid, int(fields[1]), sum(int(value) for value in fields[11:15])


def tree_ticks(stats: Mapping[int, tuple[int, int]], root: int) -> int:
    """CPU ticks of ``root`` and all its descendants, from {pid: (parent pid, ticks)}."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _ticks) in stats.items():
        children.setdefault(parent, []).append(pid)
    total, pending, seen = 0, [root], set()
    while pending:
        pid = pending.pop()
        if pid in seen or pid not in stats:
            continue
        seen.add(pid)
        total += stats[pid][1]
        pending.extend(children.get(pid, ()))
    return total


def read_process_table() -> dict[int, tuple[int, int]]:
    """{pid: (parent pid, CPU ticks)} of every process now (processes that exit meanwhile are skipped)."""
    stats = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            pid, parent, ticks = parse_stat(Path(entry.path, "stat").read_text())
        except (OSError, ValueError):
            continue
        stats[pid] = (parent, ticks)
    return stats


TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def cpu_seconds(roots: Mapping[str, int]) -> dict[str, float]:
    """CPU s so far of each named process tree ({name: root pid}) and of this process (``bench``,
    its own threads only: its children are the stack and the hogs)."""
    stats = read_process_table()
    seconds = {name: TICK_S * tree_ticks(stats, pid) for name, pid in roots.items()}
    seconds["bench"] = time.process_time()
    return seconds


def cpu_difference(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """CPU s spent between two :func:`cpu_seconds` samples (a respawned node's old process is lost: >= 0)."""
    return {name: max(0.0, after[name] - before.get(name, 0.0)) for name in after}


# -- scenes ---------------------------------------------------------------------------------------------
def draw_scenes(seed: int, count: int, folder: Path) -> list[Path]:
    """``count`` scenes from the benchmark generators with ``seed``, obstacle and clutter
    alternately (``stack_obstacle_<k>``, ``stack_clutter_<k>``), written to ``folder``."""
    if count < 0:
        raise ValueError(f"count: must be >= 0, got {count}")
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number in range(count):
        kind, index = ("obstacle", "clutter")[number % 2], number // 2 + 1
        scene = (obstacle_scene if kind == "obstacle" else clutter_scene)(seed, index)
        scene["name"] = f"stack_{kind}_{index}"
        path = folder / f"{scene['name']}.yaml"
        path.write_text(scene_yaml(scene, seed, f"(generators, --seed {seed}) via bench/stack_realtime.py"))
        paths.append(path)
    return paths


# -- the stack ------------------------------------------------------------------------------------------
class StackError(RuntimeError):
    """The stack did not come up, failed, or did not answer in time."""


@dataclass(frozen=True)
class GoalSettings:
    """How goals are sent and waited for.

    Attributes:
        startup_timeout: s for a stack to come up (action server, scene state, executor).
        goal_timeout: s for one goal's result.
        reset_timeout: s for the reset pose to be observed after a world reset.
    """

    startup_timeout: float = 90.0
    goal_timeout: float = 120.0
    reset_timeout: float = 20.0

    def __post_init__(self) -> None:
        for name in ("startup_timeout", "goal_timeout", "reset_timeout"):
            if not getattr(self, name) > 0.0:
                raise ValueError(f"{name}: must be > 0 s, got {getattr(self, name)}")


class StackSession:
    """One stack (bringup + this process's ROS node, recorder and goal client) for one scene."""

    def __init__(self, scene_path: Path, log_dir: Path, settings: GoalSettings, record: bool,
                 overrides: dict[str, dict[str, str]] | None = None) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from parareal_pushing.action import PushObject
        from rclpy.serialization import deserialize_message
        from std_srvs.srv import Trigger

        from parapush.execution.executor_diagnostics import latched_stop_reason
        from parapush.programs.bringup import isolated_bringup
        from parapush.scene import load_scene

        self.settings = settings
        self.scene = load_scene(scene_path)
        self.initial = self.scene.layout.compose(np.asarray(self.scene.pusher.position),
                                                 np.array([spec.pose for spec in self.scene.objects]))
        self._deserialize = deserialize_message
        self._latched_stop_reason = latched_stop_reason
        self._diagnostic_type = DiagnosticArray
        self._action = PushObject
        self._trigger = Trigger
        self.bringup = isolated_bringup("sim", str(scene_path), overrides or {}, log_dir, domain="isolated")
        self.bringup.start()
        try:
            self._join(settings, record, log_dir)
        except BaseException:
            self.bringup.stop()
            raise

    def _join(self, settings: GoalSettings, record: bool, log_dir: Path) -> None:
        """This process's node on the stack's network: recorder, goal client, service clients, spinner."""
        import rclpy
        from diagnostic_msgs.msg import DiagnosticStatus
        from rclpy.action import ActionClient
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from std_srvs.srv import Trigger

        from parapush.nodes.node_main import spin_wake_guard
        from parapush.nodes.recorder import McapRecorder
        from parapush.programs.demo import RECORDED_TOPICS

        environment = self.bringup.child_environment()
        saved = {name: os.environ.get(name) for name in environment}
        os.environ.update(environment)  # rcl reads the discovery range at init
        self.context = Context()
        try:
            rclpy.init(context=self.context, domain_id=int(environment["ROS_DOMAIN_ID"]))
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        self.node = rclpy.create_node("stack_realtime_bench", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.wake = spin_wake_guard(self.node)
        self._lock = threading.Lock()
        self._scene_state: bytes | None = None
        self._scene_states = 0
        self.executor_up = threading.Event()
        self.arm_ready = threading.Event()
        listeners = {"/scene_state": self._on_scene_state, "/diagnostics": self._on_diagnostics}
        topics = RECORDED_TOPICS if record else {name: RECORDED_TOPICS[name] for name in listeners}
        self.recorder = McapRecorder(self.node, log_dir / "recording.mcap", topics, listeners=listeners)
        # before the spinner: rclpy's executor may read a half-built ActionClient
        self.client = ActionClient(self.node, self._action, "/push_object")
        self.executor_latch: str | None = None  # the executor's latched stop reason (executor_status), else None
        self.node.create_subscription(DiagnosticStatus, "/executor_status", self._on_executor_status,
                                      QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.reset_world = self.node.create_client(Trigger, "/sim_driver/reset_world")
        self.reset_executor = self.node.create_client(Trigger, "/executor/reset")
        self.spinner = threading.Thread(target=self.executor.spin, name="bench-spin", daemon=True)
        self.spinner.start()

    # -- listeners (the executor's thread) --
    def _on_scene_state(self, data: bytes) -> None:
        with self._lock:
            self._scene_state = data
            self._scene_states += 1

    def _on_diagnostics(self, data: bytes) -> None:
        if self.executor_up.is_set() and self.arm_ready.is_set():
            return
        message = self._deserialize(data, self._diagnostic_type)
        for status in message.status:
            if "executor" in status.name:
                self.executor_up.set()
            values = {value.key: value.value for value in status.values}
            # the simulated driver: the gripper holds the pusher and the arm hears the executor's twists
            if values.get("pusher_held") == "True" and values.get("twist_publishers", "0").isdigit() \
                    and int(values["twist_publishers"]) >= 1:
                self.arm_ready.set()

    def _on_executor_status(self, message) -> None:
        reason = self._latched_stop_reason(message)
        with self._lock:
            self.executor_latch = reason

    def latched_stop(self) -> str | None:
        with self._lock:
            return self.executor_latch

    def processes(self) -> dict[str, int]:
        """{node: pid of its current process}."""
        return {node.entry.name: node.process.pid for node in self.bringup.nodes}

    def _check_alive(self) -> None:
        failed = self.bringup.failed()
        if failed or self.bringup.stop_reason:
            raise StackError(f"node(s) exited: {failed or self.bringup.stop_reason}")

    def wait_until_up(self) -> float:
        """Wait for the action server, a scene state and the executor; returns the seconds taken."""
        started = time.monotonic()
        deadline = started + self.settings.startup_timeout
        while not self.client.wait_for_server(timeout_sec=0.5):
            self._check_alive()
            if time.monotonic() > deadline:
                raise StackError(f"push_object did not come up within {self.settings.startup_timeout:.0f} s")
        # as the demo: a control sent before the executor subscribed to /controls is lost; and as
        # test_executor_sim: the arm must hear the executor (and hold the pusher) before the first push
        while not (self._scene_states and self.executor_up.is_set() and self.arm_ready.is_set() and any(
                info.node_name == "executor" for info in self.node.get_subscriptions_info_by_topic("/controls"))):
            self._check_alive()
            if time.monotonic() > deadline:
                raise StackError(f"not up: scene_state {bool(self._scene_states)}, executor diagnostics "
                                 f"{self.executor_up.is_set()}, arm holding the pusher and hearing the executor "
                                 f"{self.arm_ready.is_set()}")
            time.sleep(0.1)
        return time.monotonic() - started

    def _call(self, client, what: str, timeout: float = 10.0):
        from parapush.programs.demo_faults import wait_for_future

        if not client.wait_for_service(timeout_sec=timeout):
            raise StackError(f"{what}: no service")
        return wait_for_future(client.call_async(self._trigger.Request()), timeout, what, StackError)

    def at_initial_state(self) -> bool:
        """The estimator's latest scene state has every body valid and at the scene file's pose."""
        from parapush.nodes.conversions import MessageError, msg_to_snapshot

        with self._lock:
            data = self._scene_state
        if data is None:
            return False
        try:
            state = msg_to_snapshot(self._deserialize(data, self._msg_type()), self.scene, require_valid=True).state
        except MessageError:
            return False
        return at_pose(state, self.initial, self.scene.layout)

    @staticmethod
    def _msg_type():
        from parareal_pushing.msg import SceneState

        return SceneState

    def reset(self) -> tuple[float, str]:
        """Make the stack ready for the next goal: wait ``PRE_RESET_PAUSE`` (the last goal's stop and the
        executor's motion check end with the pusher still: a world jump during them latches a stop), reset
        the world, wait until the estimator shows the reset pose (for ``RESET_SETTLE``), then clear a stop
        the executor latched (after a failed goal, or on the jump). Returns (s taken, the cleared stop's
        reason or "")."""
        started = time.monotonic()
        time.sleep(PRE_RESET_PAUSE)
        answer = self._call(self.reset_world, "reset_world")
        if not answer.success:
            raise StackError(f"reset_world refused: {answer.message}")
        deadline = started + self.settings.reset_timeout
        settled_since = None
        while True:
            self._check_alive()
            now = time.monotonic()
            if self.at_initial_state():
                settled_since = settled_since or now
                if now - settled_since >= RESET_SETTLE:
                    break
            else:
                settled_since = None
            if now > deadline:
                raise StackError(f"the reset pose was not observed within {self.settings.reset_timeout:.0f} s")
            time.sleep(0.05)
        latched = self.latched_stop() or ""
        if latched:
            answer = self._call(self.reset_executor, "executor reset")
            if not answer.success:
                raise StackError(f"the executor's stop was not cleared: {answer.message}")
            while self.latched_stop() is not None:  # the MPC hears the same status
                if time.monotonic() > deadline:
                    raise StackError("the executor still reports a latched stop after ~/reset")
                time.sleep(0.05)
            time.sleep(0.2)
        return time.monotonic() - started, latched

    def run_goal(self, index: int, reset_s: float, cleared: str) -> GoalRecord:
        """Send the scene's goal with the node's defaults; the record of its result."""
        from parapush.programs.demo import OUTCOME_NAMES
        from parapush.programs.demo_faults import wait_for_future

        goal_region = self.scene.goal
        goal = self._action.Goal(target_object=self.scene.target, goal_x=float(goal_region.center[0]),
                                 goal_y=float(goal_region.center[1]), goal_radius=float(goal_region.radius))
        replans: list[float] = []
        events: list[str] = []

        def on_feedback(message) -> None:
            replans.append(float(message.feedback.planning_time))
            if message.feedback.event:
                events.append(message.feedback.event)

        roots = self.processes()
        load = os.getloadavg()[0]
        cpu_before = cpu_seconds(roots)
        sent = time.monotonic()
        handle = wait_for_future(self.client.send_goal_async(goal, feedback_callback=on_feedback), 30,
                                 "push_object (goal)", StackError)
        if not handle.accepted:
            raise StackError("the push_object goal was rejected")
        try:
            result = wait_for_future(handle.get_result_async(), self.settings.goal_timeout, "push_object (result)",
                                     StackError).result
        except StackError:
            with contextlib.suppress(StackError):
                wait_for_future(handle.cancel_goal_async(), 10, "push_object (cancel)", StackError)
            raise
        wall = time.monotonic() - sent
        cpu = cpu_difference(cpu_before, cpu_seconds(roots))
        return GoalRecord(
            scene=self.scene.name, index=index, outcome=OUTCOME_NAMES.get(result.outcome, str(result.outcome)),
            success=bool(result.success), failure_reason=result.failure_reason,
            controls=int(result.controls_executed), task_time_s=result.total_time,
            waiting_time_s=result.waiting_time, planning_time_s=result.planning_time,
            execution_time_s=result.execution_time, replan_times_s=tuple(replans), fallbacks=int(result.fallbacks),
            replan_p50_s=result.replan_p50, replan_p95_s=result.replan_p95,
            final_distance_m=result.final_distance, cpu_s=cpu, wall_s=wall, reset_s=reset_s, load_before=load,
            events=tuple(events), executor_stop_cleared=cleared, coarse_model=result.coarse_model,
        )

    def close(self) -> dict[str, int]:
        """Stop the stack and this process's node; the nodes' exit codes."""
        import rclpy

        from parapush.nodes.node_main import stop_spinning

        time.sleep(0.2)
        self.recorder.close()
        codes = self.bringup.stop()
        stop_spinning(self.executor, self.spinner, self.wake)
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)
        return codes


def run_scene(scene_path: Path, runs: int, log_dir: Path, settings: GoalSettings, record: bool,
              on_record: Callable[[GoalRecord], None], max_stacks: int = 3,
              overrides: dict[str, dict[str, str]] | None = None) -> list[GoalRecord]:
    """``runs`` goals on ``scene_path``, one stack reused (restarted after a stack failure, at
    most ``max_stacks`` stacks); a goal the stack could not run is recorded as ``STACK_ERROR``.
    ``overrides``: node parameters ({node: {name: value}}) on top of the sim profile's."""
    records: list[GoalRecord] = []
    stacks = 0
    session: StackSession | None = None
    scene_name = scene_path.stem
    try:
        while len(records) < runs:
            index = len(records)
            try:
                if session is None:
                    if stacks >= max_stacks:
                        raise StackError(f"{max_stacks} stacks failed on this scene")
                    stacks += 1
                    session = StackSession(scene_path, log_dir / f"stack{stacks}", settings, record, overrides)
                    scene_name = session.scene.name
                    print(f"[{scene_name}] stack {stacks} up in {session.wait_until_up():.1f} s", flush=True)
                    reset_s, cleared = 0.0, ""
                else:
                    reset_s, cleared = session.reset()
                    if cleared:
                        print(f"[{scene_name}] cleared the executor's stop before goal {index + 1}: {cleared}",
                              flush=True)
                record = session.run_goal(index, reset_s, cleared)
            except StackError as error:
                record = GoalRecord(scene=scene_name, index=index, outcome=STACK_ERROR, success=False,
                                    failure_reason=str(error))
                if session is not None:
                    print(f"[{scene_name}] stack error: {error}; stopping this stack "
                          f"(logs: {log_dir / f'stack{stacks}'})", flush=True)
                    session.close()
                    session = None
            records.append(record)
            on_record(record)
    finally:
        if session is not None:
            session.close()
    return records


def describe(record: GoalRecord) -> str:
    replans = np.asarray(record.replan_times_s)
    cpu = sum(record.cpu_s.values())
    return (f"[{record.scene} {record.index + 1:2d}] {record.outcome:13s} controls {record.controls:2d} "
            f"task {record.task_time_s:5.1f} s waited {record.waiting_time_s:4.1f} s replan p50 "
            f"{np.median(replans) if replans.size else math.nan:.3f} max "
            f"{replans.max() if replans.size else math.nan:.3f} s late {record.fallbacks} "
            f"cpu {cpu / record.task_time_s if record.task_time_s else math.nan:.2f} s/s reset {record.reset_s:.1f} s "
            f"load {record.load_before:.1f}"
            + ("" if record.success else f"  ({record.failure_reason[:100]})"))


# -- the bench ------------------------------------------------------------------------------------------
@contextlib.contextmanager
def timing_lock(path: Path):
    """Hold ``path``'s flock (exclusive) while timing; waits, saying so, when another bench holds it."""
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for {path} (another timing bench runs)", flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def cpu_hogs(count: int):
    """``count`` busy processes (a pure-Python loop each) while the block runs."""
    if count < 0:
        raise ValueError(f"count: must be >= 0, got {count}")
    processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield [process.pid for process in processes]
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.wait()


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return f"load average {os.getloadavg()}"


def plan_scenes(args: argparse.Namespace, folder: Path) -> list[tuple[Path, int]]:
    """(scene file, goals) in bench order: the default scene first, then the drawn ones."""
    from parapush.graph import DEFAULT_SCENE, resolve_scene_path

    overload = args.cpu_hogs > 0
    drawn = [] if overload else draw_scenes(args.seed, NEW_SCENES, folder)
    available = {"default": resolve_scene_path(DEFAULT_SCENE)} | {path.stem: path for path in drawn}
    names = args.scenes or list(available)
    unknown = [name for name in names if name not in available]
    if unknown:
        raise ValueError(f"--scenes: unknown {unknown}; known: {sorted(available)}")
    sizes = QUICK_RUNS if args.quick else FULL_RUNS
    plan = []
    for name in names:
        runs = args.runs or (OVERLOAD_RUNS if overload else sizes["default" if name == "default" else "drawn"])
        plan.append((available[name], runs))
    return plan


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__.splitlines()[0],
                             quick=f"goals per scene {QUICK_RUNS} (default {FULL_RUNS}); under 10 minutes on 2 cores")
    parser.add_argument("--runs", type=int, default=None, help="goals per scene (all scenes)")
    parser.add_argument("--scenes", nargs="+", default=None,
                        help="'default' and/or drawn scene names (stack_obstacle_1, stack_clutter_1, ...)")
    parser.add_argument("--seed", type=int, default=SCENE_SEED,
                        help=f"generator seed of the drawn scenes ({SCENE_SEED})")
    parser.add_argument("--cpu-hogs", type=int, default=0,
                        help=f"busy processes beside the stack (overload: default scene, {OVERLOAD_RUNS} goals)")
    parser.add_argument("--goal-timeout", type=float, default=GoalSettings.goal_timeout, help="s per goal")
    parser.add_argument("--no-record", action="store_true", help="record only the topics the bench reads")
    parser.add_argument("--keep-logs", type=Path, default=None, help="keep node logs, recordings, scenes in DIR")
    parser.add_argument("--output", type=Path, default=None,
                        help="results file (default bench/results/stack_realtime[_overload].json)")
    parser.add_argument("--lock", type=Path, default=LOCK_FILE, help="flock taken while the bench runs")
    parser.add_argument("--param", action="append", default=[], metavar="NODE.NAME=VALUE",
                        help="a node parameter on top of the sim profile's (repeatable; recorded in the results)")
    bench_reference.add_reference_argument(parser)
    args = parser.parse_args(argv)
    if args.runs is not None and args.runs < 1:
        parser.error(f"--runs: must be >= 1, got {args.runs}")
    if args.cpu_hogs < 0:
        parser.error(f"--cpu-hogs: must be >= 0, got {args.cpu_hogs}")
    if args.reference and (args.runs or args.scenes or args.output or args.seed != SCENE_SEED or args.param):
        parser.error("--reference: run the default scenes, runs, seed and parameters "
                     "(drop --runs/--scenes/--seed/--output/--param)")
    from parapush.programs.bringup import parse_overrides
    try:
        overrides = parse_overrides(args.param)
    except ValueError as error:
        parser.error(str(error))
    variant = "overload" if args.cpu_hogs else ""
    settings = GoalSettings(goal_timeout=args.goal_timeout)
    work = Path(tempfile.mkdtemp(prefix="stack_realtime-")) if args.keep_logs is None else args.keep_logs
    try:
        plan = plan_scenes(args, work / "scenes")
    except ValueError as error:
        parser.error(str(error))
    with timing_lock(args.lock):
        load_before = bench_reference.load_average()
        print(f"load before: {uptime()}", flush=True)
        notes = [f"scenes drawn with seed {args.seed}" if not variant else "overload: the default scene only"]
        if args.quick:
            notes.append(f"--quick: goals per scene {QUICK_RUNS}")
        if args.param:
            notes.append("node parameters: " + ", ".join(args.param))
        if args.cpu_hogs:
            notes.append(f"{args.cpu_hogs} busy process(es) (one per core) beside the stack for the whole bench")
        for note in notes:
            print("note: " + note, flush=True)
        records: list[GoalRecord] = []
        loads = [load_before[0]]
        started = time.monotonic()

        def on_record(record: GoalRecord) -> None:
            print(f"[{time.monotonic() - started:6.0f} s] " + describe(record), flush=True)
            loads.append(record.load_before)

        try:
            with cpu_hogs(args.cpu_hogs):
                for path, runs in plan:
                    records += run_scene(path, runs, work / "logs" / path.stem, settings, not args.no_record,
                                         on_record, overrides=overrides)
        finally:
            if args.keep_logs is None:
                shutil.rmtree(work, ignore_errors=True)
        minutes = (time.monotonic() - started) / 60.0
        load_after = bench_reference.load_average()
        rows = summarize(records)
        check_summary(_finite_or_none(rows))
        nodes = sorted({name for record in records for name in record.cpu_s})
        print()
        print(table(_finite_or_none(rows), nodes))
        for note in notes:
            print("note: " + note)
        print(f"load after: {uptime()}; {minutes:.1f} min", flush=True)
        payload = {
            "bench": BENCH,
            "environment": environment(),
            "settings": {"scenes": [path.stem for path, _ in plan], "runs": [runs for _, runs in plan],
                         "scene_seed": args.seed, "quick": args.quick, "cpu_hogs": args.cpu_hogs,
                         "goal_timeout_s": args.goal_timeout, "recorder": "demo topics" if not args.no_record else
                         "scene_state and diagnostics only", "planner": "the MPC node's default (config/mpc.yaml)",
                         "parameters": args.param},
            "notes": notes,
            "load_average": {"before": load_before, "after": load_after},
            "benchmark_minutes": minutes,
            "summary": rows,
            "runs": [record.to_json() for record in records],
        }
        payload = _finite_or_none(payload)
        output = args.output or RESULTS / f"{bench_reference.reference_name(BENCH, variant=variant)}.json"
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(payload, indent=1) + "\n")
        print(f"wrote {output}")
        if args.output is None:
            bench_reference.write_figures(BENCH, readme_figures(payload["summary"], minutes, loads + [load_after[0]]),
                                          reference=args.reference, load_before=load_before, quick=args.quick,
                                          variant=variant)
    return 0


if __name__ == "__main__":
    sys.exit(main())
