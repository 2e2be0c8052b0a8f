"""The Ray backend on a real two-node Ray cluster on this machine (``ray start`` head + node):
bit-identical to the thread backend (fine batches, per-row models, fidelity variants and the
managed fine backend around it, Parareal K = 1, a prediction request), and a killed actor is
replaced with its rows run again.

The cluster is started once for the module and stopped by the fixture's finalizer, also when a
test fails. Without Ray installed the module is skipped, unless ``PARAPUSH_REQUIRE_RAY=1``
(``.ci/run``: ``scripts/setup.sh`` installs it), where that fails the run.
"""

from __future__ import annotations

import copy
import os
import signal
import threading

import numpy as np
import pytest

if os.environ.get("PARAPUSH_REQUIRE_RAY") == "1":
    import ray
else:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'parapush[ray]')")

from ray_cluster import CLUSTER_ENVIRONMENT, CPUS_PER_NODE, LocalRayCluster
from test_physics_backends import SCENE, random_inputs

from parapush.parareal import PararealOptions, PararealSolver
from parapush.physics.backends import RayBackend, ThreadBackend, WorkerError, make_backend
from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.physics.fidelity import ManagedFineBackend
from parapush.physics.fine import FineModel
from parapush.physics.projection import FeasibilityProjector
from parapush.prediction import ModelConfig, PredictionEngine, PredictionRequest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(request):
    patch = pytest.MonkeyPatch()
    cluster = LocalRayCluster()

    def finish() -> None:
        if ray.is_initialized():
            ray.shutdown()
        cluster.stop()
        patch.undo()

    request.addfinalizer(finish)  # before starting: a failed start is cleaned up too
    for name, value in CLUSTER_ENVIRONMENT.items():
        patch.setenv(name, value)
    patch.delenv("RAY_ADDRESS", raising=False)
    cluster.start()
    ray.init(address=cluster.address, log_to_driver=False)
    return cluster


@pytest.fixture(scope="module")
def fine_model():
    return FineModel(SCENE)


@pytest.fixture(scope="module")
def ray_backend(cluster, fine_model):
    with RayBackend(SCENE, fine_model.settings, workers=2, address=cluster.address) as backend:
        yield backend


def test_the_actors_are_spread_over_the_two_nodes(cluster, ray_backend) -> None:
    alive = [node for node in ray.nodes() if node["Alive"]]
    assert len(alive) == 2 and ray.cluster_resources()["CPU"] == 2 * CPUS_PER_NODE
    assert ray_backend.workers == 2
    assert sorted(cluster.node_of(pid) for pid in ray_backend.actor_pids) == [0, 1]
    assert ray_backend.call_overhead > 0.0


def test_a_fine_batch_equals_the_thread_backend_bit_for_bit(ray_backend, fine_model) -> None:
    states, controls, durations = random_inputs(fine_model, 12, seed=11)
    with ThreadBackend(fine_model, threads=2) as threads:
        expected = threads.propagate(states, controls, durations)
        # per-row models (identification's populations): two variants, each sent once
        variant = copy.copy(fine_model.mj_model)
        variant.geom_friction[:, 0] *= 0.5
        models = [fine_model.mj_model if row % 3 else variant for row in range(states.shape[0])]
        expected_models = threads.propagate(states, controls, durations, models=models)
        dynamic = np.ones((states.shape[0], 2), dtype=bool)
        dynamic[::2, 1] = False
        expected_dynamic = threads.propagate(states, controls, durations, dynamic=dynamic)
    np.testing.assert_array_equal(ray_backend.propagate(states, controls, durations), expected)
    np.testing.assert_array_equal(ray_backend.propagate(states, controls, durations, models=models), expected_models)
    assert not np.array_equal(expected_models, expected)  # the variant changed something
    np.testing.assert_array_equal(ray_backend.propagate(states, controls, durations, dynamic=dynamic),
                                  expected_dynamic)
    with pytest.raises(ValueError, match="models"):
        ray_backend.propagate(states, controls, durations, models=models[:-1])


def test_small_batches_go_to_fewer_actors(ray_backend, fine_model) -> None:
    """Every actor call carries at least min_call_seconds of work (by the learned cost per step)."""
    states, controls, durations = random_inputs(fine_model, 4, seed=3)
    ray_backend.propagate(states, controls, durations)  # learns the cost per step
    one_step = fine_model.steps_for_each(np.full(4, fine_model.settings.timestep))
    assert ray_backend._parts(one_step) == 1
    assert ray_backend._parts(fine_model.steps_for_each(np.full(4, 5.0))) == ray_backend.workers


