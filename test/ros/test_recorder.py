"""McapRecorder over real DDS: what it writes, and its listeners (one subscription per topic)."""

from __future__ import annotations

import threading
import time

import pytest
from mcap_ros2.reader import read_ros2_messages
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from std_msgs.msg import Float64, String

from parapush.nodes.recorder import McapRecorder


def _wait(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_listeners_get_the_recorded_bytes_of_their_topic(ros_context, spinning, tmp_path):
    node = spinning.add(Node("recorder_test", context=ros_context))
    received: list[bytes] = []
    lock = threading.Lock()

    def listen(data: bytes) -> None:
        with lock:
            received.append(data)

    path = tmp_path / "recording.mcap"
    recorder = McapRecorder(node, path, {"/numbers": Float64, "/words": String}, listeners={"/numbers": listen})
    assert len(list(node.subscriptions)) == 2  # one per recorded topic: the listener adds none
    numbers = node.create_publisher(Float64, "/numbers", 10)
    words = node.create_publisher(String, "/words", 10)
    assert _wait(lambda: numbers.get_subscription_count() and words.get_subscription_count())
    for value in (1.5, 2.5, 3.5):
        numbers.publish(Float64(data=value))
        words.publish(String(data=f"w{value}"))
    assert _wait(lambda: recorder.counts["/numbers"] == 3 and recorder.counts["/words"] == 3)
    recorder.close()
    with lock:
        heard = [deserialize_message(data, Float64).data for data in received]
    assert heard == [1.5, 2.5, 3.5]
    recorded = [message.ros_msg.data for message in read_ros2_messages(str(path), topics=["/numbers"])]
    assert recorded == heard


def test_unmatched_topics_lists_the_topics_without_a_matched_publisher(ros_context, spinning, tmp_path):
    node = spinning.add(Node("recorder_matching", context=ros_context))
    recorder = McapRecorder(node, tmp_path / "r.mcap", {"/matched_later": Float64, "/never_published": String})
    try:
        assert recorder.unmatched_topics() == ["/matched_later", "/never_published"]
        node.create_publisher(Float64, "/matched_later", 10)
        assert _wait(lambda: recorder.unmatched_topics() == ["/never_published"]), recorder.unmatched_topics()
    finally:
        recorder.close()


def test_a_listener_of_a_topic_not_recorded_is_refused(ros_context, tmp_path):
    node = Node("recorder_refuses", context=ros_context)
    try:
        with pytest.raises(ValueError, match=r"listeners: topics \['/other'\]"):
            McapRecorder(node, tmp_path / "r.mcap", {"/numbers": Float64}, listeners={"/other": lambda _: None})
    finally:
        node.destroy_node()
