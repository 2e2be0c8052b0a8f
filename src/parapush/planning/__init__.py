"""Planning: the stochastic trajectory optimizer, its cost terms and the MPC loop (ROS-free).

Typical use (see ``config/planner.yaml``)::

    config = load_planner_config("config/planner.yaml")
    model = EnginePrediction.build(scene, load_model_config("config/model.yaml"))  # parapush.planning.engine_prediction
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
    PlannerConfig,
    PlannerConfigError,
    load_planner_config,
    planner_config_from_dict,
)
from parapush.planning.predictive_model import PredictiveModel, PropagatorRollout
from parapush.planning.termination import MpcOutcome, TaskStatus, TerminationCheck

__all__ = [
    "CostFunction",
    "MpcLoop",
    "MpcOutcome",
    "MpcResult",
    "MpcSettings",
    "MpcStep",
    "OptimizationResult",
    "OptimizerSettings",
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
    "planner_config_from_dict",
    "shift_controls",
    "straight_line_controls",
    "straight_line_path",
]
