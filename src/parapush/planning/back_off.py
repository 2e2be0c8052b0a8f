"""Backing the pusher off when no plan can be predicted.

The multi-fidelity planner ranks elites by their corrected (fine or Parareal) predictions;
when every one of them fails the corrector's stability check it raises
:class:`~parapush.planning.optimizer.AllPredictionsFailedError` and has nothing to execute.
Measured once in about 300 box-obstacle runs (``docs/planner_tuning.md``): the box was jammed
against the post, the predicted start state had the pusher's centre 1.4 cm inside the box's
outline (the projector cannot free a body wedged between the pusher and an obstacle), and the
fine model restarting from that state failed for any control, zero included. Standing still
does not end such a state; backing the pusher off does.

:class:`BackOff` makes the plan that does it: one control that moves the pusher
``distance`` (m) straight away from the nearest body (an object or an obstacle: the
gradient of the body outline's signed distance at the pusher's centre, inside or outside
it), then standing still. A direction is clear if the pusher ends farther from that body, no
deeper in a body it overlaps, in no body it does not and on the table; if the straight one is
not (another object behind the pusher, the table's edge), directions turned by 30, 60 and 90
degrees either way are tried, in that order; if none is clear the plan stands still. Its trajectory
is kinematic (the pusher moves, every object stays where it is); its cost is NaN (it was
never evaluated).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from parapush.physics.planar_geometry import rotate, to_body_frame
from parapush.planning.optimizer import OptimizationResult, OptimizerSettings
from parapush.scene import Outline, Scene

BACK_OFF_STOP_REASON = "back_off"
"""``OptimizationResult.stop_reason`` of a back-off plan."""

_TURNS = np.deg2rad([0.0, 30.0, -30.0, 60.0, -60.0, 90.0, -90.0])
"""Directions tried, turned from straight away from the nearest body (rad), in this order."""
_GRADIENT_STEP = 1e-5
"""m, the central-difference step of the signed distance's gradient."""


@dataclass(frozen=True)
class _Body:
    outline: Outline
    centre: np.ndarray  # (2,) m
    yaw: float  # rad


class BackOff:
    """The back-off plan of a scene (module docstring).

    Args:
        scene: the task (pusher radius, outlines, table).
        distance: m the pusher backs off in one control, > 0 (capped by the optimizer's
            ``max_speed`` times its ``control_duration``).
    """

    def __init__(self, scene: Scene, distance: float) -> None:
        if not isinstance(scene, Scene):
            raise TypeError(f"scene: expected a parapush.scene.Scene, got {type(scene).__name__}")
        if isinstance(distance, bool) or not isinstance(distance, (int, float)) or not distance > 0.0:
            raise ValueError(f"distance: expected a positive number of m, got {distance!r}")
        self.scene = scene
        self.distance = float(distance)

    def _bodies(self, state: np.ndarray) -> list[_Body]:
        poses = self.scene.layout.poses(state[None])[0]
        bodies = [_Body(spec.outline, poses[index, :2], float(poses[index, 2]))
                  for index, spec in enumerate(self.scene.objects)]
        bodies += [_Body(obstacle.outline, np.array(obstacle.pose[:2], dtype=float), float(obstacle.pose[2]))
                   for obstacle in self.scene.obstacles]
        return bodies

    @staticmethod
    def _distance(body: _Body, points: np.ndarray) -> np.ndarray:
        """(...,) signed distance of world points (..., 2) to the body's outline, m (< 0 inside)."""
        return body.outline.signed_distance(to_body_frame(points, body.centre, body.yaw))

    def _gaps(self, bodies: list[_Body], points: np.ndarray) -> np.ndarray:
        """(len(points), bodies) gap between the pusher disc at each point (K, 2) and each body, m."""
        radius = self.scene.pusher.radius
        return np.stack([self._distance(body, points) - radius for body in bodies], axis=-1)

    def direction(self, state: np.ndarray) -> np.ndarray:
        """(2,) unit vector straight away from the body nearest to the pusher in ``state`` (D,)."""
        state = np.asarray(state, dtype=float)
        pusher = state[self.scene.layout.pusher_position]
        bodies = self._bodies(state)
        return self._away(bodies[int(np.argmin(self._gaps(bodies, pusher[None])[0]))], pusher)

    def _away(self, body: _Body, pusher: np.ndarray) -> np.ndarray:
        steps = np.array([[_GRADIENT_STEP, 0.0], [-_GRADIENT_STEP, 0.0], [0.0, _GRADIENT_STEP], [0.0, -_GRADIENT_STEP]])
        values = self._distance(body, pusher + steps)
        gradient = np.array([values[0] - values[1], values[2] - values[3]])
        length = float(np.hypot(*gradient))
        if length < 1e-9:  # on the outline's medial axis: away from its centre
            gradient = pusher - body.centre
            length = float(np.hypot(*gradient))
        return gradient / length if length > 0.0 else np.array([-1.0, 0.0])

    def control(self, state: np.ndarray, settings: OptimizerSettings) -> np.ndarray:
        """(2,) m/s, the back-off control from ``state`` (D,); zeros when no direction is clear."""
        state = np.asarray(state, dtype=float)
        duration = settings.control_duration
        distance = min(self.distance, settings.max_speed * duration)
        pusher = state[self.scene.layout.pusher_position]
        bodies = self._bodies(state)
        now = self._gaps(bodies, pusher[None])[0]
        nearest = int(np.argmin(now))
        away = self._away(bodies[nearest], pusher)
        ends = pusher + distance * rotate(np.broadcast_to(away, (_TURNS.size, 2)), _TURNS)
        after = self._gaps(bodies, ends)
        # clear: no deeper into a body it overlaps, into none it does not, farther from the nearest,
        # and the pusher stays on the table
        clear = np.all(after >= np.minimum(now, 0.0) - 1e-9, axis=1) & (after[:, nearest] > now[nearest])
        radius = self.scene.pusher.radius
        clear &= np.array([self.scene.table.contains(float(x), float(y), radius) for x, y in ends])
        if not np.any(clear):
            return np.zeros(2)
        first = int(np.flatnonzero(clear)[0])
        return (ends[first] - pusher) / duration

    def plan(self, state: np.ndarray, settings: OptimizerSettings) -> OptimizationResult:
        """The back-off plan from ``state`` (D,): its control, then ``horizon - 1`` zeros, with
        the kinematic trajectory (N+1, D) (module docstring)."""
        started = time.perf_counter()
        state = np.asarray(state, dtype=float)
        layout = self.scene.layout
        controls = np.zeros((settings.horizon, 2))
        controls[0] = self.control(state, settings)
        trajectory = np.repeat(state[None], settings.horizon + 1, axis=0)
        trajectory[1:, layout.pusher_velocity] = 0.0
        trajectory[1:, layout.object_twists] = 0.0
        trajectory[1:, layout.pusher_position] = state[layout.pusher_position] + controls[0] * settings.control_duration
        return OptimizationResult(
            controls=controls, cost=math.nan, trajectory=trajectory, iterations=0, cost_history=np.empty(0),
            time=time.perf_counter() - started, unstable_samples=0, stop_reason=BACK_OFF_STOP_REASON,
        )
