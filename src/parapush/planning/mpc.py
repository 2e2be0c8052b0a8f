"""The receding-horizon (MPC) pushing loop of the ISRR paper, independent of ROS.

Each step: optimize the control sequence from the observed state (the first time from
the straight-line push, afterwards warm-started with the previous sequence shifted by
one control), execute its first control, observe, and check whether the task is over
(:mod:`parapush.planning.termination`). The loop drives anything that implements
:class:`World`: a simulator, a test double, or (through the MPC node) the real robot.

Threading: :meth:`MpcLoop.cancel` may be called from any thread (or from the step
callback); the loop checks it before planning, before and after the step callback, and
after executing each control, then calls ``World.stop`` and returns CANCELED. The loop
does not interrupt a control while ``World.execute`` runs: a world that must stop
mid-control (the ROS executor on a cancel request) does so itself, and ``execute`` returns.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from parapush.physics.projection import FeasibilityProjector
from parapush.planning.blocker_clearing import BlockerClearing
from parapush.planning.costs import CostFunction
from parapush.planning.goal_route import GoalRoute
from parapush.planning.initial_guess import WARM_START_FILLS, shift_controls, straight_line_controls
from parapush.planning.optimizer import OptimizerSettings, StochasticTrajectoryOptimizer
from parapush.planning.predictive_model import PredictiveModel
from parapush.planning.termination import MpcOutcome, TaskStatus, TerminationCheck
from parapush.scene import Scene
from parapush.settings import check_settings, setting

__all__ = ["MpcLoop", "MpcOutcome", "MpcResult", "MpcSettings", "MpcStep", "World"]


@runtime_checkable
class World(Protocol):
    """What the MPC loop acts on and observes."""

    def observe(self) -> np.ndarray:
        """The current state (D,) in the scene's layout (SI units)."""
        ...

    def execute(self, control: np.ndarray, duration: float) -> None:
        """Move the pusher at ``control`` (2,) m/s for ``duration`` s; returns when done."""
        ...

    def stop(self) -> None:
        """Bring the pusher to rest (called whenever the loop ends, for any reason)."""
        ...


@dataclass(frozen=True, kw_only=True)
class MpcSettings:
    """Settings of :class:`MpcLoop` (defaults: ISRR experiments).

    Attributes:
        max_controls: controls executed before giving up (ISRR: 20 = 5 horizons).
        obstacle_tolerance: m, clearance at or below which a body has hit an obstacle.
        table_margin: m, objects whose centre leaves the table shrunk by this have fallen.
        initial_speed: m/s, speed of the straight-line initial guess.
        approach_clearance: m, pusher/target gap at the straight line's pre-push point.
        warm_start_fill: how the shifted sequence is completed: ``"repeat"`` or ``"zero"``.
        replan_proposal: every re-plan also starts from the straight-line push from its own
            start state (``optimize(..., proposals=...)``), besides the shifted warm start; false:
            the papers' warm start alone.
        clear_blockers: clear a movable object standing on the target's line near the goal out of
            the way before pushing the target (a sub-goal, :mod:`parapush.planning.blocker_clearing`);
            false: the papers' loop, which plans for the task's goal only.
        blocker_line_offset: m, an object whose centre is within this of the target's line to the
            goal blocks it (with ``clear_blockers``).
        blocker_goal_reach: m, an object blocks only if its centre is within this much more than
            a target touching it at the goal's edge (goal radius + both bounding radii) from the
            goal's centre.
        blocker_clear_controls: controls a clearing may take before the loop turns back to the target.
    """

    max_controls: int = setting(20, "controls executed before giving up", minimum=1)
    obstacle_tolerance: float = setting(0.0, "clearance at or below which a body has hit an obstacle", unit="m")
    table_margin: float = setting(0.0, "objects whose centre leaves the table shrunk by this have fallen", unit="m")
    initial_speed: float = setting(0.05, "speed of the straight-line initial guess", unit="m/s", above=0.0)
    approach_clearance: float = setting(0.01, "pusher/target gap at the straight line's pre-push point", unit="m",
                                        minimum=0.0)
    warm_start_fill: str = setting("repeat", "how the shifted warm start is completed", choices=WARM_START_FILLS)
    replan_proposal: bool = setting(True, "every re-plan also starts from the straight-line push from its start "
                                    "state (false: the shifted warm start alone)")
    clear_blockers: bool = setting(False, "clear a movable object standing on the target's line near the goal out "
                                   "of the way first (false: plan for the task's goal only)")
    blocker_line_offset: float = setting(0.02, "an object within this of the target's line to the goal blocks it",
                                         unit="m", minimum=0.0)
    blocker_goal_reach: float = setting(0.12, "an object blocks only within this beyond touching a target at the "
                                        "goal's edge", unit="m", minimum=0.0)
    blocker_clear_controls: int = setting(6, "controls a clearing may take before the loop turns back to the target",
                                          minimum=1)

    def __post_init__(self) -> None:
        check_settings(self)

    def straight_line(self, scene: Scene, state: np.ndarray, optimizer: OptimizerSettings,
                      route: GoalRoute | None = None) -> np.ndarray:
        """The straight-line push (N, 2) m/s from ``state`` at ``initial_speed``
        (:func:`~parapush.planning.initial_guess.straight_line_controls`; along ``route``, the
        cost's route round the obstacles, where it is not straight)."""
        return straight_line_controls(scene, state, optimizer.horizon, optimizer.control_duration,
                                      self.initial_speed, approach_clearance=self.approach_clearance, route=route)

    def blocker_clearing(self, scene: Scene) -> BlockerClearing:
        """A task's blocker clearing as these settings configure it: enabled by ``clear_blockers``
        where ``scene`` has a goal and another object (:mod:`parapush.planning.blocker_clearing`)."""
        return BlockerClearing(scene, line_offset=self.blocker_line_offset, goal_reach=self.blocker_goal_reach,
                               clear_controls=self.blocker_clear_controls,
                               enabled=self.clear_blockers and scene.goal is not None and len(scene.objects) > 1)

    def proposals(self, scene: Scene, state: np.ndarray, optimizer: OptimizerSettings,
                  route: GoalRoute | None = None) -> np.ndarray | None:
        """The re-plan's proposals (1, N, 2) m/s from ``state`` (None without ``replan_proposal``)."""
        return self.straight_line(scene, state, optimizer, route)[None] if self.replan_proposal else None


