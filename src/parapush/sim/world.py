"""The simulated world: a MuJoCo simulation of a scene, stepped in its own thread.

This is the "real" world the stack acts on when it runs against the simulated driver. It is
a separate simulation from the predictive models (its own ``MjModel``/``MjData``), built
from the same scene -> MJCF translation (:func:`parapush.physics.mjcf.scene_to_mjcf`,
whose modelling choices are documented there) and then changed for the world's needs:

* **Falling off the table.** The fine model's table is an infinite plane. The world adds a
  floor ``floor_depth`` below the table top; when an object's centre passes a table edge
  (the rule of :func:`parapush.physics.table_support.objects_off_table`, where a real
  object tips over) the object is flagged off the table, the flag latches until
  :meth:`SimWorld.reset`, and its table contact is switched off so that it drops to the
  floor (its planar joints keep it upright). Mocap sees it fall.
* **Pushing noise.** Each object's contact parameters (object/table and pusher/object
  friction, centre of friction) are redrawn from :class:`parapush.sim.noise.PushNoise`
  at every reset and whenever the pusher starts a new push on it (see
  :class:`parapush.sim.noise.PushNoiseSettings`). The centre-of-friction offset moves the
  object's *support* geom (the one touching the table) relative to its lateral collider
  (the one the pusher and other objects touch).
* **The pusher** is driven by :class:`parapush.sim.arm.SimArm`: each step, while the pusher
  is *held* (grasped by the gripper), the arm's planar velocity is the pusher servo's
  command. While it is not held, the arm's end effector moves on its own (its planar
  position is integrated) and the pusher stands still where it was left.

Time: the world's clock is the simulation time, s since the last reset. In *threaded*
mode (:meth:`SimWorld.start` or ``with world:``) a thread steps the simulation so that it
advances ``real_time_factor`` simulated seconds per wall-clock second; if the machine cannot
keep up, the backlog beyond ``max_lag`` is dropped (counted in ``WorldStatus.lag_events``)
rather than caught up in a burst. In *manual* mode (no thread) :meth:`SimWorld.step`
advances a given simulated duration; with the same seed and the same commands, manual runs
are bit-for-bit repeatable.

Thread safety: every public method may be called from any thread.
"""

from __future__ import annotations

import logging
import math
import threading
import time as wall_clock
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field

import mujoco
import numpy as np

from parapush.background import stop_thread
from parapush.execution.commands import TwistCommand
from parapush.physics.fine_settings import FineSettings
from parapush.physics.mjcf import object_body_name, object_geom_names, scene_to_mjcf
from parapush.physics.table_support import objects_off_table
from parapush.scene import ObjectSpec, Scene, SceneSnapshot, StateLayout
from parapush.settings import check_settings, setting
from parapush.sim.arm import ArmSettings, CommandOutcome, SimArm
from parapush.sim.noise import ObjectContactSample, PushNoise, PushNoiseSettings
from parapush.validation import check_instance, check_non_negative, check_positive

__all__ = ["BodyPose", "SimWorld", "WorldDivergedError", "WorldSettings", "WorldStatus"]

_LOG = logging.getLogger(__name__)

PUSHER_BODY = "pusher"
"""Name of the pusher in :meth:`SimWorld.body_poses`."""

FLOOR_GEOM = "sim_world_floor"
"""Name of the floor geom the world adds to the scene's MJCF."""

_DISABLED_MARGIN = -1.0e3
"""Contact margin (m) that switches an explicit contact pair off (a contact would need 1 km
of penetration)."""

_LOCK_HOLD = 0.005
"""Longest the stepping thread holds the world's lock at a time, s (wall clock)."""

_REST_SETTLE_DURATION = 0.3
"""Time the objects settle on the table when the rest heights are measured, s."""


