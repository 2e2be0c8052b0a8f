"""The prediction stack: ModelConfig (config/model.yaml), requests validated once, how a
request's stopping rules combine with the configured ones, the engine and the planner's adapter."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from parapush.parareal import MODELS, SCHEDULES, PararealOptions, PararealSolver
from parapush.physics.backends import BACKEND_NAMES
from parapush.physics.fidelity import FIDELITIES
from parapush.physics.fine_settings import FineSettings
from parapush.planning import PredictiveModel
from parapush.planning.engine_prediction import EnginePrediction
from parapush.prediction import (
    COARSE_MODELS,
    DivergedSequenceError,
    ModelConfig,
    PredictionEngine,
    PredictionLimits,
    PredictionRequest,
    RequestError,
    load_model_config,
    model_config_from_mapping,
)
from parapush.prediction.coarse_models import BUILT_MODELS
from parapush.scene import load_scene
from parapush.settings import SettingsError

ROOT = Path(__file__).resolve().parents[2]
SCENE = load_scene(ROOT / "config" / "scenes" / "isrr_obstacle.yaml")
LAYOUT = SCENE.layout
INITIAL = LAYOUT.compose(SCENE.pusher.position, np.array([spec.pose for spec in SCENE.objects]))
PUSH = np.array([[0.025, 0.0], [0.025, 0.005], [0.02, -0.01], [0.025, 0.0]])


def request(sequences: int = 1, **fields) -> PredictionRequest:
    rng = np.random.default_rng(3)
    controls = np.stack([PUSH + (0 if index == 0 else rng.normal(0, 0.003, PUSH.shape)) for index in range(sequences)])
    return PredictionRequest(INITIAL, controls, np.ones(controls.shape[:2]), **fields)


@pytest.fixture(scope="module")
def engine():
    with PredictionEngine(SCENE, ModelConfig(backend="serial", schedule="parareal", coarse_model="analytical")) as made:
        yield made


# -- ModelConfig and config/model.yaml ------------------------------------------------------------
def test_the_shipped_model_yaml_is_the_default_config() -> None:
    assert load_model_config(ROOT / "config" / "model.yaml") == ModelConfig()


def test_the_name_tuples_are_defined_once() -> None:
    choices = {item.name: item.metadata["setting"].choices for item in dataclasses.fields(ModelConfig)
               if "setting" in item.metadata}
    assert choices["name"] is MODELS and choices["schedule"] is SCHEDULES
    assert choices["backend"] is BACKEND_NAMES and choices["coarse_model"] is COARSE_MODELS
    assert choices["fidelity"] is FIDELITIES
    # No second tuple of these names anywhere in the library.
    names = "coarse|parareal|fine|serial|threads|processes|analytical|learned|sample_parallel|full|task_informed"
    pattern = re.compile(rf'^\s*[A-Z_]+ = \((?:"auto", )?"({names})"', re.MULTILINE)
    definitions = [path.relative_to(ROOT / "src").as_posix() for path in (ROOT / "src" / "parapush").rglob("*.py")
                   for _ in pattern.finditer(path.read_text())]
    assert sorted(definitions) == sorted([
        "parapush/parareal/solver.py", "parapush/parareal/schedule.py",
        "parapush/physics/backends/factory.py", "parapush/physics/fidelity.py", "parapush/prediction/config.py",
    ])


def test_ros_stand_ins_mean_none_and_errors_name_the_dotted_field(tmp_path) -> None:
    config = model_config_from_mapping({"iterations": -1, "tolerance_position": 0.001, "workers": 0,
                                        "learned_weights": "", "fine": {"timestep": 0.002}})
    assert config.iterations is None and config.workers is None and config.learned_weights is None
    assert config.fine == FineSettings(timestep=0.002)
    with pytest.raises(SettingsError, match=r"^model\.fine\.timestep: expected a finite number > 0 and <= 0.01"):
        model_config_from_mapping({"fine": {"timestep": 1.0}})
    with pytest.raises(SettingsError, match=r"^model\.iterations: Parareal needs iterations, a tolerance or"):
        model_config_from_mapping({"iterations": -1})
    with pytest.raises(SettingsError, match=r"^model: unknown field\(s\) \['default_iterations'\]"):
        model_config_from_mapping({"default_iterations": 2})
    path = tmp_path / "model.yaml"
    path.write_text("/**:\n  ros__parameters:\n    model:\n      schedule: fastest\n")
    with pytest.raises(SettingsError, match=r"^model\.schedule: expected one of .* \(in .*model\.yaml\)"):
        load_model_config(path)


# -- requests: validated once, when constructed ---------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"iterations": -1}, "iterations: expected an integer >= 0 and <= 4, got -1"),
        ({"iterations": 5}, "iterations: expected an integer >= 0 and <= 4, got 5"),
        ({"iterations": 1.0}, "iterations: expected an integer >= 0 and <= 4, got 1.0"),
        ({"model": "quantum"}, "model: expected one of ['coarse', 'parareal', 'fine'], got 'quantum'"),
        ({"coarse_model": "oracle"}, "coarse_model: expected one of ['auto', 'learned', 'general', 'analytical']"),
        ({"tolerance_position": -1.0}, "tolerance_position: expected a finite number > 0, got -1.0"),
        ({"deadline": float("inf")}, "deadline: expected a finite number > 0, got inf"),
    ],
)
def test_invalid_requests_are_refused_when_constructed(fields, message) -> None:
    with pytest.raises(RequestError) as error:
        request(**fields)
    assert str(error.value).startswith(message)


def test_requests_of_the_wrong_shape_name_the_field() -> None:
    with pytest.raises(RequestError, match=r"^durations: expected shape \(1, 4\)"):
        PredictionRequest(INITIAL, PUSH[None], np.ones(4))
    with pytest.raises(RequestError, match="^controls: must be finite"):
        PredictionRequest(INITIAL, np.full((1, 2, 2), np.nan), np.ones((1, 2)))
    with pytest.raises(RequestError, match=r"^initial_state: must be finite, non-finite entries at indices \[0\]"):
        PredictionRequest(np.r_[np.nan, INITIAL[1:]], PUSH[None], np.ones((1, 4)))


@pytest.mark.parametrize(
    ("configured", "asked", "expected"),
    [
        # Nothing asked: the configured rules, K capped at N = 4.
        ({"iterations": 2, "deadline": 3.0}, {}, {"iterations": 2, "deadline": 3.0}),
        ({"iterations": 9}, {}, {"iterations": 4}),
        # One rule asked: the others stay configured (the deadline too).
        ({"iterations": 2, "deadline": 3.0}, {"tolerance_position": 1e-3},
         {"iterations": 2, "tolerance_position": 1e-3, "deadline": 3.0}),
        ({"iterations": None, "tolerance_angle": 0.1}, {"iterations": 3}, {"iterations": 3, "tolerance_angle": 0.1}),
        # The configured deadline applies unless the request's is shorter.
        ({"deadline": 3.0}, {"deadline": 10.0}, {"iterations": 1, "deadline": 3.0}),
        ({"deadline": 3.0}, {"deadline": 0.5}, {"iterations": 1, "deadline": 0.5}),
        ({}, {"deadline": 0.5}, {"iterations": 1, "deadline": 0.5}),
        # The coarse model is K = 0, whatever else is set.
        ({"iterations": 2, "deadline": 3.0}, {"model": "coarse", "iterations": 3}, {"iterations": 0}),
        ({"name": "coarse"}, {}, {"iterations": 0}),
    ],
)
def test_stopping_rules_combine_field_by_field(configured, asked, expected) -> None:
    config = ModelConfig(**configured)
    options = request(**asked).stopping_rules(config)
    assert options == PararealOptions(**expected, project=config.project)


# -- the engine ------------------------------------------------------------------------------------
def test_the_engine_answers_with_the_configured_model_when_the_request_names_none(engine) -> None:
    default = engine.predict(request(sequences=2))
    assert default.model == "parareal" and default.iterations_used == 1 and default.exact_states == 2
    fine = engine.predict(request(sequences=2, model="fine"))
    assert fine.model == "fine" and fine.exact_states == 5
    converged = engine.predict(request(sequences=2, iterations=4))
    np.testing.assert_allclose(converged.trajectories[..., :2], fine.trajectories[..., :2], atol=1e-9)
    coarse = engine.predict(request(model="coarse"))
    assert coarse.iterations_used == 0 and coarse.exact_states == 1


def test_the_engine_checks_what_depends_on_its_scene_and_limits(engine) -> None:
    with pytest.raises(RequestError, match=r"^initial_state: expected shape \(10,\)"):
        engine.predict(PredictionRequest(INITIAL[:4], PUSH[None], np.ones((1, 4))))
    with pytest.raises(RequestError, match="^sequences: 65 sequences, at most 64"):
        engine.predict(PredictionRequest(INITIAL, np.zeros((65, 1, 2)), np.ones((65, 1))))
    with pytest.raises(RequestError, match=r"^controls: speed 0\.6 m/s exceeds the limit 0\.5 m/s"):
        engine.predict(PredictionRequest(INITIAL, np.full((1, 1, 2), [0.6, 0.0]), np.ones((1, 1))))
    overlapping = INITIAL.copy()
    overlapping[:2] = LAYOUT.poses(INITIAL)[0, :2]
    with pytest.raises(RequestError, match="^initial_state: bodies overlap"):
        engine.predict(PredictionRequest(overlapping, PUSH[None], np.ones((1, 4))))


def test_the_engine_builds_what_its_config_says() -> None:
    config = ModelConfig(backend="serial", coarse_model="analytical", fine=FineSettings(timestep=0.002))
    with PredictionEngine(SCENE, config, limits=PredictionLimits(max_sequences=2)) as engine:
        assert engine.default_coarse == "analytical"
        assert engine.fine_model.settings.timestep == 0.002
        assert engine.backend.workers == 1
        with pytest.raises(RequestError, match="^sequences: 3 sequences, at most 2"):
            engine.predict(request(sequences=3))
    # auto is resolved by the engine, the same way for every predictor.
    with PredictionEngine(SCENE, ModelConfig(backend="serial")) as engine:
        assert engine.default_coarse == next(name for name in BUILT_MODELS if name in engine.coarse_models)


# -- the planner's adapter -------------------------------------------------------------------------
def test_the_adapter_asks_the_engine_exactly_as_the_service_is_asked(engine) -> None:
    model = EnginePrediction(engine)
    assert isinstance(model, PredictiveModel)
    controls = request(sequences=3).controls
    trajectories = model.predict(INITIAL, controls, np.ones(4))
    direct = engine.predict(PredictionRequest(INITIAL, controls, np.ones((3, 4)))).trajectories
    yaws = LAYOUT.yaw_indices
    np.testing.assert_array_equal(np.delete(trajectories, yaws, axis=2), np.delete(direct, yaws, axis=2))
    np.testing.assert_allclose(trajectories[..., yaws], direct[..., yaws], atol=1e-12)
    coarse = model.configured(model="coarse", iterations=None).predict(INITIAL, controls, np.ones(4))
    assert model.last_outcome.model == "parareal" and not np.array_equal(coarse, trajectories)


def test_a_diverged_sequence_becomes_a_nan_row_and_the_others_are_predicted(engine, monkeypatch) -> None:
    predict = engine.predict
    batches = []

    def diverging(request):  # the physics of sequences with u_y > 0.04 diverge
        batches.append(request.sequences)
        bad = np.flatnonzero(request.controls[:, 0, 1] > 0.04)
        if bad.size:
            raise DivergedSequenceError(int(bad[0]), f"sequence {bad[0]} diverged")
        return predict(request)

    monkeypatch.setattr(engine, "predict", diverging)
    model = EnginePrediction(engine)
    controls = np.full((5, 4, 2), 0.01)
    controls[1, 0, 1] = 0.05
    controls[3, 0, 1] = 0.06
    trajectories = model.predict(INITIAL, controls, np.ones(4))
    assert np.all(np.isnan(trajectories[[1, 3]])) and np.all(np.isfinite(trajectories[[0, 2, 4]]))
    assert batches == [5, 4, 3] and model.diverged_sequences == 2


def test_a_bad_k_is_refused_by_the_request_alone(engine, monkeypatch) -> None:
    """K's range is checked in exactly one place on the request path: PredictionRequest. The
    engine and the solver never see a bad K (the solver's own check is for direct callers)."""
    with pytest.raises(RequestError) as error:
        request(iterations=5)
    assert str(error.value) == "iterations: expected an integer >= 0 and <= 4, got 5"
    calls = []
    monkeypatch.setattr(PararealSolver, "solve", lambda *args, **kwargs: calls.append(args))
    with pytest.raises(RequestError):
        EnginePrediction(engine, iterations=5).predict(INITIAL, PUSH[None], np.ones(4))
    assert calls == []
    # ... and no other module on the request path compares a K with anything.
    for module in ("prediction/engine.py", "planning/engine_prediction.py", "nodes/prediction_messages.py",
                   "nodes/prediction_service.py", "nodes/prediction_client.py"):
        text = (ROOT / "src" / "parapush" / module).read_text()
        assert not re.search(r"iterations\)?\s*(<|>|==|!=)|(<|>|==|!=)\s*[\w.]*iterations", text), module
