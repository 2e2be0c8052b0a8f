r"""Stochastic (sampling-based, derivative-free) trajectory optimizer of the ISRR paper.

The papers use "the algorithm of Agboh and Dogar": at each iteration, noisy versions of
the current control sequence are rolled out with the predictive model, their costs give
a numerical gradient, and the sequence is updated against it. This module implements
that family as follows (u is the current sequence, N controls of 2 components, m/s).

One iteration i:

1. Sample S perturbations eps_k ~ N(0, nu I_{2N}), k = 1..S (nu = ``exploration_variance``,
   (m/s)^2), and set eps_0 = 0 (the current sequence itself is evaluated too)::

       u_k = Pi(u + eps_k),   eps~_k = u_k - u        k = 0..S

   Pi scales each control down to the speed limit ``max_speed`` (direction kept).
2. Roll out all S + 1 sequences in ONE ``model.predict`` call and compute their costs
   C_k = J(x_k, u_k). A sequence whose prediction is non-finite gets C_k = +inf, is
   counted (``unstable_samples``) and gets zero weight: it is never used.
3. Weights (softmax of the normalised costs; h = ``sensitivity``)::

       w_k = exp(-h (C_k - C_min) / (C_max - C_min)) / sum_j exp(-h (C_j - C_min) / (C_max - C_min))

   over the finite costs (C_min, C_max: their extremes; uniform weights when equal).
   The normalisation makes the update independent of the scale of the cost weights.
4. Update against the cost-weighted perturbation, the sampled estimate of the
   descent direction (for small nu, sum_k w_k eps_k ~ -nu h / (C_max - C_min) grad J)::

       u <- Pi(u + alpha sum_k w_k eps~_k)                    (alpha = ``step_size``)

5. Keep the best: every rolled-out sequence is a candidate; the lowest-cost one so far
   (u*, C*) is what :meth:`optimize` returns. If no sequence of iteration i beat C*
   (the update went uphill), the next iteration restarts from u* instead of the update.

Proposals (not in the papers): the first iteration may also roll out other starting points
(``optimize(..., proposals=...)``; the MPC loops pass the straight-line push from the
current state). They are not perturbations of u and get no weight in step 4; when one of
them is cheaper than u and every sample, the search continues from it instead. A warm start
carries the previous plan's momentum, and with nu = 1e-4 its samples stay within ~0.01 m/s
of it: a pusher that slid off the target and passed it was pulled back only by the gap term
and went round to the wrong side (issue 28's stalled demo run); the proposal lets the
search jump back behind the target when that is cheaper.

The loop stops after ``max_iterations`` iterations, or before an iteration that would
end after ``time_budget`` (or after the caller's ``deadline``, whichever is earlier; predicted
from the longest iteration so far); at least one iteration always runs (a plan needs one
prediction), and the result's ``stop_reason`` is ``"time_budget"`` when the budget cut the
search (anytime planning: the best sequence found so far is returned). With nu = 1e-4,
S = 20, N = 4 and 1 s controls this is the configuration of the ISRR experiments.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from parapush.planning.predictive_model import PredictiveModel, check_trajectories, is_finite_trajectory
from parapush.settings import check_settings, setting


class AllPredictionsFailedError(RuntimeError):
    """Every predicted trajectory of an optimization was non-finite: nothing to plan with."""


class TrajectoryCost(Protocol):
    """What the optimizer needs from a cost: :class:`parapush.planning.costs.CostFunction`."""

    def evaluate(self, trajectories: np.ndarray, controls: np.ndarray) -> np.ndarray:
        """Costs (S,) of trajectories (S, N+1, D) under controls (S, N, 2)."""
        ...


@dataclass(frozen=True, kw_only=True)
class OptimizerSettings:
    """Settings of :class:`StochasticTrajectoryOptimizer` (defaults: ISRR experiments).

    Attributes:
        samples: S, noisy sequences per iteration (the current sequence is rolled out
            with them, so each prediction batch has S + 1 rows).
        exploration_variance: nu, variance of the control noise, (m/s)^2.
        horizon: N, controls per sequence.
        control_duration: s, duration of each control.
        max_speed: m/s, largest speed of any control (controls are scaled down to it).
        max_iterations: iterations per optimization (each is one predict call).
        time_budget: s of wall time per optimization, or None for no limit.
        step_size: alpha, multiplies the weighted perturbation in the update.
        sensitivity: h, sharpness of the cost weighting (0: plain average).
        seed: seed of the noise generator when none is given to the optimizer.
    """

    samples: int = setting(20, "S, noisy sequences per optimizer iteration", minimum=1)
    exploration_variance: float = setting(1e-4, "nu, variance of the control noise", unit="(m/s)^2", above=0.0)
    horizon: int = setting(4, "N, controls per sequence", minimum=1)
    control_duration: float = setting(1.0, "duration of each control", unit="s", above=0.0)
    max_speed: float = setting(0.1, "largest speed of any control", unit="m/s", above=0.0)
    max_iterations: int = setting(10, "optimizer iterations per optimization (one predict call each)", minimum=1)
    time_budget: float | None = setting(None, "wall time per optimization", kind=float, unit="s", above=0.0,
                                        none="no limit", ros_none=0.0)
    step_size: float = setting(1.0, "alpha, multiplies the weighted perturbation in the update", above=0.0)
    sensitivity: float = setting(10.0, "h, sharpness of the cost weighting (0: plain average)", minimum=0.0)
    seed: int | None = setting(0, "seed of the noise generator", kind=int, minimum=0,
                               none="fresh entropy from the operating system", ros_none=-1)

    def __post_init__(self) -> None:
        check_settings(self)

    @property
    def durations(self) -> np.ndarray:
        """(N,) s, the duration of every control."""
        return np.full(self.horizon, self.control_duration)


@dataclass(frozen=True)
class OptimizationResult:
    """The best control sequence found and how it was found.

    Attributes:
        controls: (N, 2) m/s, the lowest-cost sequence evaluated.
        cost: its cost J.
        trajectory: (N+1, D) its predicted states x_0..x_N.
        iterations: iterations run (= predict calls).
        cost_history: (iterations,) best cost after each iteration (non-increasing).
        time: s of wall time of the optimization.
        unstable_samples: rolled-out sequences whose prediction was non-finite.
        stop_reason: ``"iterations"`` or ``"time_budget"``.
        cost_terms: weighted value of each cost term for the returned sequence (when the
            cost offers ``breakdown``).
    """

    controls: np.ndarray
    cost: float
    trajectory: np.ndarray
    iterations: int
    cost_history: np.ndarray
    time: float
    unstable_samples: int
    stop_reason: str
    cost_terms: dict[str, float] = field(default_factory=dict)


def clip_to_speed(controls: np.ndarray, max_speed: float) -> np.ndarray:
    """Scale every control (..., 2) whose norm exceeds ``max_speed`` (m/s) down to it."""
    controls = np.asarray(controls, dtype=float)
    speed = np.linalg.norm(controls, axis=-1, keepdims=True)
    scale = np.minimum(1.0, max_speed / np.maximum(speed, 1e-300))
    return controls * scale


def cost_terms(cost: TrajectoryCost, trajectory: np.ndarray, controls: np.ndarray) -> dict[str, float]:
    """Weighted value of each term of ``cost`` for one trajectory (N+1, D) and its controls
    (N, 2), by name; empty when the cost offers no ``breakdown``."""
    breakdown = getattr(cost, "breakdown", None)
    if not callable(breakdown):
        return {}
    return {name: float(np.asarray(value)[0]) for name, value in breakdown(trajectory[None], controls[None]).items()}


def sample_weights(costs: np.ndarray, sensitivity: float) -> np.ndarray:
    """Softmax weights (S,) of the normalised finite costs; 0 for non-finite costs."""
    costs = np.asarray(costs, dtype=float)
    finite = np.isfinite(costs)
    weights = np.zeros_like(costs)
    if not np.any(finite):
        return weights
    lowest, highest = costs[finite].min(), costs[finite].max()
    spread = highest - lowest
    if spread <= 0.0:
        weights[finite] = 1.0
    else:
        weights[finite] = np.exp(-sensitivity * (costs[finite] - lowest) / spread)
    return weights / weights.sum()


def _check_proposals(proposals: np.ndarray | None, settings: OptimizerSettings) -> np.ndarray:
    """``proposals`` as a finite (M, N, 2) array clipped to the speed limit ((0, N, 2) for None)."""
    if proposals is None:
        return np.empty((0, settings.horizon, 2))
    proposals = np.asarray(proposals, dtype=float)
    if proposals.ndim != 3 or proposals.shape[1:] != (settings.horizon, 2):
        raise ValueError(f"proposals: expected shape (M, {settings.horizon}, 2), got {proposals.shape}")
    if not np.all(np.isfinite(proposals)):
        raise ValueError("proposals: contains non-finite values")
    return clip_to_speed(proposals, settings.max_speed)


def _search_end(started: float, time_budget: float | None, deadline: float | None) -> float:
    """``time.perf_counter()`` moment (s) a search started at ``started`` must end by (inf: none)."""
    if deadline is not None and math.isnan(deadline):
        raise ValueError(f"deadline: expected a time.perf_counter() moment or None, got {deadline!r}")
    end = math.inf if time_budget is None else started + time_budget
    return end if deadline is None else min(end, float(deadline))


def _check_start(
    initial_state: np.ndarray, initial_controls: np.ndarray, settings: OptimizerSettings
) -> tuple[np.ndarray, np.ndarray]:
    """``initial_state`` as a finite (D,) array and ``initial_controls`` as a finite (N, 2)
    array (m/s) clipped to the speed limit; ValueError naming the malformed one."""
    initial_state = np.asarray(initial_state, dtype=float)
    if initial_state.ndim != 1 or not np.all(np.isfinite(initial_state)):
        raise ValueError(f"initial_state: expected a finite vector (D,), got shape {initial_state.shape}")
    controls = np.asarray(initial_controls, dtype=float)
    if controls.shape != (settings.horizon, 2):
        raise ValueError(f"initial_controls: expected shape ({settings.horizon}, 2), got {controls.shape}")
    if not np.all(np.isfinite(controls)):
        raise ValueError("initial_controls: contains non-finite values")
    return initial_state, clip_to_speed(controls, settings.max_speed)


def _costs(
    cost: TrajectoryCost, trajectories: np.ndarray, candidates: np.ndarray, finite: np.ndarray
) -> np.ndarray:
    """Costs (K,) of ``candidates`` (K, N, 2) from their ``trajectories`` (K, N+1, D): +inf
    where the trajectory is not ``finite`` ((K,) bool; never evaluated) or the cost is NaN."""
    costs = np.full(candidates.shape[0], math.inf)
    if np.any(finite):
        evaluated = np.asarray(cost.evaluate(trajectories[finite], candidates[finite]), dtype=float)
        if evaluated.shape != (int(finite.sum()),):
            raise ValueError(f"cost: returned shape {evaluated.shape}, expected ({int(finite.sum())},)")
        costs[finite] = np.where(np.isnan(evaluated), math.inf, evaluated)
    return costs


@dataclass(frozen=True)
class _Batch:
    """The sequences one iteration rolled out (one ``model.predict`` call).

    Attributes:
        candidates: (K, N, 2) m/s; row 0 the current sequence, rows 1..P the proposals,
            then the S perturbed samples of the current sequence.
        proposals: P, the proposals among the candidates (only in the first iteration).
        trajectories: (K, N+1, D) their predicted states.
        costs: (K,) their costs J, +inf for a non-finite prediction or an undefined cost.
        unstable: candidates whose prediction was non-finite.
    """

    candidates: np.ndarray
    proposals: int
    trajectories: np.ndarray
    costs: np.ndarray
    unstable: int

    def is_proposal(self, row: int) -> bool:
        """Whether candidate ``row`` is a proposal (not a perturbation of the current sequence)."""
        return 1 <= row <= self.proposals

    def perturbation_rows(self) -> np.ndarray:
        """(K,) bool, the current sequence and its samples (every row but the proposals)."""
        rows = np.ones(self.candidates.shape[0], dtype=bool)
        rows[1 : 1 + self.proposals] = False
        return rows


@dataclass
class _Search:
    """What one optimization has found so far (updated after each iteration).

    Attributes:
        current: (N, 2) m/s, the sequence the next iteration perturbs.
        best_controls: (N, 2) m/s, the lowest-cost sequence rolled out so far (u*).
        best_cost: its cost C* (+inf before any finite one).
        best_trajectory: (N+1, D) its predicted states (None before any finite one).
        cost_history: best cost after each iteration.
        unstable_samples: rolled-out sequences whose prediction was non-finite.
        longest_iteration: s, the wall time of the longest iteration so far.
        stop_reason: ``"iterations"`` or ``"time_budget"``.
    """

    current: np.ndarray
    best_controls: np.ndarray
    best_cost: float = math.inf
    best_trajectory: np.ndarray | None = None
    cost_history: list[float] = field(default_factory=list)
    unstable_samples: int = 0
    longest_iteration: float = 0.0
    stop_reason: str = "iterations"

    def record(self, batch: _Batch) -> int | None:
        """Count ``batch``'s unstable rows, keep its lowest-cost row when it beats the best so
        far and append the best cost to the history; the row kept, or None (uphill)."""
        self.unstable_samples += batch.unstable
        lowest = int(np.argmin(batch.costs))
        improved = batch.costs[lowest] < self.best_cost
        if improved:
            self.best_cost = float(batch.costs[lowest])
            self.best_controls = batch.candidates[lowest].copy()
            self.best_trajectory = batch.trajectories[lowest].copy()
        self.cost_history.append(self.best_cost)
        return lowest if improved else None

    def result(self, cost: TrajectoryCost, started: float) -> OptimizationResult:
        """The best sequence found, for a search that started at ``started``
        (``time.perf_counter()``, s); AllPredictionsFailedError when none was finite."""
        if self.best_trajectory is None:
            raise AllPredictionsFailedError(
                f"every predicted trajectory ({self.unstable_samples} of them, {len(self.cost_history)} "
                "iteration(s)) was non-finite or had an undefined cost; no control sequence can be trusted"
            )
        terms = cost_terms(cost, self.best_trajectory, self.best_controls)
        return OptimizationResult(
            controls=self.best_controls,
            cost=self.best_cost,
            trajectory=self.best_trajectory,
            iterations=len(self.cost_history),
            cost_history=np.array(self.cost_history),
            time=time.perf_counter() - started,
            unstable_samples=self.unstable_samples,
            stop_reason=self.stop_reason,
            cost_terms=terms,
        )


class StochasticTrajectoryOptimizer:
    """Derivative-free trajectory optimizer (see the module docstring for the update).

    Args:
        settings: the optimizer settings.
        rng: noise generator; default ``numpy.random.default_rng(settings.seed)``.
    """

    def __init__(self, settings: OptimizerSettings, *, rng: np.random.Generator | None = None) -> None:
        if not isinstance(settings, OptimizerSettings):
            raise TypeError(f"settings: expected OptimizerSettings, got {type(settings).__name__}")
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng: expected a numpy.random.Generator, got {type(rng).__name__}")
        self.settings = settings
        self.rng = rng if rng is not None else np.random.default_rng(settings.seed)

    def optimize(
        self,
        initial_state: np.ndarray,
        initial_controls: np.ndarray,
        model: PredictiveModel,
        cost: TrajectoryCost,
        *,
        proposals: np.ndarray | None = None,
        deadline: float | None = None,
    ) -> OptimizationResult:
        """Optimize the control sequence from ``initial_state``.

        Args:
            initial_state: (D,) x_0.
            initial_controls: (N, 2) m/s, the candidate to start from (straight line or
                warm start); clipped to the speed limit.
            model: the predictive model (one ``predict`` call per iteration).
            cost: the cost J (``evaluate(trajectories, controls) -> (S,)``).
            proposals: (M, N, 2) m/s, other starting points (e.g. the straight-line push from
                this state while the warm start holds a pusher that lost the target), clipped to
                the speed limit and predicted with the first iteration's samples; when one costs
                less than the start and every sample, the search goes on from it. None: none.
            deadline: ``time.perf_counter()`` moment (s) by which the search must end, besides
                ``settings.time_budget`` (the earlier one applies); None: the budget alone.
        Returns:
            the best sequence evaluated, with its trajectory and statistics.
        Raises:
            ValueError naming a malformed argument or a model returning a wrong shape;
            AllPredictionsFailedError when every predicted trajectory was non-finite.
        """
        started = time.perf_counter()
        initial_state, start = _check_start(initial_state, initial_controls, self.settings)
        alternatives = _check_proposals(proposals, self.settings)
        end = _search_end(started, self.settings.time_budget, deadline)
        search = _Search(current=start, best_controls=start.copy())
        for iteration in range(self.settings.max_iterations):
            iteration_started = time.perf_counter()
            if iteration > 0 and iteration_started + search.longest_iteration > end:
                search.stop_reason = "time_budget"
                break
            first_proposals = alternatives if iteration == 0 else alternatives[:0]
            batch = self._roll_out(initial_state, search.current, first_proposals, model, cost)
            kept = search.record(batch)
            search.longest_iteration = max(search.longest_iteration, time.perf_counter() - iteration_started)
            search.current = self._next_start(search, batch, kept)
        return search.result(cost, started)

    def _roll_out(
        self,
        initial_state: np.ndarray,
        current: np.ndarray,
        proposals: np.ndarray,
        model: PredictiveModel,
        cost: TrajectoryCost,
    ) -> _Batch:
        """Steps 1-2: sample S perturbations of ``current`` (N, 2), predict them with it and
        ``proposals`` (P, N, 2) in one ``model.predict`` call, and cost them."""
        settings = self.settings
        noise_scale = math.sqrt(settings.exploration_variance)
        noise = self.rng.normal(0.0, noise_scale, size=(settings.samples, settings.horizon, 2))
        candidates = np.concatenate([current[None], proposals, clip_to_speed(current + noise, settings.max_speed)])
        trajectories = check_trajectories(
            model.predict(initial_state, candidates, settings.durations),
            candidates.shape[0],
            settings.horizon,
            initial_state.shape[0],
            "model",
        )
        finite = is_finite_trajectory(trajectories)
        return _Batch(
            candidates=candidates,
            proposals=proposals.shape[0],
            trajectories=trajectories,
            costs=_costs(cost, trajectories, candidates, finite),
            unstable=int(np.count_nonzero(~finite)),
        )

    def _next_start(self, search: _Search, batch: _Batch, kept: int | None) -> np.ndarray:
        """Steps 3-5: the sequence the next iteration perturbs, after ``batch`` whose row
        ``kept`` became the best (None: none did, the search restarts from the best)."""
        if kept is None or batch.is_proposal(kept):  # uphill, or a proposal beat the start and every sample
            return search.best_controls.copy()
        rows = batch.perturbation_rows()
        weights = sample_weights(batch.costs[rows], self.settings.sensitivity)
        step = np.einsum("k,knc->nc", weights, batch.candidates[rows] - search.current)
        return clip_to_speed(search.current + self.settings.step_size * step, self.settings.max_speed)