REALITY_PROXY_PHYSICS = FineSettings(support="points", support_points=8, object_tilt=True, native_ccd=False)
"""The world's contacts: those that matched 62 recorded real pushes best (``bench/real_pushes.py
--choose``, leave one object out): each object's weight on 8 points spread evenly over its outline,
shared by roll and pitch, and libccd's normals at corners. The planner's fine model
(``FineSettings()``, ``config/model.yaml``) rests each object on one centre contact instead, so
the world is not the planner's own model."""


class WorldDivergedError(RuntimeError):
    """The simulation produced non-finite or runaway values."""


@dataclass(frozen=True)
class WorldSettings:
    """How the world is simulated (each field's meaning, unit and range: its :func:`setting`).

    Attributes:
        physics: MuJoCo model and stepping options, shared with the fine model's MJCF
            generation (timestep, integrator, colliders, pusher servo, support). Default
            :data:`REALITY_PROXY_PHYSICS`, not the planner's fine model.
        push_noise: magnitude of the per-push contact variation.
        arm: the arm's frames and limits.
    """

    physics: FineSettings = field(default_factory=lambda: REALITY_PROXY_PHYSICS, metadata={"section": FineSettings})
    real_time_factor: float = setting(
        1.0, "simulated seconds per wall-clock second in threaded mode (1 is realistic; tests use more)", above=0.0
    )
    seed: int = setting(0, "seed of the pushing noise", minimum=0)
    push_noise: PushNoiseSettings = field(default_factory=PushNoiseSettings)
    arm: ArmSettings = field(default_factory=ArmSettings)
    floor_depth: float = setting(
        0.75, "height of the table top above the floor (where fallen objects land)", unit="m", above=0.0
    )
    pusher_held_at_start: bool = setting(
        True, "whether the pusher is held (moves with the arm) after a reset; the driver couples it to the gripper"
    )
    grasp_tolerance: float = setting(0.01, "the gripper grasps the pusher within this distance", unit="m", above=0.0)
    contact_check_interval: float = setting(
        0.005, "how often contacts (push onsets), the table edges and the simulation's sanity are checked, "
        "simulated time (rounded to whole steps)", unit="s", above=0.0,
    )
    max_lag: float = setting(0.2, "threaded mode: a longer wall-clock backlog is dropped", unit="s", above=0.0)
    tick: float = setting(0.002, "in threaded mode, the thread sleeps this long between batches of steps", unit="s",
                          above=0.0)

    def __post_init__(self) -> None:
        for name, kind in (("physics", FineSettings), ("push_noise", PushNoiseSettings), ("arm", ArmSettings)):
            if not isinstance(getattr(self, name), kind):
                raise ValueError(f"{name}: expected {kind.__name__}, got {type(getattr(self, name)).__name__}")
        check_settings(self)


@dataclass(frozen=True, eq=False)
class BodyPose:
    """Pose of one tracked body in the table frame.

    Attributes:
        name: ``"pusher"`` or the object's scene name.
        position: (3,) the body's centre, m, table frame: an object's geometric centre (its
            axis at mid-height), the pusher's axis at table-top height (the point its planar
            state describes), as in ``config/mocap/clutter_fig1.yaml``.
        orientation: (4,) unit quaternion (qx, qy, qz, qw), table frame.
    """

    name: str
    position: np.ndarray
    orientation: np.ndarray


@dataclass(frozen=True)
class WorldStatus:
    """A snapshot of the world's bookkeeping.

    Attributes:
        time: simulated time since the last reset, s.
        running: whether the stepping thread runs.
        real_time_factor: simulated over wall-clock time since the thread started (0 when not running).
        steps: physics steps since the last reset.
        lag_events: how often the thread dropped a backlog (could not keep up).
        off_table: (n,) per object, latched since the last reset.
        pusher_held: whether the pusher moves with the arm.
        push_counts: (n,) pushes started on each object since the last reset.
        error: the divergence message, "" when healthy.
    """

    time: float
    running: bool
    real_time_factor: float
    steps: int
    lag_events: int
    off_table: tuple[bool, ...]
    pusher_held: bool
    push_counts: tuple[int, ...]
    error: str


