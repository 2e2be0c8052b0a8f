"""LazyMessage: the last raw message, deserialized once when read."""

from __future__ import annotations

from parareal_pushing.msg import SceneState
from rclpy.serialization import serialize_message

from parapush.nodes.lazy_message import LazyMessage


def test_the_last_message_is_decoded_once_when_read():
    latest = LazyMessage(SceneState)
    assert latest.get() == (0.0, None)
    first, second = SceneState(), SceneState()
    first.header.frame_id, second.header.frame_id = "first", "second"
    latest.put(serialize_message(first))
    latest.put(serialize_message(second))
    received, message = latest.get()
    assert received > 0.0 and message.header.frame_id == "second"
    assert latest.get()[1] is message  # not decoded again
    latest.put(serialize_message(first))
    assert latest.get()[1].header.frame_id == "first"
