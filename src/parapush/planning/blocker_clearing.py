r"""Clearing a movable object off the target's way before pushing the target (a task-level sub-goal).

The planning cost's goal distance is a straight line (round the static obstacles only), and the
horizon is a few controls. When another movable object stands on the target's line to the goal,
near the goal, every push towards the goal pushes that object ahead of the target into the goal
(OBJECT_IN_GOAL) or into the band round it that the cost charges; the plans then stand still
with the target some 0.2 m out, for the rest of the task (``docs/planner_tuning.md``, "An object
on the target's line near the goal"). No 4-control plan sees that moving the object aside first
is the way out, and once the target has pushed it against the goal's edge the pusher can no
longer reach its far side.

:class:`BlockerClearing` (one per task) looks at each observed state. With t the target's centre,
g the goal's centre, u = (g - t) / ||g - t|| and n its normal, an object j (centre p_j, bounding
radius r_j; r_t the target's) is the **blocker** when

    0 < u . (p_j - t) < ||g - t||                    (ahead of the target, before the goal)
    |n . (p_j - t)| < line_offset                    (on the line: the target would push it straight on)
    ||p_j - g|| < R + r_t + r_j + goal_reach         (near the goal: R the goal region's radius)

(the one nearest the goal when several are). Its sub-goal is a small region (radius
:data:`SUBGOAL_RADIUS`) beside the line: p_j moved along +-n until |n . (q - t)| is
:data:`CLEAR_FRACTION` (r_t + r_j) + :data:`CLEAR_MARGIN`, further along n while that point is within
R + :data:`GOAL_KEEPOUT` of g, on the table (r_j + :data:`TABLE_MARGIN` inside its edges) and clear of
the obstacles (:data:`OBSTACLE_CLEARANCE`). Of the two sides, the one whose pre-push point (behind
the blocker, opposite its way) is free of the other objects is taken, else the shorter way.

While a blocker is being cleared, the loop plans for a **sub-goal scene**: the same scene with the
blocker as the target and the sub-goal as the goal region (:meth:`planning_scene`), with the task's
cost terms rebuilt for it, except the task's ``non_target_objects`` term, which still charges
every object but the task's target for moving and for entering the task's goal and its band
(:meth:`cost`). Termination is the task's throughout (an object in the task's goal still ends it).
The clearing ends when the blocker is off the line (``|n . (p_j - t)| >= CLEAR_FRACTION (r_t + r_j)``,
or no longer ahead of the target), or after ``clear_controls`` controls; a task clears at most
:data:`MAX_CLEARINGS` times.

Measured on families drawn with generator seeds no bench uses (``docs/planner_tuning.md``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from parapush.physics.planar_geometry import object_obstacle_clearance
from parapush.planning.costs import CostFunction
from parapush.scene import GoalRegion, Scene

__all__ = ["Blocker", "BlockerClearing", "find_blocker", "is_off_line"]

SUBGOAL_RADIUS = 0.02
"""m, radius of the sub-goal region the blocker is pushed into."""
CLEAR_FRACTION = 0.7
"""An object whose centre is this fraction of r_t + r_j off the target's line is off it (a push of
the target deflects it sideways rather than driving it on)."""
CLEAR_MARGIN = 0.03
"""m the sub-goal lies beyond that offset (the pushes fall short of a sub-goal's centre)."""
GOAL_KEEPOUT = 0.03
"""m beyond the task's goal region the sub-goal's centre must lie (the cost's band round the goal is 0.02 m)."""
TABLE_MARGIN = 0.02
"""m the blocker's bounding disc at the sub-goal must keep inside the table's edges."""
OBSTACLE_CLEARANCE = 0.01
"""m the blocker at the sub-goal must keep from every static obstacle."""
SUBGOAL_SEARCH = 0.15
"""m, how much further along n the sub-goal may move to satisfy the goal keep-out (1 cm steps)."""
PRE_PUSH_GAP = 0.01
"""m between the pusher and the blocker at the pre-push point whose freedom picks the side."""
MAX_CLEARINGS = 1
"""Clearings per task (a second blocker on the new line is left to the planner)."""


@dataclass(frozen=True)
class Blocker:
    """An object to clear off the target's way.

    Attributes:
        index: its index in the scene's objects (the state's order).
        name: its name.
        subgoal: where to push it (a region beside the target's line, m).
    """

    index: int
    name: str
    subgoal: GoalRegion


LineFrame = tuple[np.ndarray, np.ndarray, np.ndarray, float]
"""(t, u, n, ||g - t||): the target's centre, the unit vector from it to the goal, that vector's
normal, and the target's distance to the goal (module docstring)."""


def _line_frame(scene: Scene, poses: np.ndarray) -> LineFrame | None:
    """(t, u, n, ||g - t||) of the target's line to the goal, None when the target is at the goal's centre."""
    assert scene.goal is not None
    target = poses[scene.target_index, :2]
    offset = np.asarray(scene.goal.center, dtype=float) - target
    length = float(np.hypot(*offset))
    if length < 1e-9:
        return None
    along = offset / length
    return target, along, np.array([-along[1], along[0]]), length


def _line_coordinates(frame: LineFrame, position: np.ndarray) -> tuple[float, float]:
    """(along, across) m: ``position`` (2,) in the target's line frame ``frame`` (:func:`_line_frame`),
    along the line from the target and its distance off the line (>= 0)."""
    target, along, normal, _ = frame
    relative = position - target
    return float(along @ relative), abs(float(normal @ relative))


def _off_line_offset(scene: Scene, index: int) -> float:
    """m, the offset from the target's line at which object ``index`` counts as off it."""
    return CLEAR_FRACTION * (scene.objects[scene.target_index].bounding_radius + scene.objects[index].bounding_radius)


def _subgoal(scene: Scene, poses: np.ndarray, index: int, target: np.ndarray, normal: np.ndarray) -> GoalRegion | None:
    """The sub-goal region of blocker ``index`` (module docstring), None when neither side has one."""
    assert scene.goal is not None
    goal = np.asarray(scene.goal.center, dtype=float)
    spec = scene.objects[index]
    position = poses[index, :2]
    lateral = float(normal @ (position - target))
    wanted = _off_line_offset(scene, index) + CLEAR_MARGIN
    options = []
    for side in (1.0, -1.0):
        for extra in np.arange(0.0, SUBGOAL_SEARCH + 1e-9, 0.01):
            centre = position + (side * (wanted + extra) - lateral) * normal
            if np.hypot(*(centre - goal)) < scene.goal.radius + GOAL_KEEPOUT:
                continue
            on_table = scene.table.contains(float(centre[0]), float(centre[1]), spec.bounding_radius + TABLE_MARGIN)
            pose = np.array([centre[0], centre[1], poses[index, 2]])
            clear = all(object_obstacle_clearance(spec, pose, obstacle) >= OBSTACLE_CLEARANCE
                        for obstacle in scene.obstacles)
            if on_table and clear:
                way = (centre - position) / max(float(np.hypot(*(centre - position))), 1e-9)
                pre_push = position - (spec.bounding_radius + scene.pusher.radius + PRE_PUSH_GAP) * way
                free = all(np.hypot(*(pre_push - poses[other, :2])) >= scene.objects[other].bounding_radius
                           + scene.pusher.radius for other in range(len(scene.objects)) if other != index)
                options.append((not free, float(np.hypot(*(centre - position))), centre))
            break
    if not options:
        return None
    centre = min(options, key=lambda option: option[:2])[2]
    return GoalRegion(center=(float(centre[0]), float(centre[1])), radius=SUBGOAL_RADIUS)


def find_blocker(scene: Scene, state: np.ndarray, *, line_offset: float, goal_reach: float) -> Blocker | None:
    """The object on the target's line near the goal in ``state`` (D,) and its sub-goal (module
    docstring), or None.

    Args:
        scene: the task (it must have a goal region).
        state: (D,) the observed state.
        line_offset: m, how far off the target's line an object's centre may be to block it.
        goal_reach: m, how much further than touching a target at the goal's edge an object may be
            from the goal's centre to block it.
    """
    if scene.goal is None:
        raise ValueError(f"scene: {scene.name!r} has no goal region")
    poses = scene.layout.poses(scene.layout.check(state, "state")[None])[0]
    frame = _line_frame(scene, poses)
    if frame is None:
        return None
    target, _, normal, length = frame
    goal = np.asarray(scene.goal.center, dtype=float)
    reach = scene.goal.radius + scene.objects[scene.target_index].bounding_radius + goal_reach
    found: tuple[float, int] | None = None
    for index, spec in enumerate(scene.objects):
        if index == scene.target_index:
            continue
        ahead, off = _line_coordinates(frame, poses[index, :2])
        to_goal = float(np.hypot(*(poses[index, :2] - goal)))
        if (0.0 < ahead < length and off < line_offset and to_goal < reach + spec.bounding_radius
                and (found is None or to_goal < found[0])):
            found = (to_goal, index)
    if found is None:
        return None
    subgoal = _subgoal(scene, poses, found[1], target, normal)
    if subgoal is None:
        return None
    return Blocker(index=found[1], name=scene.objects[found[1]].name, subgoal=subgoal)


def is_off_line(scene: Scene, state: np.ndarray, index: int) -> bool:
    """Whether object ``index`` is off the target's line in ``state`` (D,): at least
    :data:`CLEAR_FRACTION` (r_t + r_j) from it, or not between the target and the goal."""
    poses = scene.layout.poses(state[None])[0]
    frame = _line_frame(scene, poses)
    if frame is None:
        return True
    ahead, off = _line_coordinates(frame, poses[index, :2])
    return not 0.0 < ahead < frame[3] or off >= _off_line_offset(scene, index)


class BlockerClearing:
    """One task's blocker clearing (module docstring): which scene and cost the next plan is for.

    Built per task by :meth:`parapush.planning.mpc.MpcSettings.blocker_clearing`.

    Args:
        scene: the task.
        line_offset, goal_reach: as :func:`find_blocker`'s (``MpcSettings.blocker_line_offset``,
            ``MpcSettings.blocker_goal_reach``).
        clear_controls: controls after which a clearing ends even with the blocker still on the line.
        enabled: False: never clears (:meth:`planning_scene` is always ``scene``).
    """

    def __init__(self, scene: Scene, *, line_offset: float, goal_reach: float, clear_controls: int,
                 enabled: bool = True) -> None:
        self.scene = scene
        self.line_offset = line_offset
        self.goal_reach = goal_reach
        self.clear_controls = clear_controls
        self.enabled = enabled
        self.clearings = 0
        self.active: Blocker | None = None
        self._started_at = 0
        self._subgoal_scene: Scene | None = None
        self._cost_cache: tuple[CostFunction, CostFunction] | None = None

    def update(self, state: np.ndarray, controls_executed: int) -> str:
        """Look at an observed ``state`` (D,) after ``controls_executed`` controls: end the running
        clearing or start one. Returns what happened ("" for nothing, else a sentence for the
        step's event)."""
        if not self.enabled:
            return ""
        if self.active is not None:
            off_line = is_off_line(self.scene, state, self.active.index)
            if not off_line and controls_executed - self._started_at < self.clear_controls:
                return ""
            name, self.active, self._subgoal_scene, self._cost_cache = self.active.name, None, None, None
            how = "it is off the target's line" if off_line else f"after {self.clear_controls} controls"
            return f"blocker clearing: {name!r} done ({how}); pushing the target again"
        if self.clearings >= MAX_CLEARINGS:
            return ""
        blocker = find_blocker(self.scene, state, line_offset=self.line_offset, goal_reach=self.goal_reach)
        if blocker is None:
            return ""
        self.active, self._started_at = blocker, controls_executed
        self.clearings += 1
        self._subgoal_scene = dataclasses.replace(self.scene, target=blocker.name, goal=blocker.subgoal)
        x, y = blocker.subgoal.center
        return (f"blocker clearing: {blocker.name!r} stands on the target's line near the goal; pushing it "
                f"to ({x:.3f}, {y:.3f}) m first")

    def planning_scene(self) -> Scene:
        """The scene the next plan is for: the task's, or the running clearing's sub-goal scene."""
        return self.scene if self._subgoal_scene is None else self._subgoal_scene

    def cost(self, task_cost: CostFunction) -> CostFunction:
        """The next plan's cost: ``task_cost`` (the loop's, possibly retuned), or while clearing, its
        terms rebuilt for the sub-goal scene but for the task's ``non_target_objects`` term (if it has one)."""
        if self._subgoal_scene is None:
            return task_cost
        if self._cost_cache is None or self._cost_cache[0] is not task_cost:
            keep = tuple(name for name in ("non_target_objects",) if name in task_cost.names)
            self._cost_cache = (task_cost, task_cost.for_scene(self._subgoal_scene, keep=keep))
        return self._cost_cache[1]

    @property
    def clearing_name(self) -> str:
        """The name of the object being cleared ("" when none)."""
        return "" if self.active is None else self.active.name