def _footprint_radius(spec: ObjectSpec) -> float:
    """Distance from the outline's centroid to its boundary, m (a cylinder's radius, a box's
    smaller half extent)."""
    outline = spec.outline
    return float(-outline.signed_distance(outline.centroid))


def world_mjcf(scene: Scene, settings: WorldSettings) -> str:
    """The world's MJCF: the fine model's (:func:`scene_to_mjcf`) plus a floor
    ``floor_depth`` below the table top that every object's support can land on."""
    root = ElementTree.fromstring(scene_to_mjcf(scene, settings.physics))
    worldbody = root.find("worldbody")
    contact = root.find("contact")
    if worldbody is None or contact is None:
        raise RuntimeError("scene_to_mjcf returned MJCF without <worldbody> or <contact>")
    floor_size = f"{2.0 * max(scene.table.half_extents) + settings.floor_depth!r} " * 2 + "0.05"
    ElementTree.SubElement(
        worldbody, "geom", name=FLOOR_GEOM, type="plane", size=floor_size, pos=f"0 0 {-settings.floor_depth!r}"
    )
    for index, spec in enumerate(scene.objects):
        friction = max(scene.table.friction, spec.friction)
        for support in object_geom_names(index, spec, "support", settings.physics):
            ElementTree.SubElement(
                contact, "pair", geom1=FLOOR_GEOM, geom2=support, condim="3",
                friction=f"{friction!r} {friction!r} 0.005 0.0001 0.0001",
            )
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode")


