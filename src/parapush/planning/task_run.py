"""One pushing task with a planner preset, reported the same way whichever loop it runs.

:func:`run_task` runs a :class:`~parapush.planning.presets.BuiltPlanner` on an
:class:`~parapush.planning.async_world.AsyncWorld`: the sequential
:class:`~parapush.planning.MpcLoop` through a
:class:`~parapush.planning.async_world.BlockingWorld` (plan, then execute), the
:class:`~parapush.planning.pipelined_mpc.PipelinedMpcLoop` directly (plan t+1 while t
executes). Both report :class:`TaskStep` per executed control and a :class:`TaskReport`
(what the ``PushObject`` action's feedback and result carry), with one set of definitions:

- *re-plan time*: wall time of one plan (prediction + optimisation); *planning time* is
  their sum. In the pipelined loop planning overlaps execution, so it is not lost time.
- *waiting time*: the time the pusher stood still before a control started, from the start
  of the task (world clock): every re-plan in the sequential loop, only late plans and
  re-plans from a disagreeing observation in the pipelined one.
- *task time*: world clock from the start of the task to its end; *execution time*: the
  time the pusher was commanded to move.

A task that the caller cancels (``should_cancel``) ends CANCELED, whatever error the
cancellation caused in the loop (the world refuses to act once cancelled).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from parapush.planning.async_world import AsyncWorld, BlockingWorld
from parapush.planning.mpc import MpcOutcome, MpcResult, MpcStep
from parapush.planning.optimizer import OptimizationResult
from parapush.planning.pipelined_mpc import PipelinedResult, PipelinedStep
from parapush.scene import Scene

__all__ = ["PlanRecorder", "TaskReport", "TaskStep", "run_task"]


@dataclass(frozen=True)
class TaskStep:
    """One executed control (the action's feedback).

    Attributes:
        step: index of the control (0-based).
        control: (2,) m/s.
        duration: s it is held.
        cost: its plan's cost (NaN for a fallback).
        distance_to_goal: m, target centre to goal centre in the last observed state.
        replan_time: s of wall time of the plan it came from (0 for a fallback).
        waiting_time: s the pusher stood still before it started.
        task_time: s of world clock from the start of the task to its start.
        fallback: whether it is a late plan's fallback.
        event: what else happened (empty: nothing), e.g. a re-plan from the observation.
        planned_controls: (N, 2) m/s, its plan ((0, 2) for a fallback).
        predicted_trajectory: (N+1, D) the plan's predicted states ((0, D) for a fallback).
        budget_cut: whether the re-plan's time budget cut a search of its plan (anytime planning:
            the best plan found by then; False for a fallback).
        parameter_estimate: (5,) the target's parameter estimate when it started (robust
            planning, order of ``PARAMETER_NAMES``: kg, -, -, m, m); (0,) for a nominal planner.
        parameter_spread: (5,) its standard deviation per parameter; (0,) for a nominal planner.
        coarse_model: the coarse model the plan was searched with (``BuiltPlanner.coarse_model_name``:
            ``learned``, ``analytical``; ``none`` for a single-fidelity planner).
    """

    step: int
    control: np.ndarray
    duration: float
    cost: float
    distance_to_goal: float
    replan_time: float
    waiting_time: float
    task_time: float
    fallback: bool
    event: str
    planned_controls: np.ndarray
    predicted_trajectory: np.ndarray
    budget_cut: bool = False
    parameter_estimate: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))
    parameter_spread: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))
    coarse_model: str = "none"

    def interface_values(self) -> dict[str, Any]:
        """The ``PushObject`` action feedback's plain fields (their names) of this step."""
        return {
            "step": int(self.step), "cost": float(self.cost), "distance_to_goal": float(self.distance_to_goal),
            "planning_time": float(self.replan_time), "waiting_time": float(self.waiting_time),
            "task_time": float(self.task_time), "fallback": bool(self.fallback), "budget_cut": bool(self.budget_cut),
            "parameter_estimate": self.parameter_estimate.tolist(), "parameter_spread": self.parameter_spread.tolist(),
            "coarse_model": self.coarse_model,
        }


