"""The prediction stack: one settings tree (:class:`ModelConfig`, ``config/model.yaml``), one
factory (:class:`PredictionEngine`) and requests validated once (:class:`PredictionRequest`).
The planner's adapter is :class:`parapush.planning.engine_prediction.EnginePrediction`."""

from parapush.prediction.config import COARSE_MODELS, ModelConfig, load_model_config, model_config_from_mapping
from parapush.prediction.engine import (
    DivergedSequenceError,
    EngineStatistics,
    PredictionEngine,
    PredictionError,
    PredictionOutcome,
)
from parapush.prediction.request import PredictionLimits, PredictionRequest, RequestError, check_request_fits
from parapush.prediction.work_budget import WorkBudgetError, WorkEstimate

__all__ = [
    "COARSE_MODELS",
    "DivergedSequenceError",
    "EngineStatistics",
    "ModelConfig",
    "PredictionEngine",
    "PredictionError",
    "PredictionLimits",
    "PredictionOutcome",
    "PredictionRequest",
    "RequestError",
    "WorkBudgetError",
    "WorkEstimate",
    "check_request_fits",
    "load_model_config",
    "model_config_from_mapping",
]
