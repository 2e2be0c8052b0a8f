"""Planning: the stochastic trajectory optimizer, its cost terms and the MPC loop (ROS-free).

Typical use (see ``config/planner.yaml``)::

    config = load_planner_config("config/planner.yaml")
    model = config.predictive_model(scene)             # or any PredictiveModel
    loop = MpcLoop(scene, StochasticTrajectoryOptimizer(config.optimizer), model,
                   config.cost_function(scene), config.mpc)
    result = loop.run(world)                            # world: observe / execute / stop
"""

from parapush.planning.costs import CostFunction
from parapush.planning.initial_guess import shift_controls, straight_line_controls, straight_line_path
from parapush.planning.mpc import MpcLoop, MpcResult, MpcSettings, MpcStep, World
from parapush.planning.optimizer import (
    AllPredictionsFailedError,
    OptimizationResult,
    OptimizerSettings,
    StochasticTrajectoryOptimizer,
)
from parapush.planning.planner_config import (
    ModelSettings,
    PlannerConfig,
    PlannerConfigError,
    load_planner_config,
    planner_config_from_dict,
)
from parapush.planning.predictive_model import (
    MODEL_NAMES,
    PararealPrediction,
    PredictiveModel,
    PropagatorRollout,
    make_predictive_model,
)
from parapush.planning.termination import MpcOutcome, TaskStatus, TerminationCheck

__all__ = [
    "MODEL_NAMES",
    "CostFunction",
    "ModelSettings",
    "MpcLoop",
    "MpcOutcome",
    "MpcResult",
    "MpcSettings",
    "MpcStep",
    "OptimizationResult",
    "OptimizerSettings",
    "PararealPrediction",
    "PlannerConfig",
    "PlannerConfigError",
    "AllPredictionsFailedError",
    "PredictiveModel",
    "PropagatorRollout",
    "StochasticTrajectoryOptimizer",
    "TaskStatus",
    "TerminationCheck",
    "World",
    "load_planner_config",
    "make_predictive_model",
    "planner_config_from_dict",
    "shift_controls",
    "straight_line_controls",
    "straight_line_path",
]