@dataclass(frozen=True)
class TaskReport:
    """How the task ended (the action's result); times in s (module docstring).

    Attributes:
        preset: name of the planner preset that ran.
        outcome, failure_reason, final_distance, final_state: as in :class:`MpcResult`.
        controls_executed: controls executed (fallbacks included).
        optimizer_iterations: summed over all plans.
        planning_time, waiting_time, execution_time, task_time: module docstring.
        replan_times: (k,) s, wall time of every plan.
        fallbacks: controls run as a late plan's fallback.
        replans_from_observation: re-plans because the observation disagreed with the prediction.
        budget_cuts: searches (optimize calls) the time budget cut.
        parameter_estimate, parameter_spread: (5,) the target's belief at the end (robust
            planning); (0,) for a nominal planner.
        coarse_model: the coarse model the plans were searched with (as :class:`TaskStep`'s).
    """

    preset: str
    outcome: MpcOutcome
    failure_reason: str
    controls_executed: int
    optimizer_iterations: int
    planning_time: float
    waiting_time: float
    execution_time: float
    task_time: float
    replan_times: np.ndarray
    fallbacks: int
    replans_from_observation: int
    final_distance: float
    final_state: np.ndarray
    budget_cuts: int = 0
    parameter_estimate: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))
    parameter_spread: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))
    coarse_model: str = "none"

    @property
    def success(self) -> bool:
        return self.outcome is MpcOutcome.SUCCESS

    def interface_values(self) -> dict[str, Any]:
        """The ``PushObject`` action result's plain fields (their names) of this report (not
        ``outcome``, ``total_time`` and ``final_state``, which the node converts)."""
        return {
            "success": self.success, "failure_reason": "" if self.success else self.failure_reason,
            "controls_executed": int(self.controls_executed), "optimizer_iterations": int(self.optimizer_iterations),
            "planning_time": float(self.planning_time), "execution_time": float(self.execution_time),
            "waiting_time": float(self.waiting_time), "replan_p50": self.replan_p50, "replan_p95": self.replan_p95,
            "fallbacks": int(self.fallbacks), "replans_from_observation": int(self.replans_from_observation),
            "budget_cuts": int(self.budget_cuts), "planner": self.preset, "final_distance": float(self.final_distance),
            "parameter_estimate": self.parameter_estimate.tolist(), "parameter_spread": self.parameter_spread.tolist(),
            "coarse_model": self.coarse_model,
        }

    @property
    def replan_p50(self) -> float:
        """s, median re-plan time (NaN without a plan)."""
        return float(np.percentile(self.replan_times, 50)) if len(self.replan_times) else math.nan

    @property
    def replan_p95(self) -> float:
        """s, 95th percentile of the re-plan times (NaN without a plan)."""
        return float(np.percentile(self.replan_times, 95)) if len(self.replan_times) else math.nan


class PlanRecorder:
    """A planner (optimizer or multi-fidelity planner) that keeps its last plan and counts
    iterations and the searches its time budget cut."""

    def __init__(self, planner: Any) -> None:
        if not callable(getattr(planner, "optimize", None)) or not hasattr(planner, "settings"):
            raise TypeError("planner: expected an object with `settings` and `optimize()`")
        self.planner = planner
        self.last: OptimizationResult | None = None
        self.iterations = 0
        self.budget_cuts = 0

    @property
    def settings(self):
        return self.planner.settings

    def optimize(self, state, controls, model, cost, *, proposals=None) -> OptimizationResult:
        result = self.planner.optimize(state, controls, model, cost, proposals=proposals)
        self.last = result
        self.iterations += int(result.iterations)
        self.budget_cuts += result.stop_reason == "time_budget"
        return result


