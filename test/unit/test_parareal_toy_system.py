"""A MuJoCo-free nonlinear test system for the Parareal solver, and checks of the system itself.

State layout of one object (D = 10), dynamics dx/dt = A tanh(x) - 0.3 x + G u with a fixed
random A (seeded) and the control u driving the pusher position and velocity rows. The
fine propagator integrates it with many RK4 steps, the coarse one with a single explicit
Euler step: cheap and clearly inaccurate, as Parareal needs.
"""

from __future__ import annotations

import time

import numpy as np

from parapush.scene import StateLayout, wrap_angle

LAYOUT = StateLayout(1)
DIMENSION = LAYOUT.dimension
DIVERGE_CONTROL = np.array([7.0, 7.0])
"""A control for which the fine toy model returns NaN (simulates an unstable MuJoCo row)."""


def _dynamics_matrices() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20190101)
    coupling = rng.normal(scale=0.6, size=(DIMENSION, DIMENSION))
    control_gain = np.zeros((DIMENSION, 2))
    control_gain[0:2] = np.eye(2)  # pusher position
    control_gain[5:7] = 0.5 * np.eye(2)  # pusher velocity
    return coupling, control_gain


COUPLING, CONTROL_GAIN = _dynamics_matrices()


def rate(states: np.ndarray, controls: np.ndarray) -> np.ndarray:
    """dx/dt for states (M, D) and controls (M, 2)."""
    # explicit products and row sums instead of matmul: BLAS kernels depend on the batch size,
    # these do not, so each row's result is bitwise independent of the rest of the batch
    coupled = (np.tanh(states)[:, None, :] * COUPLING[None]).sum(axis=2)
    driven = (controls[:, None, :] * CONTROL_GAIN[None]).sum(axis=2)
    return coupled - 0.3 * states + driven


class ToyFine:
    """RK4 with ``steps`` steps per control (a Propagator); NaN for DIVERGE_CONTROL rows."""

    def __init__(self, *, steps: int = 60) -> None:
        self.layout = LAYOUT
        self.steps = steps
        self.calls = 0
        self.rows = 0

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        self.calls += 1
        self.rows += len(states)
        x = np.array(states, dtype=float)
        u = np.asarray(controls, dtype=float)
        h = (np.asarray(durations, dtype=float) / self.steps)[:, None]
        for _ in range(self.steps):
            k1 = rate(x, u)
            k2 = rate(x + 0.5 * h * k1, u)
            k3 = rate(x + 0.5 * h * k2, u)
            k4 = rate(x + h * k3, u)
            x = x + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        x[np.all(u == DIVERGE_CONTROL, axis=1)] = np.nan
        return x


class ToyCoarse:
    """One explicit Euler step per control (a Propagator); optionally wraps the yaw."""

    def __init__(self, *, wrap_yaw: bool = False) -> None:
        self.layout = LAYOUT
        self.wrap_yaw = wrap_yaw

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        x = np.asarray(states, dtype=float)
        result = x + np.asarray(durations, dtype=float)[:, None] * rate(x, np.asarray(controls, dtype=float))
        if self.wrap_yaw:
            result[:, LAYOUT.yaw_indices] = wrap_angle(result[:, LAYOUT.yaw_indices])
        return result


class ToyBackend:
    """A serial fine backend (FineBackend protocol) that reports ``workers`` workers.

    ``delay`` seconds are slept per call (deadline tests).
    """

    def __init__(self, fine: ToyFine, *, workers: int = 1, delay: float = 0.0) -> None:
        self.fine = fine
        self.layout = fine.layout
        self.workers = workers
        self.delay = delay

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        if self.delay:
            time.sleep(self.delay)
        return self.fine.propagate(states, controls, durations)

    def close(self) -> None:
        pass

    def __enter__(self) -> ToyBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ToyProjector:
    """A nonlinear projection: the object's x may not exceed the pusher's x + 2 (a wall)."""

    def __init__(self) -> None:
        self.calls = 0

    def project(self, states: np.ndarray) -> np.ndarray:
        self.calls += 1
        result = np.array(states, dtype=float)
        result[:, 2] = np.minimum(result[:, 2], result[:, 0] + 2.0)
        return result


def random_problem(seed: int, *, sequences: int, slices: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random initial states (B, D), controls (B, N, 2) m/s, durations (B, N) s."""
    rng = np.random.default_rng(seed)
    states = rng.normal(scale=0.8, size=(sequences, DIMENSION))
    controls = rng.uniform(-1.0, 1.0, size=(sequences, slices, 2))
    durations = rng.uniform(0.3, 0.6, size=(sequences, slices))
    return states, controls, durations


def serial_fine(fine: ToyFine, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
    """Reference: the fine model applied slice after slice, (B, N+1, D)."""
    sequences, slices = controls.shape[:2]
    trajectory = np.empty((sequences, slices + 1, DIMENSION))
    trajectory[:, 0] = states
    for n in range(slices):
        trajectory[:, n + 1] = fine.propagate(trajectory[:, n], controls[:, n], durations[:, n])
    return trajectory


# -- checks of the toy system itself ----------------------------------------------------------
def test_toy_fine_is_converged_in_its_step_count() -> None:
    states, controls, durations = random_problem(1, sequences=4, slices=1)
    coarse_steps = ToyFine(steps=60).propagate(states, controls[:, 0], durations[:, 0])
    fine_steps = ToyFine(steps=240).propagate(states, controls[:, 0], durations[:, 0])
    assert np.max(np.abs(coarse_steps - fine_steps)) < 1e-7


def test_toy_coarse_is_clearly_inaccurate() -> None:
    states, controls, durations = random_problem(2, sequences=4, slices=1)
    fine = ToyFine().propagate(states, controls[:, 0], durations[:, 0])
    coarse = ToyCoarse().propagate(states, controls[:, 0], durations[:, 0])
    assert np.max(np.abs(fine - coarse)) > 1e-2


def test_toy_fine_diverges_on_the_marker_control() -> None:
    states, controls, durations = random_problem(3, sequences=3, slices=1)
    controls[1, 0] = DIVERGE_CONTROL
    result = ToyFine().propagate(states, controls[:, 0], durations[:, 0])
    assert np.isnan(result[1]).all() and np.isfinite(result[[0, 2]]).all()
