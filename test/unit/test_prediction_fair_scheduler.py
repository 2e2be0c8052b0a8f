"""The fair fine scheduler: concurrent calls take turns batch by batch on one backend, and every
answer is bit-identical to the answer computed alone; the engine solves requests concurrently."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from parapush.graph import resolve_scene_path
from parapush.physics.backends import ThreadBackend
from parapush.physics.fine import FineModel
from parapush.prediction import ModelConfig, PredictionEngine, PredictionRequest
from parapush.prediction.fair_scheduler import FairFineScheduler
from parapush.prediction.model_access import ModelAccessLock
from parapush.scene import load_scene

SCENE = load_scene(resolve_scene_path("isrr_obstacle.yaml"))
LAYOUT = SCENE.layout
INITIAL = LAYOUT.compose(SCENE.pusher.position, np.array([spec.pose for spec in SCENE.objects]))
PUSH = np.array([[0.025, 0.0], [0.025, 0.005], [0.02, -0.01], [0.025, 0.0]])


def rows(count: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    states = np.repeat(INITIAL[None], count, axis=0)
    states[:, :2] += rng.normal(0.0, 0.002, (count, 2))
    controls = np.column_stack([rng.uniform(0.01, 0.03, count), rng.normal(0.0, 0.005, count)])
    durations = rng.choice([0.2, 0.3], count)
    return states, controls, durations


def wait_until(condition, what: str, timeout: float = 10.0) -> None:
    """Poll ``condition()`` until it holds; fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.001)


TAGS = {0.4: "medium", 0.25: "small"}
"""Durations that tag the rows of a call (the large call's are 0.2 or 0.3 s)."""


class RecordingBackend:
    """The thread backend, recording which call each batch belonged to (by its first row's
    duration) and holding the first batch until ``release`` is set."""

    def __init__(self, backend: ThreadBackend) -> None:
        self.backend = backend
        self.workers = backend.workers
        self.layout = backend.layout
        self.order: list[str] = []
        self.release = threading.Event()

    def propagate(self, states, controls, durations):
        self.order.append(TAGS.get(float(durations[0]), "large"))
        assert self.release.wait(10.0)
        return self.backend.propagate(states, controls, durations)


@pytest.fixture(scope="module")
def thread_backend():
    with ThreadBackend(FineModel(SCENE), threads=2) as backend:
        yield backend


def test_new_calls_go_next_then_calls_take_turns_and_every_answer_is_bit_identical(thread_backend) -> None:
    recording = RecordingBackend(thread_backend)
    scheduler = FairFineScheduler(recording, batch_rows=4)
    calls = {"large": rows(40, seed=1), "medium": rows(12, seed=2), "small": rows(3, seed=3)}  # 10, 3, 1 batches
    calls["medium"][2][:] = 0.4
    calls["small"][2][:] = 0.25
    expected = {name: thread_backend.propagate(*call) for name, call in calls.items()}
    answers = {}

    def start(name: str) -> threading.Thread:
        thread = threading.Thread(target=lambda: answers.__setitem__(name, scheduler.propagate(*calls[name])))
        thread.start()
        return thread

    threads = [start("large")]
    wait_until(lambda: recording.order, "the large call's first batch running (held)")
    threads.append(start("medium"))
    wait_until(lambda: scheduler.calls_in_progress >= 2, "the medium call in progress")
    threads.append(start("small"))
    wait_until(lambda: scheduler.calls_in_progress >= 3, "the small call in progress")
    recording.release.set()
    for thread in threads:
        thread.join(30.0)
    # The calls that arrived while the large one's first batch ran go next (the earlier first),
    # then the calls in progress take turns: the small call's only batch ran third of 14, not last.
    assert recording.order[:7] == ["large", "medium", "small", "large", "medium", "large", "medium"]
    assert recording.order[7:] == ["large"] * 7 and scheduler.batches_run == 14
    for name, answer in answers.items():
        np.testing.assert_array_equal(answer, expected[name])
    assert len(answers) == 3 and scheduler.cost_estimator.fine_rate is not None


def test_a_failing_batch_fails_its_call_and_the_scheduler_goes_on(thread_backend) -> None:
    class FailingOnLongRows:
        workers = thread_backend.workers
        layout = thread_backend.layout

        def propagate(self, states, controls, durations):
            if np.any(durations > 1.0):
                raise RuntimeError("worker died")
            return thread_backend.propagate(states, controls, durations)

    scheduler = FairFineScheduler(FailingOnLongRows(), batch_rows=2)
    bad = rows(6, seed=3)
    bad[2][3] = 2.0  # the second batch fails
    with pytest.raises(RuntimeError, match="worker died"):
        scheduler.propagate(*bad)
    good = rows(5, seed=4)
    np.testing.assert_array_equal(scheduler.propagate(*good), thread_backend.propagate(*good))
    assert scheduler.calls_in_progress == 0
    scheduler.close()
    with pytest.raises(RuntimeError, match="after close"):
        scheduler.propagate(*good)


def test_a_model_change_waits_for_predictions_and_goes_before_later_ones() -> None:
    lock = ModelAccessLock()
    events: list[str] = []
    reading = threading.Event()
    with lock.shared():
        writer = threading.Thread(target=lambda: _hold(lock.exclusive(), events, "write"))
        writer.start()
        wait_until(lambda: lock._writers_waiting, "the change waiting for this prediction")
        reader = threading.Thread(target=lambda: (reading.set(), _hold(lock.shared(), events, "read")))
        reader.start()
        assert reading.wait(5.0), "the second reader never started"
        events.append("first read ends")
    writer.join(5.0)
    reader.join(5.0)
    assert events == ["first read ends", "write", "read"]


def _hold(context, events: list[str], name: str) -> None:
    with context:
        events.append(name)


@pytest.mark.parametrize("model, schedule", [("parareal", "parareal"), ("fine", "auto"), ("parareal", "auto")])
def test_concurrent_requests_get_the_answers_computed_alone(model, schedule) -> None:
    config = ModelConfig(backend="threads", workers=2, schedule=schedule, coarse_model="analytical")
    rng = np.random.default_rng(11)
    requests = [
        PredictionRequest(INITIAL, PUSH[None] + rng.normal(0.0, 0.002, (count, 4, 2)), np.full((count, 4), 0.5),
                          model=model, iterations=iterations)
        for count, iterations in ((24, 2), (1, 1), (3, 4), (1, 1))
    ]
    with PredictionEngine(SCENE, config) as engine:
        engine.predict(requests[1])  # calibrate the cost model so that auto chooses the same way twice
        alone = [engine.predict(request) for request in requests]
        together: dict[int, object] = {}
        threads = [threading.Thread(target=lambda i=i: together.__setitem__(i, engine.predict(requests[i])))
                   for i in range(len(requests))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60.0)
        assert engine.fine_scheduler.calls_in_progress == 0
    for index, outcome in enumerate(alone):
        assert together[index].schedule == outcome.schedule
        np.testing.assert_array_equal(together[index].trajectories, outcome.trajectories)
