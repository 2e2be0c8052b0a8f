"""Settings of the simulated driver (``config/sim_world.yaml``): world, motion capture, gripper.

The schema only: frozen dataclasses validated on construction, read from a mapping or a
file with errors that name the file and the field. The driver itself is
:class:`parapush.sim.driver.SimDriver`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from parapush.estimation.body_map import AUTO_BODY_MAP
from parapush.estimation.table_frame import TableFrameError, TableTransform, table_transform_from_dict
from parapush.robotiq.device_model import DeviceModelSettings
from parapush.settings import settings_from_mapping
from parapush.sim.gripper_emulator import GripperEmulatorSettings
from parapush.sim.mocap_server import MocapServerSettings
from parapush.sim.noise import MocapNoiseSettings
from parapush.sim.world import WorldSettings

COUPLINGS = ("gripper", "rigid")
DEFAULT_SETTINGS_FILE = "sim_world.yaml"


class DriverSettingsError(ValueError):
    """Driver settings are invalid; the message names the field."""


def _check_keys(data: Any, known: set[str], where: str) -> Mapping[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise DriverSettingsError(f"{where}: expected a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - known)
    if unknown:
        raise DriverSettingsError(f"{where}: unknown field(s) {unknown}; known: {sorted(known)}")
    return data


def _build(cls: type, data: Any, where: str, *, exclude: frozenset[str] = frozenset()) -> Any:
    known = {item.name for item in fields(cls)} - exclude
    values = _check_keys(data, known, where)
    try:
        return cls(**values)
    except (TypeError, ValueError) as error:
        raise DriverSettingsError(f"{where}: {error}") from None


def _section(cls: type, values: Mapping[str, Any], where: str) -> Any:
    """``cls(**values)`` with its error's field prefixed by ``where`` (``mocap.seed: ...``)."""
    try:
        return cls(**values)
    except DriverSettingsError as error:
        raise DriverSettingsError(f"{where}.{error}") from None


def _check_kinds(settings: Any, kinds: tuple[tuple[str, type], ...]) -> None:
    """Each named field of ``settings`` is an instance of its kind."""
    for name, kind in kinds:
        if not isinstance(getattr(settings, name), kind):
            raise DriverSettingsError(f"{name}: expected {kind.__name__}, got {getattr(settings, name)!r}")


def _non_negative_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise DriverSettingsError(f"{name}: expected an integer >= 0, got {value!r}")
    return int(value)