@dataclass(frozen=True)
class MpcStep:
    """What the loop reports before executing each control (ROS action feedback).

    Attributes:
        step: index of the control about to be executed (0-based).
        state: (D,) observed state the plan started from.
        control: (2,) m/s, the control about to be executed.
        duration: s, how long it is held.
        cost: optimizer cost of the planned sequence.
        planned_controls: (N, 2) m/s, the whole planned sequence.
        predicted_trajectory: (N+1, D) its predicted states.
        planning_time: s of wall time of this step's optimization.
        optimizer_iterations: iterations of this step's optimization.
        unstable_samples: sequences whose prediction was non-finite during it.
        distance_to_goal: m, observed target centre to goal centre.
        cost_terms: weighted cost terms of the planned sequence, by name.
        clearing: the object the plan was clearing off the target's way ("" for the task's own
            goal; ``MpcSettings.clear_blockers``).
        clearing_event: what the blocker clearing decided at this step's observation ("" for nothing).
    """

    step: int
    state: np.ndarray
    control: np.ndarray
    duration: float
    cost: float
    planned_controls: np.ndarray
    predicted_trajectory: np.ndarray
    planning_time: float
    optimizer_iterations: int
    unstable_samples: int
    distance_to_goal: float
    cost_terms: dict[str, float] = field(default_factory=dict)
    clearing: str = ""
    clearing_event: str = ""


@dataclass(frozen=True)
class MpcResult:
    """How a task ended (the ``PushObject`` action result).

    Attributes:
        outcome: the :class:`MpcOutcome`.
        failure_reason: why it did not succeed (empty on success).
        controls_executed: number of controls executed.
        optimizer_iterations: summed over all re-plans.
        planning_time: s of wall time spent optimizing.
        execution_time: s of wall time spent in ``World.execute``.
        total_time: s from the start of :meth:`MpcLoop.run` to its end.
        final_distance: m, target centre to goal centre in the last observed state (NaN
            when no state was observed).
        final_state: (D,) last observed state (empty if none).
        states: (k+1, D) observed states, the first one before any control.
        executed_controls: (k, 2) m/s, the controls executed.
        planned_costs: (k,) optimizer cost of each step's plan.
        blocker_clearings: objects cleared off the target's way (``MpcSettings.clear_blockers``).
    """

    outcome: MpcOutcome
    failure_reason: str
    controls_executed: int
    optimizer_iterations: int
    planning_time: float
    execution_time: float
    total_time: float
    final_distance: float
    final_state: np.ndarray
    states: np.ndarray
    executed_controls: np.ndarray
    planned_costs: np.ndarray
    blocker_clearings: int = 0

    @property
    def success(self) -> bool:
        return self.outcome is MpcOutcome.SUCCESS


StepCallback = Callable[[MpcStep], None]


