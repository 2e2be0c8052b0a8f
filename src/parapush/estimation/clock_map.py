"""The offset between ``time.monotonic()`` and another clock (a node's ROS clock), robust to
preemption between the two readings (ROS-free)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable


class ClockMap:
    """Offset of a clock (the node's ROS clock) from ``time.monotonic()``, s.

    Each call samples the pair monotonic / clock / monotonic and keeps the offset only when
    the bracket is short (``max_bracket`` s): a thread preempted between two reads (the GIL,
    a loaded machine) would otherwise shift a stamp by the whole preemption. When no try is
    short enough, the previous offset is kept (the best try's before any is short).
    """

    def __init__(self, clock: Callable[[], float], *, max_bracket: float = 0.0005, tries: int = 3) -> None:
        self._clock = clock
        self.max_bracket = max_bracket
        self.tries = tries
        self._offset: float | None = None

    def offset(self) -> float:
        best = (math.inf, 0.0)
        for _ in range(self.tries):
            before = time.monotonic()
            reading = self._clock()
            after = time.monotonic()
            if after - before < best[0]:
                best = (after - before, reading - 0.5 * (before + after))
            if after - before <= self.max_bracket:
                break
        if best[0] <= self.max_bracket or self._offset is None:
            self._offset = best[1]
        return self._offset
