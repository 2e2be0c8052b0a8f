r"""Pipelined MPC: the next control is planned while the current one executes.

The ISRR loop (:class:`parapush.planning.MpcLoop`) plans, then executes, so the pusher
stands still for every re-plan. :class:`PipelinedMpcLoop` overlaps them on an
:class:`parapush.planning.async_world.AsyncWorld`. With x_t the observed state when
control u_t starts (T = control duration, P_t the plan whose first control is u_t):

1. **Start** u_t at once (``world.start``) with a *fallback* (see 4).
2. **Predict** x^_{t+1}, the state at the end of u_t, with the loop's model (the
   corrector: fine or Parareal) from the OBSERVED x_t, and **plan** P_{t+1} from x^_{t+1}
   (warm start: P_t shifted), while u_t runs. Re-plan time = prediction + planning.
3. **Observe** x_{t+1} when u_t ends and check termination. If the observation disagrees
   with the prediction (any object or the pusher more than ``replan_distance`` away from
   x^_{t+1}), P_{t+1} was planned for a state that did not happen: the loop re-plans from
   x_{t+1} at once (warm-started with P_{t+1}) and the pusher stands still meanwhile (the
   loop stops the world: the fallback was planned for the predicted state);
   otherwise u_{t+1} = P_{t+1}[0] starts immediately: the pusher does not stop between
   controls. Either way the next prediction starts from the observation, so model errors
   never accumulate beyond one control.
4. **Late plan.** If P_{t+1} is not ready when u_t ends, the world runs the fallback: the
   previous plan's second control P_t[1] for at most ONE extra period, if P_t's corrected
   prediction says it is safe (after P_t[0] and P_t[1], neither the target nor the pusher
   is within ``fallback_clearance`` of an obstacle, no object is off the table shrunk by
   ``fallback_clearance`` and no other object is in the goal); otherwise the pusher stops
   when u_t ends. The late P_{t+1} (planned for x^_{t+1}, which has passed) is then only a
   warm start: with the fallback running, the loop predicts its end state from x^_{t+1}
   and plans from that while the fallback runs; the next control starts when the fallback
   ends (if that plan is late too, the pusher stands still until it is ready). Without a
   fallback the pusher stopped at x_{t+1} ~ x^_{t+1}, so P_{t+1} is used as in 3.

5. **No plan.** When no plan could be predicted (every corrected elite failed:
   :class:`~parapush.planning.optimizer.AllPredictionsFailedError`), the plan is the
   pusher backing off ``back_off_distance`` from the nearest body
   (:mod:`parapush.planning.back_off`); one made for a predicted state is only a warm start,
   as in 3: the loop re-plans from the observation, and backs off from there if that fails too.

Reported per step (:class:`PipelinedStep`): the re-plan time (wall), the time the pusher
stood still before the control started (*waiting*, world clock), whether the fallback ran
and whether the loop re-planned from the observation; per task (:class:`PipelinedResult`):
planning, waiting, motion (execution) and task time. Task time is the world clock from the
first observation to the end; with a :class:`~parapush.planning.async_world.VirtualClockWorld`
planning costs wall time and execution simulated time.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from parapush.physics.projection import FeasibilityProjector
from parapush.planning.async_world import AsyncWorld
from parapush.planning.back_off import BACK_OFF_STOP_REASON, BackOff
from parapush.planning.blocker_clearing import BlockerClearing
from parapush.planning.costs import CostFunction
from parapush.planning.initial_guess import shift_controls
from parapush.planning.mpc import MpcOutcome, MpcSettings
from parapush.planning.optimizer import AllPredictionsFailedError, OptimizationResult
from parapush.planning.predictive_model import PredictiveModel
from parapush.planning.termination import TaskStatus, TerminationCheck
from parapush.scene import Scene
from parapush.settings import check_settings, setting

MIN_BUDGET_SHARE = 0.5
"""Smallest share of a control period a re-plan's budget gets (:meth:`PipelineSettings.replan_budget`)."""

__all__ = ["MIN_BUDGET_SHARE", "PipelineSettings", "PipelinedMpcLoop", "PipelinedResult", "PipelinedStep"]


