"""Record ROS 2 topics into an MCAP file (readable by Foxglove) without rosbag2.

rosbag2 has no pip wheels; this records the CDR bytes rclpy receives (subscriptions with
``raw=True``) into MCAP channels with ``ros2msg`` schemas, the layout rosbag2 itself
writes. Schemas are the installed ``.msg`` files with their dependencies appended in the
``===\\nMSG: pkg/Type`` form.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from mcap.writer import CompressionType, Writer
from rclpy.node import Node
from rclpy.qos import QoSProfile, qos_profile_sensor_data

_PRIMITIVES = {
    "bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
    "int64", "uint64", "string", "wstring",
}
_FIELD = re.compile(r"^\s*([A-Za-z_][\w/]*)(\[[^\]]*\])?(<=\d+)?\s+([a-z_]\w*)(\s|$)")


def _msg_file(type_name: str) -> Path:
    package, _, name = type_name.partition("/msg/") if "/msg/" in type_name else type_name.partition("/")
    try:
        share = Path(get_package_share_directory(package))
    except PackageNotFoundError:
        raise FileNotFoundError(f"message package {package!r} of {type_name!r} is not installed") from None
    path = share / "msg" / f"{name}.msg"
    if not path.is_file():
        raise FileNotFoundError(f"no definition {path} for {type_name!r}")
    return path


def _dependencies(package: str, text: str) -> list[str]:
    found = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        match = _FIELD.match(line)
        if not match or "=" in line.split()[1 if len(line.split()) > 1 else 0]:
            continue
        field_type = match.group(1)
        if field_type in _PRIMITIVES:
            continue
        if field_type == "Header":
            field_type = "std_msgs/Header"
        found.append(field_type if "/" in field_type else f"{package}/{field_type}")
    return found


def message_definition(type_name: str) -> str:
    """The full ``ros2msg`` schema text of ``pkg/Type`` (or ``pkg/msg/Type``)."""
    root = type_name.replace("/msg/", "/")
    text = _msg_file(root).read_text()
    parts = [text.rstrip("\n")]
    seen = {root}
    queue = _dependencies(root.split("/")[0], text)
    while queue:
        dependency = queue.pop(0)
        if dependency in seen:
            continue
        seen.add(dependency)
        dependency_text = _msg_file(dependency).read_text()
        parts.append("=" * 80 + f"\nMSG: {dependency}\n" + dependency_text.rstrip("\n"))
        queue.extend(_dependencies(dependency.split("/")[0], dependency_text))
    return "\n".join(parts) + "\n"


def _type_name(message_type) -> str:
    module = message_type.__module__.split(".")  # e.g. parareal_pushing.msg._scene_state
    return f"{module[0]}/msg/{message_type.__name__}"


class McapRecorder:
    """Subscribes to topics on ``node`` and writes every message to ``path``.

    Args:
        node: the node whose subscriptions receive the messages.
        path: the MCAP file to write (parent folders are created).
        topics: {topic name: message class}.
        sensor_topics: topics subscribed with the sensor-data (best effort) QoS.
        listeners: {topic: called with each message's CDR bytes after it is written}, so a
            program that also reads a recorded topic needs no second subscription (each costs
            a deserialization and an executor dispatch per message); every topic must be in ``topics``.
    """

    def __init__(self, node: Node, path: Path, topics: dict[str, type], *, sensor_topics: tuple[str, ...] = (),
                 listeners: dict[str, Callable[[bytes], None]] | None = None):
        listeners = dict(listeners or {})
        unknown = sorted(set(listeners) - set(topics))
        if unknown:
            raise ValueError(f"listeners: topics {unknown} are not recorded (topics: {sorted(topics)})")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._writer = Writer(self._file, compression=CompressionType.ZSTD)
        self._writer.start(profile="ros2", library="parareal_pushing")
        self._lock = threading.Lock()
        self._closed = False
        self.counts: dict[str, int] = {}
        self._subscriptions = []
        for topic, message_type in topics.items():
            type_name = _type_name(message_type)
            schema = self._writer.register_schema(
                name=type_name, encoding="ros2msg", data=message_definition(type_name).encode()
            )
            channel = self._writer.register_channel(topic=topic, message_encoding="cdr", schema_id=schema)
            self.counts[topic] = 0
            qos = qos_profile_sensor_data if topic in sensor_topics else QoSProfile(depth=50)
            self._subscriptions.append(
                node.create_subscription(
                    message_type, topic, self._writer_for(topic, channel, listeners.get(topic)), qos, raw=True
                )
            )

    def unmatched_topics(self) -> list[str]:
        """The recorded topics whose subscription has matched no publisher yet (sorted).

        A message published before its publisher is matched is not delivered (volatile
        QoS), so a program that must record every topic from the first message waits for
        this to be empty.
        """
        return sorted(subscription.topic_name for subscription in self._subscriptions
                      if subscription.get_publisher_count() == 0)

    def _writer_for(self, topic: str, channel: int, listener: Callable[[bytes], None] | None):
        def write(data: bytes) -> None:
            now = time.time_ns()
            with self._lock:
                if self._closed:
                    return
                self._writer.add_message(channel, log_time=now, data=data, publish_time=now,
                                         sequence=self.counts[topic])
                self.counts[topic] += 1
            if listener is not None:
                listener(data)
        return write

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._writer.finish()
            self._file.close()
