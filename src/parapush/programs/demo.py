"""The main demo: the whole stack against the simulated driver on one pushing task.

Starts the graph's ``sim`` profile (simulated driver, state estimator, prediction service,
MPC, executor) as child processes, waits until it is up, sends the ``PushObject`` goal of
the scene (its target and goal region), prints progress, and writes a run folder:

* ``recording.mcap`` — the topics (scene state, controls, plans, arm twists, diagnostics, the
  visualizer's markers, paths and signals), ROS 2 CDR in MCAP; Foxglove opens it with
  config/foxglove_layout.json;
* ``run.png`` — the object and pusher paths over the table with the goal region;
* ``run.gif`` — a video of the run, rendered after it from the recording (``--no-video``: none);
* ``metrics.json`` — outcome, controls, final distance and the times (s): ``task_time_s`` (goal
  sent to result), ``planning_time_s`` (sum of the re-plan wall times; the pipelined planner
  plans while the pusher moves, so this overlaps execution), ``waiting_time_s`` (the pusher
  stood still waiting for a plan), ``execution_time_s``, ``replan_p50_s``/``replan_p95_s``,
  and their shares of the task time; with robust planning (``robust.samples`` > 1) the target's
  ``target_estimate`` and ``target_spread`` at the end;
* ``logs/<node>.log`` — each node's output.

    python -m parapush.programs.demo [--scene clutter_fig1.yaml] [--out runs/NAME] [--planner realtime]
        [--fault NAME [--fault-after 2]]

``--fault NAME`` injects one fault (:mod:`parapush.programs.demo_faults`: prediction_service_killed,
pusher_untracked, target_untracked, natnet_loss, gripper_fault, arm_fault) once the goal has executed
``--fault-after`` controls (natnet_loss: before the goal); ``metrics.json`` gets a ``fault`` entry: what,
when, the time to the safe stop (first zero arm command, the executor's latched stop) and the outcome.

Exit status: 0 when the target reached the goal, 1 when the task failed, 2 when the
stack did not come up or did not answer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import TwistStamped
from nav_msgs.msg import Path as PathMessage
from parareal_pushing.action import PushObject
from parareal_pushing.msg import ControlSequence, PredictedTrajectory, SceneState
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from rclpy.guard_condition import GuardCondition
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from std_msgs.msg import Float64
from visualization_msgs.msg import MarkerArray

from parapush.graph import DEFAULT_SCENE, resolve_scene_path
from parapush.nodes.conversions import MessageError, msg_to_snapshot, trajectory_from_msg
from parapush.nodes.node_main import spin_wake_guard, stop_spinning
from parapush.nodes.recorder import McapRecorder
from parapush.parareal import MODELS
from parapush.planning.presets import PRESETS
from parapush.programs.bringup import Bringup, add_network_arguments, isolated_bringup, parse_overrides
from parapush.programs.demo_faults import FAULTS, FaultInjectionError, FaultInjector, wait_for_future
from parapush.programs.render_run import render_recording
from parapush.reporting.run_plot import plot_run
from parapush.scene import Scene, load_scene
from parapush.stack_network import ISOLATED

OUTCOME_NAMES = {
    value: name.removeprefix("OUTCOME_")
    for name, value in vars(PushObject.Result).items()
    if name.startswith("OUTCOME_") and isinstance(value, int)
}
RECORDED_TOPICS = {
    "/scene_state": SceneState,
    "/sim/true_state": SceneState,
    "/controls": ControlSequence,
    "/planned_trajectory": PredictedTrajectory,
    "/servo_node/delta_twist_cmds": TwistStamped,
    "/diagnostics": DiagnosticArray,
    # The visualizer node's (RViz/Foxglove-native; config/foxglove_layout.json draws them).
    "/visualization/scene": MarkerArray,
    "/visualization/plan": MarkerArray,
    "/visualization/executed_target_path": PathMessage,
    "/visualization/executed_pusher_path": PathMessage,
    "/visualization/distance_to_goal": Float64,
    "/visualization/pusher_speed": Float64,
    "/visualization/replan_time": Float64,
}


class DemoError(RuntimeError):
    """The stack did not come up or did not answer in time."""


class Observer:
    """Keeps the observed (and true) scene states and the last plan, for the plot and metrics.

    Fed by the recorder (:attr:`listeners`: CDR bytes of recorded topics, no subscriptions of
    its own); the states are deserialized when asked for, after the run, not at 120 Hz during it.
    """

    def __init__(self, scene) -> None:
        self.scene = scene
        self.lock = threading.Lock()
        self.observed: list[bytes] = []
        self.true_states: list[bytes] = []
        self._last_plan: bytes | None = None
        self.executor_diagnostics = threading.Event()
        self.listeners = {
            "/scene_state": self.observed.append,
            "/sim/true_state": self.true_states.append,
            "/planned_trajectory": self._plan,
            "/diagnostics": self._diagnostics,
        }

    def _diagnostics(self, data: bytes) -> None:
        if not self.executor_diagnostics.is_set():
            message = deserialize_message(data, DiagnosticArray)
            if any("executor" in status.name for status in message.status):
                self.executor_diagnostics.set()

    def _plan(self, data: bytes) -> None:
        with self.lock:
            self._last_plan = data

    @property
    def last_plan(self) -> np.ndarray | None:
        with self.lock:
            data = self._last_plan
        return None if data is None else trajectory_from_msg(deserialize_message(data, PredictedTrajectory), self.scene)

    def states(self) -> np.ndarray:
        with self.lock:
            chosen = list(self.true_states or self.observed)
        states = []
        for data in chosen:
            try:
                states.append(msg_to_snapshot(deserialize_message(data, SceneState), self.scene).state)
            except MessageError:
                continue
        return np.array(states) if states else np.empty((0, self.scene.layout.dimension))


def _share(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.0f} % of the task" if whole > 0 else "-"


def _inject(injector: FaultInjector) -> None:
    try:
        injector.inject()
    except FaultInjectionError as error:
        print(f"[demo] fault not injected: {error}", file=sys.stderr, flush=True)
        return
    print(f"[demo] fault {injector.fault.name} injected: {injector.detail}", flush=True)


def _render_video(out: Path, scene, title: str, metrics: dict) -> None:
    """``run.gif`` from the recording, after the run; its frames and duration go into the metrics."""
    try:
        video = render_recording(out, scene, title=title)
    except ValueError as error:
        print(f"[demo] no video: {error}", file=sys.stderr, flush=True)
        return
    metrics["video"] = {"file": video.path.name, "frames": video.frames, "frame_period_s": video.frame_period,
                        "duration_s": video.duration, "run_duration_s": video.run_duration}


@dataclass(frozen=True)
class _DemoRun:
    """One run of the demo: its task, run folder, the stack and this program's node.

    Attributes:
        options: the command line; scene_path, scene: the task; out: the run folder.
        started: ``time.monotonic()`` s when the stack was started.
        bringup: the ``sim`` profile's processes; node, executor, wake, spinner: this program's
            node and the thread spinning it; observer, recorder: what it records; client: the
            ``push_object`` action client; injector: the fault to inject, or None.
        metrics: what goes into ``metrics.json``, filled by the steps.
        fault_claimed: the step at which the fault's injection started (empty before).
    """

    options: argparse.Namespace
    scene_path: Path
    scene: Scene
    out: Path
    started: float
    bringup: Bringup
    node: Node
    executor: SingleThreadedExecutor
    wake: GuardCondition
    spinner: threading.Thread
    observer: Observer
    recorder: McapRecorder
    client: ActionClient
    injector: FaultInjector | None
    metrics: dict = field(default_factory=dict)
    fault_claimed: list[int] = field(default_factory=list)


def _load_task(options: argparse.Namespace) -> tuple[Path, Scene, Path]:
    """(scene file, scene, run folder created): the scene must have a goal region."""
    scene_path = resolve_scene_path(options.scene)
    scene = load_scene(scene_path)
    if scene.goal is None:
        raise DemoError(f"scene {scene_path} has no goal region")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = Path(options.out or f"runs/{scene.name}-{stamp}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    return scene_path, scene, out


def _node_overrides(options: argparse.Namespace) -> dict:
    """The nodes' parameter overrides: ``--param``, and ``--model``/``--iterations`` for both predictors."""
    overrides = parse_overrides(options.param)
    for node in ("prediction_service", "mpc"):  # both predict from config/model.yaml's settings
        if options.model:
            overrides.setdefault(node, {})["model.name"] = options.model
        if options.iterations is not None:
            overrides.setdefault(node, {})["model.iterations"] = options.iterations
    return overrides


