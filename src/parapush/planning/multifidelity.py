r"""Multi-fidelity trajectory optimisation: search with a cheap coarse model, decide with a corrected one.

The ISRR planner rolls out every sampled sequence with the fine model (or Parareal):
21 sequences x 4 s per iteration, 10 iterations, 5 s per re-plan on 2 cores. Most of
those rollouts only steer the search; the decision needs accurate predictions for the
few sequences that can win. :class:`MultiFidelityPlanner` therefore splits a re-plan:

1. **Coarse search.** The stochastic optimizer
   (:class:`~parapush.planning.optimizer.StochasticTrajectoryOptimizer`) runs on the
   coarse model C (learned or analytical: ~1 ms for 21 sequences x 4 controls, measured
   in ``bench/realtime_mpc.py``). Every sequence it rolls out is recorded with its
   coarse cost.
2. **Elite correction.** The E lowest-cost distinct sequences (the *elites*; two
   sequences are distinct when some control differs by more than ``min_elite_distance``)
   are predicted again with the corrector F~ (the fine model, or Parareal K = 1: x_1 is
   then exact and x_2..x_N carry one Parareal correction), in ONE ``predict`` call so the
   corrector's backend runs them in parallel.
3. **Decision on corrected predictions.** The elites are re-ranked by their cost under the
   corrected trajectories; the best one is the plan, returned with its corrected
   trajectory and cost (never a coarse prediction). With robust scoring (``robust``, a
   :class:`~parapush.planning.robust_scoring.RobustScoring`: M > 1 models of the target's
   physics) they are ranked by a risk measure of their costs under the corrector's and M - 1
   sampled models instead, and the plan's cost is that score.
4. **Refinement (Parareal's correction applied to the search).** If the chosen plan's
   corrected cost differs from its coarse cost by more than ``mismatch_tolerance``
   (relative), the coarse model misjudged this region. One more coarse search is run,
   warm-started from the corrected best, with the coarse model shifted by the jumps
   b_n = F~(u*)_n - C(u*)_n of the best plan (the F - C term of Parareal, Eq 3, frozen at
   u* and added to every sampled sequence's coarse states, so neighbours of u* are
   judged with its correction); its new elites are corrected and compete with the
   previous ones. At most ``rounds`` rounds run.

The corrected rollouts per re-plan are at most ``rounds x elites`` (2 x 4 by default)
against the ISRR planner's 10 x 21: the fine physics is spent only where the decision
is made. With ``corrected_controls = m < N`` the corrector predicts only the first m
controls of each elite (x_1..x_m exact with the fine model, as Parareal's first K states)
and the coarse model continues from x_m: the MPC executes one control before re-planning,
and on 2 shared cores this cut the CPU per re-plan in clutter from 0.62 s to 0.16 s with
no loss of success on the tuning scenes (``parapush.planning.presets`` lists the figures).

:meth:`MultiFidelityPlanner.optimize` has the optimizer's signature, with the loop's
predictive model as the corrector, so it drops into :class:`parapush.planning.MpcLoop`
and :class:`parapush.planning.pipelined_mpc.PipelinedMpcLoop` unchanged.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from parapush.planning.optimizer import (
    AllPredictionsFailedError,
    OptimizationResult,
    OptimizerSettings,
    StochasticTrajectoryOptimizer,
    TrajectoryCost,
    cost_terms,
)
from parapush.planning.predictive_model import PredictiveModel, check_trajectories, is_finite_trajectory
from parapush.prediction.config import COARSE_MODELS
from parapush.scene import StateLayout
from parapush.scene.state import wrap_angle
from parapush.settings import check_settings, setting

__all__ = [
    "COARSE_CHOICES",
    "BiasedModel",
    "MultiFidelityPlanner",
    "MultiFidelityReport",
    "MultiFidelitySettings",
    "coarse_continuation",
    "finite_costs",
    "select_elites",
]

COARSE_CHOICES = COARSE_MODELS  # the model config's names (parapush.prediction.config)
"""``auto``: the first of the cylinder network, the general learned model and the analytical
model that serves the scene (:mod:`parapush.prediction.coarse_models`)."""


@dataclass(frozen=True, kw_only=True)
class MultiFidelitySettings:
    """How a multi-fidelity re-plan is split (see the module docstring).

    Attributes:
        elites: E, sequences corrected per round (one corrector ``predict`` call each).
        rounds: most correction rounds per re-plan (1: no refinement).
        refine_iterations: coarse optimizer iterations of every round after the first.
        mismatch_tolerance: relative |corrected - coarse| cost of the chosen plan above which
            another round runs.
        min_elite_distance: m/s; elites differ by more than this in at least one control.
        corrected_controls: m, how many leading controls of an elite the corrector predicts
            (the coarse model continues from its state for the rest of the horizon); None: all.
            The MPC executes only the first control before re-planning, so the near future
            needs the accuracy; m < N divides the corrector's cost by N / m.
        contact_corrected_controls: controls the corrector predicts for an elite whose coarse
            prediction moves two or more objects (multi-object contact, where the coarse
            model is least accurate); None: all; 0 (default): no deeper correction. Used only
            when larger than ``corrected_controls``.
        contact_displacement: m; an object whose centre moves more than this over an elite's
            coarse prediction counts as moved.
        full_horizon_workers: with at least this many fine workers behind the corrector (a
            bigger machine, a Ray cluster) the elites are corrected over the whole horizon
            (``corrected_controls`` None: the journal's decision on Parareal-corrected
            predictions) instead of ``corrected_controls``: the width makes the extra controls
            nearly free; None: never (:meth:`for_workers`).
    """

    elites: int = setting(4, "E, sequences corrected per round", minimum=1)
    rounds: int = setting(2, "most correction rounds per re-plan (1: no refinement)", minimum=1)
    refine_iterations: int = setting(4, "coarse optimizer iterations of every round after the first", minimum=1)
    mismatch_tolerance: float = setting(0.2, "relative corrected-coarse cost mismatch of the chosen plan above "
                                        "which another round runs", minimum=0.0)
    min_elite_distance: float = setting(1e-3, "elites differ by more than this in at least one control", unit="m/s",
                                        minimum=0.0)
    corrected_controls: int | None = setting(None, "leading controls of an elite the corrector predicts", kind=int,
                                             minimum=1, none="all", ros_none=0)
    contact_corrected_controls: int | None = setting(0, "controls the corrector predicts for an elite moving two "
                                                     "or more objects (0: no deeper correction)", kind=int,
                                                     minimum=0, none="all", ros_none=-1)
    contact_displacement: float = setting(0.005, "an object whose centre moves more than this over an elite's "
                                          "coarse prediction counts as moved", unit="m", minimum=0.0)
    full_horizon_workers: int | None = setting(8, "with at least this many fine workers the elites are corrected "
                                               "over the whole horizon", kind=int, minimum=1, none="never",
                                               ros_none=0)

    def __post_init__(self) -> None:
        check_settings(self)

    def for_workers(self, workers: int) -> MultiFidelitySettings:
        """These settings for a corrector with ``workers`` fine workers: ``corrected_controls``
        None (the whole horizon) from ``full_horizon_workers`` on, else unchanged."""
        if self.full_horizon_workers is None or workers < self.full_horizon_workers:
            return self
        return dataclasses.replace(self, corrected_controls=None)


@dataclass(frozen=True)
class MultiFidelityReport:
    """What the last re-plan did.

    Attributes:
        rounds: correction rounds run.
        corrected_sequences: sequences rolled out with the corrector.
        coarse_sequences: sequences rolled out with the coarse model.
        coarse_time: s of wall time in the coarse searches (coarse predictions and costs).
        correction_time: s of wall time in the corrector's predictions.
        coarse_cost: the chosen plan's cost under its coarse prediction (NaN if it has none).
        corrected_cost: its cost under the corrected prediction.
        rank_changed: whether the corrected ranking chose another sequence than the coarse one.
        budget_cut: whether the time budget cut a coarse search, a round or a contact correction.
    """

    rounds: int
    corrected_sequences: int
    coarse_sequences: int
    coarse_time: float
    correction_time: float
    coarse_cost: float
    corrected_cost: float
    rank_changed: bool
    budget_cut: bool = False


class _RecordingModel:
    """Passes ``predict`` to ``model`` and keeps every batch (controls, trajectories)."""

    def __init__(self, model: PredictiveModel) -> None:
        self.model = model
        self.controls: list[np.ndarray] = []
        self.trajectories: list[np.ndarray] = []

    def predict(self, initial_state: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        trajectories = np.asarray(self.model.predict(initial_state, controls, durations), dtype=float)
        self.controls.append(np.array(controls, dtype=float))
        self.trajectories.append(trajectories)
        return trajectories

    def batches(self) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate(self.controls), np.concatenate(self.trajectories)


class BiasedModel:
    """A predictive model shifted by fixed per-node jumps: x_n <- C(x)_n + b_n (yaw jumps wrapped
    by the caller). Rows that C could not predict stay NaN.

    Args:
        model: the coarse model C.
        bias: (N+1, D) the jumps b_n added to every predicted trajectory (b_0 = 0).
    """

    def __init__(self, model: PredictiveModel, bias: np.ndarray) -> None:
        self.model = model
        self.bias = np.asarray(bias, dtype=float)

    def predict(self, initial_state: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        trajectories = np.asarray(self.model.predict(initial_state, controls, durations), dtype=float)
        if trajectories.shape[1:] != self.bias.shape:
            raise ValueError(f"bias: shape {self.bias.shape} does not fit trajectories {trajectories.shape}")
        return trajectories + self.bias[None]


def select_elites(controls: np.ndarray, costs: np.ndarray, count: int, min_distance: float) -> np.ndarray:
    """Indices of the ``count`` lowest finite costs among sequences that differ pairwise by more
    than ``min_distance`` (m/s, largest control difference); fewer when fewer exist.

    Args:
        controls: (M, N, 2) m/s.
        costs: (M,) cost of each sequence (non-finite: never chosen).
        count: E.
        min_distance: m/s.
    """
    order = np.argsort(np.where(np.isfinite(costs), costs, np.inf), kind="stable")
    chosen: list[int] = []
    for index in order:
        if not np.isfinite(costs[index]):
            break
        if all(np.max(np.abs(controls[index] - controls[other])) > min_distance for other in chosen):
            chosen.append(int(index))
            if len(chosen) == count:
                break
    return np.array(chosen, dtype=int)


def _wrap_yaw_jumps(jumps: np.ndarray) -> np.ndarray:
    """``jumps`` (..., D) with the object yaw components wrapped to [-pi, pi)."""
    jumps = jumps.copy()
    yaws = StateLayout.from_dimension(jumps.shape[-1]).yaw_indices
    jumps[..., yaws] = wrap_angle(jumps[..., yaws])
    return jumps


class MultiFidelityPlanner:
    """Coarse search, elite correction, decision on corrected predictions (module docstring).

    Args:
        optimizer: the coarse search (its settings are the plan's: horizon, durations,
            speed limit; ``max_iterations`` is the first round's iteration count).
        coarse: the coarse predictive model C (e.g. a ``PropagatorRollout`` of the
            learned or analytical model).
        settings: the split.

    Attributes:
        settings: the optimizer settings (so :class:`~parapush.planning.MpcLoop` can use
            this planner as its optimizer).
        multifidelity: the :class:`MultiFidelitySettings`.
        last_report: :class:`MultiFidelityReport` of the last :meth:`optimize` (None before).
    """

    def __init__(
        self,
        optimizer: StochasticTrajectoryOptimizer,
        coarse: PredictiveModel,
        settings: MultiFidelitySettings | None = None,
    ) -> None:
        if not isinstance(optimizer, StochasticTrajectoryOptimizer):
            raise TypeError(f"optimizer: expected a StochasticTrajectoryOptimizer, got {type(optimizer).__name__}")
        if not callable(getattr(coarse, "predict", None)):
            raise TypeError("coarse: expected a PredictiveModel (an object with `predict()`)")
        settings = MultiFidelitySettings() if settings is None else settings
        if not isinstance(settings, MultiFidelitySettings):
            raise TypeError(f"settings: expected MultiFidelitySettings, got {type(settings).__name__}")
        self.optimizer = optimizer
        self.coarse = coarse
        self.multifidelity = settings
        self.robust: Any = None  # a parapush.planning.robust_scoring.RobustScoring ranks the elites; None: nominal
        self.before_correction: Callable[[], None] | None = None
        """Called before each correction (None: nothing): e.g. robust planning's belief update,
        which runs beside the coarse search and must reach the corrector first."""
        self.last_report: MultiFidelityReport | None = None
        refine_settings = _replace_iterations(optimizer.settings, settings.refine_iterations)
        self._refiner = StochasticTrajectoryOptimizer(refine_settings, rng=optimizer.rng)
        self._corrector_seconds_per_control: float | None = None  # measured; the budget's estimate
        self._robust_seconds = 0.0  # the robust scoring's last measured time

    @property
    def settings(self) -> OptimizerSettings:
        return self.optimizer.settings

    def retune(self, settings: OptimizerSettings, multifidelity: MultiFidelitySettings) -> None:
        """Plan with ``settings`` and ``multifidelity`` from the next :meth:`optimize` on (live
        tuning, :mod:`parapush.planning.live_settings`; call it between re-plans, from the
        planning thread). The noise generator and the corrector's measured time are kept."""
        if not isinstance(settings, OptimizerSettings):
            raise TypeError(f"settings: expected OptimizerSettings, got {type(settings).__name__}")
        if not isinstance(multifidelity, MultiFidelitySettings):
            raise TypeError(f"multifidelity: expected MultiFidelitySettings, got {type(multifidelity).__name__}")
        self.optimizer.settings = settings
        self.multifidelity = multifidelity
        refine_settings = _replace_iterations(settings, multifidelity.refine_iterations)
        self._refiner = StochasticTrajectoryOptimizer(refine_settings, rng=self.optimizer.rng)

    def optimize(
        self,
        initial_state: np.ndarray,
        initial_controls: np.ndarray,
        model: PredictiveModel,
        cost: TrajectoryCost,
        *,
        proposals: np.ndarray | None = None,
    ) -> OptimizationResult:
        """Plan from ``initial_state``; ``model`` is the corrector F~ (fine or Parareal).

        ``proposals`` (M, N, 2) m/s go to the first round's coarse search
        (:meth:`StochasticTrajectoryOptimizer.optimize`), so they can become elites.

        Time budget (``settings.time_budget``, s per re-plan; None: none; anytime planning): a
        coarse search ends early enough to leave the corrector its time (the corrector's
        seconds per control measured in earlier re-plans); another round runs only if one
        coarse iteration and a correction (as measured in this re-plan) still fit; elites are
        corrected deeper for contact only if that fits. At least one search and one correction
        always run (the plan needs them). When the budget cut anything, ``stop_reason`` is
        ``"time_budget"`` and the report's ``budget_cut`` is true.

        Returns:
            the chosen sequence with its CORRECTED trajectory and cost; ``iterations`` counts
            coarse iterations; ``cost_history`` holds the best corrected cost after each round.
        Raises:
            AllPredictionsFailedError when no elite could be predicted by the corrector.
        """
        run = _Round(planner=self, state=np.asarray(initial_state, dtype=float), model=model, cost=cost,
                     started=time.perf_counter())
        budget = self.settings.time_budget
        run.end = math.inf if budget is None else run.started + budget
        searcher = self.optimizer
        start_controls = np.asarray(initial_controls, dtype=float)
        for round_index in range(self.multifidelity.rounds):
            if round_index > 0 and not run.fits(run.coarse_iteration_time() + self._correction_estimate()):
                run.budget_cut = True
                break
            refined = run.search_and_correct(searcher, start_controls, proposals if round_index == 0 else None)
            if refined is None:
                break
            start_controls = refined
            if run.coarse_model is not None:  # a refinement round: the biased model, fewer iterations
                searcher = self._refiner
        return run.result()

    def corrected_depth(self) -> int:
        """m, the leading controls the corrector predicts for every elite (``corrected_controls``
        capped at the horizon; the horizon when None)."""
        horizon = self.settings.horizon
        base = self.multifidelity.corrected_controls
        return horizon if base is None else min(base, horizon)

    def _correction_estimate(self, depth: int | None = None) -> float:
        """s a correction of ``depth`` controls is expected to take, from the corrector's last
        measured seconds per control (0 before any); the default depth (``corrected_controls``)
        also counts the robust scoring's last measured time (a round's whole decision)."""
        if self._corrector_seconds_per_control is None:
            return 0.0
        if depth is None:
            return self._corrector_seconds_per_control * self.corrected_depth() + self._robust_seconds
        return self._corrector_seconds_per_control * depth

    def _correct(
        self,
        model: PredictiveModel,
        initial_state: np.ndarray,
        controls: np.ndarray,
        durations: np.ndarray,
        coarse_trajectories: np.ndarray,
        *,
        end: float = math.inf,
    ) -> tuple[np.ndarray, bool]:
        """Corrected trajectories (E, N+1, D): the corrector for the leading controls of each
        elite (``corrected_controls``, or ``contact_corrected_controls`` where its coarse
        prediction ``coarse_trajectories`` (E, N+1, D) moves two or more objects, if the deeper
        call is expected to end by ``end``, a ``time.perf_counter()`` moment), then the coarse
        model from the corrector's state; one corrector call per depth. Also returns whether
        the budget dropped the deeper correction."""
        samples, horizon = controls.shape[:2]
        dimension = initial_state.shape[0]
        settings = self.multifidelity
        depths = np.full(samples, self.corrected_depth())
        contact_depth = horizon if settings.contact_corrected_controls is None else min(
            settings.contact_corrected_controls, horizon)
        cut = False
        if contact_depth > depths.max():
            contact = _moved_objects(coarse_trajectories, settings.contact_displacement) >= 2
            expected = self._correction_estimate(int(depths.max())) + self._correction_estimate(contact_depth)
            if np.any(contact) and time.perf_counter() + expected > end:
                cut = True
            else:
                depths[contact] = contact_depth
        trajectories = np.full((samples, horizon + 1, dimension), np.nan)
        for leading in np.unique(depths):
            rows = np.flatnonzero(depths == leading)
            call_started = time.perf_counter()
            head = check_trajectories(
                model.predict(initial_state, controls[rows, :leading], durations[:leading]),
                rows.size,
                int(leading),
                dimension,
                "corrector",
            )
            self._corrector_seconds_per_control = (time.perf_counter() - call_started) / int(leading)
            trajectories[rows] = coarse_continuation(self.coarse, head, controls[rows], durations)
        return trajectories, cut


@dataclass(kw_only=True)
class _Round:
    """One re-plan of :meth:`MultiFidelityPlanner.optimize`: its rounds' state and budget."""

    planner: MultiFidelityPlanner
    state: np.ndarray
    model: PredictiveModel
    cost: TrajectoryCost
    started: float
    end: float = math.inf  # time.perf_counter() moment the budget ends
    budget_cut: bool = False
    coarse_model: Any = None
    controls: list[np.ndarray] = field(default_factory=list)  # corrected elites
    trajectories: list[np.ndarray] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)  # what elites are ranked by: corrected, or robust scores
    corrected_costs: list[float] = field(default_factory=list)  # under the corrector's trajectories
    coarse_costs: list[float] = field(default_factory=list)
    history: list[float] = field(default_factory=list)
    iterations: int = 0
    unstable: int = 0
    coarse_sequences: int = 0
    coarse_time: float = 0.0
    correction_time: float = 0.0
    rounds: int = 0
    first_coarse_choice: np.ndarray | None = None

    def fits(self, seconds: float) -> bool:
        """Whether ``seconds`` more work ends within the budget."""
        return time.perf_counter() + seconds <= self.end

    def coarse_iteration_time(self) -> float:
        """s of one coarse iteration, as measured in this re-plan."""
        return self.coarse_time / max(1, self.iterations)

    def search(self, searcher: StochasticTrajectoryOptimizer, start: np.ndarray, proposals: np.ndarray | None):
        """Coarse search: every rolled-out sequence (controls, trajectories, coarse costs), or None."""
        coarse_model = self.coarse_model if self.coarse_model is not None else self.planner.coarse
        recorder = _RecordingModel(coarse_model)
        deadline = self.end - self.planner._correction_estimate()  # leave the corrector its time
        try:
            found = searcher.optimize(self.state, start, recorder, self.cost, proposals=proposals,
                                      deadline=None if math.isinf(deadline) else deadline)
            self.iterations += found.iterations
            self.unstable += found.unstable_samples
            self.budget_cut |= found.stop_reason == "time_budget"
            if self.first_coarse_choice is None:
                self.first_coarse_choice = found.controls.copy()
        except AllPredictionsFailedError:
            pass
        if not recorder.controls:
            return None
        controls, trajectories = recorder.batches()
        self.coarse_sequences += controls.shape[0]
        return controls, trajectories, finite_costs(trajectories, controls, self.cost)

    def search_and_correct(self, searcher, start: np.ndarray, proposals: np.ndarray | None) -> np.ndarray | None:
        """One round; the start of the refinement round, or None when no further round is due."""
        planner, settings = self.planner, self.planner.multifidelity
        durations = planner.settings.durations
        self.rounds += 1
        coarse_started = time.perf_counter()
        searched = self.search(searcher, start, proposals)
        if searched is None:
            self.coarse_time += time.perf_counter() - coarse_started
            return None
        controls, trajectories, costs = searched
        for done in self.controls:  # skip sequences already corrected in an earlier round
            costs[np.max(np.abs(controls - done[None]), axis=(1, 2)) <= settings.min_elite_distance] = math.inf
        elites = select_elites(controls, costs, settings.elites, settings.min_elite_distance)
        self.coarse_time += time.perf_counter() - coarse_started
        if elites.size == 0:
            return None
        correction_started = time.perf_counter()
        if planner.before_correction is not None:
            planner.before_correction()
        corrected, cut = planner._correct(self.model, self.state, controls[elites], durations, trajectories[elites],
                                          end=self.end)
        self.budget_cut |= cut
        self.correction_time += time.perf_counter() - correction_started
        self.unstable += int(np.count_nonzero(~is_finite_trajectory(corrected)))
        elite_costs = finite_costs(corrected, controls[elites], self.cost)
        elite_costs = np.where(np.isnan(elite_costs), math.inf, elite_costs)
        scores = elite_costs
        if planner.robust is not None:  # the corrector's best elites, ranked by the risk over M models
            scoring_started = time.perf_counter()
            scored = planner.robust.scored(elite_costs)
            scores = np.full(elite_costs.shape, math.inf)
            if scored.size:
                scores[scored] = planner.robust.score(
                    self.state, controls[elites][scored], durations, elite_costs[scored], cost=self.cost,
                    coarse=planner.coarse, depth=planner.corrected_depth()).scores
            planner._robust_seconds = time.perf_counter() - scoring_started
            self.correction_time += planner._robust_seconds
        # coarse cost of each elite as the unbiased coarse model sees it (for the report)
        unbiased = costs[elites] if self.coarse_model is None else _costs(
            planner.coarse, self.state, controls[elites], durations, self.cost)
        self.controls.extend(controls[elites])
        self.trajectories.extend(corrected)
        self.costs.extend(scores.tolist())
        self.corrected_costs.extend(elite_costs.tolist())
        self.coarse_costs.extend(np.asarray(unbiased, dtype=float).tolist())
        best = int(np.argmin(self.costs))
        self.history.append(float(self.costs[best]))
        if not math.isfinite(self.costs[best]):
            return start  # nothing corrected yet: search again from the same start
        # the coarse model's accuracy on the chosen plan: its corrected (corrector's) cost
        mismatch = abs(self.corrected_costs[best] - self.coarse_costs[best])
        if mismatch <= settings.mismatch_tolerance * max(abs(self.corrected_costs[best]), 1e-12):
            return None
        # refine around the corrected best with the coarse model shifted by its F~ - C jumps
        coarse_best = np.asarray(planner.coarse.predict(self.state, self.controls[best][None], durations),
                                 dtype=float)[0]
        if not np.all(np.isfinite(coarse_best)):
            return None
        self.coarse_model = BiasedModel(planner.coarse, _wrap_yaw_jumps(self.trajectories[best] - coarse_best))
        return self.controls[best]

    def result(self) -> OptimizationResult:
        """The chosen plan (the lowest corrected cost); sets the planner's ``last_report``."""
        if not self.costs or not math.isfinite(min(self.costs)):
            raise AllPredictionsFailedError(
                f"no corrected elite could be predicted ({len(self.costs)} tried, {self.unstable} unstable)"
            )
        best = int(np.argmin(self.costs))
        chosen_controls, chosen_trajectory = self.controls[best], self.trajectories[best]
        self.planner.last_report = MultiFidelityReport(
            rounds=self.rounds, corrected_sequences=len(self.costs), coarse_sequences=self.coarse_sequences,
            coarse_time=self.coarse_time, correction_time=self.correction_time,
            coarse_cost=float(self.coarse_costs[best]), corrected_cost=float(self.corrected_costs[best]),
            rank_changed=bool(
                self.first_coarse_choice is None
                or np.max(np.abs(self.first_coarse_choice - chosen_controls))
                > self.planner.multifidelity.min_elite_distance
            ),
            budget_cut=self.budget_cut,
        )
        return OptimizationResult(
            controls=chosen_controls.copy(), cost=float(self.costs[best]), trajectory=chosen_trajectory.copy(),
            iterations=self.iterations, cost_history=np.array(self.history),
            time=time.perf_counter() - self.started, unstable_samples=self.unstable,
            stop_reason="time_budget" if self.budget_cut else "iterations",
            cost_terms=cost_terms(self.cost, chosen_trajectory, chosen_controls),
        )


