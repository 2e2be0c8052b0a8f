"""Whether a stack's nodes exited cleanly, and when one did not, what its log says (a node still
stopping 5 s after SIGINT, or hanging at its exit when SIGTERM comes, writes every thread's stack
there: ``parapush.nodes.node_main.run_node``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

LOG_TAIL_CHARS = 6000
"""Characters of an unclean node's log quoted in the report (enough for every thread's stack)."""


def unclean_exits(codes: Mapping[str, int], log_dir: Path, clean: Collection[int] = (0,)) -> str:
    """'' when every node's exit code is in ``clean``; else one section per other node: its code and
    the tail of ``log_dir/<node>.log`` (no codes at all are reported too)."""
    if not codes:
        return f"no exit codes recorded; logs in {log_dir}"
    sections = []
    for name, code in codes.items():
        if code in clean:
            continue
        log = log_dir / f"{name}.log"
        text = log.read_text(errors="replace")[-LOG_TAIL_CHARS:] if log.is_file() else "(no log)"
        sections.append(f"--- {name} exited {code}; tail of {log}:\n{text}")
    return "\n".join(sections)
