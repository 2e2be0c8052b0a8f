"""A predictive model that asks the prediction service (``predict_trajectory``) over ROS.

Implements the planner's ``PredictiveModel`` Protocol
(:mod:`parapush.planning.predictive_model`), so the optimizer plans through the service
exactly as through a local engine.
"""

from __future__ import annotations

import copy as _copy
import threading
import time

import numpy as np
from parareal_pushing.srv import PredictTrajectory
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile

from parapush.nodes.conversions import controls_to_msg, state_to_msg, trajectory_from_msg
from parapush.planning.predictive_model import check_prediction_arguments
from parapush.prediction.request import iterations_to_interface
from parapush.scene import Scene


class ServicePredictionError(RuntimeError):
    """The prediction service could not be reached or refused the request."""


class ServicePrediction:
    """``predict()`` through the ``predict_trajectory`` service.

    Args:
        node: the node that owns the client; ``predict`` blocks until the answer arrives, so it
            must be called from a thread other than the one spinning the node (the MPC node runs
            its goals in a thread of their own).
        scene: the scene both sides use.
        model: "parareal", "coarse" or "fine", or None: the service's configured model.
        iterations: Parareal iterations K, or None: the service's configured K (capped at N).
        tolerance_position, tolerance_angle, deadline: stopping rules (m, rad, s), or None:
            the service's (its deadline applies unless this one is shorter).
        coarse_model: coarse model name, or None (the service's).
        service: service name.
        timeout: s to wait for an answer.
    """

    def __init__(
        self,
        node: Node,
        scene: Scene,
        *,
        model: str | None = None,
        iterations: int | None = None,
        tolerance_position: float | None = None,
        tolerance_angle: float | None = None,
        deadline: float | None = None,
        coarse_model: str | None = None,
        service: str = "predict_trajectory",
        timeout: float = 30.0,
    ) -> None:
        self.scene = scene
        self.layout = scene.layout
        self.model = model
        self.iterations = iterations
        self.tolerance_position = tolerance_position
        self.tolerance_angle = tolerance_angle
        self.deadline = deadline
        self.coarse_model = coarse_model
        self.timeout = timeout
        self._client = node.create_client(
            PredictTrajectory, service, qos_profile=QoSProfile(depth=64), callback_group=ReentrantCallbackGroup()
        )
        self.last_response: PredictTrajectory.Response | None = None
        self._closed = threading.Event()

    def configured(self, *, model: str | None, iterations: int | None) -> ServicePrediction:
        """A copy asking for another model or K, sharing this one's client."""
        copy = _copy.copy(self)
        copy.model = model
        copy.iterations = iterations
        copy.last_response = None
        return copy  # shares the client and the closed event

    def wait_until_ready(self, timeout: float) -> bool:
        return self._client.wait_for_service(timeout_sec=timeout)

    def predict(self, initial_state: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """Trajectories (S, N+1, D) for controls (S, N, 2) from initial_state (D,), durations (N,) s."""
        initial_state, controls, durations = check_prediction_arguments(self.layout, initial_state, controls, durations)
        request = PredictTrajectory.Request()
        request.initial_state = state_to_msg(initial_state, self.scene)
        request.sequences = [controls_to_msg(sequence, durations) for sequence in controls]
        request.model = self.model or ""
        request.coarse_model = self.coarse_model or ""
        request.iterations = iterations_to_interface(self.iterations)
        request.tolerance_position = self.tolerance_position or 0.0
        request.tolerance_angle = self.tolerance_angle or 0.0
        request.deadline = self.deadline or 0.0
        # A request written before DDS has matched the service is lost without an error: wait
        # until the service is discovered (the MPC may start before the prediction service).
        if not self._client.service_is_ready() and not self._client.wait_for_service(timeout_sec=self.timeout):
            raise ServicePredictionError(f"predict_trajectory: the service is not available within {self.timeout} s")
        done = threading.Event()
        future = self._client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        deadline = time.monotonic() + self.timeout
        while not done.wait(0.05):
            if self._closed.is_set() or time.monotonic() > deadline:
                self._client.remove_pending_request(future)
                reason = "the node is shutting down" if self._closed.is_set() else f"no answer within {self.timeout} s"
                raise ServicePredictionError(f"predict_trajectory: {reason}")
        response = future.result()
        if response is None:
            raise ServicePredictionError("predict_trajectory: the call failed")
        self.last_response = response
        if not response.success:
            raise ServicePredictionError(f"predict_trajectory: {response.message}")
        return np.stack([trajectory_from_msg(trajectory, self.scene) for trajectory in response.trajectories])

    def close(self) -> None:
        """Interrupt a pending ``predict`` (the client itself belongs to the node)."""
        self._closed.set()
