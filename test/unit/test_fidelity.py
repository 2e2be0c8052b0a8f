"""Task-informed fidelity management (parapush.physics.fidelity) against the full fine model."""

from __future__ import annotations

import copy
from pathlib import Path

import mujoco
import numpy as np
import pytest

from parapush.parareal import PararealOptions, PararealSolver
from parapush.physics.backends import ProcessBackend, SerialBackend, ThreadBackend
from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.physics.fidelity import HIGH, LOW, MEDIUM, ManagedFineBackend, fidelity_levels
from parapush.physics.fine import FineModel
from parapush.prediction import ModelConfig, PredictionEngine, PredictionRequest
from parapush.scene import Scene, load_scene, scene_from_dict
from parapush.sim.model_world import scene_initial_state

SCENES = Path(__file__).resolve().parents[2] / "config" / "scenes"


@pytest.fixture(scope="module")
def crowded() -> Scene:
    return load_scene(SCENES / "crowded_8.yaml")


@pytest.fixture(scope="module")
def crowded_model(crowded: Scene) -> FineModel:
    return FineModel(crowded)


def planner_like_pushes(scene: Scene, count: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pushes from the scene's start towards +x with noisy directions, 1 s each."""
    rng = np.random.default_rng(seed)
    start = scene_initial_state(scene)
    states = np.repeat(start[None], count, axis=0)
    angles = rng.uniform(-0.25, 0.25, count)
    speeds = rng.uniform(0.1, 0.12, count)
    controls = np.stack([speeds * np.cos(angles), speeds * np.sin(angles)], axis=1)
    return states, controls, np.ones(count)


def test_all_dynamic_variant_equals_the_full_model(crowded: Scene, crowded_model: FineModel) -> None:
    states, controls, durations = planner_like_pushes(crowded, 3, seed=1)
    full = crowded_model.propagate(states, controls, durations)
    everyone = np.ones((3, len(crowded.objects)), dtype=bool)
    assert np.array_equal(crowded_model.propagate(states, controls, durations, dynamic=everyone), full)
    # the push moves the target, so the comparison is not between untouched scenes
    assert np.max(np.abs(full[:, 2:4] - states[:, 2:4])) > 0.01


def test_levels_are_a_function_of_the_slice_input_only(crowded: Scene) -> None:
    states, controls, durations = planner_like_pushes(crowded, 6, seed=2)
    moved = states.copy()
    moved[3] = scene_initial_state(crowded)
    moved[3, 0] += 0.2  # another start in another row
    levels = fidelity_levels(crowded, states, controls, durations, 0.01)
    assert set(np.unique(levels)) <= {LOW, MEDIUM, HIGH}
    alone = np.concatenate([fidelity_levels(crowded, states[row:row + 1], controls[row:row + 1],
                                            durations[row:row + 1], 0.01) for row in range(6)])
    assert np.array_equal(levels, alone)
    others = fidelity_levels(crowded, moved, controls, durations, 0.01)
    rows = [0, 1, 2, 4, 5]
    assert np.array_equal(others[rows], levels[rows])
    order = np.array([5, 2, 0, 4, 1, 3])
    assert np.array_equal(fidelity_levels(crowded, states[order], controls[order], durations[order], 0.01),
                          levels[order])
    # the pushed target is dynamic, and most of the eight objects are not
    assert np.all(levels[:, 0] == HIGH)
    assert np.mean(levels != HIGH) > 0.5


def test_managed_rows_do_not_depend_on_the_batch(crowded: Scene, crowded_model: FineModel) -> None:
    states, controls, durations = planner_like_pushes(crowded, 4, seed=3)
    managed = ManagedFineBackend(SerialBackend(crowded_model), crowded_model)
    together = managed.propagate(states, controls, durations)
    alone = np.concatenate([managed.propagate(states[row:row + 1], controls[row:row + 1], durations[row:row + 1])
                            for row in range(4)])
    order = np.array([2, 0, 3, 1])
    assert np.array_equal(together, alone)
    assert np.array_equal(managed.propagate(states[order], controls[order], durations[order]), together[order])
    full = crowded_model.propagate(states, controls, durations)
    assert managed.counts.static_objects > 0
    assert np.max(np.abs(together[:, :2 + 3 * 8] - full[:, :2 + 3 * 8])) < 2e-3


def assert_managed_matches_serial(backend, scene: Scene, model: FineModel, pushes: int, seed: int, calls: int):
    """``calls`` propagations through ``backend`` managed give the serial managed results exactly."""
    states, controls, durations = planner_like_pushes(scene, pushes, seed=seed)
    serial = ManagedFineBackend(SerialBackend(model), model).propagate(states, controls, durations)
    managed = ManagedFineBackend(backend, model)
    for _ in range(calls):  # a second call reuses the backend's data
        assert np.array_equal(managed.propagate(states, controls, durations), serial)


def test_thread_backend_gives_the_serial_managed_results(crowded: Scene, crowded_model: FineModel) -> None:
    with ThreadBackend(crowded_model, threads=2) as threads:
        assert_managed_matches_serial(threads, crowded, crowded_model, pushes=5, seed=4, calls=2)


def test_parareal_with_k_equal_n_is_the_managed_serial_fine_solution(crowded: Scene,
                                                                      crowded_model: FineModel) -> None:
    states, controls, _ = planner_like_pushes(crowded, 3, seed=5)
    slices = 4
    sequence = np.repeat(controls[:, None, :], slices, axis=1)
    sequence[:, 2:] *= 0.5
    durations = np.full(slices, 1.0)
    managed = ManagedFineBackend(SerialBackend(crowded_model), crowded_model)
    solver = PararealSolver(coarse=AnalyticalCoarseModel(crowded), fine=managed)
    result = solver.solve(states, sequence, durations, PararealOptions(iterations=slices, project=False))
    serial = [states]
    for index in range(slices):
        serial.append(managed.propagate(serial[-1], sequence[:, index], np.full(3, durations[index])))
    assert np.array_equal(result.trajectories, np.stack(serial, axis=1))
    assert managed.counts.static_objects > 0


def chain_scene() -> Scene:
    """A pusher, a disc in its path, and a second disc the first one is pushed into."""
    return scene_from_dict({
        "name": "chain",
        "pusher": {"radius": 0.0145, "position": [-0.1, 0.0]},
        "objects": [
            {"name": "struck", "shape": "cylinder", "radius": 0.03, "pose": [-0.05, 0.0, 0.0]},
            {"name": "far", "shape": "cylinder", "radius": 0.03, "pose": [0.02, 0.005, 0.0]},
            {"name": "away", "shape": "box", "half_extents": [0.03, 0.02], "pose": [0.0, 0.3, 0.5]},
        ],
    })


class WithoutChains(ManagedFineBackend):
    """A signal that forgets chains: only objects on the pusher's own path are dynamic, the
    others get ``static_level`` (a wrong signal, so the checks must catch its mistakes)."""

    def __init__(self, backend: object, fine_model: FineModel, static_level: int) -> None:
        super().__init__(backend, fine_model)
        self.static_level = static_level

    def levels(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        levels = super().levels(states, controls, durations)
        direct = super().levels(states, controls, durations) == HIGH
        direct[:, 1:] = False  # only the struck disc is on the path itself
        return np.where(direct, HIGH, np.minimum(levels, self.static_level)).astype(np.int8)


@pytest.mark.parametrize("static_level", [MEDIUM, LOW])
def test_a_static_object_reached_mid_slice_triggers_a_full_fidelity_rerun(static_level: int) -> None:
    scene = chain_scene()
    model = FineModel(scene)
    states = scene_initial_state(scene)[None]
    controls = np.array([[0.1, 0.0]])
    durations = np.array([1.0])
    # the correct signal sees the chain
    assert np.array_equal(ManagedFineBackend(SerialBackend(model), model).levels(states, controls, durations),
                          [[HIGH, HIGH, LOW]])
    managed = WithoutChains(SerialBackend(model), model, static_level)
    assert managed.levels(states, controls, durations)[0, 1] == static_level
    full = model.propagate(states, controls, durations)
    assert full[0, 5] - states[0, 5] > 0.01  # the full model pushes the "far" disc mid-slice
    result = managed.propagate(states, controls, durations)
    assert managed.counts.reruns == 1
    assert np.array_equal(result, full)


def test_an_untouched_static_object_stays_exactly_in_place() -> None:
    scene = chain_scene()
    model = FineModel(scene)
    states = scene_initial_state(scene)[None]
    controls = np.array([[0.02, 0.0]])
    durations = np.array([0.2])
    managed = ManagedFineBackend(SerialBackend(model), model)
    result = managed.propagate(states, controls, durations)
    assert managed.counts.reruns == 0 and managed.counts.static_objects == 2
    layout = scene.layout
    assert np.array_equal(layout.poses(result)[0, 1:], layout.poses(states)[0, 1:])
    assert np.all(layout.twists(result)[0, 1:] == 0.0)


def test_crowded_scenes_load_with_cylinders_and_boxes() -> None:
    for count in (8, 16, 32):
        scene = load_scene(SCENES / f"crowded_{count}.yaml")
        assert len(scene.objects) == count
        assert {spec.shape for spec in scene.objects} == {"cylinder", "box"}
        assert scene.goal is not None and scene.target == "object_00"


def test_process_backend_gives_the_serial_managed_results(crowded: Scene, crowded_model: FineModel) -> None:
    with ProcessBackend(crowded, workers=1) as processes:
        assert_managed_matches_serial(processes, crowded, crowded_model, pushes=3, seed=6, calls=1)


def test_the_engine_manages_fidelity_as_configured(crowded: Scene) -> None:
    states, controls, _ = planner_like_pushes(crowded, 1, seed=7)
    request = PredictionRequest(initial_state=states[0], controls=np.repeat(controls, 2, axis=0)[None],
                                durations=np.ones((1, 2)), model="fine")
    with PredictionEngine(crowded, ModelConfig(backend="serial", coarse_model="analytical")) as managed, \
            PredictionEngine(crowded, ModelConfig(backend="serial", coarse_model="analytical",
                                                  fidelity="full")) as full:
        assert isinstance(managed.fine, ManagedFineBackend) and full.fine is full.backend
        fast, exact = managed.predict(request), full.predict(request)
        assert fast.fidelity_reruns == 0 and managed.statistics().fidelity_reruns == 0
        assert managed.fine.counts.static_objects > 0
        assert np.max(np.abs(fast.trajectories - exact.trajectories)[..., :2 + 3 * 8]) < 2e-3


def test_auto_fidelity_manages_from_the_measured_crossover_on():
    from parapush.physics.fidelity import AUTO_MIN_OBJECTS, resolve_fidelity

    assert resolve_fidelity("auto", AUTO_MIN_OBJECTS - 1) == "full"
    assert resolve_fidelity("auto", AUTO_MIN_OBJECTS) == "task_informed"
    assert resolve_fidelity("full", 32) == "full" and resolve_fidelity("task_informed", 1) == "task_informed"
    with pytest.raises(ValueError, match="^fidelity: expected one of"):
        resolve_fidelity("half", 4)


def test_a_managed_row_does_not_depend_on_what_ran_before_it() -> None:
    """MuJoCo's sleep state and the solver's warm start live in the MjData, outside the physics
    state: a row gives the same bits on fresh data, after other rows, in any batch and backend,
    and as the variant without sleep (sleep only skips static trees that cannot move)."""
    scene = load_scene(SCENES / "crowded_16.yaml")
    model = FineModel(scene)
    states, controls, durations = planner_like_pushes(scene, 4, seed=8)
    states[3, :2] += (0.03, 0.02)  # another start: static trees asleep elsewhere must wake and move
    managed = ManagedFineBackend(SerialBackend(model), model)
    together = managed.propagate(states, controls, durations)
    order = np.array([3, 1, 0, 2])
    assert np.array_equal(managed.propagate(states[order], controls[order], durations[order]), together[order])
    for row in range(4):
        fresh = FineModel(scene)
        alone = ManagedFineBackend(SerialBackend(fresh), fresh).propagate(states[row:row + 1], controls[row:row + 1],
                                                                           durations[row:row + 1])
        assert np.array_equal(alone[0], together[row])
    with ThreadBackend(model, threads=2) as threads:
        assert np.array_equal(ManagedFineBackend(threads, model).propagate(states[order], controls[order],
                                                                           durations[order]), together[order])
    # reference: every segment on fresh data of the variant with sleep disabled
    levels = managed.levels(states, controls, durations)
    assert managed.counts.reruns == 0 and np.all(np.sum(levels != HIGH, axis=1) > 8)
    prepared = model.to_physics_state(managed._prepare(states, levels))
    steps = model.steps_for_each(durations)
    slept = 0
    for row in range(4):
        variant = model.fidelity_model(levels[row] == HIGH)
        awake = copy.copy(variant)
        awake.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_SLEEP)
        reference = model.simulate_physics(mujoco.MjData(awake), prepared[row], controls[row], int(steps[row]), awake)
        data = model.new_fidelity_data()
        sleeping = model.simulate_physics(data, prepared[row], controls[row], int(steps[row]), variant)
        assert np.array_equal(sleeping, reference)
        slept += int(np.sum(data.tree_asleep >= 0))
    assert slept > 0  # the static trees did fall asleep


def test_a_pushed_object_reaches_along_the_push_not_behind_it() -> None:
    """The struck disc sweeps a corridor along the push: a disc ahead of it is dynamic, a disc
    as close beside-behind it (out of the corridor) stays static but colliding."""
    scene = scene_from_dict({
        "name": "corridor",
        "pusher": {"radius": 0.0145, "position": [-0.1, 0.0]},
        "objects": [
            {"name": "struck", "shape": "cylinder", "radius": 0.03, "pose": [-0.05, 0.0, 0.0]},
            {"name": "ahead", "shape": "cylinder", "radius": 0.03, "pose": [0.03, 0.0, 0.0]},
            {"name": "behind", "shape": "cylinder", "radius": 0.03, "pose": [-0.08, 0.08, 0.0]},
        ],
    })
    states = scene_initial_state(scene)[None]
    levels = fidelity_levels(scene, states, np.array([[0.1, 0.0]]), np.array([1.0]), 0.01)
    assert levels.tolist() == [[HIGH, HIGH, MEDIUM]]
    # within the struck disc's travel budget all round (a disc of reach would make it dynamic)
    budget = 0.1 - (0.05 - 0.0145 - 0.03) + 0.01
    assert np.hypot(0.03, 0.08) - 0.06 < budget