class MpcLoop:
    """Receding-horizon pushing: optimize, execute the first control, observe, repeat.

    Args:
        scene: the task (goal region, target, obstacles, table).
        optimizer: the trajectory optimizer; its ``max_speed`` must not exceed the pusher's.
        model: the predictive model the optimizer rolls out.
        cost: the planning cost; the loop sets its previously executed control every step.
        settings: loop settings.
    """

    def __init__(
        self,
        scene: Scene,
        optimizer: StochasticTrajectoryOptimizer,
        model: PredictiveModel,
        cost: CostFunction,
        settings: MpcSettings,
    ) -> None:
        if not isinstance(settings, MpcSettings):
            raise TypeError(f"settings: expected MpcSettings, got {type(settings).__name__}")
        if not callable(getattr(model, "predict", None)):
            raise TypeError("model: expected a PredictiveModel (an object with `predict()`)")
        self.termination = TerminationCheck(
            scene=scene, obstacle_tolerance=settings.obstacle_tolerance, table_margin=settings.table_margin
        )
        optimizer_speed = optimizer.settings.max_speed
        if optimizer_speed > scene.pusher.max_speed + 1e-12:
            raise ValueError(
                f"optimizer.settings.max_speed: {optimizer_speed} m/s exceeds the scene's "
                f"pusher.max_speed {scene.pusher.max_speed} m/s"
            )
        if settings.initial_speed > optimizer_speed + 1e-12:
            raise ValueError(
                f"initial_speed: {settings.initial_speed} m/s exceeds the optimizer's max_speed "
                f"{optimizer_speed} m/s"
            )
        self.scene = scene
        self.optimizer = optimizer
        self.model = model
        self.cost = cost
        self.projector = FeasibilityProjector(scene)  # plans start from the observation made rigid
        self.settings = settings
        self._cancel = threading.Event()
        self._running = threading.Lock()
        self.before_plan: Callable[[MpcLoop], None] | None = None
        """Called with this loop in the loop's thread before each plan (None: nothing): it may replace
        ``cost`` and retune the optimizer's per-plan settings (live tuning,
        :class:`parapush.planning.live_settings.PlanRetuner`); horizon and control duration must stay."""

    # -- cancellation ---------------------------------------------------------------------
    def cancel(self) -> None:
        """Ask the running task to stop (thread-safe); it ends with CANCELED.

        :meth:`run` clears the request when it starts; a request that may arrive before
        the run starts (an action goal's cancel) is better passed as ``should_cancel``.
        """
        self._cancel.set()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    # -- the loop -------------------------------------------------------------------------
    def run(
        self,
        world: World,
        *,
        initial_controls: np.ndarray | None = None,
        max_controls: int | None = None,
        callback: StepCallback | None = None,
        should_cancel: Callable[[], bool] | None = None,
    ) -> MpcResult:
        """Run the task to its end; never raises for task failures (they become outcomes).

        Args:
            world: what is observed and acted on (simulator, test double, robot).
            initial_controls: (N, 2) m/s first candidate; default: the straight-line push.
            max_controls: overrides ``settings.max_controls`` for this run.
            callback: called with an :class:`MpcStep` before each control is executed.
            should_cancel: polled with :meth:`cancel` (e.g. the action's cancel request).
        Returns:
            the :class:`MpcResult`; errors of the model, the world or the callback give
            outcome ERROR with the error in ``failure_reason``.
        """
        limit = self.settings.max_controls if max_controls is None else max_controls
        if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1:
            raise ValueError(f"max_controls: expected an integer >= 1, got {max_controls!r}")
        for method in ("observe", "execute", "stop"):
            if not callable(getattr(world, method, None)):
                raise TypeError(f"world: expected an object with `{method}()` (see World)")
        if not self._running.acquire(blocking=False):
            raise RuntimeError("run: this MpcLoop is already running a task")
        try:
            self._cancel.clear()
            return _Run(self, world, limit, callback, should_cancel).execute(initial_controls)
        finally:
            self._running.release()


