r"""Robust scoring of the multi-fidelity planner's elites: rank them over what the physics may be.

The multi-fidelity planner (:mod:`parapush.planning.multifidelity`) decides between its elites
on their corrected predictions under ONE model of the world. :class:`RobustScoring` makes that
decision robust to the target object's unknown physics (support friction, mass, centre of
mass, pusher friction): each of a round's K elites with the lowest corrected cost
(``RobustSettings.scored_elites``) is also rolled out under M - 1 parameter vectors
theta_2..theta_M drawn from the planner's belief
(:meth:`~parapush.identification.parameter_belief.ParameterBelief.representatives`), with the
fine model for its first m controls (the corrector's depth, ``corrected_controls``; x_1 is what
the MPC executes) and the coarse model from there, as the corrector's own rows are. Its costs
C_1 (the corrector's prediction: the nominal model, or what identification gave the service)
and C_2..C_M under the drawn models are combined by a risk measure
(:class:`~parapush.planning.risk.RiskMeasure`: mean, CVaR_alpha, worst case), and the elites
are ranked by that score (the round's other elites are not chosen). The plan keeps its
corrected (row 1) trajectory.

The M - 1 extra rows of the scored elites run in ONE batched fine-model call per control
(:meth:`parapush.identification.ObjectIdentifier.rollouts`: one model variant
per row on a thread backend), so the width of the machine is spent on them. M = 1 is the
nominal planner exactly: the planner then has no robust scoring at all
(:func:`robust_scoring_for`).

The coarse search itself stays nominal: the general learned model is conditioned on mass and
support friction but not on the centre of mass, which is what the pushes show (mass and support
friction barely change a slow push); the robust part is the decision, and the corrector follows
the belief's estimate (``RobustSettings.adapt``, :class:`~parapush.planning.robust_planning.RobustPlanning`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from parapush.identification import ObjectIdentifier
from parapush.identification.parameter_belief import BeliefSettings, ParameterBelief, ParameterSpread
from parapush.planning.multifidelity import coarse_continuation, finite_costs
from parapush.planning.predictive_model import PredictiveModel
from parapush.planning.risk import RiskMeasure
from parapush.settings import check_settings, setting
from parapush.validation import check_instance

__all__ = ["RobustScoring", "RobustSettings", "robust_scoring_for"]


@dataclass(frozen=True)
class RobustSettings:
    """Robust planning over the target's physics (``config/planner.yaml``'s ``robust`` section).

    Attributes:
        samples: M, models per elite: the corrector's and M - 1 drawn from the belief (1: the
            nominal planner, bit for bit).
        risk: the risk measure of the M costs.
        spread: the prior: how far the target's true parameters may lie from the scene's (a scene
            object's own ``uncertainty`` replaces it for that object).
        belief: the belief's measurement model (how each executed control narrows it).
        adapt: after each narrowing, the corrector (a local prediction engine, or the prediction
            service through the MPC node) predicts with the belief's estimate of the target.
        scored_elites: K, the elites of each planning round scored under the drawn models: the K
            with the lowest corrected cost; the others get no score and are not chosen. The
            drawn models' fine rows grow with K (M - 1 per elite). In a profile of 12 runs of
            ``bench/robust_mpc.py`` (4 elites scored, M = 4, CVaR), the elite the M models chose
            was the corrector's best in 87 % of the rounds and among its best two in 91 %.
    """

    samples: int = setting(1, "M: models each elite is scored under (1: the nominal planner)", minimum=1,
                           maximum=64)
    risk: RiskMeasure = field(default_factory=RiskMeasure)
    spread: ParameterSpread = field(default_factory=ParameterSpread)
    belief: BeliefSettings = field(default_factory=BeliefSettings)
    adapt: bool = setting(True, "after each narrowing the corrector predicts with the belief's estimate of the target")
    scored_elites: int = setting(2, "K: the corrector's K lowest-cost elites of each round are scored under the drawn "
                                    "models; the others are not chosen", minimum=1, maximum=64)

    def __post_init__(self) -> None:
        check_settings(self)
        check_instance("risk", self.risk, RiskMeasure)
        check_instance("spread", self.spread, ParameterSpread)
        check_instance("belief", self.belief, BeliefSettings)


@dataclass(frozen=True)
class RobustScores:
    """What :meth:`RobustScoring.score` found for a batch of elites.

    Attributes:
        scores: (E,) the risk measure of each elite's costs (what the planner ranks by).
        costs: (M, E) each elite's cost under each model (row 0: the corrector's).
    """

    scores: np.ndarray
    costs: np.ndarray


class RobustScoring:
    """Scores elites under the corrector's prediction and M - 1 models drawn from ``belief``.

    Args:
        identifier: the uncertain object's identifier (fine-model predictions under its parameter vectors).
        belief: what is believed about its parameters (read at every :meth:`score`, so an
            :class:`~parapush.identification.online_identification.OnlineIdentification`
            narrowing it between re-plans narrows the planner's models too).
        settings: M and the risk measure; M >= 2.
    """

    def __init__(self, identifier: ObjectIdentifier, belief: ParameterBelief, settings: RobustSettings) -> None:
        self.identifier = check_instance("identifier", identifier, ObjectIdentifier)
        self.belief = check_instance("belief", belief, ParameterBelief)
        self.settings = check_instance("settings", settings, RobustSettings)
        if settings.samples < 2:
            raise ValueError("settings.samples: robust scoring needs M >= 2 (M = 1 is the nominal planner)")

    def score(
        self,
        initial_state: np.ndarray,
        controls: np.ndarray,
        durations: np.ndarray,
        corrected_costs: np.ndarray,
        *,
        cost,
        coarse: PredictiveModel,
        depth: int,
    ) -> RobustScores:
        """Risk scores of elites.

        Args:
            initial_state: (D,) where the plan starts.
            controls: (E, N, 2) m/s, the elites.
            durations: (N,) s.
            corrected_costs: (E,) their costs under the corrector's trajectories (inf where it failed).
            cost: the trajectory cost (``evaluate(trajectories, controls)``).
            coarse: the coarse model, which continues each drawn model's rows after ``depth``.
            depth: m, controls the drawn models predict with the fine model (1 <= m <= N).
        """
        controls = np.asarray(controls, dtype=float)
        elites, horizon = controls.shape[:2]
        depth = min(max(int(depth), 1), horizon)
        vectors = self.belief.representatives(self.settings.samples - 1)  # (M-1, 5)
        heads = self.identifier.rollouts(initial_state, controls[:, :depth], durations[:depth], vectors)
        costs = np.full((vectors.shape[0] + 1, elites), math.inf)
        costs[0] = corrected_costs
        for model_index in range(vectors.shape[0]):
            drawn = coarse_continuation(coarse, heads[model_index], controls, durations)
            costs[model_index + 1] = finite_costs(drawn, controls, cost)
        costs = np.where(np.isnan(costs), math.inf, costs)
        return RobustScores(scores=self.settings.risk.aggregate(costs), costs=costs)

    def scored(self, corrected_costs: np.ndarray) -> np.ndarray:
        """Indices of the elites to score: the ``scored_elites`` with the lowest finite
        ``corrected_costs`` (E,) (an elite the corrector could not predict is never scored)."""
        corrected_costs = np.asarray(corrected_costs, dtype=float)
        order = np.argsort(corrected_costs, kind="stable")
        return order[np.isfinite(corrected_costs[order])][: self.settings.scored_elites]


def robust_scoring_for(
    settings: RobustSettings, identifier: ObjectIdentifier | None, belief: ParameterBelief | None
) -> RobustScoring | None:
    """The planner's robust scoring for ``settings``: None for M = 1 (the nominal planner),
    else a :class:`RobustScoring` (which then needs ``identifier`` and ``belief``)."""
    check_instance("settings", settings, RobustSettings)
    if settings.samples == 1:
        return None
    if identifier is None or belief is None:
        raise ValueError("settings.samples: M > 1 needs the uncertain object's identifier and belief")
    return RobustScoring(identifier, belief, settings)