class _ObservedWorld:
    """The caller's world, remembering the last observed state; a wait that ends with the task
    cancelled calls ``on_cancel`` (the pipelined loop's ``cancel``)."""

    def __init__(self, world: AsyncWorld, dimension: int, should_cancel, on_cancel) -> None:
        self.world = world
        self.last_state = np.full(dimension, np.nan)
        self.should_cancel = should_cancel
        self.on_cancel = on_cancel

    def time(self) -> float:
        return self.world.time()

    def observe(self) -> np.ndarray:
        state = np.asarray(self.world.observe(), dtype=float)
        self.last_state = state.copy()
        return state

    def start(self, control: np.ndarray, duration: float, fallback: np.ndarray | None = None) -> float:
        return self.world.start(control, duration, fallback)

    def wait_until(self, moment: float) -> None:
        self.world.wait_until(moment)
        if self.should_cancel is not None and self.should_cancel() and self.on_cancel is not None:
            self.on_cancel()

    def stop(self) -> None:
        self.world.stop()


def _distance_to_goal(scene: Scene, state: np.ndarray) -> float:
    if scene.goal is None or state.shape != (scene.layout.dimension,) or not np.all(np.isfinite(state)):
        return math.nan
    target = scene.layout.poses(state[None])[0, scene.target_index, :2]
    return float(np.hypot(*(target - np.asarray(scene.goal.center, dtype=float))))


def _annotated(callback: Callable[[TaskStep], None] | None, coarse_model: str,
               robust: Any) -> Callable[[TaskStep], None] | None:
    """``callback`` receiving each step with the coarse model's name and (robust planning) the
    target's current estimate and spread."""
    if callback is None:
        return None

    def annotated(step: TaskStep) -> None:
        step = dataclasses.replace(step, coarse_model=coarse_model)
        if robust is not None:
            step = dataclasses.replace(step, parameter_estimate=robust.estimate(), parameter_spread=robust.spread())
        callback(step)

    return annotated


