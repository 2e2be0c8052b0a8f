"""Measurement times of mocap frames on the local clock, free of receive-time jitter.

A frame's *local stamp* is its receive time minus its latency (when known): the local time
at which the cameras exposed it, plus the unmodelled network delay and plus whatever the
receiving thread was delayed by. That last part jitters by milliseconds (scheduling, the
GIL), which a velocity filter would read as position noise (1 ms at 0.1 m/s is 0.1 mm).

The server's frame timestamp (NatNet ``timestamp``, s on the Motive clock) is regular but on
another clock. :class:`FrameClock` maps it to the local clock with an offset taken as the
lower envelope of ``local stamp - server timestamp`` over a sliding window: delays only ever
add, so the smallest offset in the window is the one least disturbed by jitter. The window
(2 s by default) keeps the mapping following a slow drift between the two clocks (tens of
ppm, i.e. tens of microseconds over the window).

The mapped time is never later than the local stamp, so it never claims a frame is newer
than it is. When the server gives no timestamp (0) the local stamp is used as is; when the
server clock jumps back by more than ``restart_jump`` (Motive restarted, a recording looped)
the mapping starts again.
"""

from __future__ import annotations

import math
from collections import deque

from parapush.validation import check_positive


class FrameClock:
    """Maps server frame timestamps to local measurement times (see the module docstring).

    Args:
        window: length of the sliding window of the offset's lower envelope, s (server time).
        restart_jump: a server timestamp this much (s) before the previous one restarts the map.
    """

    def __init__(self, window: float = 2.0, restart_jump: float = 1.0) -> None:
        self.window = check_positive("window", window)
        self.restart_jump = check_positive("restart_jump", restart_jump)
        self.restarts = 0
        self._last_server_time: float | None = None
        # (server time, offset) pairs with increasing offsets: the front is the window minimum.
        self._envelope: deque[tuple[float, float]] = deque()

    @property
    def offset(self) -> float | None:
        """Current local - server offset, s (None before the first timestamped frame)."""
        return self._envelope[0][1] if self._envelope else None

    def reset(self) -> None:
        self._last_server_time = None
        self._envelope.clear()

    def measurement_time(self, server_time: float, local_stamp: float) -> float:
        """Local measurement time (s) of a frame stamped ``server_time`` (s, server clock; 0 or
        not finite = none) and observed at ``local_stamp`` (s, receive time - latency)."""
        if not math.isfinite(local_stamp):
            raise ValueError(f"local_stamp: must be finite, got {local_stamp!r}")
        if not math.isfinite(server_time) or server_time <= 0.0:
            return float(local_stamp)
        if self._last_server_time is not None and server_time < self._last_server_time - self.restart_jump:
            self.reset()
            self.restarts += 1
        offset = float(local_stamp) - float(server_time)
        if self._last_server_time is None or server_time > self._last_server_time:
            self._last_server_time = float(server_time)
            while self._envelope and self._envelope[-1][1] >= offset:
                self._envelope.pop()
            self._envelope.append((float(server_time), offset))
            while self._envelope[0][0] < server_time - self.window:
                self._envelope.popleft()
        return min(float(server_time) + self._envelope[0][1], float(local_stamp))
