"""The simulated robot driver: the MuJoCo world behind the real device protocols.

:class:`SimDriver` composes

* the world (:class:`parapush.sim.world.SimWorld`), stepped in real time (times a factor);
* a simulated OptiTrack Motive (:class:`parapush.sim.mocap_server.MocapServer`) streaming the
  pusher and every object over NatNet/UDP, with mocap noise (:class:`parapush.sim.noise.MocapNoise`);
* an emulated Robotiq 2F-85 (:class:`parapush.sim.gripper_emulator.GripperEmulator`) on a pty
  (Modbus RTU) and/or TCP;
* the arm (:class:`parapush.sim.arm.SimArm`), fed with :meth:`SimDriver.submit_twist` (the
  sim_driver ROS node calls it with each ``TwistStamped`` it receives).

Mocap bodies and frames
-----------------------
The rigid-body ids, Motive names and pivot offsets come from the estimator's body mapping
(:mod:`parapush.estimation.body_map`, ``config/mocap/<scene name>.yaml`` when it exists) so that the
estimator recovers the world's poses exactly (up to the mocap noise); with
``bodies_file: null`` the driver makes one: pusher id 1, objects 2, 3, ... in scene order,
Motive names = scene names, pivots at the bodies' centres. The body's *centre* is, as in that
file, the object's geometric centre and, for the pusher, the point of its axis at table height.

The mocap frame is related to the table frame by the estimator's
:class:`parapush.estimation.table_frame.TableTransform` (``p_table = R p_mocap + t``),
configured as the ``mocap_to_table`` section. The default is Motive's default **Y-up** frame
with its ground plane on the table top and its origin at the table centre: table
``(x, y, z)`` = mocap ``(x, -z, y)`` (``preset: y_up``, R = Rx(+90 deg)). The streamed
pose of a body is what Motive would send for it: its pivot ``R^T (c - R_obj o - t)`` (``c`` the
centre, ``o`` the ``centre_offset``) and its orientation ``R^T (R_obj Rz(-yaw_offset)) R``.
Objects that fell off the table (below the table top by more than their height) are out of the
capture volume: streamed with tracking-valid cleared.

Pusher and gripper (decision)
-----------------------------
``coupling: gripper`` (default, as on the robot): the pusher stands in the open fingers of the
unactivated gripper at start-up and moves with the arm only while the fingers are closed on
it, i.e. the stack must activate the gripper and close it, as it must on the real robot. The
driver tells the emulator that an object of ``grip_width`` (default the pusher's diameter) is
between the fingers whenever the end effector is within ``world.grasp_tolerance`` of the
pusher; the pusher is *held* while the finger position is between the contact position for
that width and the contact position plus the emulator's squeeze (fingers closed on it), and
released when they open (or close past it, e.g. after the object was lost). Arm commands
while it is not held move the end effector alone; the pusher stays where it was left.
``coupling: rigid``: the pusher is always held, the gripper is not consulted (tests and
benches that do not drive a gripper).

Faults
------
Delegated to the devices' hooks: :meth:`SimDriver.untrack_body` (mocap bodies untracked for a
time), :meth:`SimDriver.set_natnet_loss` (UDP loss; at start-up ``mocap.server.drop_probability``),
:meth:`SimDriver.corrupt_mocap_frames`, :meth:`SimDriver.inject_gripper_fault`,
:meth:`SimDriver.set_gripper_responding`, :meth:`SimDriver.inject_arm_fault`; the devices
themselves are :attr:`SimDriver.world`, :attr:`SimDriver.mocap_server` and
:attr:`SimDriver.gripper`.

The settings are :mod:`parapush.sim.driver_settings`; ``python -m parapush.programs.sim_devices``
runs the driver without ROS, the ``sim_driver`` node (:mod:`parapush.nodes.sim_driver`) with it.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from parapush.background import stop_thread
from parapush.estimation.body_map import PUSHER_BODY, BodyMapEntry, BodyMapError, resolve_body_map
from parapush.estimation.rotations import (
    canonical_quaternion,
    quaternion_conjugate,
    quaternion_multiply,
    yaw_quaternion,
)
from parapush.execution.commands import TwistCommand
from parapush.graph import config_dir as package_config_dir
from parapush.lifecycle import Service
from parapush.natnet.models import RigidBodyDescription
from parapush.robotiq.registers import GripperStatus
from parapush.scene import Scene
from parapush.sim.arm import ArmFault, ArmStatus, CommandOutcome
from parapush.sim.driver_settings import DriverSettings
from parapush.sim.gripper_emulator import GripperEmulator
from parapush.sim.mocap_server import (
    BodySample,
    CorruptionKind,
    MocapServer,
    MocapServerStats,
    UntrackMode,
)
from parapush.sim.noise import MocapNoise
from parapush.sim.world import BodyPose, SimWorld, WorldStatus
from parapush.validation import check_instance

__all__ = ["DriverEndpoints", "DriverStatus", "SimDriver"]

_LOG = logging.getLogger(__name__)

_HELD_TOLERANCE_COUNTS = 0.5
"""Finger-position slack (counts) around the band that counts as closed on the pusher."""


@dataclass(frozen=True)
class DriverEndpoints:
    """Where the devices can be reached.

    Attributes:
        mocap_command_address: (host, port) of the NatNet command socket (unicast frames come from it).
        mocap_multicast_address: (group, port) of the multicast stream, or None.
        gripper_serial_port: the pty clients open for Modbus RTU, or None.
        gripper_tcp_address: (host, port) of the Modbus TCP server, or None.
        gripper_device_id: the gripper's Modbus device id.
    """

    mocap_command_address: tuple[str, int]
    mocap_multicast_address: tuple[str, int] | None
    gripper_serial_port: str | None
    gripper_tcp_address: tuple[str, int] | None
    gripper_device_id: int

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class DriverStatus:
    """A snapshot of the driver.

    Attributes:
        world: the world's status (time, off-table flags, pushes, errors).
        arm: the arm's status (velocity, timeout, fault, command counts).
        pusher_held: whether the pusher moves with the arm.
        gripper: the gripper's status registers (None with ``coupling: rigid`` or before start).
        finger_position: finger position, counts (NaN when ``gripper`` is None).
        mocap: the NatNet server's counters (None before start).
    """

    world: WorldStatus
    arm: ArmStatus
    pusher_held: bool
    gripper: GripperStatus | None
    finger_position: float
    mocap: MocapServerStats | None


class SimDriver(Service):
    """The simulated robot driver (see the module docstring); a context manager.

    Args:
        scene: the scene.
        settings: driver settings (defaults: :class:`DriverSettings`).

    Attributes:
        scene: the scene.
        settings: the settings.
        world: the simulated world (created at construction, stepped from :meth:`start`).
        body_map: the mocap body mapping in use.
    """

    def __init__(self, scene: Scene, settings: DriverSettings | None = None) -> None:
        check_instance("scene", scene, Scene, "a parapush.scene.Scene")
        settings = check_instance("settings", DriverSettings() if settings is None else settings, DriverSettings)
        self.scene = scene
        self.settings = settings
        self.body_map, self.body_map_source = resolve_body_map(
            scene,
            "" if settings.mocap.bodies_file is None else settings.mocap.bodies_file,
            settings.config_dir if settings.config_dir is not None else package_config_dir(),
        )
        if not self.body_map.is_resolved:
            missing = [entry.body for entry in self.body_map.entries if entry.rigid_body_id is None]
            raise BodyMapError(f"{self.body_map_source}: the simulated Motive needs a streaming id for {missing}")
        rigid = settings.gripper.coupling == "rigid"
        world_settings = dataclasses.replace(settings.world, pusher_held_at_start=rigid)
        self.world = SimWorld(scene, world_settings)
        self._mocap_noise = MocapNoise(settings.mocap.noise, seed=settings.mocap.seed)
        transform = settings.mocap.mocap_to_table
        self._table_rotation = np.asarray(transform.rotation)
        self._table_to_mocap = transform.inverse()
        self._fallen_depth = {PUSHER_BODY: math.inf} | {spec.name: spec.height for spec in scene.objects}
        self._grip_width = (
            settings.gripper.grip_width if settings.gripper.grip_width is not None else 2.0 * scene.pusher.radius
        )
        geometry = settings.gripper.emulator.device.geometry
        contact = geometry.position_for_opening(self._grip_width)
        squeeze = settings.gripper.emulator.device.squeeze_counts
        self._held_band = (contact - _HELD_TOLERANCE_COUNTS, contact + squeeze + _HELD_TOLERANCE_COUNTS)
        self.mocap_server: MocapServer | None = None
        self.gripper: GripperEmulator | None = None
        self._coupling_thread: threading.Thread | None = None
        self._stop_coupling = threading.Event()
        self._object_between_fingers = False
        self._lock = threading.Lock()

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> SimDriver:
        """Start the gripper emulator, the mocap server and the world, in that order."""
        with self._lock:
            if self.mocap_server is not None:
                raise RuntimeError("the driver is already started")
            try:
                if self.settings.gripper.coupling == "gripper":
                    self.gripper = GripperEmulator(self.settings.gripper.emulator).start()
                descriptions = [
                    RigidBodyDescription(name=self._motive_name(entry), id=entry.rigid_body_id)
                    for entry in self.body_map.entries
                ]
                self.mocap_server = MocapServer(
                    self._mocap_frame, settings=self.settings.mocap.server, rigid_body_descriptions=descriptions
                ).start()
                self.world.start()
                if self.gripper is not None:
                    self._stop_coupling.clear()
                    self._coupling_thread = threading.Thread(
                        target=self._run_coupling, name="sim-driver-gripper-coupling", daemon=True
                    )
                    self._coupling_thread.start()
            except BaseException:
                self._stop_locked()
                raise
        _LOG.info("simulated driver for scene %r started: %s", self.scene.name, self.endpoints().to_dict())
        return self

    def stop(self) -> None:
        """Stop the world, the coupling, the mocap server and the gripper emulator (idempotent)."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        problems = []
        self._stop_coupling.set()
        try:
            stop_thread(self._coupling_thread, self._stop_coupling, 5.0, "the gripper coupling thread")
        except RuntimeError as error:
            problems.append(str(error))
        self._coupling_thread = None
        for name, device in (("world", self.world), ("mocap server", self.mocap_server), ("gripper", self.gripper)):
            if device is None:
                continue
            try:
                device.stop()
            except Exception as error:  # keep stopping the others
                problems.append(f"{name}: {error}")
        self.mocap_server = None
        self.gripper = None
        if problems:
            raise RuntimeError("stopping the simulated driver: " + "; ".join(problems))

    @property
    def running(self) -> bool:
        return self.mocap_server is not None and self.world.running

    def __enter__(self) -> SimDriver:
        """Start the driver unless it runs already (``with driver:`` after ``driver.start()``)."""
        if not self.running:
            self.start()
        return self

    def reset(self, *, seed: int | None = None) -> None:
        """Reset the world to the scene's initial state (see :meth:`SimWorld.reset`). The end
        effector is put back at the pusher; with ``coupling: gripper`` the pusher is held again
        as soon as the coupling sees the fingers closed on it (the gripper is not reset)."""
        running = self.world.running
        if running:
            self.world.stop()
        self.world.reset(seed=seed)
        if running:
            self.world.start()

    # -- the arm ------------------------------------------------------------------------------
    def submit_twist(self, twist: TwistCommand) -> CommandOutcome:
        """One end-effector velocity command (what the ROS node receives as ``TwistStamped``)."""
        return self.world.command(twist)

    # -- status -------------------------------------------------------------------------------
    def endpoints(self) -> DriverEndpoints:
        """Where to reach the devices (after :meth:`start`)."""
        server = self.mocap_server
        if server is None:
            raise RuntimeError("endpoints: the driver is not started")
        server_settings = server.settings
        gripper = self.gripper
        serial = tcp = None
        if gripper is not None:
            serial = gripper.serial_port if gripper.settings.serial else None
            tcp = gripper.tcp_address if gripper.settings.tcp else None
        multicast = (server_settings.multicast_group, server_settings.data_port)
        return DriverEndpoints(
            mocap_command_address=server.command_address,
            mocap_multicast_address=multicast if server_settings.stream_multicast else None,
            gripper_serial_port=serial,
            gripper_tcp_address=tcp,
            gripper_device_id=self.settings.gripper.emulator.device_id,
        )

    def status(self) -> DriverStatus:
        gripper, server = self.gripper, self.mocap_server
        return DriverStatus(
            world=self.world.status(),
            arm=self.world.arm.status(),
            pusher_held=self.world.pusher_held,
            gripper=gripper.status() if gripper is not None else None,
            finger_position=gripper.finger_position() if gripper is not None else math.nan,
            mocap=server.stats() if server is not None else None,
        )

    # -- fault injection ----------------------------------------------------------------------
    def untrack_body(
        self, body: str, *, duration_s: float, mode: UntrackMode = UntrackMode.INVALID, delay_s: float = 0.0
    ) -> None:
        """Make scene body ``body`` (``"pusher"`` or an object name) untracked for ``duration_s``."""
        self._require_server().untrack(
            self.body_map.entry(body).rigid_body_id, duration_s=duration_s, mode=mode, delay_s=delay_s
        )

    def set_natnet_loss(self, probability: float) -> None:
        """Lose each NatNet frame datagram with ``probability`` (in [0, 1]; 0 stops the loss)."""
        self._require_server().set_drop_probability(probability)

    def corrupt_mocap_frames(self, count: int = 1, *, kind: CorruptionKind = CorruptionKind.TRUNCATE) -> None:
        """Damage the next ``count`` NatNet frames."""
        self._require_server().corrupt_next_frames(count, kind=kind)

    def inject_arm_fault(self, fault: ArmFault) -> None:
        """Protective stop, ignored commands, or ``ArmFault.NONE`` to clear."""
        self.world.arm.inject_fault(fault)

    def inject_gripper_fault(self, code: int) -> None:
        """Report gFLT = ``code`` on the gripper (see :class:`GripperDeviceModel`)."""
        self._require_gripper().inject_fault(code)

    def clear_gripper_fault(self) -> None:
        self._require_gripper().clear_fault()

    def set_gripper_responding(self, responding: bool) -> None:
        """False: the gripper stops answering Modbus requests."""
        self._require_gripper().set_responding(responding)

    def _require_server(self) -> MocapServer:
        if self.mocap_server is None:
            raise RuntimeError("the driver is not started (no mocap server)")
        return self.mocap_server

    def _require_gripper(self) -> GripperEmulator:
        if self.gripper is None:
            raise RuntimeError("no gripper emulator (driver not started, or coupling: rigid)")
        return self.gripper

    # -- mocap --------------------------------------------------------------------------------
    @staticmethod
    def _motive_name(entry: BodyMapEntry) -> str:
        return entry.motive_name if entry.motive_name is not None else entry.body

    def mocap_pose(self, pose: BodyPose, entry: BodyMapEntry) -> tuple[np.ndarray, np.ndarray]:
        """The noiseless mocap-frame pose (pivot position (3,) m, orientation (4,)) Motive
        would stream for a table-frame body pose (see the module docstring)."""
        object_rotation = np.asarray(pose.orientation, dtype=float)
        rotated_offset = _rotate(object_rotation, np.asarray(entry.centre_offset))
        pivot = self._table_to_mocap.points_to_table(np.asarray(pose.position) - rotated_offset)
        reference = quaternion_multiply(object_rotation, yaw_quaternion(-entry.yaw_offset))
        body_rotation = quaternion_multiply(
            quaternion_multiply(quaternion_conjugate(self._table_rotation), reference), self._table_rotation
        )
        return pivot, canonical_quaternion(body_rotation)

    def _mocap_frame(self) -> list[BodySample]:
        samples = []
        for pose in self.world.body_poses():
            entry = self.body_map.entry(pose.name)
            position, orientation = self.mocap_pose(pose, entry)
            position, orientation = self._mocap_noise.perturb(position, orientation)
            tracked = not (
                self.settings.mocap.fallen_untracked and pose.position[2] < -self._fallen_depth[pose.name]
            )
            samples.append(
                BodySample(
                    id=entry.rigid_body_id,
                    name=self._motive_name(entry),
                    position=tuple(float(value) for value in position),
                    orientation=tuple(float(value) for value in orientation),
                    tracking_valid=tracked,
                    mean_error=self.settings.mocap.mean_error if tracked else 0.0,
                )
            )
        return samples

    # -- gripper coupling ---------------------------------------------------------------------
    def _run_coupling(self) -> None:
        period = self.settings.gripper.coupling_period
        while not self._stop_coupling.wait(period):
            try:
                self.update_coupling()
            except Exception:  # the coupling must keep running; log and go on
                _LOG.exception("gripper coupling update failed")

    def update_coupling(self) -> bool:
        """Apply the gripper's finger position to the pusher once (the coupling thread does
        this every ``coupling_period``). Returns whether the pusher is held."""
        gripper = self.gripper
        if gripper is None:
            return self.world.pusher_held
        world = self.world
        pusher = world.true_state()[:2]
        near = float(np.hypot(*(world.end_effector_position() - pusher))) <= world.settings.grasp_tolerance
        between = world.pusher_held or near
        if between != self._object_between_fingers:
            gripper.set_object_width(self._grip_width if between else None)
            self._object_between_fingers = between
        fingers = gripper.finger_position()
        closed_on_pusher = self._held_band[0] <= fingers <= self._held_band[1]
        if world.pusher_held and not closed_on_pusher:
            world.release()
            _LOG.info("gripper opened (fingers at %.1f counts): pusher released", fingers)
        elif not world.pusher_held and closed_on_pusher and near and world.grasp():
            _LOG.info("gripper closed on the pusher (fingers at %.1f counts): pusher held", fingers)
        return world.pusher_held


def _rotate(quaternion: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``vector`` (3,) rotated by the unit quaternion (4,) (qx, qy, qz, qw)."""
    pure = np.array([*vector, 0.0])
    return quaternion_multiply(quaternion_multiply(quaternion, pure), quaternion_conjugate(quaternion))[:3]
