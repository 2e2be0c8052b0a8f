"""The fine model F: MuJoCo simulation of the scene, one control held per segment.

The MuJoCo model itself (table, objects on planar joints, per-pair friction, pusher
servo, obstacles) is described in :mod:`parapush.physics.mjcf`. This module maps the
papers' planar states to MuJoCo's full-physics state and back, and runs the serial
reference that every backend reproduces bit for bit.

Determinism: MuJoCo's full-physics state excludes ``qacc_warmstart``, the solver's warm
start, which depends on the history. Every segment starts with a zero warm start (as
``mujoco.rollout`` does), so F(x, u, dt) is a pure function of its arguments.
"""

from __future__ import annotations

import threading

import mujoco
import numpy as np

from parapush.physics.fine_settings import FineSettings
from parapush.physics.mjcf import object_body_name, scene_to_mjcf
from parapush.physics.propagator import check_batch
from parapush.physics.table_support import objects_off_table
from parapush.scene import Scene, StateLayout
from parapush.validation import check_positive

PHYSICS_STATE = mujoco.mjtState.mjSTATE_FULLPHYSICS
"""The MuJoCo state specification used for (M, S) physics states."""

SETTLE_DURATION = 0.5
"""Time the objects are left to settle on the table when the model is built, s."""


class FineModel:
    """MuJoCo model of a scene; a :class:`~parapush.physics.propagator.Propagator`.

    Args:
        scene: the scene.
        settings: model and stepping options.

    Attributes:
        scene: the scene.
        settings: the :class:`FineSettings`.
        layout: the papers' state layout for the scene.
        mj_model: the compiled ``mujoco.MjModel``; shared read-only by the thread backends.
        mjcf: the MJCF XML it was compiled from.
        rest_heights: (n,) height offsets (m) of the objects' slide-z joints at rest on the
            table (soft contacts sink a fraction of a millimetre), measured when the model
            is built and used by :meth:`to_physics_state`.
    """

    def __init__(self, scene: Scene, settings: FineSettings | None = None) -> None:
        if not isinstance(scene, Scene):
            raise TypeError(f"scene: expected a parapush.scene.Scene, got {type(scene).__name__}")
        settings = FineSettings() if settings is None else settings
        if not isinstance(settings, FineSettings):
            raise TypeError(f"settings: expected FineSettings, got {type(settings).__name__}")
        self.scene = scene
        self.settings = settings
        self.layout: StateLayout = scene.layout
        self.mjcf = scene_to_mjcf(scene, settings)
        self.mj_model = mujoco.MjModel.from_xml_string(self.mjcf)
        model = self.mj_model

        def address(joint: str) -> tuple[int, int]:
            return int(model.joint(joint).qposadr[0]), int(model.joint(joint).dofadr[0])

        planar = [("pusher_x", "pusher_y")] + [
            tuple(f"{object_body_name(i)}_{axis}" for axis in ("x", "y", "yaw"))
            for i in range(self.layout.object_count)
        ]
        planar_joints = [joint for group in planar for joint in group]
        height_joints = [f"{object_body_name(i)}_z" for i in range(self.layout.object_count)]
        self._time_offset = 0
        self._qpos_offset = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_TIME)
        self._qvel_offset = self._qpos_offset + model.nq
        # indices into the (M, S) physics state, in the order of the papers' q and qdot
        self._planar_qpos = np.array([self._qpos_offset + address(j)[0] for j in planar_joints])
        self._planar_qvel = np.array([self._qvel_offset + address(j)[1] for j in planar_joints])
        self._height_qpos = np.array([self._qpos_offset + address(j)[0] for j in height_joints])
        self._height_qvel = np.array([self._qvel_offset + address(j)[1] for j in height_joints])
        self.physics_state_size = int(mujoco.mj_stateSize(model, PHYSICS_STATE))
        if self.physics_state_size != self._qvel_offset + model.nv:
            raise RuntimeError(
                f"unexpected MuJoCo full-physics state of size {self.physics_state_size} "
                f"(expected time, qpos, qvel: {self._qvel_offset + model.nv})"
            )
        self._object_heights = np.array([spec.height for spec in scene.objects])
        self._data = mujoco.MjData(model)
        self._data_lock = threading.Lock()
        self.rest_heights = np.zeros(self.layout.object_count)
        self.rest_heights = self._settle()

    # -- time -----------------------------------------------------------------------------
    @property
    def physics_offsets(self) -> tuple[int, int]:
        """(start of qpos, start of qvel) in a physics state; time is at index 0."""
        return self._qpos_offset, self._qvel_offset

    def steps_for(self, duration: float) -> int:
        """Number of simulation steps in ``duration`` seconds.

        Raises ValueError naming ``duration`` if it is not positive or not a whole number of
        timesteps (to 1e-6 of a step).
        """
        duration = check_positive("duration", duration)
        steps = duration / self.settings.timestep
        whole = round(steps)
        if whole < 1 or abs(steps - whole) > 1e-6:
            raise ValueError(
                f"duration: {duration!r} s is not a whole number of {self.settings.timestep} s timesteps"
            )
        return int(whole)

    def steps_for_each(self, durations: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`steps_for`: durations (M,) s -> (M,) int64 step counts."""
        durations = np.asarray(durations, dtype=float)
        steps = durations / self.settings.timestep
        whole = np.rint(steps)
        bad = ~np.isfinite(steps) | (whole < 1) | (np.abs(steps - whole) > 1e-6)
        if np.any(bad):
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"durations[{row}]: {durations[row]!r} s is not a whole, positive number of "
                f"{self.settings.timestep} s timesteps"
            )
        return whole.astype(np.int64)

    # -- state conversion -----------------------------------------------------------------
    def to_physics_state(self, states: np.ndarray) -> np.ndarray:
        """Papers' states -> MuJoCo full-physics states (``mjSTATE_FULLPHYSICS``).

        Args:
            states: (M, D) states (m, rad, m/s, rad/s).
        Returns:
            (M, S) physics states: time 0, objects at their rest height with zero vertical
            velocity. The solver warm start is not part of it; callers zero it.
        """
        states = self.layout.check(states)
        if states.ndim != 2:
            raise ValueError(f"states: expected shape (M, {self.layout.dimension}), got {states.shape}")
        physics = np.zeros((states.shape[0], self.physics_state_size))
        q_size = self.layout.position_dimension
        physics[:, self._planar_qpos] = states[:, :q_size]
        physics[:, self._planar_qvel] = states[:, q_size:]
        physics[:, self._height_qpos] = self.rest_heights
        return physics

    def from_physics_state(self, physics_states: np.ndarray) -> np.ndarray:
        """MuJoCo full-physics states -> papers' states, NaN for unstable rows.

        A row is unstable when any physics value is non-finite, any joint speed exceeds
        ``settings.speed_limit``, or an object left the table plane by more than half its
        height (the planar state cannot describe it).

        Args:
            physics_states: (M, S).
        Returns:
            (M, D) states.
        """
        physics_states = np.asarray(physics_states, dtype=float)
        if physics_states.ndim != 2 or physics_states.shape[1] != self.physics_state_size:
            raise ValueError(
                f"physics_states: expected shape (M, {self.physics_state_size}), got {physics_states.shape}"
            )
        states = np.concatenate(
            [physics_states[:, self._planar_qpos], physics_states[:, self._planar_qvel]], axis=1
        )
        states[~self.stable_rows(physics_states)] = np.nan
        return states

    def stable_rows(self, physics_states: np.ndarray) -> np.ndarray:
        """(M,) bool: which physics states pass the checks of :meth:`from_physics_state`."""
        qvel = physics_states[:, self._qvel_offset : self._qvel_offset + self.mj_model.nv]
        with np.errstate(invalid="ignore"):
            finite = np.all(np.isfinite(physics_states), axis=1)
            slow = np.all(np.abs(qvel) <= self.settings.speed_limit, axis=1)
            sink = np.abs(physics_states[:, self._height_qpos] - self.rest_heights)
            on_plane = np.all(sink <= 0.5 * self._object_heights, axis=1)
        return finite & slow & on_plane

    def off_table(self, states: np.ndarray) -> np.ndarray:
        """(..., n) bool: objects whose centre is beyond a table edge (see
        :func:`parapush.physics.table_support.objects_off_table`)."""
        return objects_off_table(self.scene, states)

    # -- simulation -----------------------------------------------------------------------
    def new_data(self) -> mujoco.MjData:
        """A fresh ``MjData`` for this model (costs ~0.4 ms: reuse it)."""
        return mujoco.MjData(self.mj_model)

    def simulate_physics(
        self, data: mujoco.MjData, physics_state: np.ndarray, control: np.ndarray, steps: int
    ) -> np.ndarray:
        """Run one segment on ``data`` (the reference loop): restore ``physics_state`` (S,),
        zero the warm start, hold ``control`` (2,) m/s for ``steps`` steps; returns (S,)."""
        model = self.mj_model
        mujoco.mj_setState(model, data, physics_state, PHYSICS_STATE)
        data.qacc_warmstart[:] = 0.0
        data.ctrl[:] = control
        for _ in range(steps):
            mujoco.mj_step(model, data)
        result = np.empty(self.physics_state_size)
        mujoco.mj_getState(model, data, result, PHYSICS_STATE)
        return result

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """Serial reference: each row restored (warm start zeroed), its control held for
        ``steps_for(duration)`` steps of ``mj_step``, and read back.

        Args:
            states: (M, D) float64 states; non-finite rows give NaN rows.
            controls: (M, 2) pusher velocities, m/s, table frame.
            durations: (M,) s, whole numbers of timesteps.
        Returns:
            (M, D) states; NaN rows where the simulation became unstable.
        """
        states, controls, durations = check_batch(self.layout, states, controls, durations)
        steps = self.steps_for_each(durations)
        physics = self.to_physics_state(states)
        valid = np.all(np.isfinite(physics), axis=1)
        with self._data_lock:
            for row in np.flatnonzero(valid):
                physics[row] = self.simulate_physics(self._data, physics[row], controls[row], int(steps[row]))
        return self.from_physics_state(physics)

    def _settle(self) -> np.ndarray:
        """Rest heights of the objects' z joints: objects spread 1 m apart, far from the
        pusher and the obstacles, left on the plane for ``SETTLE_DURATION``."""
        count = self.layout.object_count
        far = 10.0 + max([0.0] + [abs(value) for ob in self.scene.obstacles for value in ob.pose[:2]])
        poses = np.zeros((1, count, 3))
        poses[0, :, 0] = far + np.arange(count)
        state = self.layout.compose(np.array([[-far, -far]]), poses)
        physics = self.to_physics_state(state)[0]
        steps = max(1, round(SETTLE_DURATION / self.settings.timestep))
        settled = self.simulate_physics(self._data, physics, np.zeros(2), steps)
        heights = settled[self._height_qpos]
        if not np.all(np.isfinite(heights)) or np.any(np.abs(heights) > 0.5 * self._object_heights):
            raise RuntimeError(
                f"objects do not rest on the table in the fine model (settled heights {heights.tolist()} m); "
                f"settings {self.settings} are unstable for this scene"
            )
        return heights