def test_fidelity_management_around_it_equals_it_around_threads(ray_backend, fine_model) -> None:
    states, controls, durations = random_inputs(fine_model, 10, seed=13)
    with ThreadBackend(fine_model, threads=2) as threads:
        expected = ManagedFineBackend(threads, fine_model).propagate(states, controls, durations)
    managed = ManagedFineBackend(ray_backend, fine_model)
    np.testing.assert_array_equal(managed.propagate(states, controls, durations), expected)
    assert managed.counts.segments == 10


def test_parareal_k1_equals_the_thread_backend_bit_for_bit(ray_backend, fine_model) -> None:
    rng = np.random.default_rng(4)
    initial = fine_model.layout.compose(np.array([-0.25, 0.0]), np.array([obj.pose for obj in SCENE.objects]))
    angles = rng.uniform(-0.3, 0.3, (3, 4))
    controls = 0.05 * np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    durations = np.full((3, 4), 0.3)
    coarse = AnalyticalCoarseModel(SCENE)
    projector = FeasibilityProjector(SCENE)
    options = PararealOptions(iterations=1)
    with ThreadBackend(fine_model, threads=2) as threads:
        expected = PararealSolver(coarse=coarse, fine=threads, projector=projector).solve(
            initial, controls, durations, options, schedule="parareal")
    result = PararealSolver(coarse=coarse, fine=ray_backend, projector=projector).solve(
        initial, controls, durations, options, schedule="parareal")
    assert result.iterations_used == 1
    np.testing.assert_array_equal(result.trajectories, expected.trajectories)


def test_a_killed_actor_is_replaced_and_its_rows_run_again(ray_backend, fine_model) -> None:
    states, controls, durations = random_inputs(fine_model, 8, seed=5)
    with ThreadBackend(fine_model, threads=2) as threads:
        expected = threads.propagate(states, controls, durations)
    replaced = ray_backend.replaced_workers

    # killed between calls: the call finds it dead, replaces it and runs its chunk again
    os.kill(ray_backend.actor_pids[0], signal.SIGKILL)
    np.testing.assert_array_equal(ray_backend.propagate(states, controls, durations), expected)
    assert ray_backend.replaced_workers == replaced + 1

    # killed during a call (rows of 20 s, about a second per actor: the kill lands while it simulates)
    long_durations = np.full(durations.shape, 20.0)
    with ThreadBackend(fine_model, threads=2) as threads:
        expected_long = threads.propagate(states, controls, long_durations)
    victim = ray_backend.actor_pids[1]
    killer = threading.Timer(0.1, os.kill, (victim, signal.SIGKILL))  # before the call ends
    killer.start()
    try:
        np.testing.assert_array_equal(ray_backend.propagate(states, controls, long_durations), expected_long)
    finally:
        killer.join()
    assert ray_backend.replaced_workers == replaced + 2 and victim not in ray_backend.actor_pids


def test_a_prediction_request_is_answered_after_an_actor_was_killed(cluster, fine_model) -> None:
    config = ModelConfig(backend="ray", workers=2, ray_address=cluster.address, schedule="parareal",
                         coarse_model="analytical", fidelity="full")
    initial = fine_model.layout.compose(np.array([-0.25, 0.0]), np.array([obj.pose for obj in SCENE.objects]))
    controls = np.tile([[0.04, 0.0]], (2, 3, 1))
    request = PredictionRequest(initial, controls, np.full((2, 3), 0.5), iterations=1)
    with PredictionEngine(SCENE, config) as engine:
        assert isinstance(engine.backend, RayBackend)
        first = engine.predict(request)
        os.kill(engine.backend.actor_pids[0], signal.SIGKILL)
        second = engine.predict(request)
        assert engine.backend.replaced_workers == 1
    np.testing.assert_array_equal(second.trajectories, first.trajectories)


def test_make_backend_builds_it_by_name(cluster, fine_model) -> None:
    with make_backend("ray", fine_model, workers=1, ray_address=cluster.address) as backend:
        assert isinstance(backend, RayBackend) and backend.workers == 1
    with pytest.raises(ValueError, match="workers"):
        RayBackend(SCENE, workers=0)
    with pytest.raises(WorkerError, match="workers"):  # more actors than free CPUs: refused at once
        RayBackend(SCENE, workers=2 * CPUS_PER_NODE + 1)
