"""The state estimator's settings, declared once (:mod:`parapush.settings`): each field carries
its default, range, unit and description; the state estimator node's parameters are generated
from :class:`EstimatorSettings` (``filter.*`` is its nested section, the velocity filter's
:class:`~parapush.estimation.velocity_filter.PoseFilterSettings`) and
``config/state_estimator.yaml`` lists the same keys. The scene file is the node's own parameter.

Checks that need this host (resolving ``server_address``, binding ``local_interface``) run in
:meth:`EstimatorSettings.client_settings`, not at construction.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

from parapush.estimation.body_map import AUTO_BODY_MAP
from parapush.estimation.natnet_client import NatNetClientSettings
from parapush.estimation.tracker import TrackerSettings
from parapush.estimation.velocity_filter import PoseFilterSettings
from parapush.natnet import NatNetVersion
from parapush.reporting.diagnostic_report import diagnostics_period_setting
from parapush.settings import SettingsError, check_settings, same_setting, setting
from parapush.validation import check_ipv4, check_not_empty


@dataclass(frozen=True)
class EstimatorSettings:
    """Everything the state estimator node is configured with, except the scene file."""

    body_map_file: str = setting(
        AUTO_BODY_MAP,
        "Motive rigid body -> scene body mapping: 'auto' (config/mocap/<scene name>.yaml if it exists, else "
        "generated), '' (generated: pusher id 1, objects 2, 3, ... in scene order, Motive names = scene names, "
        "pivots at the centres), or a file: a path or a name in config/",
    )
    table_transform_file: str = setting(
        "table_transform.yaml", "mocap -> table transform (mocap_to_table section): a path or a name in config/"
    )
    server_address: str = same_setting(NatNetClientSettings, "server_address")
    command_port: int = same_setting(NatNetClientSettings, "command_port")
    data_port: int = setting(0, "multicast data port (UDP); 0: the one the server announces (1511)",
                             minimum=0, maximum=65535)
    multicast: bool = same_setting(NatNetClientSettings, "multicast")
    multicast_group: str = setting("", "multicast group; empty: the one the server announces")
    local_interface: str = same_setting(NatNetClientSettings, "local_address")
    natnet_version: str = setting("", "bitstream version to ask for, e.g. '4.1'; empty: the server's choice")
    extra_latency: float = setting(
        0.0, "added to the server-reported latency (network transit); stamps are backdated by the sum", unit="s",
        minimum=0.0, maximum=0.1,
    )
    max_latency: float = setting(0.1, "a frame whose server-reported latency is longer is dropped as corrupt",
                                 unit="s", minimum=0.001, maximum=10.0)
    clock_tolerance: float = setting(
        0.002, "a frame whose timestamp and mid-exposure clock advance by more than this differently from the "
        "previous frame's is dropped as corrupt (0: no check)", unit="s", minimum=0.0, maximum=1.0,
    )
    stale_timeout: float = same_setting(TrackerSettings, "stale_timeout")
    reinitialize_after: float = same_setting(TrackerSettings, "reinitialize_after")
    use_server_clock: bool = same_setting(TrackerSettings, "use_server_clock")
    filter: PoseFilterSettings = field(default_factory=PoseFilterSettings)
    publish_rate: float = setting(0.0, "0: publish scene_state on every mocap frame, > 0: on a timer", unit="Hz",
                                  minimum=0.0, maximum=1000.0)
    idle_publish_period: float = setting(
        0.1, "with publish_rate 0, publish anyway after this long without a frame (stale states instead of "
        "silence)", unit="s", minimum=0.001, maximum=10.0,
    )
    frame_id: str = setting("table", "frame of scene_state and parent of the TF frames")
    publish_tf: bool = setting(True, "broadcast TF frame_id -> bodies and -> mocap frame (needs tf2_ros)")
    tf_prefix: str = setting("", "prefix of the bodies' TF frame names")
    mocap_frame_id: str = setting("mocap", "TF name of the mocap (Motive) frame")
    diagnostics_period: float = diagnostics_period_setting()

    def __post_init__(self) -> None:
        check_settings(self)
        for name in ("table_transform_file", "server_address", "local_interface", "frame_id", "mocap_frame_id"):
            check_not_empty(name, getattr(self, name))
        if not isinstance(self.filter, PoseFilterSettings):
            raise ValueError(f"filter: expected PoseFilterSettings, got {self.filter!r}")
        if all(part.isdigit() for part in self.server_address.split(".")):  # looks numeric: must be valid
            check_ipv4("server_address", self.server_address)
        check_ipv4("local_interface", self.local_interface)
        if self.multicast_group:
            check_ipv4("multicast_group", self.multicast_group, multicast=True)
        self.requested_version()

    def requested_version(self) -> NatNetVersion | None:
        """The NatNet version to ask for (None: the server's choice)."""
        if not self.natnet_version:
            return None
        try:
            version = NatNetVersion.parse(self.natnet_version)
        except ValueError as error:
            raise ValueError(f"natnet_version: {error}") from None
        if version.major not in (3, 4):
            raise ValueError(f"natnet_version: {self.natnet_version!r}; the client decodes NatNet 3.x and 4.x")
        return version

    def tracker_settings(self) -> TrackerSettings:
        return TrackerSettings(
            stale_timeout=self.stale_timeout,
            reinitialize_after=self.reinitialize_after,
            use_server_clock=self.use_server_clock,
            pose_filter=self.filter,
        )

    def client_settings(self) -> NatNetClientSettings:
        """The NatNet client's settings, after checking that ``server_address`` resolves and
        ``local_interface`` is an address of this host.

        Raises:
            SettingsError: naming the field.
        """
        try:
            socket.gethostbyname(self.server_address)
        except OSError as error:
            raise SettingsError("server_address", f"cannot resolve {self.server_address!r} ({error})") from None
        if self.local_interface != "0.0.0.0":
            probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                probe.bind((self.local_interface, 0))
            except OSError as error:
                raise SettingsError(
                    "local_interface", f"{self.local_interface} is not an address of this host ({error.strerror})"
                ) from None
            finally:
                probe.close()
        try:
            return NatNetClientSettings(
                server_address=self.server_address,
                command_port=self.command_port,
                local_address=self.local_interface,
                multicast=self.multicast,
                multicast_group=self.multicast_group or None,
                data_port=self.data_port or None,
                requested_version=self.requested_version(),
            )
        except ValueError as error:
            raise SettingsError("", f"NatNet client parameters: {error}") from None


__all__ = ["EstimatorSettings"]
