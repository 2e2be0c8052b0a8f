"""The prediction stack: one settings tree (:class:`ModelConfig`, ``config/model.yaml``), one
factory (:class:`PredictionEngine`), requests validated once (:class:`PredictionRequest`), and
the planner's adapter (:class:`EnginePrediction`)."""

from parapush.prediction.config import COARSE_MODELS, ModelConfig, load_model_config, model_config_from_mapping
from parapush.prediction.engine import (
    DivergedSequenceError,
    EngineStatistics,
    PredictionEngine,
    PredictionError,
    PredictionOutcome,
)
from parapush.prediction.planner_model import EnginePrediction
from parapush.prediction.request import PredictionLimits, PredictionRequest, RequestError, check_request_fits
from parapush.prediction.work_budget import WorkBudgetError, WorkEstimate

__all__ = [
    "COARSE_MODELS",
    "DivergedSequenceError",
    "EnginePrediction",
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
