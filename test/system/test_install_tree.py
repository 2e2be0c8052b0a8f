"""The installed package's share directory, as ``ros2 launch``/``ros2 pkg`` see it.

``ros2 launch parareal_pushing sim.launch.py`` finds the file by walking the package's
share directory without following links (``os.walk``): a ``launch`` or ``config`` that is a
link to a directory hides every file in it. The prefix is the one the environment uses
(``$AMENT_PREFIX_PATH``, set by scripts/env.sh).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from parapush.graph import PACKAGE

ROOT = Path(__file__).resolve().parents[2]


def installed_share() -> Path:
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        candidate = Path(prefix) / "share" / PACKAGE
        if (candidate / "package.xml").exists():
            return candidate
    pytest.fail(f"no share/{PACKAGE} in AMENT_PREFIX_PATH={os.environ.get('AMENT_PREFIX_PATH')!r}")


def test_share_directory_has_no_links_to_directories():
    share = installed_share()
    linked = [str(path.relative_to(share)) for path in share.rglob("*") if path.is_symlink() and path.is_dir()]
    assert not linked, f"{share}: links to directories (copy them instead): {linked}"


def test_launch_and_config_files_are_found_without_following_links():
    share = installed_share()
    walked = {Path(directory, name).relative_to(share) for directory, _, names in os.walk(share) for name in names}
    for directory in ("launch", "config"):
        sources = (ROOT / directory).rglob("*")
        expected = {path.relative_to(ROOT) for path in sources if path.is_file() and "__pycache__" not in path.parts}
        missing = sorted(str(path) for path in expected - walked)
        assert not missing, f"{share}: not found by a walk that does not follow links: {missing}"
