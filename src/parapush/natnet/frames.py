"""Decoded NatNet motion-capture data: what a mocap frame carries for rigid bodies.

These frozen dataclasses are the contract between the NatNet codec, the simulated
mocap server and the state estimator. They hold SI units in the mocap (Motive)
frame; nothing here knows about sockets or byte layouts.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MocapFrame", "RigidBody", "frame_latency_s"]


@dataclass(frozen=True)
class RigidBody:
    """One tracked rigid body in one frame.

    Attributes:
        id: streaming id of the body (as set in Motive).
        position: (x, y, z) in m, mocap frame.
        orientation: unit quaternion (qx, qy, qz, qw), mocap frame.
        mean_error: mean marker residual in m.
        tracking_valid: False when the body was not tracked in this frame (its pose is stale).
    """

    id: int
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]
    mean_error: float
    tracking_valid: bool


@dataclass(frozen=True)
class MocapFrame:
    """One NatNet frame of data, reduced to what the stack uses.

    Attributes:
        frame_number: server frame counter (consecutive at the capture rate).
        rigid_bodies: the rigid bodies of the frame, in the order the server sent them.
        timecode: SMPTE timecode (packed uint32) from the frame suffix.
        timecode_subframe: timecode subframe.
        timestamp: s, server clock (the suffix float64 timestamp).
        mid_exposure_ticks: high-resolution clock ticks at camera mid-exposure (NatNet 3.0+).
        data_received_ticks: high-resolution ticks when the server received the camera data.
        transmit_ticks: high-resolution ticks when the server transmitted the frame.
        params: bit0 recording, bit1 tracked models changed.
    """

    frame_number: int
    rigid_bodies: tuple[RigidBody, ...]
    timecode: int = 0
    timecode_subframe: int = 0
    timestamp: float = 0.0
    mid_exposure_ticks: int = 0
    data_received_ticks: int = 0
    transmit_ticks: int = 0
    params: int = 0

    @property
    def is_recording(self) -> bool:
        """True when Motive was recording when it sent this frame (params bit0)."""
        return bool(self.params & 0x01)

    @property
    def models_changed(self) -> bool:
        """True when the tracked model list changed (params bit1): re-request model definitions."""
        return bool(self.params & 0x02)

    def rigid_body(self, body_id: int) -> RigidBody | None:
        """The rigid body with streaming id ``body_id``, or None if the frame does not carry it."""
        for body in self.rigid_bodies:
            if body.id == body_id:
                return body
        return None


def frame_latency_s(frame: MocapFrame, high_resolution_clock_frequency: int) -> float:
    """Server-side latency of ``frame`` in s: (transmit - mid-exposure ticks) / clock frequency.

    This is the time from the middle of the camera exposure to the moment the server sent the
    frame; network transit is not included. ``high_resolution_clock_frequency`` (ticks/s) comes
    from SERVERINFO (``NatNetClient.server_info.high_resolution_clock_frequency``).

    Raises:
        ValueError: if the frequency is not positive, or the frame carries no high-resolution
            stamps (both zero, as NatNet < 3.0 servers send), or transmit precedes mid-exposure.
    """
    if high_resolution_clock_frequency <= 0:
        raise ValueError(
            f"high_resolution_clock_frequency must be > 0 ticks/s, got {high_resolution_clock_frequency}"
        )
    if frame.mid_exposure_ticks == 0 and frame.transmit_ticks == 0:
        raise ValueError(f"frame {frame.frame_number} carries no high-resolution timestamps")
    ticks = frame.transmit_ticks - frame.mid_exposure_ticks
    if ticks < 0:
        raise ValueError(
            f"frame {frame.frame_number}: transmit_ticks {frame.transmit_ticks} precede "
            f"mid_exposure_ticks {frame.mid_exposure_ticks}"
        )
    return ticks / high_resolution_clock_frequency
