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

import copy
import threading
from collections import OrderedDict

import mujoco
import numpy as np

from parapush.physics.fine_settings import FineSettings
from parapush.physics.mjcf import DISABLED_PAIRS_ANCHOR, object_body_name, object_geom_names, scene_to_mjcf
from parapush.physics.propagator import check_batch
from parapush.physics.table_support import objects_off_table
from parapush.scene import Scene, StateLayout
from parapush.validation import check_positive

PHYSICS_STATE = mujoco.mjtState.mjSTATE_FULLPHYSICS
"""The MuJoCo state specification used for (M, S) physics states."""

SETTLE_DURATION = 0.5
"""Time the objects are left to settle on the table when the model is built, s."""

FIDELITY_MODEL_CACHE = 256
"""How many fidelity variants (one per pattern of dynamic objects) a fine model keeps."""



def check_dynamic(layout: StateLayout, dynamic: np.ndarray, states: np.ndarray) -> np.ndarray:
    """``dynamic`` as an (M, n) bool array matching ``states`` (M, D); ValueError naming it."""
    dynamic = np.asarray(dynamic)
    expected = (states.shape[0], layout.object_count)
    if dynamic.shape != expected or dynamic.dtype != bool:
        raise ValueError(f"dynamic: expected a bool array of shape {expected}, got {dynamic.dtype} {dynamic.shape}")
    return dynamic


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
        self._fidelity_data: mujoco.MjData | None = None
        self._data_lock = threading.Lock()
        self._fidelity_base: mujoco.MjModel | None = None
        self._fidelity_models: OrderedDict[bytes, mujoco.MjModel] = OrderedDict()
        self._fidelity_lock = threading.Lock()
        table = model.geom("table").id
        # the objects' table pairs (one per convex part of the support) and whose they are
        support = {model.geom(name).id: i for i, spec in enumerate(scene.objects)
                   for name in object_geom_names(i, spec, "support", settings)}
        table_pairs = [(pair, support[int(model.pair_geom2[pair])]) for pair in range(model.npair)
                       if int(model.pair_geom1[pair]) == table and int(model.pair_geom2[pair]) in support]
        self._table_pairs, self._table_pair_owner = np.array(table_pairs, dtype=np.int64).reshape(-1, 2).T
        self._object_bodies = np.array([model.body(object_body_name(i)).id for i in range(self.layout.object_count)])
        # (pair, first object, second object or -1 for an obstacle) of the objects' lateral pairs
        owner = {model.geom(name).id: i for i, spec in enumerate(scene.objects)
                 for name in object_geom_names(i, spec, "collider")}
        lateral = [(pair, owner[int(model.pair_geom1[pair])], owner.get(int(model.pair_geom2[pair]), -1))
                   for pair in range(model.npair) if int(model.pair_geom1[pair]) in owner]
        self._lateral_pairs = np.array(lateral, dtype=np.int64).reshape(-1, 3)
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

    # -- fidelity variants ------------------------------------------------------------------
    def fidelity_model(self, dynamic: np.ndarray) -> mujoco.MjModel:
        """The model in which only the ``dynamic`` objects move (fidelity management).

        A static object keeps its lateral colliders (the pusher and the dynamic objects
        collide with it: medium fidelity; its contacts with other static objects and with
        obstacles are off) but loses its table contact and floats with
        MuJoCo's gravity compensation, so with no lateral contact it stays exactly where it
        is, at no solver cost; it may fall asleep (MuJoCo's sleep: its tree is then skipped
        by the kinematics and dynamics until a contact wakes it).

        Purity: the sleep state (``tree_asleep``) lives in the ``MjData`` outside the physics
        state, so a segment may start with static trees still asleep from the previous one. That
        changes no bit of the result: a sleeping tree whose pose the new state moved is woken
        before its geoms are placed (MuJoCo compares the pose in the kinematics), a dynamic
        (never-sleep) tree is woken at once, and a static tree without contacts has exactly zero
        acceleration awake or asleep; results equal those of the variant with sleep disabled
        on fresh data (``test_a_managed_row_does_not_depend_on_what_ran_before_it``). A touched
        static object is detected and its segment re-run by
        :class:`parapush.physics.fidelity.ManagedFineBackend`.

        Variants are copies of one gravity-compensated model compiled once (the first time one
        is needed), kept per pattern (at most :data:`FIDELITY_MODEL_CACHE`); they run on an
        ``MjData`` of :meth:`new_fidelity_data`. With every object dynamic the variant's
        results equal :attr:`mj_model`'s bit for bit.

        Args:
            dynamic: (n,) bool, the objects that move.
        Returns:
            an ``MjModel``; treat it as read-only.
        """
        dynamic = np.asarray(dynamic, dtype=bool)
        if dynamic.shape != (self.layout.object_count,):
            raise ValueError(f"dynamic: expected shape ({self.layout.object_count},), got {dynamic.shape}")
        key = np.packbits(dynamic).tobytes()
        with self._fidelity_lock:
            variant = self._fidelity_models.get(key)
            if variant is not None:
                self._fidelity_models.move_to_end(key)
                return variant
            if self._fidelity_base is None:
                self._fidelity_base = mujoco.MjModel.from_xml_string(
                    scene_to_mjcf(self.scene, self.settings, gravity_compensated=True))
            variant = copy.copy(self._fidelity_base)
            self._copy_parameters(variant)
            variant.body_gravcomp[self._object_bodies[dynamic]] = 0.0
            # pairs switched off: static objects' table contacts; two static bodies (objects
            # or obstacles) never push each other
            anchor = variant.geom(DISABLED_PAIRS_ANCHOR).id
            variant.pair_geom1[self._table_pairs[~dynamic[self._table_pair_owner]]] = anchor
            pairs, first, second = self._lateral_pairs.T
            both_static = ~dynamic[first] & ((second < 0) | ~dynamic[np.maximum(second, 0)])
            variant.pair_geom1[pairs[both_static]] = anchor
            # static trees may sleep (MuJoCo then skips their kinematics and dynamics; a contact
            # wakes them); the pusher and the dynamic objects never do
            variant.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_SLEEP)
            variant.tree_sleep_policy[:] = int(mujoco.mjtSleepPolicy.mjSLEEP_NEVER)
            static_trees = variant.body_treeid[self._object_bodies[~dynamic]]
            variant.tree_sleep_policy[static_trees] = int(mujoco.mjtSleepPolicy.mjSLEEP_ALLOWED)
            self._fidelity_models[key] = variant
            if len(self._fidelity_models) > FIDELITY_MODEL_CACHE:
                self._fidelity_models.popitem(last=False)
            return variant

    def new_fidelity_data(self) -> mujoco.MjData:
        """A fresh ``MjData`` for the fidelity variants (MuJoCo's sleep needs one made by a
        model with sleep enabled; do not mix it with :attr:`mj_model`)."""
        return mujoco.MjData(self.fidelity_model(np.ones(self.layout.object_count, dtype=bool)))

    def fidelity_models(self, dynamic: np.ndarray) -> list[mujoco.MjModel]:
        """:meth:`fidelity_model` of each row of ``dynamic`` (M, n) bool."""
        dynamic = np.asarray(dynamic, dtype=bool)
        if dynamic.ndim != 2:
            raise ValueError(f"dynamic: expected shape (M, {self.layout.object_count}), got {dynamic.shape}")
        return [self.fidelity_model(row) for row in dynamic]

    def parameters_changed(self) -> None:
        """Forget the fidelity variants: call after changing :attr:`mj_model`'s parameters in
        place (object identification), so that later variants copy the new values."""
        with self._fidelity_lock:
            self._fidelity_models.clear()

    def _copy_parameters(self, variant: mujoco.MjModel) -> None:
        """Give ``variant`` the object parameters identification may change in :attr:`mj_model`."""
        model = self.mj_model
        for name in ("body_mass", "body_inertia", "body_ipos", "pair_friction"):
            getattr(variant, name)[:] = getattr(model, name)

    # -- simulation -----------------------------------------------------------------------
    def new_data(self) -> mujoco.MjData:
        """A fresh ``MjData`` for this model (costs ~0.4 ms: reuse it)."""
        return mujoco.MjData(self.mj_model)

    def simulate_physics(
        self, data: mujoco.MjData, physics_state: np.ndarray, control: np.ndarray, steps: int,
        model: mujoco.MjModel | None = None,
    ) -> np.ndarray:
        """Run one segment on ``data`` (the reference loop): restore ``physics_state`` (S,),
        zero the warm start, hold ``control`` (2,) m/s for ``steps`` steps; returns (S,).
        ``model``: :attr:`mj_model` (None) or a variant of the same sizes."""
        model = self.mj_model if model is None else model
        mujoco.mj_setState(model, data, physics_state, PHYSICS_STATE)
        data.qacc_warmstart[:] = 0.0
        data.ctrl[:] = control
        for _ in range(steps):
            mujoco.mj_step(model, data)
        result = np.empty(self.physics_state_size)
        mujoco.mj_getState(model, data, result, PHYSICS_STATE)
        return result

    def propagate(
        self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray, *, dynamic: np.ndarray | None = None
    ) -> np.ndarray:
        """Serial reference: each row restored (warm start zeroed), its control held for
        ``steps_for(duration)`` steps of ``mj_step``, and read back.

        Args:
            states: (M, D) float64 states; non-finite rows give NaN rows.
            controls: (M, 2) pusher velocities, m/s, table frame.
            durations: (M,) s, whole numbers of timesteps.
            dynamic: optional (M, n) bool: simulate row m in :meth:`fidelity_model` of
                ``dynamic[m]`` (None: every object dynamic, the full model).
        Returns:
            (M, D) states; NaN rows where the simulation became unstable.
        """
        states, controls, durations = check_batch(self.layout, states, controls, durations)
        models = None if dynamic is None else self.fidelity_models(check_dynamic(self.layout, dynamic, states))
        steps = self.steps_for_each(durations)
        physics = self.to_physics_state(states)
        valid = np.all(np.isfinite(physics), axis=1)
        with self._data_lock:
            data = self._data
            if models is not None:
                if self._fidelity_data is None:
                    self._fidelity_data = self.new_fidelity_data()
                data = self._fidelity_data
            for row in np.flatnonzero(valid):
                physics[row] = self.simulate_physics(data, physics[row], controls[row], int(steps[row]),
                                                     None if models is None else models[row])
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
