r"""Risk measures: one score per candidate from its costs under M sampled models.

A robust planner rolls each candidate sequence out under M models of the world drawn from
what it believes about the physics (:mod:`parapush.identification.parameter_belief`) and
ranks the candidates by a risk measure of the M costs C_1..C_M (hydrax's and MuJoCo MPC's
robust planners do the same with randomized models):

- ``mean``: (1/M) sum_m C_m, the expected cost;
- ``cvar``: CVaR_alpha, the mean of the worst ceil(alpha M) costs (the upper alpha tail), so a
  candidate that fails under a rare model pays for it even when its mean is good;
- ``worst``: max_m C_m (CVaR with alpha -> 0).

A cost that is not finite (a model whose prediction failed) counts as +inf, the worst cost,
so it lies in every measure's tail and makes the score infinite: a candidate is never ranked
on only the models that happened to work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from parapush.settings import check_settings, setting

RISK_KINDS = ("mean", "cvar", "worst")


@dataclass(frozen=True)
class RiskMeasure:
    """How the M costs of a candidate are combined (module docstring).

    Attributes:
        kind: ``mean``, ``cvar`` or ``worst``.
        alpha: the tail fraction CVaR averages (``cvar`` only).
    """

    kind: str = setting("mean", "how a candidate's costs under the M sampled models are combined",
                        choices=RISK_KINDS)
    alpha: float = setting(0.25, "CVaR's tail: the mean of the worst ceil(alpha M) costs", above=0.0, maximum=1.0)

    def __post_init__(self) -> None:
        check_settings(self)

    def tail_count(self, models: int) -> int:
        """How many of ``models`` costs the measure averages (1 for ``worst``, all for ``mean``)."""
        if self.kind == "mean":
            return models
        if self.kind == "worst":
            return 1
        return max(1, math.ceil(self.alpha * models - 1e-9))

    def aggregate(self, costs: np.ndarray) -> np.ndarray:
        """Scores (S,) of candidates from their costs (M, S) under M models (lower is better).

        Raises:
            ValueError naming ``costs`` when it is not (M, S) with M >= 1.
        """
        costs = np.asarray(costs, dtype=float)
        if costs.ndim != 2 or costs.shape[0] < 1:
            raise ValueError(f"costs: expected shape (M, S) with M >= 1, got {costs.shape}")
        invalid = ~np.isfinite(costs)
        ordered = np.sort(np.where(invalid, math.inf, costs), axis=0)  # ascending; inf last
        tail = ordered[costs.shape[0] - self.tail_count(costs.shape[0]):]
        return tail.mean(axis=0)