def _start(options: argparse.Namespace, scene_path: Path, scene: Scene, out: Path, overrides: dict) -> _DemoRun:
    """Start the stack and this program's node (recording from now on)."""
    started = time.monotonic()
    # a domain of its own whatever ROS_DOMAIN_ID is exported (--domain N or auto to choose), free device ports
    bringup = isolated_bringup("sim", str(scene_path), overrides, out / "logs",
                               domain=ISOLATED if options.domain is None else options.domain, ports=options.ports)
    bringup.start()
    os.environ.update(bringup.child_environment())  # this program's node joins the stack's network
    rclpy.init()
    node = rclpy.create_node("demo")
    # single-threaded: no callback of this node blocks (node_main.make_executor: the multi-threaded
    # one costs the most CPU per message, and this node receives every recorded topic)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    wake = spin_wake_guard(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    observer = Observer(scene)
    recorder = McapRecorder(node, out / "recording.mcap", RECORDED_TOPICS, listeners=observer.listeners)
    # before the spinner: rclpy's executor may read a half-built ActionClient ('_lock' missing)
    client = ActionClient(node, PushObject, "/push_object")
    injector = FaultInjector(node, bringup, FAULTS[options.fault], scene.target) if options.fault else None
    spinner.start()
    metrics = {"scene": scene.name, "scene_file": str(scene_path), "target": scene.target,
               "goal": {"center": list(scene.goal.center), "radius": scene.goal.radius}}
    return _DemoRun(options=options, scene_path=scene_path, scene=scene, out=out, started=started,
                    bringup=bringup, node=node, executor=executor, wake=wake, spinner=spinner, observer=observer,
                    recorder=recorder, client=client, injector=injector, metrics=metrics)


