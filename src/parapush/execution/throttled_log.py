"""Per-key rate limiting of log lines (ROS-free: any logger with ``info``, ``warning``, ``error``)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable


class ThrottledLog:
    """Per-key rate limiting of log lines: the first at once, then at most one per period with a repeat count.

    Args:
        logger: an rclpy logger (or anything with ``info``, ``warning`` and ``error``).
        period_s: the least time between two lines of one key, s.
    """

    def __init__(self, logger, period_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self._period = period_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._suppressed: Counter[str] = Counter()

    def __call__(self, key: str, severity: str, message: str) -> bool:
        """Log ``message`` at ``severity`` ("info", "warning" or "error") unless ``key`` was logged recently."""
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._period:
                self._suppressed[key] += 1
                return False
            repeats = self._suppressed.pop(key, 0)
            self._last[key] = now
        text = message + (f" ({repeats} more since the last report)" if repeats else "")
        # One call site per severity: rclpy refuses different severities from one line.
        if severity == "error":
            self._logger.error(text)
        elif severity == "warning":
            self._logger.warning(text)
        else:
            self._logger.info(text)
        return True
