"""Prediction service node: ``PredictTrajectory`` answered by Parareal on a MuJoCo worker pool.

Parameters are declared with ranges and validated at start-up: ``model.*`` (the model
settings shared with every node that predicts, config/model.yaml) and the request limits;
the engine and its worker pool are created once. Requests are served concurrently (a
multi-threaded executor; the engine interleaves their fine batches, so a small request is not
queued behind a large one). Every request is answered: malformed ones with ``success = false``
and a message naming what was wrong, ones over the work budget (``max_work``) with
``success = false`` and a message ``refused: ...`` stating the estimate and the limit. Diagnostics (request count,
latency percentiles, iterations, worker health) are published on ``/diagnostics``.
"""

from __future__ import annotations

import traceback

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from parareal_pushing.msg import ObjectParameters as ObjectParametersMsg
from parareal_pushing.srv import PredictTrajectory
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from parapush.nodes.conversions import MessageError
from parapush.nodes.identification_messages import OBJECT_PARAMETERS_QOS, parameters_from_msg
from parapush.nodes.node_main import run_node
from parapush.nodes.parameters import (
    ParameterSpec,
    declare_scene_parameters,
    parameter_specs,
    settings_from_parameters,
)
from parapush.nodes.prediction_messages import fill_prediction_response, prediction_request_from_msg
from parapush.prediction import (
    ModelConfig,
    PredictionEngine,
    PredictionError,
    PredictionLimits,
    RequestError,
    WorkBudgetError,
)

SERVICE_QOS = QoSProfile(depth=256, reliability=ReliabilityPolicy.RELIABLE)
"""QoS of the service (and the right one for clients that send bursts of requests)."""

SERVICE_THREADS = 8
"""Executor threads: requests served at once (each blocks one thread while the engine solves it)."""

MODEL_PREFIX = "model."
"""The model settings (config/model.yaml, :class:`ModelConfig`) are the ``model.*`` parameters."""

PARAMETERS = (
    *parameter_specs(ModelConfig, MODEL_PREFIX),
    *parameter_specs(PredictionLimits),
    ParameterSpec("diagnostics_period", 1.0, "s between diagnostics messages", minimum=0.05, maximum=60.0),
)


class PredictionServiceNode(Node):
    """Serves ``predict_trajectory`` (parareal_pushing/srv/PredictTrajectory)."""

    BLOCKING_CALLBACKS = True  # a request blocks its callback for its whole solve; others run beside it

    def __init__(self, **node_options) -> None:
        super().__init__("prediction_service", **node_options)
        values, self.scene = declare_scene_parameters(self, PARAMETERS)
        config = settings_from_parameters(ModelConfig, values, MODEL_PREFIX)
        self.limits = settings_from_parameters(PredictionLimits, values)
        self.engine = PredictionEngine(self.scene, config, limits=self.limits)
        # Deep history: with the default depth of 10, a burst of concurrent requests loses answers.
        self._service = self.create_service(
            PredictTrajectory, "predict_trajectory", self._handle, qos_profile=SERVICE_QOS,
            callback_group=ReentrantCallbackGroup(),
        )
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        # Identified object parameters (identification node) replace the scene file's in the fine model.
        self.applied_parameters = 0
        # Not `self._parameters`: that is rclpy's Node parameter table (issue 17).
        self._object_parameters_subscription = self.create_subscription(
            ObjectParametersMsg, "object_parameters", self._on_object_parameters, OBJECT_PARAMETERS_QOS
        )
        self._timer = self.create_timer(
            values["diagnostics_period"], self._publish_diagnostics, callback_group=MutuallyExclusiveCallbackGroup()
        )
        self.get_logger().info(
            f"ready: scene '{self.scene.name}' ({len(self.scene.objects)} objects), backend {config.backend} "
            f"with {self.engine.backend.workers} workers, coarse models {list(self.engine.coarse_models)} "
            f"(default {self.engine.default_coarse})"
            + (f" (unavailable: {self.engine.unavailable_coarse})" if self.engine.unavailable_coarse else "")
        )

    # -- service --------------------------------------------------------------------------------
    def _handle(self, request: PredictTrajectory.Request, response: PredictTrajectory.Response):
        try:
            outcome = self.engine.predict(prediction_request_from_msg(request, self.scene))
        except WorkBudgetError as error:
            response.success = False
            response.message = f"refused: {error}"
            return response
        except (MessageError, RequestError) as error:
            response.success = False
            response.message = f"invalid request: {error}"
            return response
        except PredictionError as error:
            response.success = False
            response.message = f"prediction failed: {error}"
            self.get_logger().warning(response.message)
            return response
        except Exception as error:  # noqa: BLE001 - the service never dies on a request
            response.success = False
            response.message = f"internal error: {type(error).__name__}: {error}"
            self.get_logger().error(f"{response.message}\n{traceback.format_exc()}")
            return response
        return fill_prediction_response(response, outcome, request, self.scene)

    def _on_object_parameters(self, message: ObjectParametersMsg) -> None:
        try:
            name, parameters = parameters_from_msg(message)
            previous = self.engine.apply_object_parameters(name, parameters)
        except (MessageError, RequestError, PredictionError, ValueError) as error:  # e.g. a patch outside the object
            self.get_logger().warning(f"object_parameters not applied: {error}")
            return
        self.applied_parameters += 1
        self.get_logger().info(f"object '{name}': fine model now uses {parameters} (was {previous})")

    # -- diagnostics ----------------------------------------------------------------------------
    def _publish_diagnostics(self) -> None:
        statistics = self.engine.statistics()
        status = DiagnosticStatus(
            level=DiagnosticStatus.OK,
            name=f"{self.get_name()}: prediction engine",
            hardware_id=statistics.backend,
            message=f"{statistics.requests} requests, {statistics.failures} failed",
        )
        status.values = [KeyValue(key=key, value=str(value)) for key, value in vars(statistics).items()]
        status.values.append(KeyValue(key="object_parameters_applied", value=str(self.applied_parameters)))
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(array)

    def close(self) -> None:
        self.engine.close()


def main(args=None) -> int:
    return run_node(PredictionServiceNode, args, threads=SERVICE_THREADS)


if __name__ == "__main__":
    raise SystemExit(main())
