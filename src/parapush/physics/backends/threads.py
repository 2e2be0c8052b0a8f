"""The thread backend: ``mujoco.rollout`` or ``mujoco.batch`` on a pool of threads.

``mj_step`` releases the GIL and both engines run their own C++ thread pools over one
shared ``MjModel``, so threads give the full speed-up of the cores without copying
anything between processes. Segments with different durations are grouped by step count
(one engine call per group). Each segment starts with a zero solver warm start, as in
:meth:`parapush.physics.fine.FineModel.propagate`, so the results are bit-identical to it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import mujoco
import mujoco.batch
import mujoco.rollout
import numpy as np

from parapush.physics.backends.base import WorkerBackend
from parapush.physics.fine import FineModel
from parapush.validation import check_integer

ENGINES = ("rollout", "batch")
ROLLOUT_BUFFER_BYTES = 64 * 2**20
"""Bound on the per-step trajectory ``mujoco.rollout`` writes; larger batches are split."""


def default_workers() -> int:
    """Number of CPU cores this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def check_workers(value: int | None, name: str) -> int:
    """``value`` as a positive int (``default_workers()`` when None); ValueError naming ``name``."""
    if value is None:
        return default_workers()
    return check_integer(name, value, minimum=1)


class ThreadBackend(WorkerBackend):
    """Simulates the batch on ``threads`` threads sharing the fine model's ``MjModel``.

    Args:
        fine_model: the fine model.
        threads: number of threads; defaults to the cores available to this process.
        engine: ``"rollout"`` (``mujoco.rollout.Rollout``, records every step; the default)
            or ``"batch"`` (``mujoco.batch.Batch``, records nothing per step).

    Attributes:
        workers: the number of threads.
        layout: the state layout.

    Use as a context manager, or call :meth:`close`. Calls from several Python threads
    are serialised.
    """

    def __init__(self, fine_model: FineModel, *, threads: int | None = None, engine: str = "rollout") -> None:
        if not isinstance(fine_model, FineModel):
            raise TypeError(f"fine_model: expected FineModel, got {type(fine_model).__name__}")
        if engine not in ENGINES:
            raise ValueError(f"engine: expected one of {ENGINES}, got {engine!r}")
        self.fine_model = fine_model
        self.layout = fine_model.layout
        self.workers = check_workers(threads, "threads")
        self.engine = engine
        super().__init__()
        self._rollout: mujoco.rollout.Rollout | None = None
        self._datas: list[mujoco.MjData] = []
        self._fidelity_datas: list[mujoco.MjData] = []
        self._trajectory = np.empty(0)
        self._batch: mujoco.batch.Batch | None = None
        if engine == "rollout":
            self._rollout = mujoco.rollout.Rollout(nthread=self.workers)
            self._datas = [fine_model.new_data() for _ in range(self.workers)]

    def propagate(
        self,
        states: np.ndarray,
        controls: np.ndarray,
        durations: np.ndarray,
        *,
        models: Sequence[mujoco.MjModel] | None = None,
        dynamic: np.ndarray | None = None,
    ) -> np.ndarray:
        """As :meth:`parapush.physics.fine.FineModel.propagate`, bit-identical to it.

        Args:
            models: optional (M,) MuJoCo models, one per row: variants of the fine model's
                ``mj_model`` with other parameter values but the same sizes (e.g.
                :class:`parapush.identification.ObjectModelVariants`); ``rollout`` engine only.
            dynamic: optional (M, n) bool, the objects that move in each row (the fine
                model's fidelity variants); ``rollout`` engine only, not with ``models``.
        """
        model = self.fine_model
        states, controls, durations, dynamic = self._checked_batch(states, controls, durations, dynamic, models)
        if dynamic is not None:
            models = model.fidelity_models(dynamic)
            if self.engine == "rollout" and not self._fidelity_datas:
                self._fidelity_datas = [model.new_fidelity_data() for _ in range(self.workers)]
        if models is not None:
            if self.engine != "rollout":
                raise ValueError(f"models: per-row models need engine='rollout', this backend runs {self.engine!r}")
            if len(models) != states.shape[0]:
                raise ValueError(f"models: expected one model per row ({states.shape[0]}), got {len(models)}")
        steps = model.steps_for_each(durations)
        physics = model.to_physics_state(states)
        valid = np.all(np.isfinite(physics), axis=1)
        with self._lock:
            self._check_open()
            for step_count in np.unique(steps[valid]):
                rows = np.flatnonzero(valid & (steps == step_count))
                if self.engine == "rollout":
                    row_models = None if models is None else [models[row] for row in rows]
                    datas = self._fidelity_datas if dynamic is not None else self._datas
                    physics[rows] = self._run_rollout(physics[rows], controls[rows], int(step_count), row_models,
                                                      datas)
                else:
                    physics[rows] = self._run_batch(physics[rows], controls[rows], int(step_count))
        return model.from_physics_state(physics)

    def _run_rollout(
        self, physics: np.ndarray, controls: np.ndarray, steps: int, models: list[mujoco.MjModel] | None,
        datas: list[mujoco.MjData],
    ) -> np.ndarray:
        """Rollout in calls of at most ROLLOUT_BUFFER_BYTES of recorded trajectory."""
        per_row = steps * physics.shape[1] * physics.itemsize
        rows_per_call = max(self.workers, ROLLOUT_BUFFER_BYTES // per_row)
        parts = []
        for start in range(0, physics.shape[0], rows_per_call):
            rows = slice(start, start + rows_per_call)
            row_models = self.fine_model.mj_model if models is None else models[rows]
            parts.append(self._run_rollout_call(physics[rows], controls[rows], steps, row_models, datas))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _run_rollout_call(
        self,
        physics: np.ndarray,
        controls: np.ndarray,
        steps: int,
        models: mujoco.MjModel | list[mujoco.MjModel],
        datas: list[mujoco.MjData],
    ) -> np.ndarray:
        count, size = physics.shape
        needed = count * steps * size
        if self._trajectory.size < needed:  # grow-only buffer: rollout writes every step's state
            self._trajectory = np.empty(needed)
        trajectory = self._trajectory[:needed].reshape(count, steps, size)
        control = np.ascontiguousarray(np.broadcast_to(controls[:, None, :], (count, steps, 2)))
        assert self._rollout is not None
        self._rollout.rollout(
            models,
            datas,
            physics,
            control,
            nstep=steps,
            initial_warmstart=np.zeros((count, self.fine_model.mj_model.nv)),
            state=trajectory,
        )
        return trajectory[:, -1, :].copy()

    def _run_batch(self, physics: np.ndarray, controls: np.ndarray, steps: int) -> np.ndarray:
        model = self.fine_model
        count = physics.shape[0]
        if self._batch is None or self._batch.nsim < count:
            self._batch = mujoco.batch.Batch(model.mj_model, nsim=count, nthread=self.workers)
        batch = self._batch
        ids = np.arange(count, dtype=np.int32)
        mj_model = model.mj_model
        qpos_offset, qvel_offset = model.physics_offsets
        batch.bind("time")[:count] = physics[:, 0]
        batch.bind("qpos")[:count] = physics[:, qpos_offset : qpos_offset + mj_model.nq]
        batch.bind("qvel")[:count] = physics[:, qvel_offset : qvel_offset + mj_model.nv]
        batch.bind("qacc_warmstart")[:count] = 0.0
        batch.bind("ctrl")[:count] = controls
        failed = np.zeros(0, dtype=np.int64)
        try:
            batch.step(ids, nstep=steps)
        except mujoco.batch.SimulationError as error:  # those simulations kept their old state
            failed = np.asarray(error.ids, dtype=np.int64)
        result = np.empty_like(physics)
        result[:, 0] = batch.bind("time")[:count]
        result[:, qpos_offset : qpos_offset + mj_model.nq] = batch.bind("qpos")[:count]
        result[:, qvel_offset : qvel_offset + mj_model.nv] = batch.bind("qvel")[:count]
        result[failed] = np.nan
        return result

    def _release(self) -> None:
        """Stop the thread pool (:meth:`close`)."""
        if self._rollout is not None:
            self._rollout.close()
            self._rollout = None
        self._batch = None
        self._datas = []
        self._fidelity_datas = []
        self._trajectory = np.empty(0)
