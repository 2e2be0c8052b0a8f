"""The core library's module graph: no import cycles, and no ROS in the core.

Edges are the module-level imports of each file under ``src/parapush`` (imports inside
functions and under ``if TYPE_CHECKING:`` do not run at import time and are left out).
"""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src"
ROS_PACKAGES = ("rclpy", "parareal_pushing", "builtin_interfaces", "std_msgs", "geometry_msgs", "diagnostic_msgs",
                "rcl_interfaces", "visualization_msgs", "nav_msgs", "launch", "launch_ros", "ament_index_python")
ROS_SIDE = ("parapush.nodes", "parapush.programs")


def module_files() -> dict[str, Path]:
    modules = {}
    for path in (SOURCE / "parapush").rglob("*.py"):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported_names(path: Path, module: str) -> set[str]:
    """Dotted names imported at module level (both ``a.b`` and ``a.b.name`` for ``from a.b import name``)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parent, *([node.module] if node.module else [])])
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.dump(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)

    visit(ast.parse(path.read_text()).body)
    return names


def test_no_import_cycle_in_the_core_library():
    modules = module_files()
    graph = {module: {name for name in imported_names(path, module) if name in modules and name != module}
             for module, path in modules.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target):], target])
            elif target not in state:
                walk(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert not cycles, f"import cycles: {cycles}"


def test_the_core_imports_no_ros():
    offenders = []
    for module, path in module_files().items():
        if module.startswith(ROS_SIDE):
            continue
        ros = sorted(name for name in imported_names(path, module) if name.split(".")[0] in ROS_PACKAGES)
        if ros:
            offenders.append((module, ros))
    assert not offenders, f"core modules importing ROS: {offenders}"
