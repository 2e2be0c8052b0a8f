"""The suite guard of test/conftest.py: with ``PARAPUSH_REQUIRE_FOLDERS`` set (``.ci/run``) a
skip that ``ALLOWED_SKIPS`` does not list fails the run, naming the test and its reason; an
expected failure is not a skip. Each case runs pytest on a small test file with the guard
loaded as a plugin (``-p conftest``), as CI would meet it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

TEST_ROOT = Path(__file__).resolve().parents[1]

SAMPLE = '''
import pytest

def test_runs():
    pass

def test_skips():
    pytest.skip("no frobnicator here")

@pytest.mark.xfail(strict=True, reason="a known limit")
def test_fails_as_expected():
    assert False
'''


def run_sample(tmp_path: Path, source: str, required_folders: str | None) -> subprocess.CompletedProcess:
    (tmp_path / "test_sample.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TEST_ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("PARAPUSH_REQUIRE_FOLDERS", None)
    if required_folders is not None:
        env["PARAPUSH_REQUIRE_FOLDERS"] = required_folders
    command = [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-c", os.devnull,
               "--rootdir", str(tmp_path), "test_sample.py"]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_an_unlisted_skip_fails_a_ci_run_and_names_the_test_and_reason(tmp_path):
    completed = run_sample(tmp_path, SAMPLE, required_folders="unit")
    assert completed.returncode == 1, completed.stdout
    assert ("FAILED RUN: skipped, and not in ALLOWED_SKIPS (test/conftest.py): test_sample.py::test_skips "
            "(no frobnicator here)") in completed.stdout, completed.stdout
    failed_run = [line for line in completed.stdout.splitlines() if line.startswith("FAILED RUN: skipped")]
    assert len(failed_run) == 1, completed.stdout  # the strict xfail is not a skip


def test_a_module_skipped_at_collection_fails_a_ci_run(tmp_path):
    source = 'import pytest\n\npytest.importorskip("a_module_nobody_installed")\n\ndef test_never(): pass\n'
    completed = run_sample(tmp_path, source, required_folders="unit")
    assert completed.returncode == 1, completed.stdout
    assert "not in ALLOWED_SKIPS (test/conftest.py): test_sample.py (could not import " \
           "'a_module_nobody_installed'" in completed.stdout, completed.stdout


def test_outside_ci_a_skip_is_counted_and_noted_but_passes(tmp_path):
    completed = run_sample(tmp_path, SAMPLE, required_folders=None)
    assert completed.returncode == 0, completed.stdout
    assert "1 skipped not in ALLOWED_SKIPS (test/conftest.py): CI (.ci/run) fails on them" in completed.stdout
    assert "FAILED RUN" not in completed.stdout, completed.stdout


def test_an_allow_list_pattern_matches_node_ids_and_the_shipped_list_is_empty():
    spec = importlib.util.spec_from_file_location("suite_guard_conftest", TEST_ROOT / "conftest.py")
    guard = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(guard)
    assert guard.ALLOWED_SKIPS == (), "CI is expected to skip nothing: say why in the entry, and here"
    allowed = (("test/unit/test_x.py::test_gpu*", "no GPU on CI"),)
    assert guard.allowed_skip("test/unit/test_x.py::test_gpu_kernel[2]", allowed) == "test/unit/test_x.py::test_gpu*"
    assert guard.allowed_skip("test/unit/test_x.py::test_cpu", allowed) is None
    assert guard.allowed_skip("test/unit/test_x.py", allowed) is None
