"""What config/foxglove_layout.json reads: its panels' topics and message fields (for the layout tests)."""

from __future__ import annotations

import json
from pathlib import Path

LAYOUT_PATH = Path(__file__).resolve().parents[1] / "config" / "foxglove_layout.json"


def load_layout() -> dict:
    return json.loads(LAYOUT_PATH.read_text())


def layout_panels(node) -> list[str]:
    """The panel ids of a layout tree (``layout``: an id, or a split with ``first`` and ``second``)."""
    if isinstance(node, str):
        return [node]
    return layout_panels(node["first"]) + layout_panels(node["second"])


def layout_topics(layout: dict) -> dict[str, set[tuple[str, ...]]]:
    """{topic: field paths read from it} over every panel: a 3D panel's ``topics`` (no field), a
    plot's ``paths`` (``/topic.field.subfield``), any ``...topic...`` setting naming one topic."""
    found: dict[str, set[tuple[str, ...]]] = {}

    def visit(value, key: str = "") -> None:
        if isinstance(value, dict):
            if key == "topics":
                for topic in value:
                    found.setdefault(topic, set()).add(())
            for child_key, child in value.items():
                if child_key == "value" and isinstance(child, str) and child.startswith("/"):
                    topic, *fields = child.split(".")
                    found.setdefault(topic, set()).add(tuple(fields))
                elif "topic" in child_key.lower() and isinstance(child, str):
                    found.setdefault(child, set()).add(())
                else:
                    visit(child, child_key)
        elif isinstance(value, list):
            for item in value:
                visit(item, key)

    visit(layout["configById"])
    return found
