"""The planner's and the prediction service's functions stay small named steps (issue 32)."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src" / "parapush"
LIMITED = ("planning", "prediction")
MAX_LINES = 80


def long_functions(folder: Path, limit: int = MAX_LINES) -> list[str]:
    """``path:line name (N lines)`` (path relative to ``folder``) of every function or method in
    ``folder`` longer than ``limit`` lines."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(folder)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_in_planning_or_prediction_is_longer_than_80_lines() -> None:
    offenders = [f"{folder}/{entry}" for folder in LIMITED for entry in long_functions(SOURCE / folder)]
    assert not offenders, f"functions over {MAX_LINES} lines (split them into named steps): {offenders}"


def test_the_check_finds_a_long_function(tmp_path) -> None:
    body = "\n".join(f"    x{index} = {index}" for index in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert long_functions(tmp_path) == [f"long.py:1 long ({MAX_LINES + 1} lines)"]
