"""The core library's module graph: no import cycles between modules or between folders, and
no ROS in the core.

Edges are the module-level imports of each file under ``src/parapush`` (imports inside
functions and under ``if TYPE_CHECKING:`` do not run at import time and are left out; the
latter must not close a cycle either, or the type is in the wrong module). A
folder is a subpackage of ``parapush`` (``parapush.planning``, with everything below it);
folders (and the top-level modules, ``parapush.settings``) form layers, so one folder importing
another that imports it back is a cycle too.
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


def imported_names(path: Path, module: str, *, type_checking: bool = False) -> set[str]:
    """Dotted names imported at module level (both ``a.b`` and ``a.b.name`` for ``from a.b import name``);
    ``type_checking``: also those under ``if TYPE_CHECKING:``."""
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
            elif isinstance(node, ast.If) and (type_checking or "TYPE_CHECKING" not in ast.dump(node.test)):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)

    visit(ast.parse(path.read_text()).body)
    return names


def module_graph(*, type_checking: bool = False) -> dict[str, set[str]]:
    """Each module of ``parapush`` -> the modules of ``parapush`` it imports at module level
    (``type_checking``: and under ``if TYPE_CHECKING:``)."""
    modules = module_files()
    return {module: {name for name in imported_names(path, module, type_checking=type_checking)
                     if name in modules and name != module}
            for module, path in modules.items()}


def module_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles found by a depth-first walk, each as the modules along it back to its first."""
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
    return cycles


def folder_of(module: str) -> str | None:
    """The folder (first-level subpackage, ``parapush.planning``) ``module`` belongs to; a
    top-level module (``parapush.settings``) is a unit of its own, and ``parapush`` itself
    (None) is in no cycle."""
    parts = module.split(".")
    return None if len(parts) < 2 else ".".join(parts[:2])


def folder_edges(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(importing folder, imported folder) -> the (importer, imported) module pairs making the edge."""
    edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for module, targets in graph.items():
        for target in targets:
            source_folder, target_folder = folder_of(module), folder_of(target)
            if source_folder and target_folder and source_folder != target_folder:
                edges.setdefault((source_folder, target_folder), []).append((module, target))
    return {edge: sorted(pairs) for edge, pairs in sorted(edges.items())}


def strongly_connected(nodes: set[str], edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one node, each sorted (Tarjan)."""
    successors = {node: sorted(target for source, target in edges if source == node) for node in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in successors[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return sorted(components)


def folder_cycles(graph: dict[str, set[str]]) -> list[str]:
    """One line per set of folders that import each other (a strongly connected component of
    the folder graph): the folders, then each edge among them with the module pairs making it."""
    edges = folder_edges(graph)
    folders = {folder for edge in edges for folder in edge}
    reports = []
    for component in strongly_connected(folders, set(edges)):
        inside = [(edge, pairs) for edge, pairs in edges.items() if edge[0] in component and edge[1] in component]
        described = "; ".join(
            f"{source} -> {target} ({', '.join(f'{a} imports {b}' for a, b in pairs)})"
            for (source, target), pairs in inside
        )
        reports.append(f"folders {' <-> '.join(component)}: {described}")
    return reports


def test_no_import_cycle_in_the_core_library():
    cycles = module_cycles(module_graph())
    assert not cycles, f"import cycles: {cycles}"


def test_no_cycle_hidden_behind_type_checking():
    """An ``if TYPE_CHECKING:`` import is for annotations, never to get around a cycle: the
    type belongs where both modules can import it."""
    cycles = module_cycles(module_graph(type_checking=True))
    assert not cycles, f"import cycles through `if TYPE_CHECKING:` imports: {cycles}"


def test_no_import_cycle_between_the_core_folders():
    cycles = folder_cycles(module_graph())
    assert not cycles, "import cycles between folders of parapush:\n" + "\n".join(cycles)


def test_a_folder_cycle_is_reported_with_its_module_pairs():
    graph = {
        "parapush.prediction.planner_model": {"parapush.planning.predictive_model", "parapush.scene.state"},
        "parapush.planning.predictive_model": {"parapush.scene.state"},
        "parapush.planning.multifidelity": {"parapush.prediction.config", "parapush.planning.predictive_model"},
        "parapush.prediction.config": {"parapush.settings"},
        "parapush.scene.state": set(),
        "parapush.settings": set(),
    }
    assert folder_cycles(graph) == [
        "folders parapush.planning <-> parapush.prediction: "
        "parapush.planning -> parapush.prediction "
        "(parapush.planning.multifidelity imports parapush.prediction.config); "
        "parapush.prediction -> parapush.planning "
        "(parapush.prediction.planner_model imports parapush.planning.predictive_model)"
    ]
    # three folders in a ring are one cycle; an edge to a folder outside it is not part of it
    graph["parapush.planning.multifidelity"] = {"parapush.planning.predictive_model"}
    graph["parapush.planning.predictive_model"] = {"parapush.scene.state", "parapush.physics.fidelity"}
    graph["parapush.physics.fidelity"] = {"parapush.prediction.config", "parapush.scene.state"}
    (report,) = folder_cycles(graph)
    assert report.startswith("folders parapush.physics <-> parapush.planning <-> parapush.prediction: ")
    for edge in ("parapush.physics -> parapush.prediction (parapush.physics.fidelity imports "
                 "parapush.prediction.config)",
                 "parapush.planning -> parapush.physics (parapush.planning.predictive_model imports "
                 "parapush.physics.fidelity)",
                 "parapush.prediction -> parapush.planning (parapush.prediction.planner_model imports "
                 "parapush.planning.predictive_model)"):
        assert edge in report
    assert "scene" not in report and "settings" not in report
    graph["parapush.physics.fidelity"] = {"parapush.scene.state"}
    assert folder_cycles(graph) == []
    # a top-level module is a unit of its own: a folder importing it back is a cycle
    graph["parapush.settings"] = {"parapush.scene.state"}
    graph["parapush.scene.state"] = {"parapush.validation"}
    graph["parapush.validation"] = {"parapush.settings"}
    assert folder_cycles(graph) == [
        "folders parapush.scene <-> parapush.settings <-> parapush.validation: "
        "parapush.scene -> parapush.validation (parapush.scene.state imports parapush.validation); "
        "parapush.settings -> parapush.scene (parapush.settings imports parapush.scene.state); "
        "parapush.validation -> parapush.settings (parapush.validation imports parapush.settings)"
    ]


def test_the_core_imports_no_ros():
    offenders = []
    for module, path in module_files().items():
        if module.startswith(ROS_SIDE):
            continue
        ros = sorted(name for name in imported_names(path, module) if name.split(".")[0] in ROS_PACKAGES)
        if ros:
            offenders.append((module, ros))
    assert not offenders, f"core modules importing ROS: {offenders}"
