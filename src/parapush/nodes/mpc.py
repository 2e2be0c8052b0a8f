"""MPC node: the ``push_object`` action (parareal_pushing/action/PushObject).

Each goal runs the core receding-horizon loop (:class:`parapush.planning.MpcLoop`) on a
:class:`RosWorld`: it observes ``scene_state`` (from the state estimator), sends each
control to the executor on ``controls`` and waits for it to be executed. Predictions come
from the prediction service (``prediction_source: service``) or from a local engine.
Feedback every step: step, cost, distance, planning time, control and the predicted
trajectory (also published on ``planned_trajectory`` for visualisation). Cancelling a
goal stops the pusher at once (an empty ControlSequence tells the executor to stop).
"""

from __future__ import annotations

import dataclasses
import threading
import time
import traceback

import numpy as np
from parareal_pushing.action import PushObject
from parareal_pushing.msg import ControlSequence, PredictedTrajectory, SceneState
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node

from parapush.graph import config_dir
from parapush.nodes.conversions import MessageError, controls_to_msg, msg_to_snapshot, state_to_msg, trajectory_to_msg
from parapush.nodes.node_main import run_node
from parapush.nodes.parameters import (
    ParameterError,
    ParameterSpec,
    declare_parameters,
    load_scene_parameter,
    parameter_specs,
    settings_from_parameters,
)
from parapush.nodes.prediction_client import ServicePrediction
from parapush.parareal import MODELS
from parapush.planning import (
    MpcLoop,
    MpcOutcome,
    MpcResult,
    MpcStep,
    PlannerConfigError,
    StochasticTrajectoryOptimizer,
    load_planner_config,
)
from parapush.prediction import EnginePrediction, ModelConfig
from parapush.scene import GoalRegion, SceneError

PARAMETERS = (
    ParameterSpec("scene_file", "clutter_fig1.yaml", "scene YAML: a path or a name in config/scenes/"),
    ParameterSpec("planner_config", "planner.yaml",
                  "planner YAML (optimizer, MPC, costs): a path or a name in config/"),
    ParameterSpec("prediction_source", "service", "where predictions come from: the prediction service, or an "
                  "engine in this node built from the model.* parameters", choices=("service", "local")),
    *parameter_specs(ModelConfig, "model."),  # config/model.yaml, as the prediction service's
    ParameterSpec("state_timeout", 1.0, "s; a scene state older than this is stale", minimum=0.01, maximum=60.0),
    ParameterSpec("settle_time", 0.05, "s to wait after a control before observing", minimum=0.0, maximum=5.0),
    ParameterSpec("service_timeout", 30.0, "s to wait for a prediction", minimum=0.1, maximum=600.0),
)

_OUTCOMES = {
    MpcOutcome.SUCCESS: PushObject.Result.OUTCOME_SUCCESS,
    MpcOutcome.OBSTACLE_HIT: PushObject.Result.OUTCOME_OBSTACLE_HIT,
    MpcOutcome.OBJECT_OFF_TABLE: PushObject.Result.OUTCOME_OBJECT_OFF_TABLE,
    MpcOutcome.OBJECT_IN_GOAL: PushObject.Result.OUTCOME_OBJECT_IN_GOAL,
    MpcOutcome.MAX_CONTROLS: PushObject.Result.OUTCOME_MAX_CONTROLS,
    MpcOutcome.CANCELED: PushObject.Result.OUTCOME_CANCELED,
    MpcOutcome.ERROR: PushObject.Result.OUTCOME_ERROR,
}


FIRST_STATE_TIMEOUT = 10.0
"""s to wait for the first scene state of a goal."""


class WorldError(RuntimeError):
    """The robot (or simulator) cannot be observed or commanded."""


