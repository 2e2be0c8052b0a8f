"""The benchmark scripts still fit the library: each imports, has a ``main``, and every
``Name.attribute`` it reads from an imported parapush module or class exists.

The benches are run by hand, not by CI (minutes each), so a renamed or removed library name
would otherwise break one silently, as a removed ``from_mapping`` broke ``realtime_mpc`` once.
The attribute check is static (the scripts' syntax trees against the imported objects), so it
costs no bench time.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
HELPERS = {"parareal_common", "reference"}
"""Modules the benches share (no ``main``)."""
SCRIPTS = sorted(path.stem for path in BENCH.glob("*.py") if path.stem not in HELPERS)


@pytest.fixture(scope="module", autouse=True)
def bench_on_path():
    sys.path.insert(0, str(BENCH))
    try:
        yield
    finally:
        sys.path.remove(str(BENCH))


def library_objects(module) -> dict[str, object]:
    """The module's global names bound to parapush modules or classes (what its ``Name.attr`` may read)."""
    def owner(value) -> str:
        if inspect.ismodule(value):
            return value.__name__
        return value.__module__ if inspect.isclass(value) else ""

    return {name: value for name, value in vars(module).items() if owner(value).startswith("parapush")}


def test_there_are_bench_scripts():
    assert len(SCRIPTS) >= 15


def missing_names(module, source: str) -> list[str]:
    """``Name.attr`` reads in ``source`` of library objects of ``module`` that do not exist."""
    objects = library_objects(module)
    tree = ast.parse(source)
    rebound = {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)} | {
        node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    return sorted({
        f"{node.value.id}.{node.attr} (line {node.lineno})"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in objects
        and node.value.id not in rebound and not hasattr(objects[node.value.id], node.attr)
    })


def test_a_name_the_library_does_not_have_is_found():
    module = importlib.import_module("identification")
    source = "def f():\n    return ObjectParameters.from_mapping({}), ObjectParameters.from_scene\n"
    assert missing_names(module, source) == ["ObjectParameters.from_mapping (line 2)"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_bench_script_imports_and_reads_only_names_the_library_has(script):
    pytest.importorskip("torch")  # several benches use the learned model
    try:
        module = importlib.import_module(script)
    except ModuleNotFoundError as error:
        if error.name in ("rclpy", "parareal_pushing"):  # the benches through ROS; CI has ROS
            pytest.skip(f"bench/{script}.py needs ROS 2 ({error})")
        raise
    assert callable(getattr(module, "main", None)), f"bench/{script}.py has no main()"
    missing = missing_names(module, (BENCH / f"{script}.py").read_text())
    assert not missing, f"bench/{script}.py reads names the library no longer has: {missing}"
