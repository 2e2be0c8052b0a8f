"""PredictionEngine: which error an unusable coarse model raises where, and how a rebuild for
changed patches swaps the engine's models (all of them on success, none on failure)."""

from __future__ import annotations

import numpy as np
import pytest
from test_identification_map_to_service import HEAD, hammer_scene
from test_planning_fixtures import initial_state

from parapush.identification import ObjectParameters
from parapush.prediction import ModelConfig, PredictionEngine, PredictionRequest, RequestError
from parapush.prediction import engine as engine_module

MISSING_WEIGHTS = "/nonexistent/parapush/learned_weights.npz"  # the learned model cannot load them
SCENE_MODELS = ("scene", "layout", "fine_model", "projector", "_coarse", "unavailable_coarse", "default_coarse",
                "backend", "fidelity", "fine", "fine_scheduler", "_solvers", "_object_variants")


def fine_request(engine: PredictionEngine, **fields) -> PredictionRequest:
    controls = np.tile([0.05, 0.0], (1, 2, 1))
    return PredictionRequest(initial_state(engine.scene), controls, np.full((1, 2), 0.5), **fields)


def test_a_configured_coarse_model_the_scene_cannot_use_is_a_value_error_at_start() -> None:
    config = ModelConfig(coarse_model="learned", learned_weights=MISSING_WEIGHTS, backend="serial")
    with pytest.raises(ValueError, match="coarse_model: 'learned' is unavailable here: .*no weights file"):
        PredictionEngine(hammer_scene(()), config)


def test_a_request_for_an_unavailable_coarse_model_is_a_request_error() -> None:
    with PredictionEngine(hammer_scene(()), ModelConfig(learned_weights=MISSING_WEIGHTS, backend="serial")) as engine:
        assert engine.default_coarse == "analytical"  # auto, without the learned model
        with pytest.raises(RequestError, match="coarse_model: 'learned' is unavailable here: .*no weights file"):
            engine.predict(fine_request(engine, model="parareal", coarse_model="learned"))
        assert engine.predict(fine_request(engine, model="parareal", coarse_model="auto")).model == "parareal"


def test_a_rebuild_swaps_every_scene_model_and_closes_the_old_backend() -> None:
    with PredictionEngine(hammer_scene(()), ModelConfig(backend="threads", workers=1)) as engine:
        before = {name: getattr(engine, name) for name in SCENE_MODELS}
        engine.apply_object_parameters("hammer", ObjectParameters.from_scene(hammer_scene((HEAD,)), 0))
        after = {name: getattr(engine, name) for name in SCENE_MODELS}
        rebuilt = {name for name in SCENE_MODELS if after[name] is not before[name]}
        assert rebuilt == set(SCENE_MODELS) - {"default_coarse", "fidelity"}  # two equal strings
        assert engine.scene.objects[0].patches == (HEAD,) and engine.layout == engine.scene.layout
        assert engine.fine.workers >= 1 and engine._solvers.keys() == engine._coarse.keys()
        with pytest.raises(RuntimeError, match="after close"):  # the old backend was released
            before["backend"].propagate(initial_state(engine.scene)[None], np.zeros((1, 2)), np.full(1, 0.1))
        assert np.all(np.isfinite(engine.predict(fine_request(engine, model="fine")).trajectories))


def test_a_failed_rebuild_keeps_every_scene_model(monkeypatch) -> None:
    """The new backend cannot start (after the new fine and coarse models were built): the engine
    goes on with all its old models. (A coarse model refusing the new patches is a PredictionError:
    test_identification_map_to_service.)"""

    def no_workers(*args, **kwargs):
        raise OSError("no worker could be started")

    with PredictionEngine(hammer_scene(()), ModelConfig(backend="threads", workers=1)) as engine:
        before = {name: getattr(engine, name) for name in SCENE_MODELS}
        monkeypatch.setattr(engine_module, "make_backend", no_workers)
        with pytest.raises(OSError, match="no worker could be started"):
            engine.apply_object_parameters("hammer", ObjectParameters.from_scene(hammer_scene((HEAD,)), 0))
        assert all(getattr(engine, name) is before[name] for name in SCENE_MODELS)
        assert engine.scene.objects[0].patches == () and engine.object_parameters("hammer").patches == ()
        assert np.all(np.isfinite(engine.predict(fine_request(engine, model="fine")).trajectories))