class RosWorld:
    """The MPC loop's ``World`` over ROS topics.

    ``observe`` returns the first scene state received after the last control ended (plus
    ``settle_time``), refusing stale ones; ``execute`` publishes one control and returns
    when its duration has passed (or at once when the goal is cancelled, after stopping).
    """

    def __init__(self, node: MpcNode, *, cancel_requested, settle_time: float, state_timeout: float) -> None:
        self.node = node
        self.cancel_requested = cancel_requested
        self.settle_time = settle_time
        self.state_timeout = state_timeout
        self._not_before = time.monotonic()
        self._observed = False

    def observe(self) -> np.ndarray:
        # The first observation of a goal may come right after start-up, before DDS has matched
        # this node with the estimator: allow it FIRST_STATE_TIMEOUT; later ones state_timeout.
        timeout = self.state_timeout if self._observed else max(self.state_timeout, FIRST_STATE_TIMEOUT)
        self._observed = True
        deadline = self._not_before + timeout
        while True:
            received, message = self.node.latest_state()
            if message is not None and received >= self._not_before:
                try:
                    return msg_to_snapshot(message, self.node.scene, require_valid=True).state
                except MessageError as error:
                    if time.monotonic() > deadline:
                        raise WorldError(f"scene state unusable: {error}") from None
            if time.monotonic() > deadline:
                raise WorldError(f"no scene state on 'scene_state' within {timeout} s")
            time.sleep(0.005)

    def execute(self, control: np.ndarray, duration: float) -> None:
        message = controls_to_msg(np.asarray(control)[None], duration)
        message.header.stamp = self.node.get_clock().now().to_msg()
        self.node.control_publisher.publish(message)
        end = time.monotonic() + duration
        while time.monotonic() < end:
            if self.cancel_requested():
                self.stop()
                break
            time.sleep(0.01)
        self._not_before = time.monotonic() + self.settle_time

    def stop(self) -> None:
        stop = ControlSequence()
        stop.header.stamp = self.node.get_clock().now().to_msg()
        stop.header.frame_id = "table"
        self.node.control_publisher.publish(stop)


