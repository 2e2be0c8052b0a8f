"""Identification node: ``IdentifyObject`` answered by :mod:`parapush.identification`.

Given observed pushes of one object (scene states at the control boundaries and the
controls executed), it searches the object's mass, support friction, pusher friction and
centre of mass with the same fine model as the prediction service (both built from the
``model.*`` parameters, config/model.yaml), answers with the
result and, when asked, publishes it on ``object_parameters`` (transient local), which the
prediction service applies to its fine model. Every request is answered: malformed ones
with ``success = false`` and a message naming the field.
"""

from __future__ import annotations

import time
import traceback

from parareal_pushing.msg import ObjectParameters as ObjectParametersMsg
from parareal_pushing.srv import IdentifyObject
from rclpy.node import Node

from parapush.identification import PARAMETER_NAMES, IdentificationSettings, ObjectIdentifier, ObjectParameters
from parapush.nodes.conversions import MessageError
from parapush.nodes.identification_messages import OBJECT_PARAMETERS_QOS, parameters_to_msg, push_record_from_msg
from parapush.nodes.node_main import run_node
from parapush.nodes.parameters import (
    ParameterSpec,
    declare_scene_parameters,
    parameter_specs,
    settings_from_parameters,
)
from parapush.prediction import ModelConfig, PredictionEngine

METHODS = ("cem", "grid")

PARAMETERS = (
    *parameter_specs(ModelConfig, "model."),  # config/model.yaml: the fine model and workers of the service
    ParameterSpec("iterations", 12, "default search iterations", minimum=1, maximum=1000),
    ParameterSpec("population", 32, "default hypotheses per iteration", minimum=4, maximum=4096),
    ParameterSpec("elite_fraction", 0.25, "fraction of each population the search keeps", minimum=0.05,
                  maximum=0.5),
    ParameterSpec("seed", 0, "seed of the search's sampler", minimum=0, maximum=2**31 - 1),
    ParameterSpec("grid_iterations", 40, "default gradient steps of method grid", minimum=1, maximum=10000),
    ParameterSpec("grid_cell_size", 0.01, "cell side of method grid, m", minimum=0.002, maximum=0.1),
    ParameterSpec("max_pushes", 64, "most pushes per request", minimum=1, maximum=10000),
    ParameterSpec("max_controls", 32, "most controls per push", minimum=1, maximum=1024),
    ParameterSpec("max_speed", 0.5, "largest pusher speed a control may have, m/s", minimum=1e-3, maximum=5.0),
)