def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise DriverSettingsError(f"{name}: expected a finite number > 0, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class MocapStreamSettings:
    """The simulated motion capture.

    Attributes:
        server: the NatNet server (ports, rate, version, latency, UDP loss ``drop_probability``).
        bodies_file: the estimator's body mapping: ``"auto"`` (``config/mocap/<scene name>.yaml``
            when it exists, else the generated mapping), a file (relative paths: to the settings
            file's directory), or None for the generated mapping (see
            :func:`parapush.estimation.body_map.resolve_body_map`).
        mocap_to_table: the mocap -> table transform (the estimator's convention).
        noise: measurement noise of the streamed poses.
        seed: seed of the measurement noise.
        mean_error: marker error reported with every tracked body, m.
        fallen_untracked: stream objects that fell off the table as untracked.
    """

    server: MocapServerSettings = field(default_factory=MocapServerSettings)
    bodies_file: str | None = AUTO_BODY_MAP
    mocap_to_table: TableTransform = field(default_factory=TableTransform.y_up)
    noise: MocapNoiseSettings = field(default_factory=MocapNoiseSettings)
    seed: int = 0
    mean_error: float = 0.0002
    fallen_untracked: bool = True

    def __post_init__(self) -> None:
        _check_kinds(
            self, (("server", MocapServerSettings), ("mocap_to_table", TableTransform), ("noise", MocapNoiseSettings))
        )
        if self.bodies_file is not None and (not isinstance(self.bodies_file, str) or not self.bodies_file):
            raise DriverSettingsError(f"bodies_file: expected a file name or null, got {self.bodies_file!r}")
        object.__setattr__(self, "seed", _non_negative_int(self.seed, "seed"))
        if not isinstance(self.mean_error, (int, float)) or not 0.0 <= self.mean_error < math.inf:
            raise DriverSettingsError(f"mean_error: expected a finite number >= 0, got {self.mean_error!r}")
        if not isinstance(self.fallen_untracked, bool):
            raise DriverSettingsError(f"fallen_untracked: expected true or false, got {self.fallen_untracked!r}")

    @classmethod
    def from_mapping(cls, data: Any, where: str = "mocap") -> MocapStreamSettings:
        values = dict(_check_keys(data, {item.name for item in fields(cls)}, where))
        if "server" in values:
            values["server"] = _build(MocapServerSettings, values["server"], f"{where}.server")
        if "mocap_to_table" in values:
            try:
                values["mocap_to_table"] = table_transform_from_dict(
                    values["mocap_to_table"], f"{where}.mocap_to_table"
                )
            except TableFrameError as error:
                raise DriverSettingsError(str(error)) from None
        if "noise" in values:
            try:
                values["noise"] = settings_from_mapping(MocapNoiseSettings, values["noise"], f"{where}.noise")
            except ValueError as error:
                raise DriverSettingsError(str(error)) from None
        return _section(cls, values, where)


@dataclass(frozen=True)
class GripperLinkSettings:
    """The emulated gripper and how it holds the pusher (see the module docstring).

    Attributes:
        emulator: transports and device behaviour of the emulated 2F-85; its
            ``device.object_width_m`` is managed by the driver.
        coupling: ``"gripper"`` (the pusher moves only while the fingers hold it) or
            ``"rigid"`` (always held; the gripper is not consulted).
        grip_width: width of the pusher where the fingers hold it, m; None: its diameter.
        coupling_period: how often the finger position is checked, s (wall clock).
    """

    emulator: GripperEmulatorSettings = field(default_factory=GripperEmulatorSettings)
    coupling: str = "gripper"
    grip_width: float | None = None
    coupling_period: float = 0.01

    def __post_init__(self) -> None:
        if not isinstance(self.emulator, GripperEmulatorSettings):
            raise DriverSettingsError(f"emulator: expected GripperEmulatorSettings, got {self.emulator!r}")
        if self.coupling not in COUPLINGS:
            raise DriverSettingsError(f"coupling: expected one of {COUPLINGS}, got {self.coupling!r}")
        if self.grip_width is not None:
            object.__setattr__(self, "grip_width", _positive(self.grip_width, "grip_width"))
        object.__setattr__(self, "coupling_period", _positive(self.coupling_period, "coupling_period"))

    @classmethod
    def from_mapping(cls, data: Any, where: str = "gripper") -> GripperLinkSettings:
        values = dict(_check_keys(data, {item.name for item in fields(cls)} | {"device"}, where))
        emulator_values = dict(
            _check_keys(
                values.pop("emulator", None),
                {item.name for item in fields(GripperEmulatorSettings)} - {"device"},
                f"{where}.emulator",
            )
        )
        device = _build(DeviceModelSettings, values.pop("device", None), f"{where}.device",
                        exclude=frozenset({"geometry", "object_width_m"}))
        try:
            values["emulator"] = GripperEmulatorSettings(device=device, **emulator_values)
        except (TypeError, ValueError) as error:
            raise DriverSettingsError(f"{where}.emulator: {error}") from None
        return _section(cls, values, where)


@dataclass(frozen=True)
class DriverSettings:
    """Everything the simulated driver needs besides the scene.

    Attributes:
        world: the simulation (``pusher_held_at_start`` is decided by ``gripper.coupling``).
        mocap: the motion capture.
        gripper: the gripper and the pusher coupling.
        config_dir: directory relative ``bodies_file`` paths are resolved against (the
            settings file's; None: the package's config directory).
    """

    world: WorldSettings = field(default_factory=WorldSettings)
    mocap: MocapStreamSettings = field(default_factory=MocapStreamSettings)
    gripper: GripperLinkSettings = field(default_factory=GripperLinkSettings)
    config_dir: Path | None = None

    def __post_init__(self) -> None:
        _check_kinds(self, (("world", WorldSettings), ("mocap", MocapStreamSettings), ("gripper", GripperLinkSettings)))
        if self.config_dir is not None:
            object.__setattr__(self, "config_dir", Path(self.config_dir))

    @classmethod
    def from_mapping(cls, data: Any, *, config_dir: Path | None = None) -> DriverSettings:
        values = _check_keys(data, {"world", "mocap", "gripper"}, "settings")
        try:
            world = settings_from_mapping(WorldSettings, values.get("world"), "world")
        except ValueError as error:
            raise DriverSettingsError(str(error)) from None
        return cls(
            world=world,
            mocap=MocapStreamSettings.from_mapping(values.get("mocap"), "mocap"),
            gripper=GripperLinkSettings.from_mapping(values.get("gripper"), "gripper"),
            config_dir=config_dir,
        )


def load_driver_settings(path: str | Path) -> DriverSettings:
    """Read driver settings (``config/sim_world.yaml``); errors name the file and the field."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as error:
        raise DriverSettingsError(f"{path}: cannot read settings ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise DriverSettingsError(f"{path}: invalid YAML ({error})") from None
    try:
        return DriverSettings.from_mapping(data, config_dir=path.resolve().parent)
    except DriverSettingsError as error:
        raise DriverSettingsError(f"{path}: {error}") from None
