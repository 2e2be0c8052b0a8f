"""Parareal on the MuJoCo fine model: exactness on random scenes (1-4 cylinders/boxes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parapush.parareal import PararealOptions, PararealSolver
from parapush.physics import backends
from parapush.physics import fine as fine_module
from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.physics.projection import FeasibilityProjector
from parapush.scene import Scene, StateLayout, scene_from_dict


class PusherOnlyCoarse:
    """The crudest coarse model: the pusher moves, the objects stay put (a Propagator)."""

    def __init__(self, layout: StateLayout) -> None:
        self.layout = layout

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        result = np.array(states, dtype=float)
        result[:, self.layout.pusher_position] += controls * durations[:, None]
        result[:, self.layout.pusher_velocity] = controls
        result[:, self.layout.object_twists] = 0.0
        return result


def random_scene(rng: np.random.Generator) -> tuple[Scene, np.ndarray]:
    """1-4 cylinders/boxes in a loose row ahead of the pusher; returns the scene and x_0 (D,)."""
    count = int(rng.integers(1, 5))
    objects = []
    x = 0.0
    previous_radius = 0.0
    for index in range(count):
        shape = str(rng.choice(["cylinder", "box"]))
        radius = float(rng.uniform(0.03, 0.055))
        half_extents = (float(rng.uniform(0.03, 0.055)), float(rng.uniform(0.03, 0.077)))
        bounding = radius if shape == "cylinder" else float(np.hypot(*half_extents))
        if index:
            x += previous_radius + bounding + float(rng.uniform(0.002, 0.03))
        previous_radius = bounding
        pose = (x, float(rng.uniform(-0.03, 0.03)), float(rng.uniform(-np.pi, np.pi)))
        objects.append(
            {
                "name": f"o{index}",
                "shape": shape,
                "radius": radius,
                "half_extents": half_extents,
                "pose": pose,
            }
        )
    first = objects[0]
    first_radius = (
        first["radius"] if first["shape"] == "cylinder" else float(np.hypot(*first["half_extents"]))
    )
    pusher = (-(first_radius + 0.0145 + float(rng.uniform(0.002, 0.02))), float(rng.uniform(-0.03, 0.03)))
    scene = scene_from_dict({"name": "random", "objects": objects, "pusher": {"position": pusher}})
    poses = np.array([[spec.pose for spec in scene.objects]])
    return scene, scene.layout.compose(np.array([pusher]), poses)[0]


def random_pushes(rng: np.random.Generator, sequences: int, slices: int) -> tuple[np.ndarray, np.ndarray]:
    """Controls (B, N, 2) m/s mostly along +x, durations (B, N) s in whole 0.1 s."""
    angles = rng.uniform(-0.5, 0.5, size=(sequences, slices))
    speeds = rng.uniform(0.02, 0.1, size=(sequences, slices))
    controls = np.stack([speeds * np.cos(angles), speeds * np.sin(angles)], axis=-1)
    durations = 0.1 * rng.integers(1, 4, size=(sequences, slices))
    return controls, durations


def make_coarse(name: str, scene: Scene) -> object:
    return PusherOnlyCoarse(scene.layout) if name == "pusher_only" else AnalyticalCoarseModel(scene)


def make_projector(scene: Scene) -> FeasibilityProjector:
    return FeasibilityProjector(scene)


def serial_fine(model: object, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
    sequences, slices = controls.shape[:2]
    trajectory = np.empty((sequences, slices + 1, states.shape[-1]))
    trajectory[:, 0] = states
    for n in range(slices):
        trajectory[:, n + 1] = model.propagate(trajectory[:, n], controls[:, n], durations[:, n])
    return trajectory


COMMON = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# The exactness property (K = N gives serial fine, iterate k is exact up to slice k): the same
# 60 scenes on every run (derandomized), a few seconds per coarse model.
EXACTNESS = settings(COMMON, max_examples=60, derandomize=True)


@pytest.mark.parametrize("coarse_name", ["pusher_only", "analytical"])
@EXACTNESS
@given(seed=st.integers(0, 2**32 - 1))
def test_k_equals_n_is_serial_fine_and_prefixes_are_exact(coarse_name: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    scene, initial = random_scene(rng)
    slices = int(rng.integers(2, 5))
    controls, durations = random_pushes(rng, 2, slices)
    fine = fine_module.FineModel(scene)
    solver = PararealSolver(
        coarse=make_coarse(coarse_name, scene),
        fine=backends.SerialBackend(fine),
        projector=make_projector(scene),
    )
    result = solver.solve(
        initial, controls, durations, PararealOptions(iterations=slices, keep_iterates=True)
    )
    reference = serial_fine(fine, np.repeat(initial[None], 2, axis=0), controls, durations)
    np.testing.assert_allclose(result.trajectories, reference, rtol=0, atol=1e-9)
    assert result.stop_reason == "converged" and result.fully_exact
    for k in range(slices + 1):
        np.testing.assert_allclose(result.iterates[k][:, : k + 1], reference[:, : k + 1], rtol=0, atol=1e-9)


@COMMON
@given(seed=st.integers(0, 2**32 - 1))
def test_thread_backend_gives_the_serial_parareal_iterates(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scene, initial = random_scene(rng)
    controls, durations = random_pushes(rng, 3, 3)
    fine = fine_module.FineModel(scene)
    threads = backends.ThreadBackend(fine, threads=2)
    coarse = make_coarse("analytical", scene)
    projector = make_projector(scene)
    options = PararealOptions(iterations=2)
    with threads:
        parallel = PararealSolver(coarse=coarse, fine=threads, projector=projector).solve(
            initial, controls, durations, options
        )
    serial = PararealSolver(coarse=coarse, fine=backends.SerialBackend(fine), projector=projector).solve(
        initial, controls, durations, options
    )
    np.testing.assert_array_equal(parallel.trajectories, serial.trajectories)


def test_a_mujoco_batch_equals_each_sequence_alone() -> None:
    rng = np.random.default_rng(7)
    scene, initial = random_scene(rng)
    controls, durations = random_pushes(rng, 3, 4)
    fine = fine_module.FineModel(scene)
    solver = PararealSolver(
        coarse=make_coarse("analytical", scene),
        fine=backends.SerialBackend(fine),
        projector=make_projector(scene),
    )
    options = PararealOptions(iterations=2)
    batch = solver.solve(initial, controls, durations, options)
    for b in range(3):
        alone = solver.solve(initial, controls[b], durations[b], options)
        np.testing.assert_array_equal(batch.trajectories[b], alone.trajectories[0])
