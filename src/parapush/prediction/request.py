"""A validated prediction request, independent of how it arrived (ROS service, library call)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from parapush.scene.state import StateLayout

MODELS = ("parareal", "coarse", "fine")


class RequestError(ValueError):
    """A prediction request is invalid; the message names the field."""


@dataclass(frozen=True)
class PredictionLimits:
    """What a prediction service accepts.

    Attributes:
        max_sequences: most control sequences per request.
        max_controls: most controls per sequence.
        max_speed: m/s, largest pusher speed a control may ask for.
        max_duration: s, longest single control.
        max_position: m, largest |x| or |y| of any body in the initial state (sanity bound).
        max_body_speed: m/s, largest linear speed of any body in the initial state.
    """

    max_sequences: int = 64
    max_controls: int = 32
    max_speed: float = 0.5
    max_duration: float = 10.0
    max_position: float = 5.0
    max_body_speed: float = 5.0

    def __post_init__(self) -> None:
        for name in ("max_sequences", "max_controls"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected an integer >= 1, got {value!r}")
        for name in ("max_speed", "max_duration", "max_position", "max_body_speed"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name}: expected a finite number > 0, got {value!r}")


@dataclass(frozen=True)
class PredictionRequest:
    """One prediction request.

    Attributes:
        initial_state: (D,) state x_0 in the scene's layout.
        controls: (B, N, 2) pusher velocities, m/s.
        durations: (B, N) control durations, s.
        model: "parareal", "coarse" or "fine".
        coarse_model: name of the coarse model, or None for the service default.
        iterations: Parareal iterations K, or None for the service default.
        tolerance_position: m, or None (off).
        tolerance_angle: rad, or None (off).
        deadline: s of wall time, or None (none).
    """

    initial_state: np.ndarray
    controls: np.ndarray
    durations: np.ndarray
    model: str = "parareal"
    coarse_model: str | None = None
    iterations: int | None = None
    tolerance_position: float | None = None
    tolerance_angle: float | None = None
    deadline: float | None = None

    def validate(self, *, layout: StateLayout, limits: PredictionLimits, coarse_models: tuple[str, ...]) -> None:
        """Raise :class:`RequestError` naming the first invalid field."""
        state = np.asarray(self.initial_state)
        if state.shape != (layout.dimension,):
            raise RequestError(
                f"initial_state: expected shape ({layout.dimension},) for {layout.object_count} object(s), "
                f"got {state.shape}"
            )
        if not np.all(np.isfinite(state)):
            bad = np.flatnonzero(~np.isfinite(state)).tolist()
            raise RequestError(f"initial_state: must be finite, non-finite entries at indices {bad}")
        positions = np.concatenate([state[layout.pusher_position], layout.poses(state)[:, :2].ravel()])
        if np.any(np.abs(positions) > limits.max_position):
            raise RequestError(
                f"initial_state: a body is {np.abs(positions).max():.4g} m from the table centre, "
                f"beyond the sanity bound {limits.max_position} m"
            )
        velocities = np.vstack([state[layout.pusher_velocity][None], layout.twists(state)[:, :2]])
        if np.any(np.hypot(velocities[:, 0], velocities[:, 1]) > limits.max_body_speed):
            raise RequestError(f"initial_state: a body moves faster than {limits.max_body_speed} m/s")
        controls = np.asarray(self.controls)
        durations = np.asarray(self.durations)
        if controls.ndim != 3 or controls.shape[2] != 2:
            raise RequestError(f"controls: expected shape (B, N, 2), got {controls.shape}")
        sequences, slices = controls.shape[:2]
        if sequences < 1 or slices < 1:
            raise RequestError(f"controls: need at least one sequence of at least one control, got {controls.shape}")
        if sequences > limits.max_sequences:
            raise RequestError(f"sequences: {sequences} sequences, at most {limits.max_sequences} per request")
        if slices > limits.max_controls:
            raise RequestError(f"controls: {slices} controls per sequence, at most {limits.max_controls}")
        if durations.shape != (sequences, slices):
            raise RequestError(f"durations: expected shape ({sequences}, {slices}), got {durations.shape}")
        if not np.all(np.isfinite(controls)):
            raise RequestError("controls: must be finite")
        if not np.all(np.isfinite(durations)) or np.any(durations <= 0.0):
            raise RequestError("durations: must be finite and > 0")
        if np.any(durations > limits.max_duration):
            raise RequestError(f"durations: at most {limits.max_duration} s per control, got {durations.max():.4g} s")
        speeds = np.hypot(controls[..., 0], controls[..., 1])
        if np.any(speeds > limits.max_speed * (1 + 1e-9)):
            raise RequestError(f"controls: speed {speeds.max():.4g} m/s exceeds the limit {limits.max_speed:.4g} m/s")
        if self.model not in MODELS:
            raise RequestError(f"model: expected one of {list(MODELS)}, got {self.model!r}")
        if self.coarse_model is not None and self.coarse_model not in coarse_models:
            raise RequestError(f"coarse_model: expected one of {list(coarse_models)}, got {self.coarse_model!r}")
        if self.iterations is not None and (isinstance(self.iterations, bool) or self.iterations < 0):
            raise RequestError(f"iterations: must be >= 0 (or -1 for the default), got {self.iterations!r}")
        if self.model == "parareal" and self.iterations is not None and self.iterations > slices:
            raise RequestError(f"iterations: K = {self.iterations} exceeds the number of controls N = {slices}")
        for name in ("tolerance_position", "tolerance_angle", "deadline"):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value <= 0.0):
                raise RequestError(f"{name}: must be finite and > 0 (0 means off), got {value!r}")
