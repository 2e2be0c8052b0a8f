"""Fine-model backends: bit-identical to the serial reference; the process pool survives
killed workers and fails cleanly when it cannot."""

from __future__ import annotations

import os
import signal
import sys

import numpy as np
import pytest

from parapush.physics.backends import (
    FineBackend,
    ProcessBackend,
    SerialBackend,
    ThreadBackend,
    WorkerError,
    make_backend,
)
from parapush.physics.fine import FineModel
from parapush.scene import scene_from_dict

SCENE = scene_from_dict({
    "name": "two_objects",
    "pusher": {"position": [-0.25, 0.0]},
    "objects": [
        {"name": "disc", "radius": 0.0512, "pose": [-0.15, 0.0, 0.0]},
        {"name": "box", "shape": "box", "half_extents": [0.04, 0.03], "pose": [-0.02, 0.05, 0.4]},
    ],
    "obstacles": [{"name": "post", "pose": [0.1, -0.1, 0.0]}],
})


@pytest.fixture(scope="module")
def fine_model():
    return FineModel(SCENE)


def random_inputs(model: FineModel, count: int, seed: int):
    """Random pushes near the objects, mixed durations, one NaN row."""
    rng = np.random.default_rng(seed)
    layout = model.layout
    pusher = np.array([-0.25, 0.0]) + rng.normal(0.0, 0.02, (count, 2))
    poses = np.array([obj.pose for obj in SCENE.objects])[None] + rng.normal(0, 0.003, (count, 2, 3))
    states = layout.compose(pusher, poses, rng.normal(0, 0.01, (count, 2)))
    angles = rng.uniform(-0.5, 0.5, count)
    controls = rng.uniform(0.03, 0.1, count)[:, None] * np.stack([np.cos(angles), np.sin(angles)], 1)
    durations = rng.choice([0.2, 0.35, 0.5], count)
    states[count // 2] = np.nan
    return states, controls, durations


def kill_after_next_request(backend: ProcessBackend, index: int) -> None:
    """Fault injection: worker ``index`` is SIGKILLed as soon as its next request is sent."""
    worker = backend._pool[index]
    send = worker.connection.send

    def send_then_kill(message):
        send(message)
        os.kill(worker.process.pid, signal.SIGKILL)

    worker.connection.send = send_then_kill


def test_backends_implement_the_interface(fine_model):
    with SerialBackend(fine_model) as serial, ThreadBackend(fine_model, threads=2) as threads:
        assert isinstance(serial, FineBackend) and isinstance(threads, FineBackend)
        assert serial.workers == 1 and threads.workers == 2


@pytest.mark.parametrize("engine", ["rollout", "batch"])
def test_thread_backend_is_bit_identical_to_serial(fine_model, engine):
    states, controls, durations = random_inputs(fine_model, 9, seed=3)
    reference = fine_model.propagate(states, controls, durations)
    assert np.isnan(reference[4]).all() and np.isfinite(np.delete(reference, 4, 0)).all()
    with ThreadBackend(fine_model, threads=2, engine=engine) as backend:
        first = backend.propagate(states, controls, durations)
        second = backend.propagate(states[::-1], controls[::-1], durations[::-1])  # reuse, other order
    np.testing.assert_array_equal(first, reference)
    np.testing.assert_array_equal(second, reference[::-1])


def test_thread_backend_rejects_bad_arguments_and_use_after_close(fine_model):
    with pytest.raises(ValueError, match="engine"):
        ThreadBackend(fine_model, engine="gpu")
    with pytest.raises(ValueError, match="threads"):
        ThreadBackend(fine_model, threads=0)
    backend = ThreadBackend(fine_model, threads=1)
    backend.close()
    backend.close()  # idempotent
    with pytest.raises(RuntimeError, match="close"):
        backend.propagate(*random_inputs(fine_model, 2, seed=0))


def test_worker_backends_check_dynamic_against_the_batch(fine_model):
    states, controls, durations = random_inputs(fine_model, 3, seed=0)
    wrong_shape = np.ones((2, 2), dtype=bool)
    with ThreadBackend(fine_model, threads=1, engine="rollout") as threads:
        with pytest.raises(ValueError, match=r"dynamic: expected a bool array of shape \(3, 2\)"):
            threads.propagate(states, controls, durations, dynamic=wrong_shape)
        with pytest.raises(ValueError, match="dynamic: give either models or dynamic, not both"):
            threads.propagate(states, controls, durations, dynamic=np.ones((3, 2), dtype=bool),
                              models=[fine_model.mj_model] * 3)
    with ProcessBackend(SCENE, workers=1) as processes, \
            pytest.raises(ValueError, match=r"dynamic: expected a bool array of shape \(3, 2\)"):
        processes.propagate(states, controls, durations, dynamic=wrong_shape)


def test_make_backend_by_name(fine_model):
    with pytest.raises(ValueError, match="name"):
        make_backend("cluster", fine_model)
    with make_backend("serial", fine_model) as serial:
        assert isinstance(serial, SerialBackend)
    with make_backend("threads", fine_model, workers=2) as threads:
        assert isinstance(threads, ThreadBackend) and threads.workers == 2


def test_the_ray_backend_without_ray_says_how_to_install_it(fine_model, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(ImportError, match=r"parapush\[ray\]"):
        make_backend("ray", fine_model)


def test_process_backend_is_bit_identical_and_survives_killed_workers(fine_model):
    states, controls, durations = random_inputs(fine_model, 8, seed=5)
    reference = fine_model.propagate(states, controls, durations)
    with make_backend("processes", fine_model, workers=2) as backend:
        assert isinstance(backend, ProcessBackend) and backend.workers == 2
        np.testing.assert_array_equal(backend.propagate(states, controls, durations), reference)

        # killed between calls: replaced at the next call, results still exact
        os.kill(backend.worker_pids[0], signal.SIGKILL)
        np.testing.assert_array_equal(backend.propagate(states, controls, durations), reference)
        assert backend.replaced_workers == 1

        # killed during a call, right after it was sent its chunk: the chunk is resubmitted. Pushes of
        # 2 s keep the victim busy ~0.1 s, so it cannot answer before the kill lands (with the short
        # ones it sometimes did on a loaded machine, and its death was only seen at the next call)
        long_durations = np.full_like(durations, 2.0)
        long_reference = fine_model.propagate(states, controls, long_durations)
        victim = backend.worker_pids[1]
        kill_after_next_request(backend, 1)
        np.testing.assert_array_equal(backend.propagate(states, controls, long_durations), long_reference)
        assert backend.replaced_workers == 2 and victim not in backend.worker_pids


def test_process_backend_fails_cleanly_when_workers_keep_dying(fine_model):
    states, controls, durations = random_inputs(fine_model, 3, seed=7)
    with ProcessBackend(SCENE, fine_model.settings, workers=1, retries=0) as backend:
        kill_after_next_request(backend, 0)
        with pytest.raises(WorkerError, match="died"):
            backend.propagate(states, controls, durations)
        # the pool was repaired: the next call works
        np.testing.assert_array_equal(
            backend.propagate(states, controls, durations), fine_model.propagate(states, controls, durations)
        )


def test_process_backend_times_out_on_a_hung_worker_instead_of_waiting_forever(fine_model):
    states, controls, durations = random_inputs(fine_model, 3, seed=9)
    with ProcessBackend(SCENE, fine_model.settings, workers=1, timeout=0.5) as backend:
        worker = backend._pool[0]
        send = worker.connection.send

        def send_then_freeze(message):
            send(message)
            os.kill(worker.process.pid, signal.SIGSTOP)  # alive but never answers

        worker.connection.send = send_then_freeze
        with pytest.raises(WorkerError, match="timeout"):
            backend.propagate(states, controls, durations)
        np.testing.assert_array_equal(  # the frozen worker was killed and is replaced
            backend.propagate(states, controls, durations), fine_model.propagate(states, controls, durations)
        )