def _wait_for_stack(run: _DemoRun) -> None:
    """Wait until the action server, the state estimator's states, the executor and every recorded
    topic's publisher are up (DemoError when a node exits or ``--startup-timeout`` passes)."""
    deadline = time.monotonic() + run.options.startup_timeout
    while not run.client.wait_for_server(timeout_sec=0.5):
        _check_start_up(run, deadline, f"the push_object action did not come up within "
                                       f"{run.options.startup_timeout:.0f} s")
    while not run.observer.observed:
        if time.monotonic() > deadline:
            raise DemoError("no scene_state from the state estimator (is the mocap stream up?)")
        time.sleep(0.1)
    # The executor subscribes to /controls once its gripper holds the tool, then publishes
    # diagnostics: a control sent before the MPC has matched it is lost (the pipelined
    # planner's first plan is ready within about a second), so wait for both.
    while not (any(info.node_name == "executor" for info in run.node.get_subscriptions_info_by_topic("/controls"))
               and run.observer.executor_diagnostics.is_set()):
        _check_start_up(run, deadline, "the executor did not come up (no /controls subscription or diagnostics)")
        time.sleep(0.1)
    # Every recorded topic's publisher matched before the goal: a plan or marker published
    # before the recorder matched its publisher would be missing from the recording.
    while unmatched := run.recorder.unmatched_topics():
        _check_start_up(run, deadline, f"the recording did not match a publisher of {unmatched}")
        time.sleep(0.1)


def _check_start_up(run: _DemoRun, deadline: float, late: str) -> None:
    """DemoError when a node exited during start-up, or (saying ``late``) after ``deadline``."""
    failed = run.bringup.failed()
    if failed:
        raise DemoError(f"node(s) exited during start-up: {failed} (see {run.out / 'logs'})")
    if time.monotonic() > deadline:
        raise DemoError(late)


