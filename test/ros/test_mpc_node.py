"""The MPC node's PushObject action over real Fast DDS.

A plant node in the test plays the robot and the executor: it runs the received controls
on their schedule (the executor's command stream in its default ``replace`` queue mode), moves
the bodies with the analytical coarse model at 50 Hz and publishes ``scene_state``, so the
action runs its real loop (observe over DDS, plan, send controls, feedback, result) in a few
seconds, with either planner (sequential ``isrr2019`` or pipelined ``realtime``, the default).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import rclpy
import yaml
from parareal_pushing.action import PushObject
from parareal_pushing.msg import ControlSequence, PredictedTrajectory, SceneState
from parareal_pushing.msg import ObjectParameters as ObjectParametersMsg
from rclpy.action import ActionClient
from rclpy.parameter import Parameter
from ros_futures import wait_future

from parapush.execution.command_stream import CommandStream
from parapush.execution.commands import PlanarControl
from parapush.graph import config_dir
from parapush.identification.parameter_belief import ParameterBelief
from parapush.identification.parameters import ObjectParameters
from parapush.nodes.conversions import state_to_msg
from parapush.nodes.identification_messages import OBJECT_PARAMETERS_QOS, parameters_from_msg
from parapush.nodes.mpc import MpcNode
from parapush.nodes.prediction_service import PredictionServiceNode
from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.prediction import ModelConfig
from parapush.scene import load_scene
from parapush.scene.uncertainty import ParameterSpread

SCENE_DATA = {
    "name": "short_push",
    "pusher": {"position": [-0.08, 0.0]},
    "objects": [{"name": "puck", "pose": [0.0, 0.0, 0.0]}],
    "goal": {"center": [0.1, 0.0], "radius": 0.03},
}


@pytest.fixture
def files(tmp_path):
    return write_files(tmp_path)


def write_files(tmp_path, scene_data=SCENE_DATA):
    """The scene (``scene_data``) and a planner file of short controls in ``tmp_path``: (scene, planner) paths."""
    scene_path = tmp_path / "scene.yaml"
    scene_path.write_text(yaml.safe_dump(scene_data))
    planner = yaml.safe_load((config_dir() / "planner.yaml").read_text())
    planner["optimizer"].update(control_duration=0.25, max_iterations=4, samples=12)
    planner["mpc"].update(max_controls=30)
    planner_path = tmp_path / "planner.yaml"
    planner_path.write_text(yaml.safe_dump(planner))
    return scene_path, planner_path


class Plant:
    """A fake robot: runs the received controls like the executor and publishes scene_state at 50 Hz.

    Attributes:
        controls: the received ControlSequence messages; received: their arrival times (monotonic, s).
        motion: (time, vx, vy) of every tick: the velocity the pusher moves with from then on.
    """

    PERIOD = 0.02

    def __init__(self, context, scene):
        self.scene = scene
        # the analytical model as the MPC node's configured coarse model moves objects (model.yaml's
        # analytical_rotation): the plant is the planner's own model, as the tests here are about the loop
        self.model = AnalyticalCoarseModel(scene, rotation=ModelConfig().analytical_rotation)
        layout = scene.layout
        self.state = layout.compose(scene.pusher.position, np.array([spec.pose for spec in scene.objects]))
        self.node = rclpy.create_node("plant", context=context)
        self.publisher = self.node.create_publisher(SceneState, "scene_state", 10)
        self.stream = CommandStream()
        self.controls: list[ControlSequence] = []
        self.received: list[float] = []
        self.motion: list[tuple[float, float, float]] = []
        self.plans: list[PredictedTrajectory] = []
        self.lock = threading.Lock()
        self.last_tick = time.monotonic()
        self.velocity = np.zeros(2)
        self.node.create_subscription(ControlSequence, "controls", self.on_control, 10)
        self.node.create_subscription(PredictedTrajectory, "planned_trajectory", self.plans.append, 10)
        self.node.create_timer(self.PERIOD, self.publish)

    def stopped(self, timeout: float = 2.0) -> bool:
        """The last control message received is a stop (empty), waiting up to ``timeout`` s for it:
        the stop and the action's result come by different DDS writers, so the result can be first."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                if self.controls and not self.controls[-1].controls:
                    return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)

    def on_control(self, message: ControlSequence) -> None:
        with self.lock:
            self.controls.append(message)
            self.received.append(time.monotonic())
            self.stream.replace([PlanarControl(c.vx, c.vy, c.duration) for c in message.controls])

    def publish(self) -> None:
        with self.lock:  # the velocity commanded at the last tick moved the pusher until now
            now = time.monotonic()  # read under the lock: a tick is ordered with every arrival
            elapsed, self.last_tick = now - self.last_tick, now
            if np.any(self.velocity != 0.0) and elapsed > 0.0:
                self.state = self.model.propagate(self.state[None], self.velocity[None], np.array([elapsed]))[0]
            self.velocity = self.stream.sample(now).velocity
            self.motion.append((now, float(self.velocity[0]), float(self.velocity[1])))
            message = state_to_msg(self.state, self.scene, stamp=self.node.get_clock().now().nanoseconds * 1e-9)
        self.publisher.publish(message)


