"""GoalModels: each goal's corrector (the node's predictor, with failover through a prediction
service) and coarse search model, without ROS: the service client is a stand-in."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
from test_planning_fixtures import initial_state, tiny_scene

from parapush.planning.engine_prediction import EnginePrediction
from parapush.planning.goal_models import GoalModels, PredictionsClosedError, ServiceSettings, service_call_deadline
from parapush.planning.presets import planner_preset
from parapush.planning.push_goal import PushGoal
from parapush.planning.stack_planner import PlannerSources
from parapush.prediction import ModelConfig
from parapush.prediction.failover import FailoverPrediction

SCENE = tiny_scene()
MODEL_CONFIG = ModelConfig(backend="threads", workers=1, coarse_model="analytical")


class ServiceLostError(RuntimeError):
    """What the stand-in raises when it does not answer."""


class StandInService:
    """A prediction service client: ``configured`` clients share ``calls`` and ``answering``."""

    def __init__(self, *, model=None, iterations=None, shared=None) -> None:
        self.layout = SCENE.layout
        self.model, self.iterations = model, iterations
        self.timeout = 30.0
        self.shared = shared if shared is not None else {"waits": [], "answering": True, "closed": False}

    def configured(self, *, model, iterations):
        return StandInService(model=model, iterations=iterations, shared=self.shared)

    def wait_until_ready(self, timeout: float) -> bool:
        self.shared["waits"].append(timeout)
        return self.shared["answering"]

    def predict(self, initial_state, controls, durations):
        if not self.shared["answering"]:
            raise ServiceLostError(f"no answer within {self.timeout} s")
        return np.zeros((controls.shape[0], controls.shape[1] + 1, self.layout.dimension))

    def close(self) -> None:
        self.shared["closed"] = True


def sources(preset: str = "realtime", **optimizer) -> PlannerSources:
    loaded = PlannerSources.load()
    planner = dataclasses.replace(loaded.planner, optimizer=dataclasses.replace(loaded.planner.optimizer, **optimizer))
    return PlannerSources(planner=planner, model=MODEL_CONFIG, preset=planner_preset(preset))


def through_service(**settings) -> tuple[GoalModels, StandInService, list[str]]:
    events: list[str] = []
    service = StandInService()
    models = GoalModels(SCENE, MODEL_CONFIG, service=service, settings=ServiceSettings(**settings),
                        lost_errors=(ServiceLostError,), on_event=events.append)
    return models, service, events


def test_a_service_calls_deadline_is_the_re_plan_budget() -> None:
    assert service_call_deadline(planner_preset("realtime"), sources(control_duration=0.5).planner.optimizer) == 0.5
    isrr = planner_preset("isrr2019")
    assert service_call_deadline(isrr, sources(time_budget=2.5).planner.optimizer) == 2.5
    assert service_call_deadline(isrr, sources(time_budget=None).planner.optimizer) == 1.0


def test_through_the_service_the_corrector_is_a_failover_asking_for_the_goals_model() -> None:
    models, service, _ = through_service(service_timeout=0.8, on_service_loss="wait", service_wait_limit=5.0)
    corrector = models.corrector(PushGoal(scene=SCENE), sources(control_duration=1.0))
    assert isinstance(corrector, FailoverPrediction)
    assert (corrector.policy, corrector.wait_limit, corrector.lost_errors) == ("wait", 5.0, (ServiceLostError,))
    primary = corrector.primary
    assert (primary.model, primary.iterations) == ("parareal", 1)  # the model config's (the preset sets none)
    assert primary.timeout == 0.8  # the re-plan budget (1 s), at most service_timeout
    assert service.shared["waits"] == [0.8]  # the first goal waits for the service ...
    other = models.corrector(PushGoal(scene=SCENE, model="fine", iterations=3), sources(control_duration=0.5))
    assert (other.primary.model, other.primary.iterations, other.primary.timeout) == ("fine", 3, 0.5)
    assert service.shared["waits"] == [0.8]  # ... later ones do not


def test_a_lost_service_is_replaced_by_one_local_engine_of_the_goals_model() -> None:
    models, service, events = through_service()
    goal = PushGoal(scene=SCENE, model="coarse", iterations=0)
    first = models.corrector(goal, sources())
    service.shared["answering"] = False
    controls, durations = np.zeros((2, 3, 2)), np.ones(3)
    predicted = first.predict(initial_state(SCENE), controls, durations)
    assert predicted.shape == (2, 4, SCENE.layout.dimension) and np.all(np.isfinite(predicted))
    assert first.using_backup and len(events) == 1 and "re-planning with a local engine" in events[0]
    local = models._local_engine
    assert isinstance(local, EnginePrediction) and local.owns_engine
    second = models.corrector(goal, sources())
    second.predict(initial_state(SCENE), controls, durations)
    assert models._local_engine is local  # built once
    models.close()
    assert service.shared["closed"]
    with pytest.raises(RuntimeError, match="after close"):  # the local engine's backend was released
        local.engine.backend.propagate(initial_state(SCENE)[None], np.zeros((1, 2)), np.ones(1))


def test_closing_ends_a_wait_for_a_lost_service() -> None:
    models, service, events = through_service(on_service_loss="wait", service_wait_limit=60.0)
    corrector = models.corrector(PushGoal(scene=SCENE), sources())
    service.shared["answering"] = False
    threading.Timer(0.3, models.close).start()
    with pytest.raises(PredictionsClosedError, match="the node is shutting down"):
        corrector.predict(initial_state(SCENE), np.zeros((1, 2, 2)), np.ones(2))
    assert events and "waiting for it" in events[0]


def test_a_local_predictor_is_the_corrector_unless_the_goal_or_preset_asks_for_another_model() -> None:
    models = GoalModels(SCENE, MODEL_CONFIG)
    try:
        assert isinstance(models.predictor, EnginePrediction) and not models.via_service
        assert models.corrector(PushGoal(scene=SCENE), sources()) is models.predictor
        configured = models.corrector(PushGoal(scene=SCENE, iterations=2), sources())
        assert configured.engine is models.predictor.engine and (configured.model, configured.iterations) == (
            "parareal", 2)
        fine = models.corrector(PushGoal(scene=SCENE, model="fine"), sources())
        assert (fine.model, fine.iterations) == ("fine", 1)
    finally:
        models.close()


def test_the_coarse_model_is_built_once_per_overlap_handling_and_none_without_multifidelity() -> None:
    models = GoalModels(SCENE, MODEL_CONFIG, service=StandInService())
    assert models.coarse(planner_preset("isrr2019")) is None
    realtime = planner_preset("realtime")
    coarse = models.coarse(realtime)
    assert coarse is not None and models.coarse(realtime) is coarse
    assert type(coarse.model).__name__ == "AnalyticalCoarseModel"  # model.coarse_model of the config
    assert (coarse.name, coarse.requested, coarse.note) == ("analytical", "analytical", "")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("service_timeout", 0.0, "service_timeout: expected a finite number > 0"),
        ("service_wait_limit", -1.0, "service_wait_limit: expected a finite number >= 0"),
        ("on_service_loss", "retry", r"on_service_loss: expected one of \['local', 'wait', 'abort'\]"),
    ],
)
def test_service_settings_are_validated(field, value, message) -> None:
    with pytest.raises(ValueError, match=message):
        ServiceSettings(**{field: value})