def _on_feedback(run: _DemoRun, message) -> None:
    """Print a feedback; start the fault's injection once ``--fault-after`` controls have run."""
    feedback = message.feedback
    print(f"[demo] step {feedback.step + 1:2d} at {feedback.task_time:5.1f} s: distance to goal "
          f"{feedback.distance_to_goal * 100:5.1f} cm, cost {feedback.cost:9.4f}, planned in "
          f"{feedback.planning_time:5.2f} s, waited {feedback.waiting_time:5.2f} s, control "
          f"({feedback.control.vx * 1000:+5.1f}, {feedback.control.vy * 1000:+5.1f}) mm/s "
          f"for {feedback.control.duration:.2f} s{'; ' + feedback.event if feedback.event else ''}",
          flush=True)
    injector = run.injector
    if injector is not None and feedback.step + 1 >= run.options.fault_after and not run.fault_claimed \
            and not injector.fault.before_goal:
        run.fault_claimed.append(feedback.step)
        threading.Thread(target=_inject, args=(injector,), daemon=True).start()


def _push(run: _DemoRun):
    """Send the scene's goal and wait for its result (cancelled when ``--timeout`` passes: DemoError)."""
    scene, options = run.scene, run.options
    goal = PushObject.Goal(target_object=scene.target, goal_x=float(scene.goal.center[0]),
                           goal_y=float(scene.goal.center[1]), goal_radius=float(scene.goal.radius),
                           max_controls=options.max_controls, planner=options.planner or "")
    handle = wait_for_future(
        run.client.send_goal_async(goal, feedback_callback=partial(_on_feedback, run)), 30, "push_object (goal)",
        DemoError
    )
    if not handle.accepted:
        raise DemoError("the push_object goal was rejected")
    remaining = max(10.0, options.timeout - (time.monotonic() - run.started))
    try:
        return wait_for_future(handle.get_result_async(), remaining, "push_object (result)", DemoError).result
    except DemoError:
        wait_for_future(handle.cancel_goal_async(), 10, "push_object (cancel)", DemoError)
        raise


def _report_result(result, metrics: dict) -> None:
    """Print the goal's result and put it into ``metrics``."""
    outcome = OUTCOME_NAMES.get(result.outcome, str(result.outcome))
    task = result.total_time
    print(f"[demo] outcome: {outcome}{'' if result.success else ' - ' + result.failure_reason}; "
          f"planner {result.planner} (coarse model {result.coarse_model}), {result.controls_executed} controls "
          f"({result.fallbacks} fallbacks), "
          f"final distance {result.final_distance * 100:.1f} cm\n"
          f"[demo] task {task:.1f} s: the pusher waited for plans {result.waiting_time:.1f} s "
          f"({_share(result.waiting_time, task)}), moved {result.execution_time:.1f} s; planning "
          f"{result.planning_time:.1f} s ({_share(result.planning_time, task)}, overlapping the motion when "
          f"pipelined); re-plan p50 {result.replan_p50:.2f} s, p95 {result.replan_p95:.2f} s", flush=True)
    metrics.update(
        outcome=outcome, success=bool(result.success), failure_reason=result.failure_reason,
        planner=result.planner, coarse_model=result.coarse_model, controls_executed=int(result.controls_executed),
        fallbacks=int(result.fallbacks), replans_from_observation=int(result.replans_from_observation),
        optimizer_iterations=int(result.optimizer_iterations),
        task_time_s=task, planning_time_s=result.planning_time, waiting_time_s=result.waiting_time,
        execution_time_s=result.execution_time, replan_p50_s=result.replan_p50,
        replan_p95_s=result.replan_p95, planning_share=result.planning_time / task if task > 0 else None,
        waiting_share=result.waiting_time / task if task > 0 else None,
        final_distance_m=result.final_distance,
    )
    if len(result.parameter_estimate):  # robust planning: the target's belief at the end
        names = ("mass_kg", "support_friction", "pusher_friction", "com_x_m", "com_y_m")
        metrics.update(target_estimate=dict(zip(names, map(float, result.parameter_estimate), strict=True)),
                       target_spread=dict(zip(names, map(float, result.parameter_spread), strict=True)))
        print(f"[demo] target's belief (robust planning): estimate {list(result.parameter_estimate)}, "
              f"spread {list(result.parameter_spread)}", flush=True)


def _stop(run: _DemoRun) -> dict:
    """Stop recording, the stack and this program's node; the nodes' exit codes by name."""
    time.sleep(0.3)  # the last states and diagnostics reach the recorder
    run.recorder.close()
    codes = run.bringup.stop()
    if not stop_spinning(run.executor, run.spinner, run.wake):
        print("[demo] warning: the demo node's executor thread is still spinning", file=sys.stderr, flush=True)
    run.node.destroy_node()
    rclpy.shutdown()
    return codes


