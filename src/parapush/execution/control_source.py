"""Which node may move this robot: the publishers of ``controls`` told apart by their DDS
endpoint GID (ROS-free).

Any node on the same ROS domain can publish a ``ControlSequence`` on ``controls``; the Fast DDS
in the pip wheels has no DDS security, so the executor checks the sender itself. Each received
message carries its publisher's GID (rclpy's ``MessageInfo['publisher_gid']``); the graph
(``get_publishers_info_by_topic``) maps each publisher's endpoint GID to its node's fully
qualified name. :class:`ControlPublishers` keeps that map (refreshed by the node whenever a
publisher is matched, and when a message comes from a GID it does not know yet) and refuses
messages from any node but the allowed one.

Node names: ``allowed_publisher`` relative (``mpc``: the node of that name in the executor's
namespace, i.e. this stack's MPC) or absolute (``/lab1/mpc``); empty accepts every publisher.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable

from parapush.execution.control_refusal import ControlsRefused

_NAME_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: The name the ROS graph gives an endpoint whose node it has not learnt yet (rmw_dds_common:
#: endpoints are discovered before their participant's list of nodes arrives).
UNKNOWN_NODE_NAME = "_NODE_NAME_UNKNOWN_"


def check_node_name(name: str, field: str) -> str:
    """``name`` if it is empty, or a relative or absolute ROS node name (``mpc``, ``/lab1/mpc``).

    Raises:
        ValueError: naming ``field``.
    """
    if name == "":
        return name
    parts = name[1:].split("/") if name.startswith("/") else name.split("/")
    if not all(_NAME_PART.fullmatch(part) for part in parts):
        raise ValueError(
            f"{field}: expected a node name such as 'mpc' or '/lab1/mpc' (letters, digits, '_', "
            f"'/' between namespaces), got {name!r}"
        )
    return name


def full_node_name(namespace: str, name: str) -> str:
    """The fully qualified name of node ``name`` in ``namespace`` (``/`` or ``/a/b``): ``/a/b/name``."""
    return f"{namespace.rstrip('/')}/{name}"


def resolve_node_name(name: str, namespace: str) -> str:
    """``name`` made absolute against ``namespace`` (empty stays empty)."""
    if name == "" or name.startswith("/"):
        return name
    return full_node_name(namespace, name)


class ControlPublishers:
    """The allowed publisher of ``controls`` and the node name of every known publisher GID;
    thread-safe.

    Args:
        allowed: fully qualified node name whose controls are executed ("" = any node).
    """

    def __init__(self, allowed: str) -> None:
        self.allowed = allowed
        self._lock = threading.Lock()
        self._names: dict[bytes, str] = {}

    def update(self, publishers: Iterable[tuple[bytes, str, str]]) -> list[str]:
        """Replace the map with the graph's (GID, node namespace, node name) of each publisher;
        returns the names of foreign publishers not known before (to warn about once). A
        publisher whose node the graph does not know yet is left out: its next message asks again."""
        names = {bytes(gid): full_node_name(namespace, name) for gid, namespace, name in publishers
                 if name != UNKNOWN_NODE_NAME}
        with self._lock:
            new = set(names) - set(self._names)
            self._names = names
        return sorted({names[gid] for gid in new if not self.is_allowed(names[gid])})

    def is_allowed(self, name: str) -> bool:
        return self.allowed == "" or name == self.allowed

    def name_of(self, gid: bytes) -> str | None:
        with self._lock:
            return self._names.get(bytes(gid))

    def check(self, gid: bytes | None, refresh: Callable[[], None]) -> str:
        """The sender's node name, when it may move the robot; ``refresh()`` (which calls
        :meth:`update`) is called once when the GID is not known yet.

        Raises:
            ControlsRefused: ``foreign_publisher`` (another node) or ``unknown_publisher``
                (no GID, or one the graph does not list).
        """
        if self.allowed == "":
            return (self.name_of(gid) or "") if gid is not None else ""
        if gid is None:
            raise ControlsRefused("unknown_publisher", "the message carries no publisher GID: its sender is unknown")
        name = self.name_of(gid)
        if name is None:
            refresh()
            name = self.name_of(gid)
        if name is None:
            raise ControlsRefused(
                "unknown_publisher",
                f"publisher {bytes(gid).hex()} is not in the ROS graph: only {self.allowed} may move this robot",
            )
        if name != self.allowed:
            raise ControlsRefused("foreign_publisher", f"sent by {name}: only {self.allowed} may move this robot")
        return name


__all__ = ["UNKNOWN_NODE_NAME", "ControlPublishers", "check_node_name", "full_node_name", "resolve_node_name"]