def start(context, spinning, files, **parameters):
    scene_path, planner_path = files
    overrides = {"scene_file": str(scene_path), "planner_config": str(planner_path),
                 "prediction_source": "local", "model.name": "coarse",
                 "model.coarse_model": "analytical", "settle_time": 0.05}
    overrides.update(parameters)
    node = MpcNode(context=context, parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
    plant = Plant(context, load_scene(scene_path))
    client_node = rclpy.create_node("push_client", context=context)
    spinning.add(node, plant.node, client_node)
    client = ActionClient(client_node, PushObject, "push_object")
    assert client.wait_for_server(timeout_sec=10.0)
    return node, plant, client


def wait(future, timeout: float = 60.0):
    """The result of ``future`` within ``timeout`` s (default a minute: a whole push)."""
    return wait_future(future, timeout=timeout)


def goal(**fields):
    message = PushObject.Goal(goal_x=0.1, goal_y=0.0, goal_radius=0.03)
    for name, value in fields.items():
        setattr(message, name, value)
    return message


@pytest.mark.parametrize("planner", ["", "isrr2019"])  # "": the node's default (realtime)
def test_push_object_reaches_the_goal_with_feedback(ros_context, spinning, files, planner):
    node, plant, client = start(ros_context, spinning, files)
    try:
        feedback = []
        handle = wait(client.send_goal_async(goal(planner=planner),
                                             feedback_callback=lambda msg: feedback.append(msg.feedback)))
        assert handle.accepted
        result = wait(handle.get_result_async()).result
        assert result.success, result.failure_reason
        assert result.outcome == PushObject.Result.OUTCOME_SUCCESS
        assert result.final_distance <= 0.03
        assert plant.stopped()  # the loop ends with a stop (and the controls before it have arrived: one writer)
        sent = [message for message in plant.controls if message.controls]  # one per control; empty: stops
        assert result.controls_executed == len(sent) + result.fallbacks  # a fallback was sent with its control
        assert result.planner == (planner or "realtime")
        coarse_model = "none" if planner == "isrr2019" else "analytical"  # the node's model.coarse_model
        assert result.coarse_model == coarse_model and {f.coarse_model for f in feedback} == {coarse_model}
        assert 0.0 <= result.waiting_time <= result.total_time
        assert 0.0 < result.replan_p50 <= result.replan_p95
        if planner == "isrr2019":  # plan, then execute: the pusher stands still for every plan
            assert result.waiting_time >= result.planning_time and result.fallbacks == 0
        assert result.planning_time > 0 and result.total_time >= result.execution_time
        assert len(feedback) == result.controls_executed
        assert [f.step for f in feedback] == list(range(len(feedback)))
        assert len(feedback[0].predicted_trajectory.states) == 5  # N + 1 with the default horizon
        assert plant.plans, "no planned trajectory published"
        puck = [o for o in result.final_state.objects if o.name == "puck"][0]
        assert np.hypot(puck.x - 0.1, puck.y) <= 0.03
        assert list(result.parameter_estimate) == [] and list(feedback[0].parameter_spread) == []  # nominal
    finally:
        node.close()


def test_a_robust_goal_reports_the_target_s_belief(ros_context, spinning, files):
    node, plant, client = start(ros_context, spinning, files)
    try:
        feedback = []
        uncertainty = [0.2, 0.1, 0.0, 0.01]  # the goal's prior for the target (ParameterSpread's fields)
        handle = wait(client.send_goal_async(goal(risk_samples=3, risk="cvar", uncertainty=uncertainty),
                                             feedback_callback=lambda msg: feedback.append(msg.feedback)))
        result = wait(handle.get_result_async()).result
        assert result.success, result.failure_reason
        assert len(result.parameter_estimate) == len(result.parameter_spread) == 5
        assert feedback and all(len(step.parameter_estimate) == 5 for step in feedback)
        assert result.parameter_estimate[0] > 0.0  # a mass, kg
        scene = load_scene(files[0])  # the first control starts before any narrowing: the goal's prior
        prior = ParameterBelief.from_spread(ObjectParameters.from_scene(scene, 0), ParameterSpread(*uncertainty))
        np.testing.assert_allclose(feedback[0].parameter_spread, prior.spread(), rtol=1e-9)
        handle = wait(client.send_goal_async(goal(risk_samples=3, uncertainty=[0.2, 0.1])))
        result = wait(handle.get_result_async()).result
        assert result.outcome == PushObject.Result.OUTCOME_ERROR and "uncertainty: expected 4 values" in \
            result.failure_reason, result.failure_reason
    finally:
        node.close()


def test_a_robust_goal_through_the_service_gives_it_the_estimate_and_then_the_parameters_back(
        ros_context, spinning, files):
    scene_path, _planner = files
    service = PredictionServiceNode(context=ros_context, parameter_overrides=[
        Parameter("scene_file", value=str(scene_path)), Parameter("model.name", value="coarse"),
        Parameter("model.coarse_model", value="analytical")])
    spinning.add(service)
    nominal = service.engine.object_parameters("puck")
    node, plant, client = start(ros_context, spinning, files, prediction_source="service", service_timeout=5.0)
    seen = []
    listener = rclpy.create_node("parameters_listener", context=ros_context)
    listener.create_subscription(ObjectParametersMsg, "object_parameters", seen.append, OBJECT_PARAMETERS_QOS)
    spinning.add(listener)
    try:
        handle = wait(client.send_goal_async(goal(risk_samples=3, risk="mean")))
        result = wait(handle.get_result_async()).result
        assert result.success, result.failure_reason
        deadline = time.monotonic() + 5.0  # published before the result, arriving by another writer
        while time.monotonic() < deadline and (len(seen) < 2 or parameters_from_msg(seen[-1])[1] != nominal
                                               or service.applied_parameters < len(seen)):
            time.sleep(0.05)
        assert len(seen) >= 2 and service.applied_parameters == len(seen)  # estimates, then the old ones
        estimates = [parameters_from_msg(message)[1] for message in seen[:-1]]
        assert all(message.object == "puck" for message in seen)
        np.testing.assert_allclose(estimates[-1].as_vector(), result.parameter_estimate, rtol=1e-9)
        assert parameters_from_msg(seen[-1])[1] == nominal
        assert service.engine.object_parameters("puck") == nominal
    finally:
        node.close()


def test_invalid_goals_are_aborted_with_a_reason(ros_context, spinning, files):
    node, plant, client = start(ros_context, spinning, files)
    try:
        for fields, reason in [({"target_object": "ghost"}, "target_object: unknown object 'ghost'"),
                               ({"goal_radius": 0.0}, "goal_radius"),
                               ({"goal_x": 5.0}, "not on the table"),
                               ({"model": "oracle"}, "model"),
                               ({"planner": "telepathy"}, "unknown planner preset 'telepathy'"),
                               ({"risk": "median"}, "risk"),
                               ({"planner": "isrr2019", "risk_samples": 2}, "robust.samples")]:
            handle = wait(client.send_goal_async(goal(**fields)))
            result = wait(handle.get_result_async()).result
            assert not result.success
            assert result.outcome == PushObject.Result.OUTCOME_ERROR
            assert reason in result.failure_reason, result.failure_reason
        assert not plant.controls, "an invalid goal moved the robot"
    finally:
        node.close()


def test_cancel_stops_the_pusher(ros_context, spinning, files):
    node, plant, client = start(ros_context, spinning, files)
    try:
        first_feedback = threading.Event()
        handle = wait(client.send_goal_async(goal(goal_x=0.3), feedback_callback=lambda _: first_feedback.set()))
        assert first_feedback.wait(30)
        wait(handle.cancel_goal_async())
        result = wait(handle.get_result_async()).result
        assert result.outcome == PushObject.Result.OUTCOME_CANCELED
        assert not result.success
        assert plant.stopped(), "no stop sent on cancel"
    finally:
        node.close()