@dataclass(frozen=True, kw_only=True)
class PipelineSettings:
    """Policies of :class:`PipelinedMpcLoop` (module docstring, 3 and 4).

    Attributes:
        replan_distance: m; an observed body (object centre or pusher) farther than this from
            its predicted position makes the loop re-plan from the observation.
        fallback_clearance: m; the fallback runs only if the predicted states keep this
            clearance to obstacles and table edges.
        replan_margin: s of a control period the pipeline keeps for itself: the next plan
            must be ready before the running control ends, and before the plan starts the loop
            predicts the control's end state (``predict_one``: one corrector call of one
            control, ~0.01-0.05 s for the fine model on 2 cores, more through the prediction
            service under load) and afterwards publishes the plan. A re-plan's time budget is
            :meth:`replan_budget` (anytime planning: the planner returns its best plan then);
            None: no budget derived (the optimizer's ``time_budget`` alone).
        back_off_distance: m the pusher backs off from the nearest body in one control when no
            plan could be predicted (module docstring, 5).
    """

    replan_distance: float = setting(0.01, "an observed body this far from its predicted position makes the loop "
                                     "re-plan from the observation", unit="m", minimum=0.0)
    fallback_clearance: float = setting(0.005, "the fallback runs only if its predicted states keep this clearance "
                                        "to obstacles and table edges", unit="m", minimum=0.0)
    replan_margin: float | None = setting(0.2, "time of a control period the pipeline keeps for itself (a re-plan's "
                                          "budget is the rest)", kind=float, unit="s", minimum=0.0,
                                          none="no budget derived (the optimizer's time_budget alone)", ros_none=-1.0)
    back_off_distance: float = setting(0.02, "the pusher backs off this far from the nearest body in one control when "
                                       "no plan could be predicted", unit="m", above=0.0)

    def __post_init__(self) -> None:
        check_settings(self)

    def replan_budget(self, control_duration: float) -> float:
        """s of wall time a re-plan may take: ``control_duration - replan_margin``, but at least
        half the control (:data:`MIN_BUDGET_SHARE`: short test controls keep a usable budget);
        ``control_duration`` itself without a margin (``replan_margin`` None)."""
        if isinstance(control_duration, bool) or not control_duration > 0.0:
            raise ValueError(f"control_duration: expected a positive number of s, got {control_duration!r}")
        if self.replan_margin is None:
            return float(control_duration)
        return max(control_duration - self.replan_margin, MIN_BUDGET_SHARE * control_duration)


@dataclass(frozen=True)
class PipelinedStep:
    """One executed control.

    Attributes:
        step: index of the control (0-based).
        control: (2,) m/s.
        start_time: s, world clock when it started.
        waiting_time: s the pusher stood still before it started (0 when it followed the
            previous control without a gap).
        replan_time: s of wall time of the plan it came from (prediction + optimisation;
            the re-plan from the observation included when there was one).
        fallback: whether this control is a fallback (the plan was late).
        replanned_from_observation: whether the loop re-planned from the observation (it
            disagreed with the prediction, or the plan for the prediction was a back-off).
        prediction_error: m, largest distance between predicted and observed body positions
            when the control's plan was checked (NaN for the first control).
        cost: the plan's (corrected) cost.
        budget_cut: whether the time budget cut a search of the plan it came from
            (``OptimizationResult.stop_reason == "time_budget"``).
        clearing: the object its plan was clearing off the target's way ("" for the task's own
            goal; ``MpcSettings.clear_blockers``).
        clearing_event: what the blocker clearing decided at the observation before its plan ("" for nothing).
        back_off: whether no plan could be predicted and the control backs the pusher off
            (module docstring, 5).
    """

    step: int
    control: np.ndarray
    start_time: float
    waiting_time: float
    replan_time: float
    fallback: bool
    replanned_from_observation: bool
    prediction_error: float
    cost: float
    budget_cut: bool = False
    clearing: str = ""
    clearing_event: str = ""
    back_off: bool = False


