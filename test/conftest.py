"""Test-wide settings and the guard that the suite really ran.

- Every DDS participant of a test run stays in its own domain.
- Hypothesis draws the same examples on every run (``derandomize``), so a CI failure
  reproduces; ``HYPOTHESIS_PROFILE=explore`` draws new ones (local bug hunting).
- Tests under ``test/ros`` and ``test/system`` get the ``ros`` marker (``-m "not ros"`` runs
  the core alone).
- ROS 2 (rclpy and the built ``parareal_pushing`` interfaces) missing: those folders are not
  collected and the summary says so; with ``PARAPUSH_REQUIRE_ROS=1`` (``scripts/run test``)
  the run fails instead.
- ``PARAPUSH_REQUIRE_FOLDERS=unit,ros,system`` (``.ci/run``): the run fails unless each of
  those folders collected tests and ran some of them (not all skipped).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import settings

from local_ports import free_port

# scripts/run sets a per-run domain; a bare `pytest` gets one derived from its PID so that
# parallel runs on one machine do not cross-talk.
os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 100))

settings.register_profile("derandomized", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "derandomized"))

TEST_ROOT = Path(__file__).resolve().parent
ROS_FOLDERS = ("ros", "system")


def _folder(path: Path) -> str | None:
    """The folder of test/ that ``path`` is in ("unit", "ros", "system"), None outside them."""
    try:
        parts = Path(path).resolve().relative_to(TEST_ROOT).parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 else None


def _ros_import_error() -> str | None:
    """Why rclpy or the interfaces cannot be imported; None when they can."""
    try:
        import parareal_pushing.action  # noqa: F401
        import parareal_pushing.msg  # noqa: F401
        import parareal_pushing.srv  # noqa: F401
        import rclpy  # noqa: F401
    except ImportError as error:
        return f"{type(error).__name__}: {error}"
    return None


class SuiteGuard:
    """Counts per folder the tests collected, run and skipped; fails a run that left out what it must run.

    Attributes:
        require_ros: ``PARAPUSH_REQUIRE_ROS=1``: ROS 2 missing fails the run.
        required_folders: ``PARAPUSH_REQUIRE_FOLDERS`` (comma-separated): folders that must run tests.
        ros_error: why ROS 2 cannot be imported ("" when it can; None until a ROS folder was met).
        counts: {folder: Counter(collected=, ran=, skipped=)}.
        problems: why the run fails (empty when it does not).
    """

    def __init__(self) -> None:
        self.require_ros = os.environ.get("PARAPUSH_REQUIRE_ROS") == "1"
        self.required_folders = [
            name.strip() for name in os.environ.get("PARAPUSH_REQUIRE_FOLDERS", "").split(",") if name.strip()
        ]
        self.ros_error: str | None = None
        self.counts: dict[str, Counter] = {}
        self.problems: list[str] = []

    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        """Leave out test/ros and test/system when ROS 2 cannot be imported (remembering why)."""
        if collection_path.parent != TEST_ROOT or collection_path.name not in ROS_FOLDERS:
            return None
        if self.ros_error is None:
            self.ros_error = _ros_import_error() or ""
        return True if self.ros_error else None

    @pytest.hookimpl(trylast=True)  # after -k/-m deselection
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            folder = _folder(item.path)
            if folder in ROS_FOLDERS:
                item.add_marker(pytest.mark.ros)
            if folder is not None:
                self.counts.setdefault(folder, Counter())["collected"] += 1

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        folder = _folder(Path(report.fspath))
        if folder is None:
            return
        counts = self.counts.setdefault(folder, Counter())
        if report.skipped:
            counts["skipped"] += 1
        elif report.when == "call":
            counts["ran"] += 1

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.ros_error and self.require_ros:
            self.problems.append(
                f"ROS tests could not run (test/{', test/'.join(ROS_FOLDERS)} not collected): {self.ros_error}. "
                "Build the interfaces (scripts/setup.sh) and source scripts/env.sh."
            )
        for folder in self.required_folders:
            counts = self.counts.get(folder, Counter())
            if not counts["collected"]:
                why = f" (ROS 2 not available: {self.ros_error})" if folder in ROS_FOLDERS and self.ros_error else ""
                self.problems.append(f"test/{folder}: no test collected{why}")
            elif not counts["ran"]:
                self.problems.append(
                    f"test/{folder}: {counts['collected']} tests collected, none ran ({counts['skipped']} skipped)"
                )
        if self.problems and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.counts:
            terminalreporter.write_line("tests per folder: " + ", ".join(
                f"{folder} {counts['ran']} ran/{counts['collected']} collected/{counts['skipped']} skipped"
                for folder, counts in sorted(self.counts.items())
            ))
        if self.ros_error and not self.require_ros:
            terminalreporter.write_line(f"ROS tests not collected (ROS 2 not available: {self.ros_error})", yellow=True)
        for problem in self.problems:
            terminalreporter.write_line(f"FAILED RUN: {problem}", red=True, bold=True)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SuiteGuard(), "parapush-suite-guard")


@pytest.fixture
def free_udp_port() -> int:
    """A UDP port on 127.0.0.1 that no socket holds now (the OS picks it; it may be taken again later)."""
    return free_port()
