"""The predictive models of an MPC node's goals: the corrector and the coarse search model.

The corrector (the loop's model, the multi-fidelity planner's corrector) is the node's
predictor, a prediction service client or a local engine, both of the ``model.*`` settings
(config/model.yaml), asking for the preset's model and K
(:meth:`~parapush.planning.presets.PlannerPreset.corrector_config`) or the goal's if it sets
them (:class:`~parapush.planning.push_goal.PushGoal`). The coarse search model is
``model.coarse_model`` of the same settings, built here whatever the prediction source
(:func:`~parapush.planning.stack_planner.coarse_model_for`): coarse models are cheap, and a
re-plan runs ~15 coarse searches that a round trip each would slow.

A lost prediction service (issue 17): each call has a deadline, the planner's re-plan budget
(:func:`service_call_deadline`), so a service that died is noticed within it; the pusher
meanwhile does what the loop does for a late plan (never moves without one), and the policy
(``on_service_loss``) decides: re-plan with a local engine built from the same ``model.*``
settings (default), wait for the service (``service_wait_limit``), or end the goal
(:class:`parapush.prediction.failover.FailoverPrediction`, which reports what happened through
``on_event``). Nothing here imports ROS: the MPC node (:mod:`parapush.nodes.mpc`) hands in its
service client and the client's exception types that mean the service is lost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from parapush.planning.engine_prediction import EnginePrediction
from parapush.planning.optimizer import OptimizerSettings
from parapush.planning.presets import PlannerPreset
from parapush.planning.push_goal import PushGoal
from parapush.planning.stack_planner import PlannerSources, coarse_model_for
from parapush.prediction import ModelConfig
from parapush.prediction.coarse_models import CoarseModelChoice
from parapush.prediction.failover import SERVICE_LOSS_POLICIES, FailoverPrediction
from parapush.scene import Scene
from parapush.validation import check_choice, check_fields, check_non_negative, check_positive

__all__ = ["GoalModels", "PredictionsClosedError", "ServiceSettings", "service_call_deadline"]


class PredictionsClosedError(RuntimeError):
    """A goal waited for a lost prediction service while its models were closed (the node is
    shutting down)."""


@dataclass(frozen=True, kw_only=True)
class ServiceSettings:
    """How goals use a prediction service (the MPC node's parameters of the same names).

    Attributes:
        service_timeout: s, the wait for the service at the first goal's start, and the longest
            deadline of a call (each call's is the re-plan budget, at most this).
        on_service_loss: one of :data:`~parapush.prediction.failover.SERVICE_LOSS_POLICIES`.
        service_wait_limit: s, the longest wait for a lost service (``on_service_loss: wait``).
    """

    service_timeout: float = 30.0
    on_service_loss: str = "local"
    service_wait_limit: float = 60.0

    def __post_init__(self) -> None:
        check_fields(self, check_positive, "service_timeout")
        check_fields(self, check_non_negative, "service_wait_limit")
        check_choice("on_service_loss", self.on_service_loss, SERVICE_LOSS_POLICIES)


def service_call_deadline(preset: PlannerPreset, optimizer: OptimizerSettings) -> float:
    """s, the deadline of a prediction-service call of a goal planned with ``preset`` from the
    planner file's ``optimizer`` settings: its re-plan budget, the optimizer's time budget when
    it plans then executes and has one, else one control period."""
    settings = preset.optimizer_settings(optimizer)
    if preset.loop == "sequential" and settings.time_budget:
        return settings.time_budget
    return settings.control_duration


class GoalModels:
    """The corrector and coarse search model of each goal (module docstring).

    Args:
        scene: the node's scene (the local engines and coarse models are built for it).
        model_config: the ``model.*`` settings.
        service: the prediction service client (``configured(model=, iterations=)`` giving a client
            with a ``timeout`` s per call, ``wait_until_ready(timeout) -> bool``, ``predict``,
            ``close``); None: predictions come from a local engine built here.
        settings: how goals use the service (unused without one).
        lost_errors: the ``service``'s exception types that mean the service is lost.
        on_event: called with a sentence for each thing that happened to the service.

    Attributes:
        predictor: the node's predictor: ``service``, or the local engine.
    """

    def __init__(
        self,
        scene: Scene,
        model_config: ModelConfig,
        *,
        service: Any = None,
        settings: ServiceSettings | None = None,
        lost_errors: tuple[type[BaseException], ...] = (),
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        self.scene = scene
        self.model_config = model_config
        self.settings = settings if settings is not None else ServiceSettings()
        self.lost_errors = tuple(lost_errors)
        self.on_event = on_event
        self.via_service = service is not None
        self.predictor = service if service is not None else EnginePrediction.build(scene, model_config)
        self._coarse: dict[bool, Any] = {}  # the coarse search model by resolve_overlaps
        self._local_engine: EnginePrediction | None = None  # built when the prediction service is lost
        self._service_seen = False  # later goals wait for the service only a call's deadline
        self._closed = threading.Event()

    def corrector(self, goal: PushGoal, sources: PlannerSources) -> Any:
        """The goal's predictive model: the node's predictor asking for the preset's corrector (its
        model and K) or the goal's model/K if it sets them; through the service with a per-call
        deadline (:func:`service_call_deadline`) and the ``on_service_loss`` policy. The first
        goal through the service waits up to ``service_timeout`` for it (it may start after the node)."""
        preset = sources.preset
        corrector = preset.corrector_config(self.model_config)
        model = goal.model or corrector.name
        iterations = corrector.iterations if goal.iterations is None else goal.iterations
        if not self.via_service:
            if goal.model is None and goal.iterations is None and preset.model is None:
                return self.predictor  # the model config's own model and K
            return self.predictor.configured(model=model, iterations=iterations)
        primary = self.predictor.configured(model=model, iterations=iterations)
        primary.timeout = min(self.settings.service_timeout, service_call_deadline(preset, sources.planner.optimizer))
        if not self._service_seen:
            self._service_seen = self.predictor.wait_until_ready(self.settings.service_timeout)

        def local_engine() -> EnginePrediction:
            if self._local_engine is None:
                self._local_engine = EnginePrediction.build(self.scene, self.model_config)
            return self._local_engine.configured(model=model, iterations=iterations)

        def service_back(timeout: float) -> bool:
            if self._closed.is_set():
                raise PredictionsClosedError("predict_trajectory: the node is shutting down")
            return primary.wait_until_ready(timeout)

        return FailoverPrediction(primary, lost_errors=self.lost_errors, policy=self.settings.on_service_loss,
                                  make_backup=local_engine, wait_for_primary=service_back,
                                  wait_limit=self.settings.service_wait_limit, on_event=self.on_event)

    def coarse(self, preset: PlannerPreset) -> CoarseModelChoice | None:
        """The multi-fidelity planner's coarse model (None for a single-fidelity preset):
        :func:`coarse_model_for` (``model.coarse_model`` with its weights and fine settings;
        ``auto``: the first learned model that serves the scene, the cylinder network in obstacle
        scenes too, ignoring the obstacles for prediction: the analytical model failed them all in
        the preset's tuning), built once per overlap handling."""
        if preset.coarse is None:
            return None
        if preset.coarse_resolves_overlaps not in self._coarse:
            self._coarse[preset.coarse_resolves_overlaps] = coarse_model_for(self.scene, preset, self.model_config)
        return self._coarse[preset.coarse_resolves_overlaps]

    def close(self) -> None:
        """Close the predictor and the local engine; a goal waiting for a lost service stops
        waiting (:class:`PredictionsClosedError`)."""
        self._closed.set()
        for model in (self.predictor, self._local_engine):
            close = getattr(model, "close", None)
            if callable(close):
                close()
