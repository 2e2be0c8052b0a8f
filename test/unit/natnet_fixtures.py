"""Helpers shared by the NatNet tests of test/unit (not a test module); the free UDP port is
test/conftest.py's ``free_udp_port`` fixture."""

from __future__ import annotations

from typing import Any

from parapush.natnet import MocapFrame


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
