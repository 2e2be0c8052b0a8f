"""A World for benchmarks: each control is executed with a propagator (the fine model).

:class:`ModelWorld` implements :class:`parapush.planning.World` (``observe``, ``execute``,
``stop``) without threads, clocks or devices: ``execute(u, dt)`` replaces the state by
``propagator.propagate(state, u, dt)``. With the default propagator,
:class:`parapush.physics.fine.FineModel`, the world *is* the fine model the planner's
``"fine"`` predictive model uses (bit for bit), so a plan predicted with the fine model
is executed exactly as predicted; coarse and Parareal plans meet the fine physics.

Time is simulated: :attr:`ModelWorld.simulated_time` is the sum of the executed control
durations (the execution time of a real robot running the controls), independent of how
long the propagation took in wall time (:attr:`ModelWorld.wall_time`).

Unlike :class:`parapush.sim.world.SimWorld` (the world behind the simulated robot), there
is no pushing noise, no floor (an object past a table edge stays on the infinite plane of
the fine model; :class:`parapush.planning.TerminationCheck` declares it off the table) and
no pusher dynamics between controls.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from parapush.scene import Scene
from parapush.validation import check_positive

__all__ = ["ModelWorld", "ModelWorldDivergedError", "scene_initial_state"]


class ModelWorldDivergedError(RuntimeError):
    """The propagator returned a non-finite state: the world cannot go on."""


def scene_initial_state(scene: Scene) -> np.ndarray:
    """(D,) the scene's initial state: the pusher and objects where the scene puts them, at rest."""
    if not isinstance(scene, Scene):
        raise TypeError(f"scene: expected a parapush.scene.Scene, got {type(scene).__name__}")
    return scene.layout.compose(np.array(scene.pusher.position), np.array([spec.pose for spec in scene.objects]))


class ModelWorld:
    """A :class:`parapush.planning.World` whose physics is a propagator.

    Args:
        scene: the scene (its layout; its initial state unless ``initial_state`` is given).
        propagator: anything with ``propagate(states (M, D), controls (M, 2), durations (M,))``;
            default: a new :class:`parapush.physics.fine.FineModel` of ``scene`` (built with
            ``fine_settings``).
        initial_state: (D,) starting state; default :func:`scene_initial_state`.
        fine_settings: :class:`parapush.physics.fine.FineSettings` of the default propagator.

    Attributes:
        propagator: the physics.
        simulated_time: s, sum of the durations of the executed controls.
        wall_time: s of wall time spent propagating.
        controls_executed: number of ``execute`` calls that completed.
        stops: number of ``stop`` calls.
        history: the states observed after each executed control, starting with the initial state.
    """

    def __init__(
        self,
        scene: Scene,
        propagator: Any = None,
        *,
        initial_state: np.ndarray | None = None,
        fine_settings: Any = None,
    ) -> None:
        if not isinstance(scene, Scene):
            raise TypeError(f"scene: expected a parapush.scene.Scene, got {type(scene).__name__}")
        if propagator is None:
            from parapush.physics.fine import FineModel

            propagator = FineModel(scene, fine_settings)
        elif fine_settings is not None:
            raise ValueError("fine_settings: only used with the default (fine model) propagator")
        if not callable(getattr(propagator, "propagate", None)):
            raise TypeError("propagator: expected an object with `propagate(states, controls, durations)`")
        self.scene = scene
        self.layout = scene.layout
        self.propagator = propagator
        state = scene_initial_state(scene) if initial_state is None else np.array(initial_state, dtype=float)
        if state.shape != (self.layout.dimension,):
            raise ValueError(f"initial_state: expected shape ({self.layout.dimension},), got {state.shape}")
        if not np.all(np.isfinite(state)):
            raise ValueError("initial_state: contains non-finite values")
        self._state = state
        self.simulated_time = 0.0
        self.wall_time = 0.0
        self.controls_executed = 0
        self.stops = 0
        self.history: list[np.ndarray] = [state.copy()]

    @property
    def state(self) -> np.ndarray:
        """(D,) a copy of the current state."""
        return self._state.copy()

    def observe(self) -> np.ndarray:
        """(D,) the current state (a copy)."""
        return self._state.copy()

    def execute(self, control: np.ndarray, duration: float) -> None:
        """Hold ``control`` (2,) m/s for ``duration`` s with the propagator.

        Raises ValueError on a bad control or duration (the state is unchanged) and
        :class:`ModelWorldDivergedError` if the propagator returns a non-finite state (the
        state is unchanged too, so the world is left where it was last valid).
        """
        control = np.array(control, dtype=float)
        if control.shape != (2,) or not np.all(np.isfinite(control)):
            raise ValueError(f"control: expected 2 finite numbers (m/s), got {control.tolist()}")
        duration = check_positive("duration", duration)
        started = time.perf_counter()
        result = np.asarray(
            self.propagator.propagate(self._state[None], control[None], np.array([duration])), dtype=float
        )
        self.wall_time += time.perf_counter() - started
        if result.shape != (1, self.layout.dimension):
            raise ValueError(f"propagator: returned shape {result.shape}, expected (1, {self.layout.dimension})")
        if not np.all(np.isfinite(result)):
            raise ModelWorldDivergedError(
                f"the world's physics became unstable executing control {control.tolist()} m/s for {duration} s"
            )
        self._state = result[0].copy()
        self.simulated_time += duration
        self.controls_executed += 1
        self.history.append(self._state.copy())

    def stop(self) -> None:
        """Bring the pusher to rest: its velocity is set to zero (a velocity-servoed pusher
        stops within a few milliseconds); the objects keep their state."""
        self._state[self.layout.pusher_velocity] = 0.0
        self.stops += 1
