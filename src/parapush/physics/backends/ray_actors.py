"""The Ray backend: Ray actors on a cluster, each holding its own fine model.

For users who outgrow one machine: every actor builds the fine model (MuJoCo model and
data) once and then simulates batches of rows with single-threaded ``mujoco.rollout``, which
is bit-identical to :meth:`parapush.physics.fine.FineModel.propagate` and to the thread
backend. A call is split into at most ``workers`` chunks of about equal step count, and into
fewer when the rows hold little work, so that every actor call carries at least
``min_call_seconds`` of simulation (Ray's tasks cost about a millisecond each; below ~10 ms of
work per call the overhead eats the speed-up). The work per step is learned from the actors'
own timings; the per-call overhead (wall time of a call minus its longest chunk) is measured
too and given to the cost model (:attr:`RayBackend.call_overhead`).

Connection: ``address`` (``"ray://…"`` or ``"host:port"`` of a cluster's head), else
``RAY_ADDRESS``, else a Ray cluster local to this process is started. A process that already
called ``ray.init`` keeps its connection. Every node must be able to import ``parapush`` (the
same installation as the caller's).

Failures: an actor that dies (its node lost, its process killed) is replaced by a new one and
its rows are run again, up to ``retries`` times per chunk; after that, or when an actor raises,
or when a call exceeds ``timeout``, the call raises :class:`~parapush.physics.backends.processes.WorkerError`.

Ray is an optional dependency (``pip install parapush[ray]``); it is imported when a backend is
built.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mujoco
import mujoco.rollout
import numpy as np

from parapush.physics.backends.base import WorkerBackend
from parapush.physics.backends.processes import WorkerError, simulate_chunk, split_by_steps
from parapush.physics.fine import FineModel
from parapush.physics.fine_settings import FineSettings
from parapush.scene import Scene
from parapush.validation import check_integer, check_optional_positive, check_positive

MIN_CALL_SECONDS = 0.01
"""Simulation work per actor call below which rows are merged into fewer calls (Ray's docs:
tasks of less than ~10 ms do not speed up)."""

_START_TIMEOUT = 120.0
"""Seconds a new actor may take to import MuJoCo and build its model."""

_CPU_WAIT = 10.0
"""Seconds a new backend waits for the free CPUs it needs (Ray frees a killed actor's CPU late)."""

_SMOOTHING = 0.3
"""Weight of a new sample in the running step-cost and overhead estimates."""


def import_ray() -> Any:
    """The ``ray`` module, or ImportError saying how to install it."""
    try:
        import ray
    except ImportError as error:
        raise ImportError("backend 'ray' needs Ray: pip install 'parapush[ray]' (or pip install ray)") from error
    return ray


class FineActor:
    """What one Ray actor runs: a fine model and a single-threaded rollout runner.

    Args:
        scene: the scene.
        settings: the fine model's settings.
    """

    def __init__(self, scene: Scene, settings: FineSettings) -> None:
        self.fine_model = FineModel(scene, settings)
        self.runner = mujoco.rollout.Rollout(nthread=0)
        self.datas = {"full": self.fine_model.new_data()}

    def ready(self) -> tuple[int, np.ndarray]:
        """The actor's process id and its settled object heights (checked against the caller's)."""
        return os.getpid(), self.fine_model.rest_heights

    def simulate(
        self, physics: np.ndarray, controls: np.ndarray, steps: np.ndarray, dynamic: np.ndarray | None,
        models: list[mujoco.MjModel] | None, model_index: np.ndarray | None,
    ) -> tuple[np.ndarray, float]:
        """Final physics states of the chunk's rows and the seconds the simulation took
        (``models[model_index[i]]`` is row i's model when per-row models are given)."""
        started = time.perf_counter()
        row_models = None if models is None else [models[index] for index in model_index]
        result = simulate_chunk(self.fine_model, self.runner, self.datas, physics, controls, steps, dynamic,
                                row_models)
        return result, time.perf_counter() - started


@dataclass
class _Chunk:
    rows: np.ndarray
    attempts: int = 0
    result: np.ndarray | None = None
    seconds: float = 0.0
    deaths: list[str] = field(default_factory=list)


class RayBackend(WorkerBackend):
    """``workers`` Ray actors, each with its own fine model, spread over the cluster's nodes.

    Args:
        scene: the scene.
        settings: the fine model's settings.
        workers: actors (one CPU each); None: the CPUs of the cluster.
        address: the cluster to connect to; None: ``RAY_ADDRESS``, else a local cluster.
        retries: how many times per call a chunk lost with a dead actor is run again.
        timeout: seconds a call may take before :class:`WorkerError`; None: no limit.
        min_call_seconds: least simulation work per actor call, s.

    Attributes:
        workers: number of actors.
        layout: the state layout.
        fine_model: a fine model in this process (state conversion and the checks).
        replaced_workers: how many dead actors have been replaced so far.
        call_overhead: running estimate of a call's wall time beyond its longest chunk, s
            (Ray's scheduling and transfers); measured with an empty round at start.
    """

    def __init__(
        self, scene: Scene, settings: FineSettings | None = None, *, workers: int | None = None,
        address: str | None = None, retries: int = 2, timeout: float | None = None,
        min_call_seconds: float = MIN_CALL_SECONDS,
    ) -> None:
        self._ray = import_ray()
        if workers is not None:
            check_integer("workers", workers, minimum=1)
        if address is not None and (not isinstance(address, str) or not address.strip()):
            raise ValueError(f"address: expected a Ray cluster address or None, got {address!r}")
        check_integer("retries", retries, minimum=0)
        check_optional_positive("timeout", timeout)
        self.min_call_seconds = float(check_positive("min_call_seconds", min_call_seconds))
        self.fine_model = FineModel(scene, settings)
        self.layout = self.fine_model.layout
        self.retries = retries
        self.timeout = timeout
        self.replaced_workers = 0
        self._step_seconds: float | None = None
        self._actors: list[Any] = []
        super().__init__()
        self._connect(address, workers)
        self.workers = workers if workers is not None else max(1, int(self._ray.cluster_resources().get("CPU", 1)))
        self._wait_for_cpus()
        self._actor_class = self._ray.remote(FineActor).options(
            num_cpus=1, max_restarts=0, scheduling_strategy="SPREAD")
        try:
            self._actors = [self._start_actor() for _ in range(self.workers)]
            self.call_overhead = self._measure_overhead()
        except BaseException:
            self._kill_actors()
            raise

    # -- cluster and actors ---------------------------------------------------------------
    def _connect(self, address: str | None, workers: int | None) -> None:
        ray = self._ray
        if ray.is_initialized():
            return
        if address is not None or os.environ.get("RAY_ADDRESS"):
            ray.init(address=address, log_to_driver=False)
        else:  # a cluster local to this process, with a CPU per requested worker
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)

    def _wait_for_cpus(self) -> None:
        """Refuse at once (after ``_CPU_WAIT`` s for CPUs that killed actors release) when the
        cluster has fewer free CPUs than actors: an actor without a CPU would wait for one forever."""
        until = time.monotonic() + _CPU_WAIT
        while (free := int(self._ray.available_resources().get("CPU", 0))) < self.workers:
            if time.monotonic() > until:
                raise WorkerError(f"workers: {self.workers} Ray actors need a CPU each, the cluster has {free} free")
            time.sleep(0.1)

    def _start_actor(self) -> Any:
        actor = self._actor_class.remote(self.fine_model.scene, self.fine_model.settings)
        try:
            _, heights = self._ray.get(actor.ready.remote(), timeout=_START_TIMEOUT)
        except Exception as error:
            self._ray.kill(actor, no_restart=True)
            raise WorkerError(f"fine-model Ray actor failed to build the model: {error}") from None
        if not np.array_equal(heights, self.fine_model.rest_heights):
            self._ray.kill(actor, no_restart=True)
            raise WorkerError("fine-model Ray actor settled the objects differently from this process")
        return actor

    def _measure_overhead(self) -> float:
        """Wall time of one empty round trip to every actor, s."""
        started = time.perf_counter()
        self._ray.get([actor.ready.remote() for actor in self._actors], timeout=_START_TIMEOUT)
        return time.perf_counter() - started

    @property
    def actor_pids(self) -> list[int]:
        """Process ids of the actors (for monitoring and fault-injection tests)."""
        return [pid for pid, _ in self._ray.get([actor.ready.remote() for actor in self._actors])]

    def _replace(self, index: int) -> None:
        self._ray.kill(self._actors[index], no_restart=True)
        self._actors[index] = self._start_actor()
        self.replaced_workers += 1

    # -- calls ----------------------------------------------------------------------------
    def propagate(
        self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray, *,
        models: Sequence[mujoco.MjModel] | None = None, dynamic: np.ndarray | None = None,
    ) -> np.ndarray:
        """As :meth:`parapush.physics.fine.FineModel.propagate`, bit-identical to it.

        Args:
            models: optional (M,) MuJoCo models, one per row (variants of the fine model's
                ``mj_model`` with the same sizes, as the thread backend takes them); each
                distinct model is sent to the cluster once per call.
            dynamic: optional (M, n) bool, the objects that move in each row (each actor
                builds the fidelity variants from its own model); not with ``models``.

        Raises:
            WorkerError: a chunk's actor died more than ``retries`` times, an actor raised,
                or the call exceeded ``timeout``.
        """
        model = self.fine_model
        states, controls, durations, dynamic = self._checked_batch(states, controls, durations, dynamic, models)
        unique_models: list[mujoco.MjModel] | None = None
        model_index: np.ndarray | None = None
        if models is not None:
            if len(models) != states.shape[0]:
                raise ValueError(f"models: expected one model per row ({states.shape[0]}), got {len(models)}")
            positions: dict[int, int] = {}
            unique_models = []
            for row_model in models:
                if id(row_model) not in positions:
                    positions[id(row_model)] = len(unique_models)
                    unique_models.append(row_model)
            model_index = np.array([positions[id(row_model)] for row_model in models], dtype=np.int64)
        steps = model.steps_for_each(durations)
        physics = model.to_physics_state(states)
        valid_rows = np.flatnonzero(np.all(np.isfinite(physics), axis=1))
        with self._lock:
            self._check_open()
            chunks = [_Chunk(rows) for rows in split_by_steps(valid_rows, steps, self._parts(steps[valid_rows]))]
            started = time.perf_counter()
            self._run(chunks, physics, controls, steps, dynamic, unique_models, model_index)
            self._learn(chunks, steps, time.perf_counter() - started)
        for chunk in chunks:
            physics[chunk.rows] = chunk.result
        return model.from_physics_state(physics)

    def _parts(self, steps: np.ndarray) -> int:
        """Chunks for rows of these step counts: one per actor, fewer when the work is small."""
        if self._step_seconds is None:
            return self.workers
        work = float(steps.sum()) * self._step_seconds
        return max(1, min(self.workers, math.floor(work / self.min_call_seconds)))

    def _learn(self, chunks: list[_Chunk], steps: np.ndarray, wall: float) -> None:
        """Update the per-step cost and the per-call overhead from a finished call."""
        timed = [chunk for chunk in chunks if chunk.seconds > 0.0 and chunk.attempts == 1]
        if not timed:
            return
        per_step = sum(chunk.seconds for chunk in timed) / float(sum(steps[chunk.rows].sum() for chunk in timed))
        overhead = max(0.0, wall - max(chunk.seconds for chunk in timed))
        if self._step_seconds is None:
            self._step_seconds = per_step
        else:
            self._step_seconds += _SMOOTHING * (per_step - self._step_seconds)
        self.call_overhead += _SMOOTHING * (overhead - self.call_overhead)

    def _run(
        self, chunks: list[_Chunk], physics: np.ndarray, controls: np.ndarray, steps: np.ndarray,
        dynamic: np.ndarray | None, models: list[mujoco.MjModel] | None, model_index: np.ndarray | None,
    ) -> None:
        ray = self._ray
        models_ref = None if models is None else ray.put(models)
        pending = list(range(len(chunks)))
        idle = list(range(len(self._actors)))
        running: dict[Any, tuple[int, int]] = {}  # object ref -> (actor index, chunk index)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        try:
            while pending or running:
                while pending and idle:
                    actor_index, chunk_index = idle.pop(0), pending.pop(0)
                    chunk = chunks[chunk_index]
                    chunk.attempts += 1
                    rows = chunk.rows
                    reference = self._actors[actor_index].simulate.remote(
                        physics[rows], controls[rows], steps[rows], None if dynamic is None else dynamic[rows],
                        models_ref, None if model_index is None else model_index[rows])
                    running[reference] = (actor_index, chunk_index)
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                ready, _ = ray.wait(list(running), num_returns=1, timeout=remaining)
                if not ready:
                    raise WorkerError(f"fine-model call exceeded the timeout of {self.timeout} s")
                for reference in ready:
                    actor_index, chunk_index = running.pop(reference)
                    self._collect(reference, actor_index, chunks[chunk_index], chunk_index, pending)
                    idle.append(actor_index)
        except BaseException:
            # actors may still compute abandoned chunks: replace them so the next call starts clean
            # (one that cannot be replaced now stays dead and is replaced when a call finds it so)
            for actor_index, _ in running.values():
                with contextlib.suppress(WorkerError):
                    self._replace(actor_index)
            raise

    def _collect(self, reference: Any, actor_index: int, chunk: _Chunk, chunk_index: int,
                 pending: list[int]) -> None:
        """Store a chunk's result, or replace its dead actor and queue the chunk again."""
        ray = self._ray
        try:
            chunk.result, chunk.seconds = ray.get(reference)
            return
        except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as error:
            chunk.deaths.append(type(error).__name__)
        except ray.exceptions.RayTaskError as error:
            raise WorkerError(f"fine-model Ray actor raised:\n{error}") from None
        self._replace(actor_index)
        if chunk.attempts > self.retries:
            raise WorkerError(
                f"fine-model Ray actors died {len(chunk.deaths)} times on the same chunk of {chunk.rows.size} "
                f"segment(s) ({'; '.join(chunk.deaths)}); giving up after {self.retries} retries")
        pending.append(chunk_index)

    # -- shutdown -------------------------------------------------------------------------
    def _kill_actors(self) -> None:
        for actor in self._actors:
            self._ray.kill(actor, no_restart=True)
        self._actors = []

    def _release(self) -> None:
        """Kill the actors (:meth:`close`; the cluster stays up)."""
        self._kill_actors()