class IdentificationNode(Node):
    """Serves ``identify_object`` (parareal_pushing/srv/IdentifyObject)."""

    def __init__(self, **node_options) -> None:
        super().__init__("identification", **node_options)
        self.values, self.scene = declare_scene_parameters(self, PARAMETERS)
        self.model_config = settings_from_parameters(ModelConfig, self.values, "model.")
        self.fine_model = PredictionEngine.build_fine_model(self.scene, self.model_config)
        self.published: dict[str, ObjectParameters] = {}
        self._publisher = self.create_publisher(ObjectParametersMsg, "object_parameters", OBJECT_PARAMETERS_QOS)
        self._service = self.create_service(IdentifyObject, "identify_object", self._handle)
        self.get_logger().info(
            f"ready: scene '{self.scene.name}' ({len(self.scene.objects)} objects), identify_object with "
            f"{self.values['population']} hypotheses x {self.values['iterations']} iterations by default"
        )

    def _handle(self, request: IdentifyObject.Request, response: IdentifyObject.Response):
        started = time.perf_counter()
        response.parameter_names = list(PARAMETER_NAMES)
        try:
            self._identify(request, response)
        except (MessageError, ValueError) as error:
            response.success = False
            response.message = f"invalid request: {error}"
        except Exception as error:  # noqa: BLE001 - the service never dies on a request
            response.success = False
            response.message = f"internal error: {type(error).__name__}: {error}"
            self.get_logger().error(f"{response.message}\n{traceback.format_exc()}")
        response.time_total = time.perf_counter() - started
        return response

    def _identify(self, request: IdentifyObject.Request, response: IdentifyObject.Response) -> None:
        try:
            index = self.scene.object_index(request.object)
        except KeyError:
            raise MessageError(
                f"object: unknown object {request.object!r}; the scene has {list(self.scene.object_names)}"
            ) from None
        if not request.pushes:
            raise MessageError("pushes: at least one observed push is needed")
        if len(request.pushes) > self.values["max_pushes"]:
            raise MessageError(f"pushes: {len(request.pushes)} pushes, at most {self.values['max_pushes']}")
        records = [
            push_record_from_msg(push, self.scene, f"pushes[{number}]", max_controls=self.values["max_controls"],
                                 max_speed=self.values["max_speed"])
            for number, push in enumerate(request.pushes)
        ]
        method = request.method or "cem"
        if method not in METHODS:
            raise MessageError(f"method: expected one of {METHODS} (or empty: cem), got {request.method!r}")
        if method == "grid":
            self._identify_grid(request, response, index, records)
            return
        population = request.population or self.values["population"]
        try:
            settings = IdentificationSettings(
                fit=tuple(request.fit) or PARAMETER_NAMES,
                population=population,
                elite=max(1, min(population - 1, round(self.values["elite_fraction"] * population))),
                iterations=request.iterations or self.values["iterations"],
                seed=self.values["seed"],
            )
        except ValueError as error:
            raise MessageError(str(error)) from None
        if settings.population < 4:
            raise MessageError(f"population: at least 4 hypotheses per iteration, got {settings.population}")
        name = request.object
        with ObjectIdentifier(self.fine_model, index, workers=self.model_config.workers) as identifier:
            initial = self.published.get(name, identifier.variants.nominal)
            result = identifier.identify(records, settings=settings, initial=initial)
        response.sensitivity = [float(value) for value in result.sensitivity]
        response.message = (
            f"'{name}' (cem) from {len(records)} push(es): one-step error {result.initial_error * 1e3:.2f} -> "
            f"{result.error * 1e3:.2f} mm after {result.iterations} iteration(s) ({result.stop_reason})"
        )
        self._finish(request, response, result.parameters, initial, result.error, result.initial_error,
                     result.evaluations)

    def _identify_grid(self, request, response, index: int, records: list) -> None:
        """Method grid: per-cell maps by projected gradient descent (torch, imported only here)."""
        from parapush.identification.grid_identifier import GridIdentificationSettings, GridIdentifier
        from parapush.identification.map_rendering import render_map

        name = request.object
        initial = self.published.get(name, ObjectParameters.from_scene(self.scene, index))
        try:
            settings = GridIdentificationSettings(cell_size=self.values["grid_cell_size"],
                                                  iterations=request.iterations or self.values["grid_iterations"])
        except ValueError as error:
            raise MessageError(str(error)) from None
        identifier = GridIdentifier.for_scene(self.scene, index, initial, cell_size=settings.cell_size)
        result = identifier.identify(records, settings)
        rendering = render_map(identifier, result, records, self.scene, self.model_config.fine)
        parameters = rendering.parameters
        response.cell_x = [float(value) for value in result.grid.centers[:, 0]]
        response.cell_y = [float(value) for value in result.grid.centers[:, 1]]
        response.cell_mass = [float(value) for value in result.cell_mass]
        response.cell_friction = [float(value) for value in result.cell_friction]
        response.cell_sensitivity = [float(value) for value in result.sensitivity]
        response.message = (
            f"'{name}' (grid, {result.grid.count} cells) from {len(records)} push(es): ADD error "
            f"{result.initial_error * 1e3:.2f} -> {result.error * 1e3:.2f} mm in {result.seconds:.1f} s; the fine "
            f"model takes " + (f"{len(parameters.patches)} patch(es) (contrast {rendering.contrast})"
                               if rendering.contrast else "its uniform summary")
        )
        self._finish(request, response, parameters, initial, result.error, result.initial_error,
                     len(result.history) - 1)

    def _finish(self, request, response, parameters: ObjectParameters, initial: ObjectParameters, error: float,
                initial_error: float, evaluations: int) -> None:
        """Fill what both methods answer (the result and where it started, stamped now), publish when asked, log."""
        stamp = self.get_clock().now().nanoseconds * 1e-9
        response.success = True
        response.parameters = parameters_to_msg(request.object, parameters, stamp=stamp)
        response.initial = parameters_to_msg(request.object, initial, stamp=stamp)
        response.error = error
        response.initial_error = initial_error
        response.evaluations = evaluations
        if request.publish:
            self.published[request.object] = parameters
            self._publisher.publish(response.parameters)
            response.message += "; published on object_parameters"
        self.get_logger().info(response.message)


def main(args=None) -> int:
    return run_node(IdentificationNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