def _write_run_folder(run: _DemoRun, codes: dict) -> None:
    """Complete the metrics (wall time, fault, exit codes, recorded messages) and write
    ``run.png``, ``run.gif`` and ``metrics.json``."""
    metrics, out, scene = run.metrics, run.out, run.scene
    metrics["wall_time_s"] = time.monotonic() - run.started
    if run.injector is not None:
        metrics["fault"] = {**run.injector.metrics(), "outcome": metrics.get("outcome"),
                            "failure_reason": metrics.get("failure_reason", "")}
        print(f"[demo] fault {run.options.fault}: {metrics['fault']['detail']}; time to safe stop "
              f"{metrics['fault']['time_to_safe_stop_s']} s; outcome {metrics.get('outcome')}", flush=True)
    metrics["node_exit_codes"] = codes
    metrics["recorded_messages"] = run.recorder.counts
    states = run.observer.states()
    if len(states):
        title = f"{scene.name}: {metrics.get('outcome', '?')}"
        plot_run(scene, states, out / "run.png", title=title, planned=run.observer.last_plan)
        if not run.options.no_video:
            _render_video(out, scene, title, metrics)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, default=float) + "\n")
    unclean = {name: code for name, code in codes.items() if code not in (0, -2)}
    print(f"[demo] nodes stopped {'cleanly' if not unclean else 'with errors: ' + str(unclean)}; "
          f"wrote {out / 'recording.mcap'}, {out / 'run.png'}, {out / 'metrics.json'} "
          f"in {metrics['wall_time_s']:.1f} s", flush=True)


def run_demo(options: argparse.Namespace) -> int:
    """One demo run (module docstring); the exit status."""
    scene_path, scene, out = _load_task(options)
    overrides = _node_overrides(options)
    print(f"[demo] scene '{scene.name}': push '{scene.target}' into the goal at {scene.goal.center} "
          f"(r = {scene.goal.radius} m) among {len(scene.objects) - 1} other object(s); run folder {out}")
    run = _start(options, scene_path, scene, out, overrides)
    status = 2
    try:
        _wait_for_stack(run)
        print(f"[demo] stack up in {time.monotonic() - run.started:.1f} s; sending the goal", flush=True)
        if run.injector is not None and run.injector.fault.before_goal:
            _inject(run.injector)
        result = _push(run)
        status = 0 if result.success else 1
        _report_result(result, run.metrics)
    except DemoError as error:
        print(f"[demo] error: {error}", file=sys.stderr, flush=True)
        run.metrics.update(outcome="STACK_ERROR", success=False, failure_reason=str(error))
    finally:
        _write_run_folder(run, _stop(run))
    return status


def main(args=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scene", default=DEFAULT_SCENE, help="scene YAML path or name in config/scenes/")
    parser.add_argument("--out", default=None, help="run folder (default runs/<scene>-<time>)")
    parser.add_argument("--model", choices=MODELS, default=None,
                        help="predictive model (default: config/model.yaml)")
    parser.add_argument("--planner", choices=sorted(PRESETS), default=None,
                        help="planner preset (default: the MPC node's 'planner' parameter, realtime)")
    parser.add_argument("--iterations", type=int, default=None,
                        help="Parareal iterations K (default: config/model.yaml)")
    parser.add_argument("--max-controls", type=int, default=0, help="0: the MPC node's default (20)")
    parser.add_argument("--timeout", type=float, default=170.0, help="s for the whole run")
    parser.add_argument("--startup-timeout", type=float, default=60.0, help="s for the stack to come up")
    parser.add_argument("--no-video", action="store_true", help="do not render run.gif after the run")
    parser.add_argument("--param", action="append", default=[], metavar="NODE.NAME=VALUE",
                        help="parameter override for one node (repeatable)")
    parser.add_argument("--fault", choices=sorted(FAULTS), default=None, help="inject one fault mid-goal")
    parser.add_argument("--fault-after", type=int, default=2, help="controls executed before the fault")
    add_network_arguments(parser)
    options = parser.parse_args(args)
    try:
        return run_demo(options)
    except (DemoError, FileNotFoundError, ValueError) as error:
        print(f"[demo] error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
