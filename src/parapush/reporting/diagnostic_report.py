"""Diagnostics as plain data: what a node publishes on ``/diagnostics``, built in the core
(where unit tests cover it) and turned into ``diagnostic_msgs/DiagnosticStatus`` by the node
(:func:`parapush.nodes.conversions.report_to_status`)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from parapush.settings import setting


class DiagnosticLevel(enum.IntEnum):
    """Severity, with the values of ``DiagnosticStatus.OK``, ``WARN`` and ``ERROR``."""

    OK = 0
    WARN = 1
    ERROR = 2


@dataclass(frozen=True)
class DiagnosticReport:
    """One status.

    Attributes:
        name: what it is about (``"<node>: <part>"``).
        level: its severity.
        message: one line for people.
        hardware_id: the device or endpoint it is about.
        values: (key, text) pairs in display order.
    """

    name: str
    level: DiagnosticLevel
    message: str
    hardware_id: str = ""
    values: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(
        cls, name: str, level: DiagnosticLevel, message: str, hardware_id: str, values: Mapping[str, object]
    ) -> DiagnosticReport:
        """A report whose values are given as a mapping of anything (each shown with ``str``)."""
        return cls(name, level, message, hardware_id, tuple((key, str(value)) for key, value in values.items()))

    def value(self, key: str) -> str:
        """The text of ``key``.

        Raises:
            KeyError: no such key.
        """
        for name, text in self.values:
            if name == key:
                return text
        raise KeyError(key)


def diagnostics_period_setting() -> Any:
    """The ``diagnostics_period`` setting of a node that publishes diagnostics (one declaration
    for every such node)."""
    return setting(1.0, "time between diagnostics messages", unit="s", minimum=0.05, maximum=60.0)


__all__ = ["DiagnosticLevel", "DiagnosticReport", "diagnostics_period_setting"]
