"""Settings of the simulated driver (``config/sim_world.yaml``): world, motion capture, gripper.

The schema only: frozen dataclasses validated on construction, read from a mapping or a
file with errors that name the file and the field. The driver itself is
:class:`parapush.sim.driver.SimDriver`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from parapush.estimation.body_map import AUTO_BODY_MAP
from parapush.estimation.table_frame import TableTransform, table_transform_from_dict
from parapush.settings import check_settings, setting, settings_from_mapping
from parapush.sim.gripper_emulator import GripperEmulatorSettings
from parapush.sim.mocap_server import MocapServerSettings
from parapush.sim.noise import MocapNoiseSettings
from parapush.sim.world import WorldSettings
from parapush.validation import check_instance, check_not_empty

COUPLINGS = ("gripper", "rigid")
SECTIONS = frozenset({"world", "mocap", "gripper"})
DRIVER_MANAGED_DEVICE_FIELDS = frozenset({"geometry", "object_width_m"})
DEFAULT_SETTINGS_FILE = "sim_world.yaml"


class DriverSettingsError(ValueError):
    """Driver settings are invalid; the message names the field."""


@dataclass(frozen=True)
class MocapStreamSettings:
    """The simulated motion capture (each field's meaning, unit and range: its :func:`setting`).

    Attributes:
        server: the NatNet server (ports, rate, version, latency, UDP loss ``drop_probability``).
        mocap_to_table: the mocap -> table transform (the estimator's convention); a mapping
            (the ``mocap_to_table`` YAML section) is converted.
        noise: measurement noise of the streamed poses.
    """

    server: MocapServerSettings = field(default_factory=MocapServerSettings)
    bodies_file: str | None = setting(
        AUTO_BODY_MAP,
        "the estimator's body mapping: 'auto' (config/mocap/<scene name>.yaml when it exists, else the generated "
        "mapping) or a file: a path, or a bare file name in the settings file's directory; see "
        "parapush.estimation.body_map.resolve_body_map",
        kind=str, none="the generated mapping", ros_none="",
    )
    # Not a setting: a TableTransform object (a mapping is converted), checked below.
    mocap_to_table: TableTransform = field(default_factory=TableTransform.y_up)
    noise: MocapNoiseSettings = field(default_factory=MocapNoiseSettings)
    seed: int = setting(0, "seed of the measurement noise", minimum=0)
    mean_error: float = setting(0.0002, "marker error reported with every tracked body", unit="m", minimum=0.0)
    fallen_untracked: bool = setting(True, "stream objects that fell off the table as untracked")

    def __post_init__(self) -> None:
        if isinstance(self.mocap_to_table, Mapping):
            object.__setattr__(self, "mocap_to_table", table_transform_from_dict(self.mocap_to_table, "mocap_to_table"))
        check_instance("server", self.server, MocapServerSettings)
        check_instance("mocap_to_table", self.mocap_to_table, TableTransform)
        check_instance("noise", self.noise, MocapNoiseSettings)
        check_settings(self)
        if self.bodies_file is not None:
            check_not_empty("bodies_file", self.bodies_file)


@dataclass(frozen=True)
class GripperLinkSettings:
    """The emulated gripper and how it holds the pusher (see the module docstring; each
    field's meaning, unit and range: its :func:`setting`).

    Attributes:
        emulator: transports and device behaviour of the emulated 2F-85; its
            ``device.object_width_m`` is managed by the driver. In YAML the device behaviour
            is the ``gripper.device`` section, beside ``gripper.emulator``.
    """

    emulator: GripperEmulatorSettings = field(default_factory=GripperEmulatorSettings)
    coupling: str = setting(
        "gripper", "gripper: the pusher moves only while the fingers hold it; rigid: always held, the gripper "
        "is not consulted", choices=COUPLINGS,
    )
    grip_width: float | None = setting(
        None, "width of the pusher where the fingers hold it", kind=float, unit="m", above=0.0,
        none="the pusher's diameter", ros_none=0.0,
    )
    coupling_period: float = setting(0.01, "how often the finger position is checked (wall clock)", unit="s",
                                     above=0.0)

    def __post_init__(self) -> None:
        check_instance("emulator", self.emulator, GripperEmulatorSettings)
        check_settings(self)


def _gripper_mapping(data: Any) -> Any:
    """The ``gripper`` YAML section with its ``device`` section moved into ``emulator`` (where
    :class:`GripperEmulatorSettings` holds it); the driver's own device fields are refused."""
    if not isinstance(data, Mapping) or "device" not in data:
        return data
    values = dict(data)
    device = values.pop("device")
    emulator = values.get("emulator") or {}
    if not isinstance(emulator, Mapping):
        return data  # settings_from_mapping names the section
    if "device" in emulator:
        raise DriverSettingsError("gripper.emulator: unknown field(s) ['device']; the device is gripper.device")
    managed = sorted(set(device) & DRIVER_MANAGED_DEVICE_FIELDS) if isinstance(device, Mapping) else []
    if managed:
        raise DriverSettingsError(f"gripper.device: unknown field(s) {managed}: the driver sets them")
    values["emulator"] = {**emulator, "device": device}
    return values


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
    # Not a setting: a directory the loader passes (the settings file's), not a value of the file.
    config_dir: Path | None = None

    def __post_init__(self) -> None:
        check_instance("world", self.world, WorldSettings)
        check_instance("mocap", self.mocap, MocapStreamSettings)
        check_instance("gripper", self.gripper, GripperLinkSettings)
        if self.config_dir is not None:
            object.__setattr__(self, "config_dir", Path(self.config_dir))

    @classmethod
    def from_mapping(cls, data: Any, *, config_dir: Path | None = None) -> DriverSettings:
        """From plain data (the parsed settings file); errors name the section and the field."""
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise DriverSettingsError(f"settings: expected a mapping, got {type(data).__name__}")
        unknown = sorted(str(key) for key in set(data) - SECTIONS)
        if unknown:
            raise DriverSettingsError(f"settings: unknown field(s) {unknown}; known: {sorted(SECTIONS)}")
        try:
            return cls(
                world=settings_from_mapping(WorldSettings, data.get("world"), "world"),
                mocap=settings_from_mapping(MocapStreamSettings, data.get("mocap"), "mocap"),
                gripper=settings_from_mapping(GripperLinkSettings, _gripper_mapping(data.get("gripper")), "gripper"),
                config_dir=config_dir,
            )
        except DriverSettingsError:
            raise
        except ValueError as error:
            raise DriverSettingsError(str(error)) from None


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
