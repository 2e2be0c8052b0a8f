"""``bench/stack_realtime.py`` end to end on the default scene, two goals on one stack (so the
world reset between goals runs): the results file follows the schema, both goals got a result
from the stack (not a stack error), the second after a reset, and every node's CPU was read.
Timings mean nothing here (a shared test machine); the lead runs the bench alone for figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODES = {"sim_driver", "state_estimator", "prediction_service", "identification", "mpc", "executor", "visualizer"}


@pytest.mark.slow
def test_stack_realtime_runs_two_goals_on_one_stack(tmp_path):
    output = tmp_path / "stack_realtime.json"
    completed = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "stack_realtime.py"), "--scenes", "default", "--runs", "2",
         "--no-record", "--goal-timeout", "60", "--output", str(output), "--lock", str(tmp_path / "lock")],
        capture_output=True, text=True, timeout=240, cwd=ROOT, check=False)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    payload = json.loads(output.read_text())
    assert [row["scene"] for row in payload["summary"]] == ["clutter_fig1", "all"]
    for row in payload["summary"]:
        assert {"scene", "runs", "successes", "success_ci95", "replan_p50_s", "replan_p95_s", "waiting_share",
                "late_plans_per_run", "cpu_s_per_task_s"} <= set(row)
        assert row["runs"] == 2
    runs = payload["runs"]
    assert [run["outcome"] != "STACK_ERROR" for run in runs] == [True, True], [run["failure_reason"] for run in runs]
    assert runs[0]["reset_s"] == 0.0 and runs[1]["reset_s"] > 0.0
    for run in runs:
        assert set(run["cpu_s"]) == NODES | {"bench"}
        assert run["controls"] == 0 or run["replan_times_s"]
    assert len(payload["load_average"]["before"]) == 3 and len(payload["load_average"]["after"]) == 3