class MpcNode(Node):
    """Serves ``push_object``; one goal at a time."""

    BLOCKING_CALLBACKS = True  # the goal runs the whole MPC loop inside its callback

    def __init__(self, **node_options) -> None:
        super().__init__("mpc", **node_options)
        values = declare_parameters(self, PARAMETERS)
        self.scene = load_scene_parameter(values["scene_file"])
        try:
            path = values["planner_config"]
            self.config = load_planner_config(path if "/" in path else config_dir() / path)
        except (PlannerConfigError, OSError) as error:
            raise ParameterError(f"parameter 'planner_config': {error}") from None
        self.values = values
        self.model_config = settings_from_parameters(ModelConfig, values, "model.")
        callbacks = ReentrantCallbackGroup()
        # Both sources predict with the engine of the same model.* settings (config/model.yaml):
        # here, or in the prediction service. A request leaves model and K unset unless a goal sets them.
        if values["prediction_source"] == "service":
            self.model = ServicePrediction(self, self.scene, timeout=values["service_timeout"])
        else:
            self.model = EnginePrediction.build(self.scene, self.model_config)
        self._state_lock = threading.Lock()
        self._latest: tuple[float, SceneState | None] = (0.0, None)
        self.create_subscription(SceneState, "scene_state", self._on_state, 10,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        self.control_publisher = self.create_publisher(ControlSequence, "controls", 10)
        self.plan_publisher = self.create_publisher(PredictedTrajectory, "planned_trajectory", 10)
        self._busy = threading.Lock()
        self._closing = threading.Event()
        self._action = ActionServer(
            self,
            PushObject,
            "push_object",
            execute_callback=self._execute,
            goal_callback=self._on_goal,
            cancel_callback=lambda _: CancelResponse.ACCEPT,
            callback_group=callbacks,
        )
        self.get_logger().info(
            f"ready: scene '{self.scene.name}', model {self.model_config.name} "
            f"(K={self.model_config.iterations}) via {values['prediction_source']}"
        )

    def _on_state(self, message: SceneState) -> None:
        with self._state_lock:
            self._latest = (time.monotonic(), message)

    def latest_state(self) -> tuple[float, SceneState | None]:
        with self._state_lock:
            return self._latest

    def _on_goal(self, goal: PushObject.Goal) -> GoalResponse:
        # Taken here, released when the goal's execution ends: a goal accepted before the first
        # one started executing would otherwise wait for it instead of being rejected.
        if self._closing.is_set() or not self._busy.acquire(blocking=False):
            self.get_logger().warning("goal rejected: another push_object goal is running (or shutting down)")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    # -- one goal ---------------------------------------------------------------------------
    def _task_scene(self, goal: PushObject.Goal):
        target = goal.target_object or self.scene.target
        if target not in self.scene.object_names:
            raise ValueError(f"target_object: unknown object {target!r}; the scene has {list(self.scene.object_names)}")
        for name in ("goal_x", "goal_y", "goal_radius"):
            if not np.isfinite(getattr(goal, name)):
                raise ValueError(f"{name}: must be finite")
        if goal.goal_radius <= 0.0:
            raise ValueError(f"goal_radius: must be > 0, got {goal.goal_radius}")
        if not self.scene.table.contains(goal.goal_x, goal.goal_y):
            raise ValueError(f"goal_x, goal_y: ({goal.goal_x}, {goal.goal_y}) is not on the table")
        if goal.model and goal.model not in MODELS:
            raise ValueError(f"model: expected one of {list(MODELS)}, got {goal.model!r}")
        if goal.iterations < -1:
            raise ValueError(f"iterations: must be >= 0 or -1, got {goal.iterations}")
        try:
            region = GoalRegion(center=(goal.goal_x, goal.goal_y), radius=goal.goal_radius)
            return dataclasses.replace(self.scene, goal=region, target=target)
        except SceneError as error:
            raise ValueError(str(error)) from None

    def _model_for(self, goal: PushObject.Goal):
        """The predictive model for this goal: the node's, or one with the goal's model/K."""
        if not goal.model and goal.iterations == -1:
            return self.model, False
        iterations = None if goal.iterations == -1 else goal.iterations
        return self.model.configured(model=goal.model or None, iterations=iterations), False

    def _execute(self, goal_handle):
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
        goal = goal_handle.request
        result = PushObject.Result()
        started = time.monotonic()
        try:
            scene = self._task_scene(goal)
            model, owned = self._model_for(goal)
        except ValueError as error:
            return self._abort(goal_handle, result, PushObject.Result.OUTCOME_ERROR, f"invalid goal: {error}", started)
        try:
            loop = MpcLoop(scene, StochasticTrajectoryOptimizer(self.config.optimizer), model,
                           self.config.cost_function(scene), self.config.mpc)
            def cancel_requested() -> bool:
                return goal_handle.is_cancel_requested or self._closing.is_set()

            world = RosWorld(self, cancel_requested=cancel_requested,
                             settle_time=self.values["settle_time"], state_timeout=self.values["state_timeout"])
            mpc_result = loop.run(
                world,
                max_controls=goal.max_controls or None,
                callback=lambda step: self._feedback(goal_handle, scene, step),
                should_cancel=cancel_requested,
            )
        finally:
            if owned:
                model.close()
        self._fill_result(result, scene, mpc_result)
        self.get_logger().info(
            f"goal finished: {mpc_result.outcome.name} after {mpc_result.controls_executed} controls "
            f"({mpc_result.failure_reason or 'in the goal region'})"
        )
        if mpc_result.outcome == MpcOutcome.CANCELED and goal_handle.is_cancel_requested:
            goal_handle.canceled()
        elif mpc_result.success:
            goal_handle.succeed()
        else:
            if mpc_result.outcome == MpcOutcome.CANCELED:  # not by the client: the node is closing
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

    def _feedback(self, goal_handle, scene, step: MpcStep) -> None:
        now = self.get_clock().now().nanoseconds * 1e-9
        durations = np.full(len(step.planned_controls), self.config.optimizer.control_duration)
        trajectory = trajectory_to_msg(step.predicted_trajectory, scene, exact_states=0, start_stamp=now,
                                       durations=durations, cost=step.cost)
        self.plan_publisher.publish(trajectory)
        feedback = PushObject.Feedback()
        feedback.step = int(step.step)
        feedback.cost = float(step.cost)
        feedback.distance_to_goal = float(step.distance_to_goal)
        feedback.planning_time = float(step.planning_time)
        feedback.control.vx, feedback.control.vy = (float(v) for v in step.control)
        feedback.control.duration = float(step.duration)
        feedback.predicted_trajectory = trajectory
        goal_handle.publish_feedback(feedback)

    def _fill_result(self, result, scene, mpc_result: MpcResult) -> None:
        result.success = bool(mpc_result.success)
        result.outcome = _OUTCOMES[mpc_result.outcome]
        result.failure_reason = "" if mpc_result.success else mpc_result.failure_reason
        result.controls_executed = int(mpc_result.controls_executed)
        result.optimizer_iterations = int(mpc_result.optimizer_iterations)
        result.planning_time = float(mpc_result.planning_time)
        result.execution_time = float(mpc_result.execution_time)
        result.total_time = float(mpc_result.total_time)
        result.final_distance = float(mpc_result.final_distance)
        final_state = np.asarray(mpc_result.final_state)
        if final_state.shape == (scene.layout.dimension,) and np.all(np.isfinite(final_state)):
            result.final_state = state_to_msg(mpc_result.final_state, scene,
                                              stamp=self.get_clock().now().nanoseconds * 1e-9)

    def close(self) -> None:
        self._closing.set()  # the running goal's world and loop see it and stop the pusher
        close = getattr(self.model, "close", None)
        if callable(close):
            close()


def main(args=None) -> int:
    return run_node(MpcNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
