"""Parareal for pushing predictions: the solver, its options and result, and the cost model.

Typical use::

    solver = PararealSolver(coarse=AnalyticalCoarseModel(scene), fine=backend,
                            projector=FeasibilityProjector(scene))
    result = solver.solve(x0, controls, durations, PararealOptions(iterations=1), schedule="auto")
    result.trajectories  # (B, N+1, D)
"""

from parapush.parareal.cost_estimate import CostEstimator
from parapush.parareal.exceptions import PhysicsDivergenceError
from parapush.parareal.options import PararealOptions
from parapush.parareal.result import STOP_REASONS, PararealResult
from parapush.parareal.schedule import (
    SCHEDULES,
    ProblemSize,
    ScheduleChoice,
    StepCosts,
    choose_schedule,
    paper_speedup,
    parareal_wall_time,
    sample_parallel_wall_time,
    serial_fine_wall_time,
)
from parapush.parareal.solver import MODELS, PararealSolver

__all__ = [
    "MODELS",
    "SCHEDULES",
    "STOP_REASONS",
    "CostEstimator",
    "PararealOptions",
    "PararealResult",
    "PararealSolver",
    "PhysicsDivergenceError",
    "ProblemSize",
    "ScheduleChoice",
    "StepCosts",
    "choose_schedule",
    "paper_speedup",
    "parareal_wall_time",
    "sample_parallel_wall_time",
    "serial_fine_wall_time",
]
