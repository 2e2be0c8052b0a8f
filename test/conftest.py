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
  those folders collected tests and ran some of them (not all skipped), and it fails on any
  skipped test (or module skipped at collection) that ``ALLOWED_SKIPS`` does not list, naming
  it and its reason. Without it a skip only shows in the counts and a note. An expected failure
  (``xfail``) is not a skip: it is counted apart.
"""

from __future__ import annotations

import os
from collections import Counter
from fnmatch import fnmatchcase
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

# The skips CI accepts: (a node-id pattern, fnmatch-style, e.g. "test/unit/test_x.py::test_y*";
# why CI cannot run it). Any other skip fails a run with PARAPUSH_REQUIRE_FOLDERS set (.ci/run).
# CI has everything the optional skips wait for (torch, Ray, socat, ROS 2, ../shared beside the
# clone, the shipped weights), so no skip is expected there and the list is empty. An entry is
# a decision to leave a test unrun in CI: add one only with the reason, never to quiet a skip
# that setup could remove.
ALLOWED_SKIPS: tuple[tuple[str, str], ...] = ()


def _folder(path: Path) -> str | None:
    """The folder of test/ that ``path`` (absolute, or relative to the working directory) is in
    ("unit", "ros", "system"), None outside them."""
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


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The reason a skipped report gives ("Skipped: " left off)."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


def allowed_skip(nodeid: str, allowed: tuple[tuple[str, str], ...] = ALLOWED_SKIPS) -> str | None:
    """The pattern of ``allowed`` that lists the test or module ``nodeid``; None when none does."""
    return next((pattern for pattern, _why in allowed if fnmatchcase(nodeid, pattern)), None)


class SuiteGuard:
    """Counts per folder the tests collected, run, skipped and expected to fail; fails a run that
    left out what it must run.

    Attributes:
        require_ros: ``PARAPUSH_REQUIRE_ROS=1``: ROS 2 missing fails the run.
        required_folders: ``PARAPUSH_REQUIRE_FOLDERS`` (comma-separated): folders that must run
            tests; when set, a skip that ``ALLOWED_SKIPS`` does not list fails the run.
        ros_error: why ROS 2 cannot be imported ("" when it can; None until a ROS folder was met).
        counts: {folder: Counter(collected=, ran=, skipped=, xfailed=)}; a module skipped at
            collection counts as one skip (its tests were never collected).
        skips: [(node id, reason)] of every skip, in the order they came.
        problems: why the run fails (empty when it does not).
    """

    def __init__(self, rootpath: Path) -> None:
        self.rootpath = Path(rootpath)
        self.require_ros = os.environ.get("PARAPUSH_REQUIRE_ROS") == "1"
        self.required_folders = [
            name.strip() for name in os.environ.get("PARAPUSH_REQUIRE_FOLDERS", "").split(",") if name.strip()
        ]
        self.ros_error: str | None = None
        self.counts: dict[str, Counter] = {}
        self.skips: list[tuple[str, str]] = []
        self.problems: list[str] = []

    def _counts(self, report: pytest.TestReport | pytest.CollectReport) -> Counter | None:
        folder = _folder(self.rootpath / report.fspath)
        return None if folder is None else self.counts.setdefault(folder, Counter())

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

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A module skipped as it was collected (``importorskip``, ``pytest.skip(allow_module_level=True)``)."""
        if report.skipped:
            self.skips.append((report.nodeid, _skip_reason(report)))
            if (counts := self._counts(report)) is not None:
                counts["skipped"] += 1

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        counts = self._counts(report)
        if hasattr(report, "wasxfail"):  # an expected failure (or a non-strict pass): not a skip
            if counts is not None:
                counts["xfailed" if report.skipped else "ran"] += 1
            return
        if report.skipped:
            self.skips.append((report.nodeid, _skip_reason(report)))
            if counts is not None:
                counts["skipped"] += 1
        elif report.when == "call" and counts is not None:
            counts["ran"] += 1

    def unlisted_skips(self) -> list[tuple[str, str]]:
        """The skips ``ALLOWED_SKIPS`` does not list: [(node id, reason)]."""
        return [(nodeid, reason) for nodeid, reason in self.skips if allowed_skip(nodeid) is None]

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
        if self.required_folders:
            self.problems.extend(
                f"skipped, and not in ALLOWED_SKIPS (test/conftest.py): {nodeid} ({reason})"
                for nodeid, reason in self.unlisted_skips()
            )
        if self.problems and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.counts:
            terminalreporter.write_line("tests per folder: " + ", ".join(
                f"{folder} {counts['ran']} ran/{counts['collected']} collected/{counts['skipped']} skipped"
                + (f"/{counts['xfailed']} xfailed" if counts["xfailed"] else "")
                for folder, counts in sorted(self.counts.items())
            ))
        if self.ros_error and not self.require_ros:
            terminalreporter.write_line(f"ROS tests not collected (ROS 2 not available: {self.ros_error})", yellow=True)
        if not self.required_folders and (unlisted := self.unlisted_skips()):
            terminalreporter.write_line(
                f"{len(unlisted)} skipped not in ALLOWED_SKIPS (test/conftest.py): CI (.ci/run) fails on them",
                yellow=True)
        for problem in self.problems:
            terminalreporter.write_line(f"FAILED RUN: {problem}", red=True, bold=True)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SuiteGuard(config.rootpath), "parapush-suite-guard")


@pytest.fixture
def free_udp_port() -> int:
    """A UDP port on 127.0.0.1 that no socket holds now (the OS picks it; it may be taken again later)."""
    return free_port()