class SimWorld:
    """The simulated world of a scene (see the module docstring).

    Args:
        scene: the scene; its initial poses are the reset state.
        settings: simulation options (defaults: :class:`WorldSettings`).

    Attributes:
        scene: the scene.
        settings: the settings.
        layout: the papers' state layout.
        arm: the simulated arm (commands go through :meth:`command`).
        mjcf: the world's MJCF XML.
    """

    def __init__(self, scene: Scene, settings: WorldSettings | None = None) -> None:
        check_instance("scene", scene, Scene, "a parapush.scene.Scene")
        settings = check_instance("settings", WorldSettings() if settings is None else settings, WorldSettings)
        self.scene = scene
        self.settings = settings
        self.layout: StateLayout = scene.layout
        self.mjcf = world_mjcf(scene, settings)
        self._model = mujoco.MjModel.from_xml_string(self.mjcf)
        self._data = mujoco.MjData(self._model)
        self._timestep = float(self._model.opt.timestep)
        self._index_model()
        self.arm = SimArm(settings.arm)
        self._noise = PushNoise(settings.push_noise, seed=settings.seed)
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._stop_requested = threading.Event()
        self._wall_started = 0.0
        self._time_started = 0.0
        self._lag_events = 0
        self._rest_heights = self._measure_rest_heights()
        self.reset()

    # -- model bookkeeping --------------------------------------------------------------------
    def _index_model(self) -> None:
        model = self._model
        count = self.layout.object_count

        def joint(name: str) -> tuple[int, int]:
            return int(model.joint(name).qposadr[0]), int(model.joint(name).dofadr[0])

        def geom(name: str) -> int:
            return int(model.geom(name).id)

        planar = ["pusher_x", "pusher_y"] + [
            f"{object_body_name(index)}_{axis}" for index in range(count) for axis in ("x", "y", "yaw")
        ]
        self._planar_qpos = np.array([joint(name)[0] for name in planar])
        self._planar_qvel = np.array([joint(name)[1] for name in planar])
        self._height_qpos = np.array([joint(f"{object_body_name(index)}_z")[0] for index in range(count)])
        self._object_body = np.array([int(model.body(object_body_name(index)).id) for index in range(count)])
        self._pusher_body = int(model.body("pusher").id)
        # per object: its support geoms (one per convex part or support point), their table pairs, its pusher pairs
        physics = self.settings.physics
        self._support_geom = [np.array([geom(name) for name in object_geom_names(index, spec, "support", physics)])
                              for index, spec in enumerate(self.scene.objects)]
        self._nominal_support_position = [model.geom_pos[geoms].copy() for geoms in self._support_geom]
        colliders = [np.array([geom(name) for name in object_geom_names(index, spec, "collider")])
                     for index, spec in enumerate(self.scene.objects)]
        pusher_collider = geom("pusher_collider")
        table = geom("table")
        first, second = model.pair_geom1, model.pair_geom2
        self._table_pair = [np.flatnonzero((first == table) & np.isin(second, geoms)) for geoms in self._support_geom]
        self._pusher_pair = [np.flatnonzero((first == pusher_collider) & np.isin(second, geoms)) for geoms in colliders]
        self._nominal_friction = model.pair_friction.copy()
        self._nominal_margin = model.pair_margin.copy()
        # geom id -> object index for the pusher's contacts (-1: not an object's collider)
        self._collider_object = np.full(model.ngeom, -1, dtype=int)
        for index, geoms in enumerate(colliders):
            self._collider_object[geoms] = index
        self._pusher_collider = pusher_collider
        self._pusher_actuators = np.array([int(model.actuator(f"pusher_v{axis}").id) for axis in ("x", "y")])
        self._footprint = np.array([_footprint_radius(spec) for spec in self.scene.objects])
        self._half_heights = np.array([0.5 * spec.height for spec in self.scene.objects])
        self._check_every = max(1, round(self.settings.contact_check_interval / self._timestep))
        self._speed_limit = self.settings.physics.speed_limit

    def _measure_rest_heights(self) -> np.ndarray:
        """Heights (n,) m of the objects' slide-z joints at rest on the table (soft contacts
        sink a fraction of a millimetre), with the objects spread far apart."""
        data = mujoco.MjData(self._model)
        far = 10.0 + max([0.0] + [abs(value) for ob in self.scene.obstacles for value in ob.pose[:2]])
        count = self.layout.object_count
        positions = np.zeros(self.layout.position_dimension)
        positions[:2] = (-far, -far)
        positions[2::3][:count] = far + np.arange(count)
        data.qpos[self._planar_qpos] = positions
        for _ in range(max(1, round(_REST_SETTLE_DURATION / self._timestep))):
            mujoco.mj_step(self._model, data)
        heights = data.qpos[self._height_qpos].copy()
        if not np.all(np.isfinite(heights)) or np.any(np.abs(heights) > self._half_heights):
            raise WorldDivergedError(f"objects do not rest on the table (heights {heights.tolist()} m)")
        return heights

    # -- lifecycle ----------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None) -> None:
        """Back to the scene's initial state at time 0: poses from the scene, at rest, off-table
        flags cleared, contact noise redrawn (from ``seed`` when given, else continuing the
        generator), the arm halted, the pusher held as ``pusher_held_at_start``."""
        with self._lock:
            model, data = self._model, self._data
            mujoco.mj_resetData(model, data)
            scene = self.scene
            poses = np.array([spec.pose for spec in scene.objects])
            state = self.layout.compose(np.asarray(scene.pusher.position), poses)
            data.qpos[self._planar_qpos] = state[: self.layout.position_dimension]
            data.qpos[self._height_qpos] = self._rest_heights
            model.pair_margin[:] = self._nominal_margin
            if seed is not None:
                self._noise.reseed(seed)
            count = self.layout.object_count
            self._samples: list[ObjectContactSample] = [ObjectContactSample()] * count
            for index in range(count):
                self._apply_sample(index, self._noise.sample(float(self._footprint[index])))
            self._push_counts = np.zeros(count, dtype=int)
            self._in_contact = np.zeros(count, dtype=bool)
            self._last_contact_time = np.full(count, -math.inf)
            self._off_table = np.zeros(count, dtype=bool)
            self._steps = 0
            self._error = ""
            self._held = self.settings.pusher_held_at_start
            self._end_effector = np.array(scene.pusher.position, dtype=float)
            self._grasp_offset = np.zeros(2)
            self.arm.reset(0.0)
            mujoco.mj_forward(model, data)
            self._update_table_support()
            self._time_started = 0.0
            self._wall_started = wall_clock.monotonic()

    def start(self) -> None:
        """Start stepping in real time (times ``real_time_factor``) in a thread."""
        with self._lock:
            if self.running:
                raise RuntimeError("the world is already running")
            self._stop_requested.clear()
            self._wall_started = wall_clock.monotonic()
            self._time_started = float(self._data.time)
            self._thread = threading.Thread(target=self._run, name=f"sim-world-{self.scene.name}", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the stepping thread (no-op when not running); the state is kept."""
        if self._thread is None:
            return
        stop_thread(self._thread, self._stop_requested, timeout, "the world thread")
        with self._lock:
            self._thread = None

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def __enter__(self) -> SimWorld:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def step(self, duration: float) -> float:
        """Manual mode: advance ``duration`` s of simulated time (rounded to whole steps).

        Returns:
            the new time, s.
        Raises:
            RuntimeError: if the stepping thread runs.
            WorldDivergedError: if the simulation diverged.
        """
        duration = check_non_negative("duration", duration)
        if self.running:
            raise RuntimeError("step() is for manual mode; the world thread is running")
        with self._lock:
            if self._error:
                raise WorldDivergedError(self._error)
            for _ in range(round(duration / self._timestep)):
                self._advance_one()
                if self._error:
                    raise WorldDivergedError(self._error)
            return float(self._data.time)

    def _run(self) -> None:
        try:
            self._step_in_real_time()
        except Exception as error:  # the thread must not die silently: report it in status()
            _LOG.exception("the world thread failed")
            with self._lock:
                self._error = f"the world thread failed: {error!r}"

    def _step_in_real_time(self) -> None:
        rate = self.settings.real_time_factor
        timestep = self._timestep
        max_lag = self.settings.max_lag
        while not self._stop_requested.is_set():
            with self._lock:
                elapsed = wall_clock.monotonic() - self._wall_started
                behind = self._time_started + rate * elapsed - self._data.time
                if behind > rate * max_lag:
                    # cannot keep up: drop the backlog instead of catching up in a burst
                    self._lag_events += 1
                    self._time_started = float(self._data.time)
                    self._wall_started = wall_clock.monotonic()
                    behind = 0.0
                due = int(behind / timestep)
                done = 0
                hold_until = wall_clock.monotonic() + _LOCK_HOLD
                while done < due and not self._error:
                    self._advance_one()
                    done += 1
                    if done % 16 == 0 and wall_clock.monotonic() > hold_until:
                        break  # let readers and commands in; continue at once
                if self._error:
                    return
            self._stop_requested.wait(self.settings.tick if done >= due else 0.0)

    # -- one step -----------------------------------------------------------------------------
    def _advance_one(self) -> None:
        model, data = self._model, self._data
        velocity = self.arm.advance(data.time, self._timestep)
        if self._held:
            data.ctrl[self._pusher_actuators] = velocity
        else:
            data.ctrl[self._pusher_actuators] = 0.0
            self._end_effector += velocity * self._timestep
        mujoco.mj_step(model, data)
        self._steps += 1
        if self._steps % self._check_every == 0:
            self._check()

    def _check(self) -> None:
        data = self._data
        if not (np.all(np.isfinite(data.qpos)) and np.all(np.isfinite(data.qvel))):
            self._error = f"the simulation diverged at t = {data.time:.4f} s (non-finite state)"
            return
        fastest = float(np.max(np.abs(data.qvel)))
        if fastest > self._speed_limit:
            self._error = f"the simulation diverged at t = {data.time:.4f} s (joint speed {fastest:.3g})"
            return
        self._detect_pushes()
        self._update_table_support()

    def _detect_pushes(self) -> None:
        data = self._data
        touching = np.zeros(self.layout.object_count, dtype=bool)
        count = data.ncon
        if count:
            geoms = data.contact.geom[:count]
            for first, second in ((0, 1), (1, 0)):
                rows = geoms[:, first] == self._pusher_collider
                touched = self._collider_object[geoms[rows, second]]
                touching[touched[touched >= 0]] = True
        now = float(data.time)
        gap = self.settings.push_noise.new_push_gap
        for index in np.flatnonzero(touching & ~self._in_contact):
            if now - self._last_contact_time[index] >= gap:
                self._push_counts[index] += 1
                self._apply_sample(index, self._noise.sample(float(self._footprint[index])))
        self._last_contact_time[touching] = now
        self._in_contact = touching

    def set_object_physics(self, index: int, *, mass: float, support_friction: float, pusher_friction: float,
                           com_offset: tuple[float, float] = (0.0, 0.0)) -> None:
        """Give object ``index`` physics other than its scene entry's, from now on (a world whose
        objects differ from what the planner was told; ``bench/robust_mpc.py`` draws them per run).

        Args:
            index: the object, in scene order.
            mass: kg, > 0; the inertia scales with it (same shape and density distribution).
            support_friction: the object/table sliding coefficient (a torsion support's torsional
                coefficient follows it, as in the fine model); the push noise scales it per push.
            pusher_friction: the pusher/object sliding coefficient (scaled per push likewise).
            com_offset: (x, y) m, the centre of mass in the object's body frame (0, 0: its centre).
        """
        self.layout.object_pose(index)  # IndexError naming the object when out of range
        mass = check_positive("mass", mass)
        check_non_negative("support_friction", support_friction)
        check_non_negative("pusher_friction", pusher_friction)
        offset = np.asarray(com_offset, dtype=float)
        if offset.shape != (2,) or not np.all(np.isfinite(offset)):
            raise ValueError(f"com_offset: expected (x, y) in m, got {com_offset!r}")
        with self._lock:
            model = self._model
            body = self._object_body[index]
            model.body_inertia[body] *= mass / model.body_mass[body]
            model.body_mass[body] = mass
            model.body_ipos[body, :2] = offset
            table_pair, pusher_pair = self._table_pair[index], self._pusher_pair[index]
            nominal = self._nominal_friction
            torsion_radius = np.divide(nominal[table_pair, 2], nominal[table_pair, 0],
                                       out=np.zeros(table_pair.size), where=nominal[table_pair, 0] > 0.0)
            nominal[table_pair, :2] = support_friction
            nominal[table_pair, 2] = support_friction * torsion_radius
            nominal[pusher_pair, :2] = pusher_friction
            self._apply_sample(index, self._samples[index])

    def _apply_sample(self, index: int, sample: ObjectContactSample) -> None:
        model = self._model
        table_pair, pusher_pair = self._table_pair[index], self._pusher_pair[index]
        # the sliding and (a torsion support's) torsional coefficients scale together
        model.pair_friction[table_pair, :3] = self._nominal_friction[table_pair, :3] * sample.table_friction_scale
        model.pair_friction[pusher_pair, :2] = self._nominal_friction[pusher_pair, :2] * sample.pusher_friction_scale
        geoms = self._support_geom[index]
        model.geom_pos[geoms, :2] = self._nominal_support_position[index][:, :2] + sample.friction_centre_offset
        self._samples[index] = sample

    def _update_table_support(self) -> None:
        state = self._data.qpos[self._planar_qpos]
        poses = state[2:].reshape(self.layout.object_count, 3)
        half_length, half_width = self.scene.table.half_extents
        beyond = (np.abs(poses[:, 0]) > half_length) | (np.abs(poses[:, 1]) > half_width)
        for index in np.flatnonzero(beyond & ~self._off_table):
            self._off_table[index] = True
            self._model.pair_margin[self._table_pair[index]] = _DISABLED_MARGIN

    # -- the pusher and the gripper -----------------------------------------------------------
    def grasp(self) -> bool:
        """Close the gripper on the pusher: it is held (moves with the arm) from now on if the
        end effector is within ``grasp_tolerance`` of it. Returns whether it is held."""
        with self._lock:
            if self._held:
                return True
            pusher = self._data.qpos[self._planar_qpos[:2]]
            offset = self._end_effector - pusher
            if float(np.hypot(*offset)) > self.settings.grasp_tolerance:
                return False
            self._grasp_offset = offset.copy()
            self._held = True
            return True

    def release(self) -> None:
        """Open the gripper: the pusher stays where it is; the arm moves on without it."""
        with self._lock:
            if self._held:
                self._end_effector = self._data.qpos[self._planar_qpos[:2]] + self._grasp_offset
                self._held = False

    @property
    def pusher_held(self) -> bool:
        with self._lock:
            return self._held

    def end_effector_position(self) -> np.ndarray:
        """(2,) planar position of the end effector (the grasp point), table frame, m."""
        with self._lock:
            if self._held:
                return self._data.qpos[self._planar_qpos[:2]] + self._grasp_offset
            return self._end_effector.copy()

    def command(self, twist: TwistCommand) -> CommandOutcome:
        """Pass an end-effector twist to the arm, stamped with the world's current time."""
        with self._lock:
            now = float(self._data.time)
        return self.arm.command(twist, received_at=now)

    # -- state --------------------------------------------------------------------------------
    @property
    def time(self) -> float:
        """Simulated time since the last reset, s."""
        with self._lock:
            return float(self._data.time)

    @property
    def timestep(self) -> float:
        """Physics step, s."""
        return self._timestep

    def true_state(self) -> np.ndarray:
        """(4 + 6 n,) the true state in the papers' layout (m, rad, m/s, rad/s)."""
        with self._lock:
            return self._state_locked()

    def _state_locked(self) -> np.ndarray:
        return np.concatenate([self._data.qpos[self._planar_qpos], self._data.qvel[self._planar_qvel]])

    def snapshot(self) -> SceneSnapshot:
        """The true state as a :class:`SceneSnapshot` stamped with the world time; every body
        valid (ages 0). Objects off the table are still reported where they are."""
        with self._lock:
            stamp, state = float(self._data.time), self._state_locked()
        return SceneSnapshot(stamp=stamp, object_names=self.scene.object_names, state=state)

    def off_table(self) -> np.ndarray:
        """(n,) bool: objects that went off the table since the last reset (latched)."""
        with self._lock:
            return self._off_table.copy()

    def currently_off_table(self) -> np.ndarray:
        """(n,) bool: the same rule on the current state (not latched), via
        :func:`parapush.physics.table_support.objects_off_table`."""
        return objects_off_table(self.scene, self.true_state())

    def contact_samples(self) -> tuple[ObjectContactSample, ...]:
        """The contact parameters of each object's current push."""
        with self._lock:
            return tuple(self._samples)

    def body_poses(self) -> tuple[BodyPose, ...]:
        """Poses of the pusher and of every object (scene order), table frame."""
        with self._lock:
            data = self._data
            bodies = [(PUSHER_BODY, self._pusher_body, 0.0)] + [
                (spec.name, int(self._object_body[index]), float(self._half_heights[index]))
                for index, spec in enumerate(self.scene.objects)
            ]
            poses = []
            for name, body, half_height in bodies:
                rotation = data.xmat[body].reshape(3, 3)
                position = data.xpos[body] + rotation[:, 2] * half_height
                w, x, y, z = data.xquat[body]
                orientation = np.array([x, y, z, w]) if w >= 0.0 else -np.array([x, y, z, w])
                poses.append(BodyPose(name, position, orientation))
            return tuple(poses)

    def status(self) -> WorldStatus:
        with self._lock:
            running = self.running
            elapsed = wall_clock.monotonic() - self._wall_started
            advanced = float(self._data.time) - self._time_started
            return WorldStatus(
                time=float(self._data.time),
                running=running,
                real_time_factor=advanced / elapsed if running and elapsed > 0.0 else 0.0,
                steps=self._steps,
                lag_events=self._lag_events,
                off_table=tuple(bool(flag) for flag in self._off_table),
                pusher_held=self._held,
                push_counts=tuple(int(count) for count in self._push_counts),
                error=self._error,
            )