class _Run:
    """Book-keeping of one :meth:`MpcLoop.run`."""

    def __init__(
        self,
        loop: MpcLoop,
        world: World,
        max_controls: int,
        callback: StepCallback | None,
        should_cancel: Callable[[], bool] | None,
    ) -> None:
        self.loop = loop
        self.world = world
        self.max_controls = int(max_controls)
        self.callback = callback
        self.should_cancel = should_cancel
        self.started = time.perf_counter()
        self.planning_time = 0.0
        self.execution_time = 0.0
        self.iterations = 0
        self.states: list[np.ndarray] = []
        self.executed: list[np.ndarray] = []
        self.planned_costs: list[float] = []
        self.distance = math.nan
        self.clearing = loop.settings.blocker_clearing(loop.scene)
        self.clearing_event = ""

    def canceled(self) -> bool:
        return self.loop.cancel_requested or bool(self.should_cancel is not None and self.should_cancel())

    def observe(self) -> tuple[np.ndarray, TaskStatus]:
        layout = self.loop.scene.layout
        state = np.array(self.world.observe(), dtype=float)
        if state.shape != (layout.dimension,):
            raise ValueError(f"world.observe: returned shape {state.shape}, expected ({layout.dimension},)")
        if not np.all(np.isfinite(state)):
            raise ValueError("world.observe: returned a non-finite state")
        self.states.append(state)
        status = self.loop.termination.check(state)
        self.distance = status.distance_to_goal
        if not status.finished:
            self.clearing_event = self.clearing.update(state, len(self.executed))
        # Plans start from the observation with its overlaps resolved (ISRR Eq 9): a pusher pressing
        # a box against another body sinks several mm into it (soft contacts, the real thing's
        # compliance), more than a prediction request accepts (model.max_initial_overlap).
        return self.loop.projector.project(state[None])[0], status

    def execute(self, initial_controls: np.ndarray | None) -> MpcResult:
        loop = self.loop
        settings = loop.optimizer.settings
        try:
            state, status = self.observe()
            if status.finished:
                return self.finish(status.outcome, status.reason)
            if initial_controls is None:
                controls = loop.settings.straight_line(self.clearing.planning_scene(), state, settings,
                                                       self.clearing.cost(loop.cost).route)
            else:
                controls = np.array(initial_controls, dtype=float)
                if controls.shape != (settings.horizon, 2):
                    raise ValueError(
                        f"initial_controls: expected shape ({settings.horizon}, 2), got {controls.shape}"
                    )
            previous = np.zeros(2)
            for step in range(self.max_controls):
                if self.canceled():
                    return self.finish(MpcOutcome.CANCELED, "canceled before planning")
                planning_started = time.perf_counter()
                if loop.before_plan is not None:
                    loop.before_plan(loop)
                scene, cost = self.clearing.planning_scene(), self.clearing.cost(loop.cost)
                plan = loop.optimizer.optimize(
                    state, controls, loop.model, cost.with_previous_control(previous),
                    proposals=loop.settings.proposals(scene, state, settings, cost.route) if step else None,
                )
                planning = time.perf_counter() - planning_started
                self.planning_time += planning
                self.iterations += plan.iterations
                self.planned_costs.append(plan.cost)
                if self.canceled():
                    return self.finish(MpcOutcome.CANCELED, "canceled before executing")
                control = plan.controls[0].copy()
                if self.callback is not None:
                    self.callback(
                        MpcStep(
                            step=step,
                            state=state.copy(),
                            control=control.copy(),
                            duration=settings.control_duration,
                            cost=plan.cost,
                            planned_controls=plan.controls.copy(),
                            predicted_trajectory=plan.trajectory.copy(),
                            planning_time=planning,
                            optimizer_iterations=plan.iterations,
                            unstable_samples=plan.unstable_samples,
                            distance_to_goal=self.distance,
                            cost_terms=dict(plan.cost_terms),
                            clearing=self.clearing.clearing_name,
                            clearing_event=self.clearing_event,
                        )
                    )
                    if self.canceled():
                        return self.finish(MpcOutcome.CANCELED, "canceled before executing")
                execution_started = time.perf_counter()
                self.world.execute(control.copy(), settings.control_duration)
                self.execution_time += time.perf_counter() - execution_started
                self.executed.append(control)
                previous = control
                state, status = self.observe()
                if status.finished:
                    return self.finish(status.outcome, status.reason)
                if self.canceled():
                    return self.finish(MpcOutcome.CANCELED, "canceled after executing a control")
                controls = shift_controls(plan.controls, fill=loop.settings.warm_start_fill)
            return self.finish(
                MpcOutcome.MAX_CONTROLS,
                f"target not in the goal region after {self.max_controls} controls "
                f"({self.distance:.4f} m from the goal centre)",
            )
        except Exception as error:  # noqa: BLE001 - every failure becomes an ERROR outcome
            return self.finish(MpcOutcome.ERROR, f"{type(error).__name__}: {error}")

    def finish(self, outcome: MpcOutcome | None, reason: str) -> MpcResult:
        assert outcome is not None
        try:
            self.world.stop()
        except Exception as error:  # noqa: BLE001 - reported, never swallowed
            reason = f"{reason}; " if reason else ""
            reason += f"world.stop failed: {type(error).__name__}: {error}"
            outcome = MpcOutcome.ERROR
        dimension = self.loop.scene.layout.dimension
        states = np.array(self.states) if self.states else np.empty((0, dimension))
        return MpcResult(
            outcome=outcome,
            failure_reason="" if outcome is MpcOutcome.SUCCESS else reason,
            controls_executed=len(self.executed),
            optimizer_iterations=self.iterations,
            planning_time=self.planning_time,
            execution_time=self.execution_time,
            total_time=time.perf_counter() - self.started,
            final_distance=self.distance,
            final_state=states[-1].copy() if len(states) else np.empty(0),
            states=states,
            executed_controls=np.array(self.executed).reshape(-1, 2),
            planned_costs=np.array(self.planned_costs),
            blocker_clearings=self.clearing.clearings,
        )
