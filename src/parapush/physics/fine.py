"""The fine model F: MuJoCo simulation of the scene, one control held per segment.

See :class:`FineSettings` for the modelling choices and the measured defaults.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from parapush.physics.propagator import check_batch
from parapush.scene import Scene, StateLayout

INTEGRATORS = ("euler", "implicitfast", "rk4")
COLLIDERS = ("capsule", "cylinder")


@dataclass(frozen=True)
class FineSettings:
    """How the scene is turned into a MuJoCo model and stepped.

    Attributes:
        timestep: simulation step, s.
        integrator: MuJoCo integrator, one of ``"euler"``, ``"implicitfast"``, ``"rk4"``.
        pusher_collider: geometry of the pusher for contacts, ``"capsule"`` or ``"cylinder"``
            (a vertical capsule has the same planar cross-section as the cylinder wherever
            it overlaps the objects' height band).
        object_collider: lateral collider of cylindrical objects and obstacles,
            ``"capsule"`` or ``"cylinder"``.
        pusher_armature: reflected inertia of the arm added to the pusher's slide joints, kg.
        pusher_servo_ratio: timestep * kv / (pusher mass + armature) of the pusher's velocity
            servo; 1 makes an explicit Euler step dead-beat. Must be in (0, 2).
        speed_limit: any body speed above this (m/s or rad/s) marks the row unstable (NaN).
    """

    timestep: float = 0.001
    integrator: str = "euler"
    pusher_collider: str = "capsule"
    object_collider: str = "capsule"
    pusher_armature: float = 50.0
    pusher_servo_ratio: float = 1.0
    speed_limit: float = 20.0

    def __post_init__(self) -> None:
        _positive_finite(self.timestep, "timestep")
        if self.integrator not in INTEGRATORS:
            raise ValueError(f"integrator: expected one of {INTEGRATORS}, got {self.integrator!r}")
        if self.pusher_collider not in COLLIDERS:
            raise ValueError(f"pusher_collider: expected one of {COLLIDERS}, got {self.pusher_collider!r}")
        if self.object_collider not in COLLIDERS:
            raise ValueError(f"object_collider: expected one of {COLLIDERS}, got {self.object_collider!r}")
        if not (math.isfinite(self.pusher_armature) and self.pusher_armature >= 0.0):
            raise ValueError(f"pusher_armature: expected a finite value >= 0, got {self.pusher_armature!r}")
        if not (0.0 < self.pusher_servo_ratio < 2.0):
            raise ValueError(f"pusher_servo_ratio: expected a value in (0, 2), got {self.pusher_servo_ratio!r}")
        _positive_finite(self.speed_limit, "speed_limit")


def _positive_finite(value: float, name: str) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0.0):
        raise ValueError(f"{name}: expected a finite value > 0, got {value!r}")


class FineModel:
    """MuJoCo model of a scene; a :class:`~parapush.physics.propagator.Propagator`.

    ``propagate`` is the serial reference that every backend reproduces bit for bit.

    Attributes:
        scene: the scene.
        settings: the :class:`FineSettings`.
        layout: the papers' state layout for the scene.
        mj_model: the compiled ``mujoco.MjModel`` (read-only by convention; shared by
            the thread backends).
    """

    def __init__(self, scene: Scene, settings: FineSettings = FineSettings()) -> None:
        raise NotImplementedError

    @property
    def physics_state_size(self) -> int:
        """S, the length of MuJoCo's full-physics state vector."""
        raise NotImplementedError

    def steps_for(self, duration: float) -> int:
        """Number of simulation steps that make up ``duration`` seconds (rounded to nearest,
        at least 1); raises ValueError if ``duration`` is not a whole number of steps to 1e-9."""
        raise NotImplementedError

    def to_physics_state(self, states: np.ndarray) -> np.ndarray:
        """States (M, D) -> MuJoCo full-physics states (M, S); objects resting on the table."""
        raise NotImplementedError

    def from_physics_state(self, physics_states: np.ndarray) -> np.ndarray:
        """Full-physics states (M, S) -> states (M, D); unstable rows become NaN."""
        raise NotImplementedError

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """Serial reference: for each row, restore the state (warm start zeroed), hold the
        control for ``steps_for(duration)`` steps with ``mj_step`` and read the state back.

        Args/returns as :meth:`parapush.physics.propagator.Propagator.propagate`.
        """
        raise NotImplementedError


__all__ = ["COLLIDERS", "INTEGRATORS", "FineModel", "FineSettings", "check_batch", "StateLayout", "mujoco", "np"]