@dataclass(frozen=True)
class PipelinedResult:
    """How a pipelined task ended.

    Attributes:
        outcome, failure_reason, final_distance, states: as in :class:`parapush.planning.MpcResult`.
        steps: the executed controls (:class:`PipelinedStep`).
        planning_time: s of wall time spent predicting and planning.
        waiting_time: s the pusher stood still waiting for a plan (world clock).
        execution_time: s the pusher was commanded to move (world clock).
        task_time: s of world clock from the first observation to the end.
        replan_times: (k,) s, wall time of every plan made.
        replans_from_observation: how often the loop re-planned from the observation
            (:attr:`PipelinedStep.replanned_from_observation`).
        fallbacks: how often a late plan made the world run the fallback.
        budget_cuts: searches (optimize calls) the time budget cut.
        diverged_predictions: control end states the corrector could not predict from the
            observation, the plan's prediction standing in (``predict_one``).
        blocker_clearings: objects cleared off the target's way (``MpcSettings.clear_blockers``).
        back_offs: controls that backed the pusher off because no plan could be predicted.
    """

    outcome: MpcOutcome
    failure_reason: str
    final_distance: float
    states: np.ndarray
    steps: tuple[PipelinedStep, ...]
    planning_time: float
    waiting_time: float
    execution_time: float
    task_time: float
    replan_times: np.ndarray
    replans_from_observation: int
    fallbacks: int
    budget_cuts: int = 0
    diverged_predictions: int = 0
    blocker_clearings: int = 0
    back_offs: int = 0

    @property
    def success(self) -> bool:
        return self.outcome is MpcOutcome.SUCCESS

    @property
    def controls_executed(self) -> int:
        return len(self.steps)


StepCallback = Callable[[PipelinedStep], None]


class PipelinedMpcLoop:
    """Receding-horizon pushing that plans control t+1 while control t executes (module docstring).

    Args:
        scene: the task.
        optimizer: anything with ``settings`` (an ``OptimizerSettings``) and
            ``optimize(state, controls, model, cost)`` (the stochastic optimizer or
            :class:`parapush.planning.multifidelity.MultiFidelityPlanner`).
        model: the predictive model used for x^_{t+1} and handed to the optimizer (the corrector).
        cost: the planning cost.
        settings: loop settings shared with :class:`MpcLoop` (max controls, termination, initial guess).
        pipeline: the policies of this loop.
    """

    def __init__(
        self,
        scene: Scene,
        optimizer: object,
        model: PredictiveModel,
        cost: CostFunction,
        settings: MpcSettings,
        pipeline: PipelineSettings | None = None,
    ) -> None:
        if not isinstance(settings, MpcSettings):
            raise TypeError(f"settings: expected MpcSettings, got {type(settings).__name__}")
        pipeline = PipelineSettings() if pipeline is None else pipeline
        if not isinstance(pipeline, PipelineSettings):
            raise TypeError(f"pipeline: expected PipelineSettings, got {type(pipeline).__name__}")
        if not callable(getattr(optimizer, "optimize", None)) or not hasattr(optimizer, "settings"):
            raise TypeError("optimizer: expected an object with `settings` and `optimize()`")
        if not callable(getattr(model, "predict", None)):
            raise TypeError("model: expected a PredictiveModel (an object with `predict()`)")
        self.scene = scene
        self.optimizer = optimizer
        self.model = model
        self.cost = cost
        self.projector = FeasibilityProjector(scene)  # plans start from the observation made rigid
        self.settings = settings
        self.pipeline = pipeline
        self.termination = TerminationCheck(
            scene=scene, obstacle_tolerance=settings.obstacle_tolerance, table_margin=settings.table_margin
        )
        self.fallback_check = TerminationCheck(
            scene=scene,
            obstacle_tolerance=max(settings.obstacle_tolerance, pipeline.fallback_clearance),
            table_margin=max(settings.table_margin, pipeline.fallback_clearance),
        )
        self.back_off = BackOff(scene, pipeline.back_off_distance)
        self._cancel = threading.Event()
        self.before_plan: Callable[[PipelinedMpcLoop], None] | None = None
        """Called with this loop in its own thread before each plan (None: nothing): it may replace
        ``cost`` and retune the optimizer's per-plan settings (live tuning,
        :class:`parapush.planning.live_settings.PlanRetuner`); horizon and control duration must stay."""

    def cancel(self) -> None:
        """Ask the running task to stop (thread-safe); it ends with CANCELED."""
        self._cancel.set()

    def fallback_for(self, plan: OptimizationResult) -> np.ndarray | None:
        """The fallback of the plan's first control: its second control if the plan's predicted
        states after both are safe (module docstring, 4), else None (stop)."""
        if plan.controls.shape[0] < 2 or plan.trajectory.shape[0] < 3:
            return None
        for state in plan.trajectory[1:3]:
            if not np.all(np.isfinite(state)):
                return None
            status = self.fallback_check.check(state)
            if status.finished and status.outcome is not MpcOutcome.SUCCESS:
                return None
        return plan.controls[1].copy()

    def prediction_error(self, predicted: np.ndarray, observed: np.ndarray) -> float:
        """m, the largest distance between predicted and observed pusher and object positions."""
        layout = self.scene.layout
        errors = [float(np.hypot(*(predicted[layout.pusher_position] - observed[layout.pusher_position])))]
        difference = layout.poses(predicted[None])[0, :, :2] - layout.poses(observed[None])[0, :, :2]
        errors.extend(np.hypot(difference[:, 0], difference[:, 1]).tolist())
        return max(errors)

    def run(
        self,
        world: AsyncWorld,
        *,
        max_controls: int | None = None,
        callback: StepCallback | None = None,
    ) -> PipelinedResult:
        """Run the task to its end; task failures and errors become outcomes, never raise."""
        limit = self.settings.max_controls if max_controls is None else max_controls
        if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1:
            raise ValueError(f"max_controls: expected an integer >= 1, got {max_controls!r}")
        for method in ("time", "observe", "start", "wait_until", "stop"):
            if not callable(getattr(world, method, None)):
                raise TypeError(f"world: expected an object with `{method}()` (see AsyncWorld)")
        self._cancel.clear()
        return _PipelinedRun(self, world, int(limit), callback).execute()


