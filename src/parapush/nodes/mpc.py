"""MPC node: the ``push_object`` action (parareal_pushing/action/PushObject).

Each goal runs a planner preset (:mod:`parapush.planning.presets`: the node's ``planner``
parameter, or the goal's ``planner``): ``realtime`` (default) plans control t+1 while t
executes (:class:`~parapush.planning.pipelined_mpc.PipelinedMpcLoop`, multi-fidelity
planner), ``isrr2019`` plans, then executes. Both run through
:func:`parapush.planning.task_run.run_task` on a
:class:`~parapush.nodes.mpc_world.RosAsyncWorld`: states from ``scene_state`` (the state
estimator), controls to the executor on ``controls``. A goal's loop runs in a thread of its
own while the node spins single-threaded (its callbacks only store the latest scene state's
bytes, flags and answers), so a re-plan competes with as little of this process as possible.

This node converts messages, declares parameters and calls the core: a goal's fields are
checked by :class:`parapush.planning.push_goal.PushGoal` (an invalid goal is aborted with the
reason); its planner comes from :func:`parapush.planning.stack_planner.build_planner`
(:meth:`MpcNode.goal_planner`, the benchmarks' path too) with the models of
:class:`parapush.planning.goal_models.GoalModels`: the corrector from the prediction service
(``prediction_source: service``) or a local engine, failing over as ``on_service_loss`` says
when the service is lost (issue 17), and the coarse search model.

Live tuning (issue 31): cost weights and planner settings are writable parameters
(:mod:`parapush.nodes.mpc_tuning`; ``ros2 param set /mpc costs.smoothness.weight 0.5``), validated
by the settings' own checks; a running goal applies a change at its next re-plan and its feedback's
``event`` reports it; structural ones (horizon, control duration, ``mpc.*``) apply from the next goal.

Robust planning (a goal's ``risk_samples`` > 1, or ``robust.samples`` in the planner file; issue
30): the target's belief narrows after every control, and with ``robust.adapt`` the corrector
predicts with its estimate: a local engine directly; the prediction service through
``object_parameters`` (transient local, as identification's results), where the goal publishes
its estimate after each narrowing and, when it ends, the parameters the service had before (the
last ones seen on that topic, else the scene's).

A stop latched by the executor (``executor_status``, transient local: ``stop_latched`` True,
e.g. the pusher does not follow its commands, a gripper fault) ends the running goal at the
loop's next look at the world, with the executor's status message as ``failure_reason`` (the
executor has already stopped the pusher); a goal started while the stop is latched ends at once.
A body the estimator does not track pauses the goal with the pusher stopped
(:class:`~parapush.nodes.mpc_world.RosAsyncWorld`) for at most ``state_timeout``; the loop
re-plans from the state that resumes it when a body is farther than the pipeline's
``replan_distance`` from the prediction (e.g. bumped while occluded).

Feedback when each control starts: step, cost, distance, re-plan time, waiting time, task
time, fallback, event (what happened: service loss, tuning, :data:`BUDGET_CUT_EVENT`), control
and the predicted trajectory (also published on ``planned_trajectory``). The result adds
planning, waiting and task time and the re-plan p50/p95 (definitions in
:mod:`parapush.planning.task_run`). Cancelling a goal stops the pusher at once (an empty
ControlSequence tells the executor to stop).
"""

from __future__ import annotations

import threading
import time
import traceback

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from parareal_pushing.action import PushObject
from parareal_pushing.msg import ControlSequence, PredictedTrajectory, SceneState
from parareal_pushing.msg import ObjectParameters as ObjectParametersMsg
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.task import Future

