"""The process backend: a persistent pool of worker processes, each with its own model.

Processes bring no speed over threads here (``mj_step`` releases the GIL) but isolation:
a crash in one worker cannot take the caller down, and the design generalises to other
machines. Each worker is a spawned process that builds the fine model once and then
serves requests over its own pipe. The parent splits a call into one chunk per worker and
waits on the pipes *and* the process sentinels together, so a worker that dies is noticed
at once: it is replaced and its chunk resubmitted (up to ``retries`` times per call),
after which the call raises :class:`WorkerError`. A call never waits forever on a dead
worker; an optional ``timeout`` bounds a call whose workers hang.

Workers run ``mujoco.rollout`` on one thread, which is bit-identical to the serial
reference :meth:`parapush.physics.fine.FineModel.propagate`.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import mujoco
import mujoco.rollout
import numpy as np

from parapush.physics.backends.base import WorkerBackend
from parapush.physics.backends.threads import check_workers
from parapush.physics.fine import FineModel
from parapush.physics.fine_settings import FineSettings
from parapush.scene import Scene
from parapush.validation import check_integer, check_optional_positive

_START_TIMEOUT = 120.0
"""Seconds a new worker may take to import MuJoCo and build its model."""


class WorkerError(RuntimeError):
    """A worker process died or failed and the call could not be completed."""


def simulate_chunk(
    fine_model: FineModel, runner: mujoco.rollout.Rollout, datas: dict[str, mujoco.MjData],
    physics: np.ndarray, controls: np.ndarray, steps: np.ndarray, dynamic: np.ndarray | None,
    row_models: list[mujoco.MjModel] | None = None,
) -> np.ndarray:
    """Simulate a chunk of segments with single-threaded rollout, grouped by step count
    (``dynamic``: (M, n) bool per row for the fidelity variants, or None; ``row_models``: (M,)
    per-row variants of the fine model's ``mj_model`` of the same sizes, or None). Shared by
    the worker processes and the Ray actors (:mod:`parapush.physics.backends.ray_actors`)."""
    result = physics.copy()
    for step_count in np.unique(steps):
        rows = np.flatnonzero(steps == step_count)
        count = rows.size
        control = np.ascontiguousarray(np.broadcast_to(controls[rows, None, :], (count, int(step_count), 2)))
        if dynamic is None:
            models = fine_model.mj_model if row_models is None else [row_models[row] for row in rows]
            data = datas["full"]
        else:
            models = fine_model.fidelity_models(dynamic[rows])
            if "fidelity" not in datas:
                datas["fidelity"] = fine_model.new_fidelity_data()
            data = datas["fidelity"]
        trajectory, _ = runner.rollout(
            models, [data], physics[rows], control, nstep=int(step_count),
            initial_warmstart=np.zeros((count, fine_model.mj_model.nv)),
        )
        result[rows] = trajectory[:, -1, :]
    return result


def split_by_steps(rows: np.ndarray, steps: np.ndarray, parts: int) -> list[np.ndarray]:
    """Split ``rows`` into at most ``parts`` consecutive chunks of about equal total step count
    (``steps``: (M,) step count of every row of the batch)."""
    if rows.size == 0:
        return []
    cost = np.cumsum(steps[rows], dtype=np.float64)
    parts = min(parts, rows.size)
    bounds = np.searchsorted(cost, cost[-1] * np.arange(1, parts) / parts, side="left") + 1
    return [chunk for chunk in np.split(rows, bounds) if chunk.size]


def _worker_main(connection: multiprocessing.connection.Connection, scene: Scene, settings: FineSettings) -> None:
    """Entry point of a worker process: build the model, then serve ``("run", ...)`` requests."""
    try:
        fine_model = FineModel(scene, settings)
        runner = mujoco.rollout.Rollout(nthread=0)
        datas = {"full": fine_model.new_data()}
        connection.send(("ready", fine_model.rest_heights))
    except Exception:  # report any start-up failure to the parent, then exit
        connection.send(("failed", traceback.format_exc()))
        return
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if message[0] == "stop":
            return
        _, task_id, physics, controls, steps, dynamic = message
        try:
            result = simulate_chunk(fine_model, runner, datas, physics, controls, steps, dynamic)
            connection.send(("done", task_id, result))
        except Exception:
            connection.send(("error", task_id, traceback.format_exc()))


@dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    connection: multiprocessing.connection.Connection
    task: int | None = None  # index of the chunk it is computing


@dataclass
class _Chunk:
    rows: np.ndarray
    attempts: int = 0
    result: np.ndarray | None = None
    deaths: list[str] = field(default_factory=list)


class ProcessBackend(WorkerBackend):
    """Persistent pool of ``workers`` spawned processes; each builds the fine model once.

    Args:
        scene: the scene.
        settings: the fine model's settings.
        workers: number of processes (defaults to the cores available).
        retries: how many times per call a chunk lost with a dead worker is resubmitted.
        timeout: seconds a call may take before the pool is restarted and
            :class:`WorkerError` raised; None waits as long as the workers are alive.

    Attributes:
        workers: number of worker processes.
        layout: the state layout.
        fine_model: a fine model in this process (for state conversion and the checks).
        replaced_workers: how many dead workers have been replaced so far.
    """

    def __init__(
        self, scene: Scene, settings: FineSettings | None = None, *, workers: int | None = None,
        retries: int = 2, timeout: float | None = None,
    ) -> None:
        self.fine_model = FineModel(scene, settings)
        self.layout = self.fine_model.layout
        self.workers = check_workers(workers, "workers")
        check_integer("retries", retries, minimum=0)
        check_optional_positive("timeout", timeout)
        self.retries = retries
        self.timeout = timeout
        self.replaced_workers = 0
        self._context = multiprocessing.get_context("spawn")
        self._pool: list[_Worker] = []
        super().__init__()
        try:
            self._pool = [self._start_worker() for _ in range(self.workers)]
        except BaseException:
            self._shutdown()
            raise

    # -- pool management ------------------------------------------------------------------
    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the current workers (for monitoring and fault-injection tests)."""
        return [worker.process.pid for worker in self._pool if worker.process.pid is not None]

    def _start_worker(self) -> _Worker:
        parent_end, child_end = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_main, args=(child_end, self.fine_model.scene, self.fine_model.settings),
            name="parapush-fine-worker", daemon=True,
        )
        process.start()
        child_end.close()
        ready = multiprocessing.connection.wait([parent_end, process.sentinel], timeout=_START_TIMEOUT)
        if parent_end not in ready:
            process.kill()
            process.join(1.0)
            reason = "did not start in time" if not ready else f"exited with code {process.exitcode}"
            raise WorkerError(f"fine-model worker process {reason} while building the model")
        try:
            message = parent_end.recv()
        except (EOFError, OSError):
            process.join(1.0)
            raise WorkerError(
                f"fine-model worker process exited with code {process.exitcode} while building the model"
            ) from None
        if message[0] != "ready":
            process.join(1.0)
            raise WorkerError(f"fine-model worker failed to build the model:\n{message[1]}")
        if not np.array_equal(message[1], self.fine_model.rest_heights):
            process.kill()
            raise WorkerError("fine-model worker settled the objects differently from the parent process")
        return _Worker(process, parent_end)

    def _replace(self, index: int) -> None:
        dead = self._pool[index]
        dead.connection.close()
        dead.process.join(1.0)
        self._pool[index] = self._start_worker()
        self.replaced_workers += 1

    # -- calls ----------------------------------------------------------------------------
    def propagate(
        self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray, *, dynamic: np.ndarray | None = None
    ) -> np.ndarray:
        """As :meth:`parapush.physics.fine.FineModel.propagate`, bit-identical to it (each
        worker builds the fidelity variants of ``dynamic`` from its own model).

        Raises:
            WorkerError: a chunk's worker died more than ``retries`` times, a worker raised,
                or the call exceeded ``timeout``.
        """
        model = self.fine_model
        states, controls, durations, dynamic = self._checked_batch(states, controls, durations, dynamic)
        steps = model.steps_for_each(durations)
        physics = model.to_physics_state(states)
        valid_rows = np.flatnonzero(np.all(np.isfinite(physics), axis=1))
        with self._lock:
            self._check_open()
            self._ensure_alive()
            chunks = [_Chunk(rows) for rows in split_by_steps(valid_rows, steps, self.workers)]
            self._run(chunks, physics, controls, steps, dynamic)
        for chunk in chunks:
            physics[chunk.rows] = chunk.result
        return model.from_physics_state(physics)

    def _run(
        self, chunks: list[_Chunk], physics: np.ndarray, controls: np.ndarray, steps: np.ndarray,
        dynamic: np.ndarray | None,
    ) -> None:
        pending = list(range(len(chunks)))
        deadline = None if self.timeout is None else time.monotonic() + self.timeout

        def submit(worker: _Worker, index: int) -> None:
            chunk = chunks[index]
            chunk.attempts += 1
            worker.task = index
            worker.connection.send(("run", index, physics[chunk.rows], controls[chunk.rows], steps[chunk.rows],
                                    None if dynamic is None else dynamic[chunk.rows]))

        try:
            while pending or any(worker.task is not None for worker in self._pool):
                for worker in self._pool:
                    if worker.task is None and pending:
                        # a dead worker fails the send; its sentinel is ready and is handled below
                        with contextlib.suppress(BrokenPipeError, OSError):
                            submit(worker, pending.pop(0))
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                waitables: list[Any] = [w.connection for w in self._pool if w.task is not None]
                waitables += [w.process.sentinel for w in self._pool if w.task is not None]
                ready = multiprocessing.connection.wait(waitables, timeout=remaining)
                if not ready:
                    raise WorkerError(f"fine-model call exceeded the timeout of {self.timeout} s")
                for index, worker in enumerate(self._pool):
                    if worker.task is None:
                        continue
                    if worker.connection in ready and self._receive(worker, chunks):
                        continue
                    if worker.process.sentinel in ready or not worker.process.is_alive():
                        self._handle_death(index, chunks, pending)
        except BaseException:
            # the pool may hold half-finished requests: restart it so the next call starts clean
            self._restart_pool()
            raise

    def _receive(self, worker: _Worker, chunks: list[_Chunk]) -> bool:
        """Read one reply; False if the pipe broke (the worker died)."""
        try:
            message = worker.connection.recv()
        except (EOFError, OSError):
            return False
        kind, index, payload = message
        if index != worker.task:
            raise WorkerError(f"fine-model worker answered chunk {index} while computing chunk {worker.task}")
        worker.task = None
        if kind == "error":
            raise WorkerError(f"fine-model worker {worker.process.pid} raised:\n{payload}")
        chunks[index].result = payload
        return True

    def _handle_death(self, index: int, chunks: list[_Chunk], pending: list[int]) -> None:
        worker = self._pool[index]
        worker.process.join(1.0)
        chunk_index = worker.task
        assert chunk_index is not None
        chunk = chunks[chunk_index]
        chunk.deaths.append(f"pid {worker.process.pid} exit code {worker.process.exitcode}")
        worker.task = None
        self._replace(index)
        if chunk.attempts > self.retries:
            raise WorkerError(
                f"fine-model workers died {len(chunk.deaths)} times on the same chunk of "
                f"{chunk.rows.size} segment(s) ({'; '.join(chunk.deaths)}); giving up after "
                f"{self.retries} retries"
            )
        pending.append(chunk_index)

    def _restart_pool(self) -> None:
        """Kill the workers that were busy when a call failed; :meth:`_ensure_alive` replaces
        them at the next call."""
        for worker in self._pool:
            if worker.task is not None:
                worker.process.kill()
                worker.process.join(1.0)
                worker.task = None

    def _ensure_alive(self) -> None:
        """Replace workers that died between calls."""
        for index, worker in enumerate(self._pool):
            if not worker.process.is_alive():
                self._replace(index)

    # -- shutdown -------------------------------------------------------------------------
    def _shutdown(self) -> None:
        for worker in self._pool:
            with contextlib.suppress(BrokenPipeError, OSError):
                worker.connection.send(("stop",))
        for worker in self._pool:
            worker.process.join(2.0)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(1.0)
            worker.connection.close()
        self._pool = []

    def _release(self) -> None:
        """Stop the worker processes (:meth:`close`)."""
        self._shutdown()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()