@dataclass
class _Timeline:
    """When the pusher moves: the control started at ``begin`` moves it until ``moving_until``."""

    begin: float = math.nan
    control_end: float = math.nan
    fallback: bool = False
    last_motion_end: float = math.nan

    def motion_end(self, now: float) -> float:
        """End of the current motion as of ``now`` (the fallback runs only if nothing replaced it)."""
        if self.fallback and now > self.control_end:
            return self.control_end + (self.control_end - self.begin)
        return self.control_end


@dataclass
class _PipelinedRun:
    loop: PipelinedMpcLoop
    world: AsyncWorld
    max_controls: int
    callback: StepCallback | None
    states: list[np.ndarray] = field(default_factory=list)
    steps: list[PipelinedStep] = field(default_factory=list)
    replan_times: list[float] = field(default_factory=list)
    execution_time: float = 0.0
    waiting_time: float = 0.0
    replans_from_observation: int = 0
    fallbacks: int = 0
    budget_cuts: int = 0
    diverged_predictions: int = 0
    distance: float = math.nan
    task_started: float = math.nan
    timeline: _Timeline = field(default_factory=_Timeline)
    idle_since: float = math.nan
    clearing: BlockerClearing = field(init=False)
    clearing_event: str = ""
    planned_clearing: str = ""

    def __post_init__(self) -> None:
        self.clearing = self.loop.settings.blocker_clearing(self.loop.scene)

    # -- pieces ------------------------------------------------------------------------------
    def observe(self) -> tuple[np.ndarray, TaskStatus]:
        layout = self.loop.scene.layout
        state = np.array(self.world.observe(), dtype=float)
        if state.shape != (layout.dimension,) or not np.all(np.isfinite(state)):
            raise ValueError(f"world.observe: expected a finite state ({layout.dimension},), got {state.shape}")
        self.states.append(state)
        status = self.loop.termination.check(state)
        self.distance = status.distance_to_goal
        if not status.finished:
            event = self.clearing.update(state, len(self.steps))
            self.clearing_event = "; ".join(filter(None, (self.clearing_event, event)))
        # Plans start from the observation with its overlaps resolved (ISRR Eq 9): a pusher pressing
        # a box against another body sinks several mm into it (soft contacts, the real thing's
        # compliance), more than a prediction request accepts (model.max_initial_overlap).
        return self.loop.projector.project(state[None])[0], status

    def plan(self, state: np.ndarray, controls: np.ndarray, previous: np.ndarray, *,
             first: bool = False) -> tuple[OptimizationResult, float]:
        """Optimize from ``state`` starting at ``controls``; a re-plan (not ``first``) also tries
        the straight-line push from ``state`` (``MpcSettings.replan_proposal``). While a blocker is
        being cleared, the plan is for its sub-goal (:mod:`parapush.planning.blocker_clearing`)."""
        started = time.perf_counter()
        loop = self.loop
        if loop.before_plan is not None:
            loop.before_plan(loop)
        scene, cost = self.clearing.planning_scene(), self.clearing.cost(loop.cost)
        self.planned_clearing = self.clearing.clearing_name
        proposals = None if first else loop.settings.proposals(scene, state, loop.optimizer.settings, cost.route)
        try:
            result = loop.optimizer.optimize(state, controls, loop.model, cost.with_previous_control(previous),
                                             proposals=proposals)
        except AllPredictionsFailedError:
            result = loop.back_off.plan(state, loop.optimizer.settings)
        self.budget_cuts += _cut(result)
        return result, time.perf_counter() - started

    def predict_one(self, state: np.ndarray, control: np.ndarray, planned: np.ndarray) -> np.ndarray:
        """The end state (D,) of ``control`` (2,) m/s run from ``state`` (D,), made rigid: the next
        plan's start, as an observation. Where the corrector's physics diverges from ``state`` (MuJoCo
        does, rarely, for one exact state and control: measured once in 60 goals of the heavy
        family, from a control the same corrector had predicted from the plan's start), the end
        state the plan predicted for it, ``planned`` (D,), stands in (counted in
        ``diverged_predictions``); the observation at the control's end corrects it as any other."""
        duration = self.loop.optimizer.settings.control_duration
        trajectory = np.asarray(self.loop.model.predict(state, control[None, None], np.array([duration])))[0]
        end = trajectory[1]
        if not np.all(np.isfinite(end)):
            if not np.all(np.isfinite(planned)):
                raise RuntimeError(f"model: could not predict control {control.tolist()} m/s from the observed "
                                   "state, nor did its plan")
            self.diverged_predictions += 1
            end = planned
        return self.loop.projector.project(end[None])[0]

    def start(self, control: np.ndarray, fallback: np.ndarray | None, record: dict) -> None:
        """Start ``control``; account the motion of the previous one and the pusher's idle time."""
        duration = self.loop.optimizer.settings.control_duration
        now = self.world.time()
        self.close_motion(now)
        begin = self.world.start(control.copy(), duration, fallback)
        waiting = max(0.0, begin - self.idle_since) if math.isfinite(self.idle_since) else 0.0
        self.waiting_time += waiting
        self.timeline = _Timeline(begin=begin, control_end=begin + duration, fallback=fallback is not None)
        step = PipelinedStep(
            step=len(self.steps), control=control.copy(), start_time=begin, waiting_time=waiting, **record
        )
        self.steps.append(step)
        if self.callback is not None:
            self.callback(step)

    def close_motion(self, now: float) -> None:
        """Book the motion of the running control up to ``now``; the pusher is idle after it."""
        timeline = self.timeline
        if not math.isfinite(timeline.begin):
            return
        end = min(now, timeline.motion_end(now))
        self.execution_time += max(0.0, end - timeline.begin)
        self.idle_since = timeline.motion_end(now)
        self.timeline = _Timeline()

    # -- the loop ----------------------------------------------------------------------------
    def execute(self) -> PipelinedResult:
        loop = self.loop
        settings = loop.optimizer.settings
        duration = settings.control_duration
        try:
            self.task_started = self.world.time()
            self.idle_since = self.task_started
            state, status = self.observe()
            if status.finished:
                return self.finish(status.outcome, status.reason)
            guess = loop.settings.straight_line(self.clearing.planning_scene(), state, settings,
                                                self.clearing.cost(loop.cost).route)
            plan, replan = self.plan(state, guess, np.zeros(2), first=True)
            self.replan_times.append(replan)
            record = {"replan_time": replan, "fallback": False, "replanned_from_observation": False,
                      "prediction_error": math.nan, "cost": plan.cost, "budget_cut": _cut(plan),
                      "back_off": _backs_off(plan), **self.clearing_record()}
            while True:
                if loop._cancel.is_set():
                    return self.finish(MpcOutcome.CANCELED, "canceled")
                control = plan.controls[0].copy()
                fallback = loop.fallback_for(plan)
                self.start(control, fallback, record)
                control_end = self.timeline.control_end
                if len(self.steps) >= self.max_controls:
                    self.world.wait_until(control_end)
                    state, status = self.observe()
                    if status.finished:
                        return self.finish(status.outcome, status.reason)
                    return self.finish(
                        MpcOutcome.MAX_CONTROLS,
                        f"target not in the goal region after {self.max_controls} controls "
                        f"({self.distance:.4f} m from the goal centre)",
                    )
                # 2. predict the end of this control from the observation and plan from there
                planning_started = time.perf_counter()
                predicted = self.predict_one(state, control, plan.trajectory[1])
                next_plan, _ = self.plan(predicted, shift_controls(plan.controls), control)
                used_fallback = fallback is not None and self.world.time() > control_end
                if used_fallback:
                    # 4. late with a fallback running: plan from the predicted end of the fallback
                    self.fallbacks += 1
                    self.record_fallback(fallback, control_end)
                    predicted = self.predict_one(predicted, fallback, plan.trajectory[2])
                    next_plan, _ = self.plan(predicted, next_plan.controls, fallback)
                    control_end += duration
                replan = time.perf_counter() - planning_started
                self.world.wait_until(control_end)
                # 3. observe, check, correct
                state, status = self.observe()
                if status.finished:
                    return self.finish(status.outcome, status.reason)
                if len(self.steps) >= self.max_controls:
                    return self.finish(
                        MpcOutcome.MAX_CONTROLS,
                        f"target not in the goal region after {self.max_controls} controls "
                        f"({self.distance:.4f} m from the goal centre)",
                    )
                error = loop.prediction_error(predicted, state)
                # a back-off planned for the predicted state: the observed one may be plannable
                replanned = error > loop.pipeline.replan_distance or _backs_off(next_plan)
                if replanned:
                    # the fallback was meant for the predicted state: stand still while re-planning
                    self.world.stop()
                    self.timeline.fallback = False
                    self.close_motion(self.world.time())
                    self.replans_from_observation += 1
                    previous = self.steps[-1].control
                    next_plan, extra = self.plan(state, next_plan.controls, previous)
                    replan += extra
                self.replan_times.append(replan)
                plan = next_plan
                record = {"replan_time": replan, "fallback": False, "replanned_from_observation": replanned,
                          "prediction_error": error, "cost": plan.cost, "budget_cut": _cut(plan),
                          "back_off": _backs_off(plan), **self.clearing_record()}
        except Exception as error:  # noqa: BLE001 - every failure becomes an ERROR outcome
            return self.finish(MpcOutcome.ERROR, f"{type(error).__name__}: {error}")

    def clearing_record(self) -> dict:
        """The blocker clearing's part of the next step's record (the event is reported once)."""
        record = {"clearing": self.planned_clearing, "clearing_event": self.clearing_event}
        self.clearing_event = ""
        return record

    def record_fallback(self, fallback: np.ndarray, control_end: float) -> None:
        """The fallback started at ``control_end``: book it as an executed control."""
        step = PipelinedStep(
            step=len(self.steps),
            control=fallback.copy(),
            start_time=control_end,
            waiting_time=0.0,
            replan_time=0.0,
            fallback=True,
            replanned_from_observation=False,
            prediction_error=math.nan,
            cost=math.nan,
        )
        self.steps.append(step)
        if self.callback is not None:
            self.callback(step)

    def finish(self, outcome: MpcOutcome | None, reason: str) -> PipelinedResult:
        assert outcome is not None
        now = self.world.time()
        self.close_motion(now)
        try:
            self.world.stop()
        except Exception as error:  # noqa: BLE001 - reported, never swallowed
            reason = (f"{reason}; " if reason else "") + f"world.stop failed: {type(error).__name__}: {error}"
            outcome = MpcOutcome.ERROR
        dimension = self.loop.scene.layout.dimension
        return PipelinedResult(
            outcome=outcome,
            failure_reason="" if outcome is MpcOutcome.SUCCESS else reason,
            final_distance=self.distance,
            states=np.array(self.states) if self.states else np.empty((0, dimension)),
            steps=tuple(self.steps),
            planning_time=float(sum(self.replan_times)),
            waiting_time=self.waiting_time,
            execution_time=self.execution_time,
            task_time=self.world.time() - self.task_started,
            replan_times=np.array(self.replan_times),
            replans_from_observation=self.replans_from_observation,
            fallbacks=self.fallbacks,
            budget_cuts=self.budget_cuts,
            diverged_predictions=self.diverged_predictions,
            blocker_clearings=self.clearing.clearings,
            back_offs=sum(step.back_off for step in self.steps),
        )


def _backs_off(plan: OptimizationResult) -> bool:
    """Whether ``plan`` is a back-off (no plan could be predicted)."""
    return plan.stop_reason == BACK_OFF_STOP_REASON


def _cut(plan: OptimizationResult) -> bool:
    """Whether the time budget cut the search that made ``plan``."""
    return plan.stop_reason == "time_budget"