from parapush.identification.parameters import ObjectParameters
from parapush.nodes.conversions import MessageError, state_to_msg, trajectory_to_msg
from parapush.nodes.identification_messages import OBJECT_PARAMETERS_QOS, parameters_from_msg, parameters_to_msg
from parapush.nodes.lazy_message import LazyMessage
from parapush.nodes.mpc_tuning import declare_tuning
from parapush.nodes.mpc_world import RosAsyncWorld
from parapush.nodes.node_main import run_node
from parapush.nodes.parameters import (
    ParameterError,
    ParameterSpec,
    declare_scene_parameters,
    parameter_specs,
    settings_from_parameters,
)
from parapush.nodes.prediction_client import ServicePrediction, ServicePredictionError
from parapush.planning import MpcOutcome, PlannerConfigError, load_planner_config
from parapush.planning.goal_models import GoalModels, ServiceSettings
from parapush.planning.live_settings import Change, PlanRetuner
from parapush.planning.presets import DEFAULT_PRESET, PRESETS, BuiltPlanner, planner_preset
from parapush.planning.push_goal import PushGoal
from parapush.planning.stack_planner import PlannerSources, build_planner
from parapush.planning.task_run import TaskReport, TaskStep, run_task
from parapush.prediction import ModelConfig
from parapush.prediction.failover import SERVICE_LOSS_POLICIES
from parapush.scene import Scene
from parapush.sim.model_world import scene_initial_state
from parapush.yaml_file import config_file

PARAMETERS = (
    ParameterSpec("planner_config", "planner.yaml",
                  "planner YAML (optimizer, MPC, costs): a path or a name in config/"),
    ParameterSpec("planner", DEFAULT_PRESET, "planner preset (parapush.planning.presets) of a goal that names none",
                  choices=tuple(PRESETS)),
    ParameterSpec("prediction_source", "service", "where predictions come from: the prediction service, or an "
                  "engine in this node built from the model.* parameters", choices=("service", "local")),
    *parameter_specs(ModelConfig, "model."),  # config/model.yaml, as the prediction service's
    ParameterSpec("state_timeout", 5.0, "s the goal stays paused (pusher stopped) without a usable scene state (a "
                  "body not tracked, no fresh state) before it ends", minimum=0.01, maximum=60.0),
    ParameterSpec("settle_time", 0.05, "s to wait after the pusher stopped before observing", minimum=0.0,
                  maximum=5.0),
    ParameterSpec("service_timeout", 30.0, "s to wait for the prediction service at a goal's start; each call's "
                  "deadline is the planner's re-plan budget (one control period when pipelined), at most this",
                  minimum=0.1, maximum=600.0),
    ParameterSpec("on_service_loss", "local", "when the prediction service does not answer within a call's deadline: "
                  "re-plan with a local engine of the model.* settings, wait for the service, or end the goal",
                  choices=SERVICE_LOSS_POLICIES),
    ParameterSpec("service_wait_limit", 60.0, "s to wait for a lost prediction service (on_service_loss: wait)",
                  minimum=0.0, maximum=3600.0),
)

SERVICE_PARAMETERS = ("service_timeout", "on_service_loss", "service_wait_limit")
"""The parameters of :class:`~parapush.planning.goal_models.ServiceSettings` (same names)."""

BUDGET_CUT_EVENT = "the re-plan's time budget cut its search (its best plan so far runs)"
"""The feedback's ``event`` when a step's plan was cut by its time budget (``TaskStep.budget_cut``,
also the feedback's ``budget_cut`` and counted in the result's ``budget_cuts``)."""

CLOSE_TIMEOUT = 2.0
"""s that ``close`` waits for a running goal to stop the pusher and end."""

_OUTCOMES = {
    MpcOutcome.SUCCESS: PushObject.Result.OUTCOME_SUCCESS,
    MpcOutcome.OBSTACLE_HIT: PushObject.Result.OUTCOME_OBSTACLE_HIT,
    MpcOutcome.OBJECT_OFF_TABLE: PushObject.Result.OUTCOME_OBJECT_OFF_TABLE,
    MpcOutcome.OBJECT_IN_GOAL: PushObject.Result.OUTCOME_OBJECT_IN_GOAL,
    MpcOutcome.MAX_CONTROLS: PushObject.Result.OUTCOME_MAX_CONTROLS,
    MpcOutcome.CANCELED: PushObject.Result.OUTCOME_CANCELED,
    MpcOutcome.ERROR: PushObject.Result.OUTCOME_ERROR,
}