def run_task(
    built: Any,
    world: AsyncWorld,
    *,
    max_controls: int | None = None,
    callback: Callable[[TaskStep], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
) -> TaskReport:
    """Run ``built`` (a :class:`~parapush.planning.presets.BuiltPlanner`) on ``world`` to the end.

    Args:
        built: the preset's loop and planner.
        world: what is observed and acted on.
        max_controls: overrides the loop's ``max_controls``.
        callback: called with every :class:`TaskStep` when its control starts.
        should_cancel: polled; once true the task ends CANCELED (the world must stop acting).
    Returns:
        the :class:`TaskReport`; task failures and errors are outcomes, never raised.
    """
    loop = built.loop
    scene: Scene = loop.scene
    robust = getattr(built, "robust", None)
    if robust is not None:  # the belief narrows from the controls the world records, before each plan
        world = robust.attach(loop, world)
    coarse_model = built.coarse_model_name
    callback = _annotated(callback, coarse_model, robust)
    observed = _ObservedWorld(world, scene.layout.dimension, should_cancel, getattr(loop, "cancel", None))
    recorder = PlanRecorder(loop.optimizer)
    loop.optimizer = recorder
    duration = float(recorder.settings.control_duration)
    started = world.time()
    try:
        if built.pipelined:
            report = _run_pipelined(built.preset.name, loop, observed, recorder, duration, started, max_controls,
                                    callback)
        else:
            report = _run_sequential(built.preset.name, loop, observed, recorder, duration, started, max_controls,
                                     callback, should_cancel)
        report = dataclasses.replace(report, budget_cuts=recorder.budget_cuts, coarse_model=coarse_model)
        if robust is not None:
            report = dataclasses.replace(report, parameter_estimate=robust.estimate(),
                                         parameter_spread=robust.spread())
    finally:
        loop.optimizer = recorder.planner
    canceled = should_cancel is not None and should_cancel()
    if canceled and report.outcome not in (MpcOutcome.SUCCESS, MpcOutcome.CANCELED):
        reason = f"canceled ({report.failure_reason})" if report.failure_reason else "canceled"
        report = dataclasses.replace(report, outcome=MpcOutcome.CANCELED, failure_reason=reason)
    return report


def _plan_arrays(plan: OptimizationResult | None, dimension: int) -> tuple[np.ndarray, np.ndarray]:
    if plan is None:
        return np.empty((0, 2)), np.empty((0, dimension))
    return np.array(plan.controls, dtype=float), np.array(plan.trajectory, dtype=float)


def _run_sequential(name, loop, world, recorder, duration, started, max_controls, callback, should_cancel):
    dimension = loop.scene.layout.dimension
    clock = {"idle_since": started, "waiting": 0.0}
    planning: list[float] = []

    def on_step(step: MpcStep) -> None:
        planning.append(float(step.planning_time))
        now = world.time()
        waiting = max(0.0, now - clock["idle_since"])
        clock["waiting"] += waiting
        clock["idle_since"] = now + duration  # the control starts right after this call
        if callback is not None:
            callback(TaskStep(
                step=step.step, control=step.control.copy(), duration=step.duration, cost=float(step.cost),
                distance_to_goal=float(step.distance_to_goal), replan_time=float(step.planning_time),
                waiting_time=waiting, task_time=now - started, fallback=False, event=step.clearing_event,
                planned_controls=step.planned_controls.copy(), predicted_trajectory=step.predicted_trajectory.copy(),
                budget_cut=recorder.last is not None and recorder.last.stop_reason == "time_budget",
            ))

    result: MpcResult = loop.run(BlockingWorld(world), max_controls=max_controls, callback=on_step,
                                 should_cancel=should_cancel)
    final_state = np.asarray(result.final_state, dtype=float)
    return TaskReport(
        preset=name, outcome=result.outcome, failure_reason=result.failure_reason,
        controls_executed=int(result.controls_executed), optimizer_iterations=int(result.optimizer_iterations),
        planning_time=float(result.planning_time), waiting_time=clock["waiting"],
        execution_time=float(result.execution_time), task_time=world.time() - started,
        replan_times=np.array(planning), fallbacks=0, replans_from_observation=0,
        final_distance=float(result.final_distance),
        final_state=final_state if final_state.shape == (dimension,) else np.full(dimension, np.nan),
    )


def _run_pipelined(name, loop, world, recorder, duration, started, max_controls, callback):
    scene = loop.scene

    def on_step(step: PipelinedStep) -> None:
        if callback is None:
            return
        if step.fallback:
            event = "fallback: the next plan was late, the previous plan's second control runs"
        elif step.back_off:
            event = "backed off: no plan could be predicted (every corrected prediction failed)"
        elif step.replanned_from_observation:
            event = (f"re-planned from the observation: it was {step.prediction_error * 1000:.1f} mm from the "
                     "prediction")
        else:
            event = ""
        event = "; ".join(filter(None, (event, step.clearing_event)))
        stale = step.fallback or step.back_off  # the recorder's last plan is not this control's
        controls, trajectory = _plan_arrays(None if stale else recorder.last, scene.layout.dimension)
        callback(TaskStep(
            step=step.step, control=np.array(step.control, dtype=float), duration=duration,
            cost=float(step.cost), distance_to_goal=_distance_to_goal(scene, world.last_state),
            replan_time=float(step.replan_time), waiting_time=float(step.waiting_time),
            task_time=float(step.start_time) - started, fallback=bool(step.fallback), event=event,
            planned_controls=controls, predicted_trajectory=trajectory, budget_cut=bool(step.budget_cut),
        ))

    result: PipelinedResult = loop.run(world, max_controls=max_controls, callback=on_step)
    final_state = result.states[-1].copy() if len(result.states) else np.full(scene.layout.dimension, np.nan)
    return TaskReport(
        preset=name, outcome=result.outcome, failure_reason=result.failure_reason,
        controls_executed=int(result.controls_executed), optimizer_iterations=recorder.iterations,
        planning_time=float(result.planning_time), waiting_time=float(result.waiting_time),
        execution_time=float(result.execution_time), task_time=float(result.task_time),
        replan_times=np.asarray(result.replan_times, dtype=float), fallbacks=int(result.fallbacks),
        replans_from_observation=int(result.replans_from_observation),
        final_distance=float(result.final_distance), final_state=final_state,
    )