def finite_costs(trajectories: np.ndarray, controls: np.ndarray, cost: TrajectoryCost) -> np.ndarray:
    """Costs (M,) of trajectories (M, N+1, D) under controls (M, N, 2); +inf where a trajectory
    is not finite (never evaluated)."""
    costs = np.full(controls.shape[0], math.inf)
    finite = is_finite_trajectory(trajectories)
    if np.any(finite):
        costs[finite] = np.asarray(cost.evaluate(trajectories[finite], controls[finite]), dtype=float)
    return costs


def coarse_continuation(coarse: PredictiveModel, heads: np.ndarray, controls: np.ndarray,
                        durations: np.ndarray) -> np.ndarray:
    """Trajectories (R, N+1, D) of ``heads`` (R, m+1, D), the states of the first m controls of
    ``controls`` (R, N, 2), continued by the ``coarse`` model from each head's last state over the
    remaining controls; rows whose head ends non-finite stay NaN after it. A ``coarse`` model with
    ``predict_from_each`` (:class:`~parapush.planning.predictive_model.PropagatorRollout`) is called
    once for all rows, any other once per row."""
    rows, horizon = controls.shape[:2]
    depth = heads.shape[1] - 1
    trajectories = np.full((rows, horizon + 1, heads.shape[2]), np.nan)
    trajectories[:, : depth + 1] = heads
    if depth == horizon:
        return trajectories
    starts = heads[:, depth]
    finite = np.flatnonzero(np.all(np.isfinite(starts), axis=1))
    if finite.size == 0:
        return trajectories
    predict_from_each = getattr(coarse, "predict_from_each", None)
    if callable(predict_from_each):
        tails = np.asarray(predict_from_each(starts[finite], controls[finite, depth:], durations[depth:]), dtype=float)
        trajectories[finite, depth + 1 :] = tails[:, 1:]
        return trajectories
    for row in finite:
        tail = coarse.predict(starts[row], controls[row : row + 1, depth:], durations[depth:])
        trajectories[row, depth + 1 :] = np.asarray(tail, dtype=float)[0, 1:]
    return trajectories


def _moved_objects(trajectories: np.ndarray, displacement: float) -> np.ndarray:
    """(E,) how many objects of each trajectory (E, N+1, D) get farther than ``displacement``
    (m) from where they started at some state (non-finite states count as not moved)."""
    layout = StateLayout.from_dimension(trajectories.shape[-1])
    centres = layout.poses(trajectories)[..., :2]  # (E, N+1, n, 2)
    moved = np.linalg.norm(centres - centres[:, :1], axis=-1) > displacement  # NaN compares False
    return np.count_nonzero(np.any(moved, axis=1), axis=1)


def _costs(
    model: PredictiveModel, state: np.ndarray, controls: np.ndarray, durations: np.ndarray, cost: TrajectoryCost
) -> np.ndarray:
    return finite_costs(np.asarray(model.predict(state, controls, durations), dtype=float), controls, cost)


def _replace_iterations(settings: OptimizerSettings, iterations: int) -> OptimizerSettings:
    return dataclasses.replace(settings, max_iterations=iterations, time_budget=None)
