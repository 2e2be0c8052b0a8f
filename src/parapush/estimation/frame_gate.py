"""Plausibility checks of a mocap frame's time stamps before the tracker sees it (ROS-free)."""

from __future__ import annotations

from parapush.natnet import MocapFrame


class FrameGate:
    """Plausibility checks of a frame's time stamps before the tracker sees it.

    NatNet has no checksum: a damaged datagram may decode into wrong numbers. Wrong stamps
    are the most harmful (the tracker's clock map keeps a bad offset for its whole window,
    dropping or misdating every frame meanwhile), and they can be checked, since a frame
    carries the server's time twice (``timestamp`` in s and ``mid_exposure_ticks``) plus
    the receive and transmit ticks. A frame is rejected (reason, see :attr:`REASONS`) when

    * ``"latency"``: its stamps are out of order (mid-exposure <= data received <= transmit)
      or its latency (transmit - mid-exposure) exceeds ``max_latency`` s;
    * ``"clock"``: its timestamp and its mid-exposure ticks advanced by amounts differing by
      more than ``clock_tolerance`` s since the previous frame (0 disables). The previous
      frame is the last one checked, accepted or not, so a damaged frame costs itself and
      the one after it, and the check recovers by itself (e.g. after a server restart).

    Frames without high-resolution stamps (NatNet < 3, or no clock frequency) pass.
    """

    REASONS = ("latency", "clock")

    def __init__(self, max_latency: float, clock_tolerance: float) -> None:
        self.max_latency = float(max_latency)
        self.clock_tolerance = float(clock_tolerance)
        self._previous: MocapFrame | None = None

    def check(self, frame: MocapFrame, frequency: int) -> tuple[str | None, float | None]:
        """(reason to reject or None, the server-reported latency in s or None if unknown)."""
        previous, self._previous = self._previous, frame
        if frequency <= 0 or (frame.mid_exposure_ticks == 0 and frame.transmit_ticks == 0):
            return None, None
        received = frame.data_received_ticks or frame.mid_exposure_ticks
        if not frame.mid_exposure_ticks <= received <= frame.transmit_ticks:
            return "latency", None
        latency = (frame.transmit_ticks - frame.mid_exposure_ticks) / frequency
        if latency > self.max_latency:
            return "latency", None
        if (
            self.clock_tolerance > 0.0
            and previous is not None
            and previous.mid_exposure_ticks != 0
            and frame.timestamp > 0.0
            and previous.timestamp > 0.0
        ):
            ticks_step = (frame.mid_exposure_ticks - previous.mid_exposure_ticks) / frequency
            if not abs((frame.timestamp - previous.timestamp) - ticks_step) <= self.clock_tolerance:
                return "clock", None
        return None, latency
