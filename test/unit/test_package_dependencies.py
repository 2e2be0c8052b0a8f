"""Every third-party module the code imports is a declared runtime dependency: in package.xml
(rosdep keys, for a full ROS install) and in pyproject.toml (the README's pip install line)."""

from __future__ import annotations

import ast
import re
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]

# Imported module -> (rosdep key, pip requirement name or None for a ROS package).
DEPENDENCIES = {
    "numpy": ("python3-numpy", "numpy"),
    "yaml": ("python3-yaml", "pyyaml"),
    "scipy": ("python3-scipy", "scipy"),
    "mujoco": ("python3-mujoco-pip", "mujoco"),
    "pymodbus": ("python3-pymodbus", "pymodbus"),
    "mcap": ("mcap-ros2-support", "mcap"),
    "matplotlib": ("python3-matplotlib", "matplotlib"),
    "PIL": ("python3-pil", "pillow"),
    # ROS packages: the module, its rosdep key and its package are one name, not on pip.
    **{
        name: (name, None)
        for name in (
            "rclpy",
            "rcl_interfaces",
            "ament_index_python",
            "builtin_interfaces",
            "std_srvs",
            "geometry_msgs",
            "diagnostic_msgs",
            "tf2_ros",
            "std_msgs",
            "visualization_msgs",
            "nav_msgs",
            "launch",
            "launch_ros",
        )
    },
}
# Not needed to run the stack: training the learned coarse model (pyproject's [learning] extra).
TRAINING_ONLY = {"torch", "tqdm"}
# The optional Ray backend (pyproject's [ray] extra, imported when backend: ray is built; no rosdep key).
OPTIONAL_BACKENDS = {"ray"}
OWN = {"parapush", "parareal_pushing"}
# Used without an import of their own: pyserial by pymodbus's serial client, socat by the gripper emulator.
INDIRECT = {"python3-serial": "pyserial", "socat": None}


def imported_modules() -> set[str]:
    modules = set()
    for path in (ROOT / "src" / "parapush").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules.add(node.module.split(".")[0])
    return {module for module in modules if module not in sys.stdlib_module_names} - OWN


def package_xml_keys() -> set[str]:
    tree = ElementTree.parse(ROOT / "package.xml")
    return {element.text.strip() for tag in ("depend", "exec_depend") for element in tree.getroot().iter(tag)}


def pyproject_requirements() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    return {re.split(r"[<>=!~\[ ]", requirement, maxsplit=1)[0].lower() for requirement in requirements}


def test_every_imported_module_has_a_known_dependency():
    unknown = sorted(imported_modules() - set(DEPENDENCIES) - TRAINING_ONLY - OPTIONAL_BACKENDS)
    assert not unknown, f"imported but not mapped to a dependency (add to package.xml, pyproject.toml, here): {unknown}"


def test_package_xml_declares_every_runtime_dependency():
    keys = package_xml_keys()
    needed = {DEPENDENCIES[module][0] for module in imported_modules() - TRAINING_ONLY - OPTIONAL_BACKENDS}
    needed |= set(INDIRECT)
    assert not needed - keys, f"package.xml lacks exec_depend on {sorted(needed - keys)}"


def test_pyproject_lists_every_python_dependency():
    requirements = pyproject_requirements()
    modules = imported_modules() - TRAINING_ONLY - OPTIONAL_BACKENDS
    needed = {DEPENDENCIES[module][1] for module in modules} | set(INDIRECT.values()) | OPTIONAL_BACKENDS
    needed.discard(None)
    assert not needed - requirements, f"pyproject.toml lacks {sorted(needed - requirements)}"


def test_readme_install_line_installs_the_runtime_extras():
    readme = (ROOT / "README.md").read_text()
    assert "pip install '.[devices,recording,plots]'" in readme and "socat" in readme
