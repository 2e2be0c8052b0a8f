"""Helpers shared by the NatNet and mocap-server tests of test/unit (not a test module)."""

from __future__ import annotations

import socket
from typing import Any

from parapush.natnet import MocapFrame


def free_udp_port() -> int:
    """A UDP port on 127.0.0.1 that was free a moment ago (the OS picked it)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
    finally:
        probe.close()


def assert_suffix_matches(suffix: Any, frame: MocapFrame, *, params: bool = True) -> None:
    """A third-party reader's frame suffix (natnetsdk's ``suffix_data`` or the natnet
    package's ``suffix``: both use the SDK's field names) equals ours."""
    assert (suffix.timecode, suffix.timecode_sub, suffix.timestamp) == (
        frame.timecode,
        frame.timecode_subframe,
        frame.timestamp,
    )
    assert (suffix.stamp_camera_mid_exposure, suffix.stamp_data_received, suffix.stamp_transmit) == (
        frame.mid_exposure_ticks,
        frame.data_received_ticks,
        frame.transmit_ticks,
    )
    if params:
        assert suffix.param == frame.params
