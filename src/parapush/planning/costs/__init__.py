"""Planning cost terms, one per module, and their weighted sum (ISRR Eq 10, journal)."""

from parapush.planning.costs.cost_function import TERM_TYPES, CostFunction, validate_cost_config
from parapush.planning.costs.cost_term import CostConfigError, CostTerm
from parapush.planning.costs.goal_distance import GoalDistance
from parapush.planning.costs.non_target_objects import NonTargetObjects
from parapush.planning.costs.obstacle_proximity import ObstacleProximity
from parapush.planning.costs.off_table import OffTable
from parapush.planning.costs.pusher_goal_side import PusherGoalSide
from parapush.planning.costs.pusher_target_distance import PusherTargetDistance
from parapush.planning.costs.smoothness import Smoothness

__all__ = [
    "TERM_TYPES",
    "CostConfigError",
    "CostFunction",
    "CostTerm",
    "GoalDistance",
    "NonTargetObjects",
    "ObstacleProximity",
    "OffTable",
    "PusherGoalSide",
    "PusherTargetDistance",
    "Smoothness",
    "validate_cost_config",
]
