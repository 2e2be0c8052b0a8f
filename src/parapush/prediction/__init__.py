"""The prediction service's core: validated requests answered by Parareal on a worker pool."""

from parapush.prediction.engine import (
    BACKENDS,
    COARSE_MODELS,
    SCHEDULES,
    EngineStatistics,
    PredictionEngine,
    PredictionError,
    PredictionOutcome,
    PredictionSettings,
)
from parapush.prediction.request import MODELS, PredictionLimits, PredictionRequest, RequestError

__all__ = [
    "BACKENDS",
    "COARSE_MODELS",
    "MODELS",
    "SCHEDULES",
    "EngineStatistics",
    "PredictionEngine",
    "PredictionError",
    "PredictionLimits",
    "PredictionOutcome",
    "PredictionRequest",
    "PredictionSettings",
    "RequestError",
]