class MpcNode(Node):
    """Serves ``push_object``; one goal at a time."""

    # No callback blocks: a goal's MPC loop runs in a thread of its own (_execute), so the node spins
    # single-threaded (node_main.make_executor). Measured in the demo (2 cores): with the loop inside
    # a MultiThreadedExecutor callback, its dispatch of 120 Hz scene states and service answers
    # cost the process 2-5x the planning thread's CPU while a re-plan ran.
    BLOCKING_CALLBACKS = False

    def __init__(self, **node_options) -> None:
        super().__init__("mpc", **node_options)
        values, self.scene = declare_scene_parameters(self, PARAMETERS)
        try:
            path = values["planner_config"]
            self.config = load_planner_config(config_file(path))
        except (PlannerConfigError, OSError) as error:
            raise ParameterError(f"parameter 'planner_config': {error}") from None
        self.values = values
        self.model_config = settings_from_parameters(ModelConfig, values, "model.")
        # the one construction path (parapush.planning.stack_planner): planner.yaml, the model.*
        # parameters (config/model.yaml) and the planner parameter (config/mpc.yaml)
        self.sources = PlannerSources(planner=self.config, model=self.model_config,
                                      preset=planner_preset(values["planner"]))
        # writable: cost weights and planner settings (live tuning, parapush.nodes.mpc_tuning)
        self.tuning = declare_tuning(self, self.sources, self.scene, on_change=self._on_tuned)
        self._events: list[str] = []  # what happened since the last feedback
        # Both sources predict with the engine of the same model.* settings (config/model.yaml):
        # here, or in the prediction service. A request leaves model and K unset unless a goal sets them.
        service = None
        if values["prediction_source"] == "service":
            service = ServicePrediction(self, self.scene, timeout=values["service_timeout"])
        settings = ServiceSettings(**{name: values[name] for name in SERVICE_PARAMETERS})
        self.models = GoalModels(self.scene, self.model_config, service=service, settings=settings,
                                 lost_errors=(ServicePredictionError,), on_event=self._on_event)
        self._state_lock = threading.Lock()
        # scene_state arrives at the mocap rate (120 Hz) while a re-plan runs in this process: the
        # callback only keeps the CDR bytes (raw); a state is deserialized when the loop looks at it.
        self._latest_state = LazyMessage(SceneState)
        self.create_subscription(SceneState, "scene_state", self._latest_state.put, 10,
                                 callback_group=MutuallyExclusiveCallbackGroup(), raw=True)
        self._executor_stop: str | None = None  # the executor's reason while it holds a latched stop
        self.create_subscription(DiagnosticStatus, "executor_status", self._on_executor_status,
                                 QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL),
                                 callback_group=MutuallyExclusiveCallbackGroup())
        # what the prediction service's fine model uses for each object (identification's results,
        # a robust goal's estimates): a robust goal through the service publishes its narrowed
        # estimate of the target there, and the parameters from before when it ends
        self._object_parameters: dict[str, ObjectParameters] = {}
        self.create_subscription(ObjectParametersMsg, "object_parameters", self._on_object_parameters,
                                 OBJECT_PARAMETERS_QOS, callback_group=MutuallyExclusiveCallbackGroup())
        self._parameters_publisher = self.create_publisher(ObjectParametersMsg, "object_parameters",
                                                           OBJECT_PARAMETERS_QOS)
        self.control_publisher = self.create_publisher(ControlSequence, "controls", 10)
        self.plan_publisher = self.create_publisher(PredictedTrajectory, "planned_trajectory", 10)
        self._busy = threading.Lock()
        self._closing = threading.Event()
        self._goal_done = self.create_guard_condition(lambda: None)  # wakes the executor when a goal ends
        self._goal_thread: threading.Thread | None = None
        self._action = ActionServer(self, PushObject, "push_object", execute_callback=self._execute,
                                    goal_callback=self._on_goal, cancel_callback=lambda _: CancelResponse.ACCEPT,
                                    callback_group=ReentrantCallbackGroup())
        if service is not None:
            threading.Thread(target=self._connect_prediction_service, args=(service,),
                             name="prediction service connection", daemon=True).start()
        coarse = self.models.coarse(self.sources.preset)
        coarse = "none (single fidelity)" if coarse is None else coarse.describe()
        self.get_logger().info(
            f"ready: scene '{self.scene.name}', planner {values['planner']}, model {self.model_config.name} "
            f"(K={self.model_config.iterations}) via {values['prediction_source']}, coarse search with {coarse}"
        )

    def _connect_prediction_service(self, model: ServicePrediction) -> None:
        """Once the prediction service is up, ask it one small prediction (the scene's initial state,
        one zero control of the default preset's duration), so DDS has matched both directions of
        the service before a goal's first plan: measured in the demo, the first call of a run took
        0.3 s longer than its 0.05 s solve, all of it in the plan the pusher stands still for; later
        calls ~5 ms longer."""
        try:
            if not model.wait_until_ready(self.values["service_timeout"]):
                return  # a goal reports the missing service (and applies on_service_loss)
            duration = planner_preset(self.values["planner"]).optimizer_settings(self.config.optimizer).control_duration
            model.predict(scene_initial_state(self.scene), np.zeros((1, 1, 2)), np.array([duration]))
        except (ServicePredictionError, RuntimeError) as error:  # not fatal: the goal's calls tell
            self.get_logger().info(f"prediction service not reached at start-up: {error}")

    def _on_executor_status(self, message: DiagnosticStatus) -> None:
        latched = any(value.key == "stop_latched" and value.value == "True" for value in message.values)
        with self._state_lock:
            self._executor_stop = message.message if latched else None

    def executor_stop(self) -> str | None:
        """The executor's reason (``executor_status`` message) while it holds a latched stop, else None."""
        with self._state_lock:
            return self._executor_stop

    def latest_state(self) -> tuple[float, SceneState | None]:
        """(monotonic s when received, the last ``scene_state`` message or None before the first)."""
        return self._latest_state.get()

    def _on_goal(self, goal: PushObject.Goal) -> GoalResponse:
        # Taken here, released when the goal's execution ends: a goal accepted before the first
        # one started executing would otherwise wait for it instead of being rejected.
        if self._closing.is_set() or not self._busy.acquire(blocking=False):
            self.get_logger().warning("goal rejected: another push_object goal is running (or shutting down)")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    # -- one goal ---------------------------------------------------------------------------
    def _push_goal(self, goal: PushObject.Goal) -> PushGoal:
        """The goal message's fields checked against the node's scene (ValueError naming the field)."""
        return PushGoal.from_interface(
            self.scene, target_object=goal.target_object, goal_x=goal.goal_x, goal_y=goal.goal_y,
            goal_radius=goal.goal_radius, max_controls=goal.max_controls, model=goal.model,
            iterations=goal.iterations, planner=goal.planner, risk_samples=goal.risk_samples, risk=goal.risk,
            uncertainty=tuple(goal.uncertainty))

    def goal_planner(self, goal: PushGoal) -> BuiltPlanner:
        """The goal's planner: :func:`build_planner` of this node's sources (the goal's preset if it
        names one) with the tuned parameters' values; its corrector is the node's predictor
        (:class:`~parapush.planning.goal_models.GoalModels`), which the built planner does not own.
        Before each plan its loop applies later live changes
        (:class:`~parapush.planning.live_settings.PlanRetuner`)."""
        version = self.tuning.version()
        sources = self.tuning.sources(goal.planner).with_overrides(goal.planner_overrides())
        built = build_planner(goal.scene, sources, model=self.models.corrector(goal, sources),
                              coarse=self.models.coarse(sources.preset),
                              target_parameters=ServiceTargetParameters(self, goal.scene) if self.models.via_service
                              else None)
        built.loop.before_plan = PlanRetuner(self.tuning, built, version, self._report_tuning)
        return built

    def _on_object_parameters(self, message: ObjectParametersMsg) -> None:
        try:
            name, parameters = parameters_from_msg(message)
        except MessageError as error:
            self.get_logger().warning(f"object_parameters ignored: {error}")
            return
        with self._state_lock:
            self._object_parameters[name] = parameters

    def service_parameters(self, scene: Scene) -> ObjectParameters:
        """What the prediction service predicts ``scene``'s target with: the last parameters seen on
        ``object_parameters`` (identification's, or a robust goal's), else the scene's."""
        with self._state_lock:
            seen = self._object_parameters.get(scene.target)
        return ObjectParameters.from_scene(scene, scene.target_index) if seen is None else seen

    def publish_parameters(self, name: str, parameters: ObjectParameters) -> None:
        """Publish ``parameters`` of object ``name`` on ``object_parameters`` (the service applies them)."""
        self._parameters_publisher.publish(parameters_to_msg(
            name, parameters, stamp=self.get_clock().now().nanoseconds * 1e-9))

    def _on_tuned(self, changes: list[Change]) -> None:
        """Accepted parameter changes: logged; a running goal's feedback reports the structural
        ones now (the live ones when its next re-plan applies them)."""
        self.get_logger().info("parameters changed: " + ", ".join(
            f"{change.text()} ({self.tuning.settings[change.name].applies})" for change in changes))
        later = [change.text() for change in changes if not change.live]
        if later and self._busy.locked():
            self._events.append(f"parameters changed: {', '.join(later)} (applies from the next goal)")

    def _report_tuning(self, sentence: str) -> None:
        self.get_logger().info(sentence)
        self._events.append(sentence)

    def _on_event(self, sentence: str) -> None:
        self.get_logger().warning(sentence)
        self._events.append(sentence)

    async def _execute(self, goal_handle):
        """The action's execute callback: runs the goal in its own thread (the executor keeps
        delivering scene states, service answers and cancel requests meanwhile) and awaits it."""
        finished = Future()

        def run() -> None:
            try:
                finished.set_result(self._execute_goal(goal_handle))
            except BaseException as error:  # noqa: BLE001 - handed to the awaiting callback
                finished.set_exception(error)
            self._goal_done.trigger()  # the executor resumes this callback on its next wake-up

        self._goal_thread = threading.Thread(target=run, name="push_object goal", daemon=True)
        self._goal_thread.start()
        return await finished

    def _execute_goal(self, goal_handle):
        try:  # _busy was taken when the goal was accepted
            return self._run_goal(goal_handle)
        except Exception as error:  # noqa: BLE001 - a goal always gets a result with its reason
            self.get_logger().error(f"goal failed: {type(error).__name__}: {error}\n{traceback.format_exc()}")
            result = PushObject.Result(outcome=PushObject.Result.OUTCOME_ERROR,
                                       failure_reason=f"internal error: {type(error).__name__}: {error}")
            self.control_publisher.publish(ControlSequence())  # stop the pusher
            goal_handle.abort()
            return result
        finally:
            self._busy.release()

    def _run_goal(self, goal_handle):
        result = PushObject.Result()
        started = time.monotonic()
        try:
            goal = self._push_goal(goal_handle.request)
            built = self.goal_planner(goal)  # e.g. robust planning asked of a single-fidelity preset
        except ValueError as error:
            return self._abort(goal_handle, result, PushObject.Result.OUTCOME_ERROR, f"invalid goal: {error}", started)
        scene = goal.scene
        self._events.clear()
        note = built.coarse_model_note
        self.get_logger().info(f"goal: planner {built.preset.name}, coarse model {built.coarse_model_name}"
                               + (f" ({note})" if note else ""))

        def cancel_requested() -> bool:
            return goal_handle.is_cancel_requested or self._closing.is_set()

        world = RosAsyncWorld(self, cancel_requested=cancel_requested, settle_time=self.values["settle_time"],
                              state_timeout=self.values["state_timeout"], latched_stop=self.executor_stop,
                              on_event=self._on_event)
        try:
            report = run_task(built, world, max_controls=goal.max_controls,
                              callback=lambda step: self._feedback(goal_handle, scene, step),
                              should_cancel=cancel_requested)
        finally:  # what the goal's planner holds (robust planning's threads; the corrector's parameters back)
            built.close()
        self._fill_result(result, scene, report, started)
        if world.executor_stop is not None:  # the executor stopped the pusher: its reason ends the goal
            result.failure_reason = world.executor_stop
        self.get_logger().info(
            f"goal finished ({built.preset.name}): {report.outcome.name} after {report.controls_executed} controls "
            f"({report.failure_reason or 'in the goal region'}); task {result.total_time:.1f} s, waiting "
            f"{report.waiting_time:.1f} s, planning {report.planning_time:.1f} s, re-plan p50/p95 "
            f"{report.replan_p50:.2f}/{report.replan_p95:.2f} s, {report.budget_cuts} search(es) cut by the time budget"
        )
        if report.outcome == MpcOutcome.CANCELED and goal_handle.is_cancel_requested:
            goal_handle.canceled()
        elif report.success:
            goal_handle.succeed()
        else:
            if report.outcome == MpcOutcome.CANCELED:  # not by the client: the node is closing
                result.failure_reason = f"the node is shutting down ({result.failure_reason})"
            goal_handle.abort()  # a goal that was not cancelled cannot end as canceled
        return result

    def _abort(self, goal_handle, result, outcome: int, reason: str, started: float):
        self.get_logger().warning(reason)
        result.success = False
        result.outcome = outcome
        result.failure_reason = reason
        result.total_time = time.monotonic() - started
        goal_handle.abort()
        return result

    def _feedback(self, goal_handle, scene, step: TaskStep) -> None:
        feedback = PushObject.Feedback()
        if len(step.predicted_trajectory):
            now = self.get_clock().now().nanoseconds * 1e-9
            durations = np.full(len(step.planned_controls), step.duration)
            trajectory = trajectory_to_msg(step.predicted_trajectory, scene, exact_states=0, start_stamp=now,
                                           durations=durations, cost=step.cost)
            self.plan_publisher.publish(trajectory)
            feedback.predicted_trajectory = trajectory
        for name, value in step.interface_values().items():
            setattr(feedback, name, value)
        cut = [BUDGET_CUT_EVENT] if step.budget_cut else []
        feedback.event = "; ".join([*self._events, *([step.event] if step.event else []), *cut])
        self._events.clear()
        feedback.control.vx, feedback.control.vy = (float(v) for v in step.control)
        feedback.control.duration = float(step.duration)
        goal_handle.publish_feedback(feedback)

    def _fill_result(self, result, scene, report: TaskReport, started: float) -> None:
        for name, value in report.interface_values().items():
            setattr(result, name, value)
        result.outcome = _OUTCOMES[report.outcome]
        result.total_time = time.monotonic() - started
        if np.all(np.isfinite(report.final_state)):
            result.final_state = state_to_msg(report.final_state, scene,
                                              stamp=self.get_clock().now().nanoseconds * 1e-9)

    def close(self) -> None:
        """Stop a running goal (the pusher stops) and wait for its thread, while the node can still publish."""
        self._closing.set()  # the running goal's world sees it and stops the pusher
        self.models.close()
        if self._goal_thread is not None:
            self._goal_thread.join(timeout=CLOSE_TIMEOUT)


class ServiceTargetParameters:
    """A goal's target's parameters in the prediction service, for robust planning
    (:class:`~parapush.planning.robust_planning.CorrectorParameters`): what the node last saw on
    ``object_parameters``, and a publication there that the service applies."""

    def __init__(self, node: MpcNode, scene: Scene) -> None:
        self.node = node
        self.scene = scene

    def current(self) -> ObjectParameters:
        return self.node.service_parameters(self.scene)

    def apply(self, parameters: ObjectParameters) -> ObjectParameters:
        previous = self.current()
        self.node.publish_parameters(self.scene.target, parameters)
        return previous


def main(args=None) -> int:
    return run_node(MpcNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
