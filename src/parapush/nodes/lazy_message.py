"""The last message of a raw subscription, deserialized only when read.

A node that receives a topic at a high rate (``scene_state`` at the mocap's 120 Hz) but looks
at it only now and then (the MPC's planning loop) subscribes with ``raw=True`` and keeps the
CDR bytes; converting every message would take CPU from the planner on a 2-core machine.
"""

from __future__ import annotations

import threading
import time

from rclpy.serialization import deserialize_message


class LazyMessage:
    """The last message of a raw subscription, deserialized when first read (once per message).

    Args:
        message_type: the ROS message class of the subscription.
    """

    def __init__(self, message_type) -> None:
        self._type = message_type
        self._lock = threading.Lock()
        self._received, self._data = 0.0, None  # monotonic s, CDR bytes of the last message
        self._decoded: tuple[float, object | None] = (0.0, None)
        self._decoded_from: bytes | None = None

    def put(self, data: bytes) -> None:
        """The subscription's callback: keep the bytes and when they came."""
        received = time.monotonic()
        with self._lock:
            self._received, self._data = received, data

    def get(self) -> tuple[float, object | None]:
        """(monotonic s when received, the last message or None before the first)."""
        with self._lock:
            if self._data is not None and self._data is not self._decoded_from:
                self._decoded = (self._received, deserialize_message(self._data, self._type))
                self._decoded_from = self._data
            return self._decoded
