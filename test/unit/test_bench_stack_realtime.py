"""The pure parts of ``bench/stack_realtime.py`` on synthetic records: the Wilson interval, the
records' validation and JSON round trip, the per-scene and pooled summary (the issue's row schema),
the README figures, /proc parsing and process-tree CPU, the reset-pose check, the drawn scenes and
the bench's sizes. No stack is started here (test/system/test_stack_realtime_smoke.py does)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from parapush.scene import load_scene

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        import stack_realtime

        yield stack_realtime
    finally:
        sys.path.remove(str(BENCH))


def record(bench, scene="a", index=0, *, success=True, task=10.0, waiting=1.0, replans=(0.1, 0.2), fallbacks=0,
           cpu=None, reason="", coarse_model="learned"):
    return bench.GoalRecord(
        scene=scene, index=index, outcome="SUCCESS" if success else "MAX_CONTROLS", success=success,
        failure_reason=reason, controls=len(replans), task_time_s=task, waiting_time_s=waiting,
        planning_time_s=sum(replans), execution_time_s=task - waiting, replan_times_s=replans, fallbacks=fallbacks,
        replan_p50_s=float(np.median(replans)), replan_p95_s=float(np.percentile(replans, 95)),
        final_distance_m=0.01, cpu_s=cpu if cpu is not None else {"mpc": 5.0, "sim_driver": 2.0}, wall_s=task + 0.1,
        coarse_model=coarse_model,
    )


def test_wilson_interval_matches_known_values_and_refuses_impossible_counts(bench):
    low, high = bench.wilson_interval(20, 20)
    assert low == pytest.approx(0.8389, abs=1e-4) and high == 1.0
    low, high = bench.wilson_interval(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)
    assert all(math.isnan(value) for value in bench.wilson_interval(0, 0))
    # exactly 1 (0) when every (no) run succeeded: 4 of 4 gave 0.9999999999999999 and the summary check refused it
    assert bench.wilson_interval(4, 4)[1] == 1.0 and bench.wilson_interval(0, 4)[0] == 0.0
    with pytest.raises(ValueError, match="successes, runs"):
        bench.wilson_interval(3, 2)


def test_a_record_names_the_invalid_field(bench):
    with pytest.raises(ValueError, match="task_time_s"):
        record(bench, task=-1.0)
    with pytest.raises(ValueError, match="replan_times_s"):
        dataclasses.replace(record(bench), replan_times_s=(0.1, math.nan))
    with pytest.raises(ValueError, match="success"):
        bench.GoalRecord(scene="a", index=0, outcome="ERROR", success=True)
    with pytest.raises(ValueError, match="cpu_s"):
        record(bench, cpu={"mpc": -1.0})
    with pytest.raises(ValueError, match="scene"):
        record(bench, scene="")


def test_a_record_round_trips_through_json(bench):
    original = record(bench)
    failed = bench.GoalRecord(scene="a", index=1, outcome=bench.STACK_ERROR, success=False, failure_reason="x")
    for item in (original, failed):
        text = json.dumps(item.to_json(), allow_nan=False)  # NaN (no result) becomes null
        assert bench.GoalRecord.from_json(json.loads(text)).to_json() == item.to_json()


def test_summary_pools_each_scene_and_all_runs(bench):
    records = [
        record(bench, "a", 0, task=10.0, waiting=1.0, replans=(0.1, 0.2, 0.3), fallbacks=1,
               cpu={"mpc": 6.0, "sim_driver": 2.0}),
        record(bench, "a", 1, success=False, task=20.0, waiting=3.0, replans=(0.4, 2.0), fallbacks=2,
               cpu={"mpc": 12.0, "sim_driver": 4.0}, reason="pusher.valid: the pusher is not tracked (stale)"),
        record(bench, "b", 0, task=10.0, waiting=0.0, replans=(0.5,), cpu={"mpc": 2.0, "prediction_service": 3.0},
               coarse_model="analytical"),
    ]
    rows = bench.summarize(records)
    assert [row["scene"] for row in rows] == ["a", "b", "all"]
    a, b, pooled = rows
    assert (a["runs"], a["successes"]) == (2, 1)
    assert a["success_ci95"] == list(bench.wilson_interval(1, 2))
    assert a["replan_p50_s"] == pytest.approx(np.percentile([0.1, 0.2, 0.3, 0.4, 2.0], 50))
    assert a["replan_p95_s"] == pytest.approx(np.percentile([0.1, 0.2, 0.3, 0.4, 2.0], 95))
    assert a["waiting_share"] == pytest.approx(4.0 / 30.0)
    assert a["late_plans_per_run"] == pytest.approx(1.5)
    assert a["cpu_s_per_task_s"] == pytest.approx({"mpc": 18.0 / 30.0, "sim_driver": 6.0 / 30.0, "total": 24.0 / 30.0})
    assert a["stale_or_lost_failures"] == 1
    assert a["outcomes"] == {"SUCCESS": 1, "MAX_CONTROLS": 1}
    assert (a["coarse_models"], pooled["coarse_models"]) == ({"learned": 2}, {"learned": 2, "analytical": 1})
    assert b["cpu_s_per_task_s"] == pytest.approx({"mpc": 0.2, "prediction_service": 0.3, "total": 0.5})
    assert (pooled["runs"], pooled["successes"]) == (3, 2)
    assert pooled["replan_p50_s"] == pytest.approx(np.percentile([0.1, 0.2, 0.3, 0.4, 2.0, 0.5], 50))
    assert pooled["waiting_share"] == pytest.approx(4.0 / 40.0)
    assert pooled["cpu_s_per_task_s"]["prediction_service"] == pytest.approx(3.0 / 40.0)
    assert pooled["cpu_s_per_task_s"]["total"] == pytest.approx(29.0 / 40.0)
    bench.check_summary(rows)
    json.dumps(bench._finite_or_none(rows), allow_nan=False)


def test_a_scene_of_stack_errors_only_has_no_rates_but_a_valid_row(bench):
    failed = [bench.GoalRecord(scene="a", index=index, outcome=bench.STACK_ERROR, success=False,
                               failure_reason="no answer from push_object (result) within 120 s") for index in range(2)]
    rows = bench._finite_or_none(bench.summarize(failed))
    row = rows[0]
    assert (row["runs"], row["successes"], row["replans"]) == (2, 0, 0)
    assert row["replan_p50_s"] is None and row["waiting_share"] is None and row["cpu_s_per_task_s"]["total"] is None
    assert row["stale_or_lost_failures"] == 2
    bench.check_summary(rows)
    assert "a" in bench.table(rows, [])


def test_check_summary_refuses_rows_off_the_schema(bench):
    rows = bench.summarize([record(bench)])
    with pytest.raises(ValueError, match="'all' row"):
        bench.check_summary(rows[:1])
    incomplete = [dict(rows[0]), rows[1]]
    del incomplete[0]["waiting_share"]
    with pytest.raises(ValueError, match="waiting_share"):
        bench.check_summary(incomplete)
    with pytest.raises(ValueError, match="'all'"):
        bench.summarize([record(bench, scene="all")])


def test_readme_figures_are_flat_numbers_per_row(bench):
    rows = bench._finite_or_none(bench.summarize([record(bench, "clutter_fig1"), record(bench, "b")]))
    figures = bench.readme_figures(rows, 3.5, [1.0, 2.5, 0.5])
    assert figures["clutter_fig1_successes"] == 1
    assert figures["all_runs"] == 2
    assert figures["all_replan_p95_s"] == pytest.approx(rows[-1]["replan_p95_s"])
    assert figures["b_cpu_total"] == pytest.approx(0.7)
    assert (figures["benchmark_minutes"], figures["load_min"], figures["load_max"]) == (3.5, 0.5, 2.5)
    assert all(isinstance(value, (int, float)) for value in figures.values())


def test_parse_stat_reads_the_cpu_ticks_after_an_odd_command_name(bench):
    fields = ["S", "41", "7", "7", "0", "-1", "4194560", "100", "0", "0", "0", "11", "22", "33", "44", "20", "0"]
    text = "1234 (python3 (x) y) " + " ".join(fields) + "\n"
    assert bench.parse_stat(text) == (1234, 41, 11 + 22 + 33 + 44)
    with pytest.raises(ValueError, match="text"):
        bench.parse_stat("garbage")
    stats = {1: (0, 5), 10: (1, 100), 11: (10, 20), 12: (11, 3), 20: (1, 50), 30: (99, 7)}
    assert bench.tree_ticks(stats, 10) == 123
    assert bench.tree_ticks(stats, 1) == 178
    assert bench.tree_ticks(stats, 404) == 0


def test_cpu_seconds_counts_a_nodes_descendants(bench):
    busy = ("import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass\n"
            "time.sleep(30)")
    shell = subprocess.Popen(["sh", "-c", f"{sys.executable} -c '{busy}'; sleep 30"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10.0
        while (spent := bench.cpu_seconds({"node": shell.pid})["node"]) < 0.35:
            assert time.monotonic() < deadline, f"the grandchild's CPU was not counted ({spent} s)"
            time.sleep(0.1)
        sample = bench.cpu_seconds({"node": shell.pid})
        assert sample["bench"] > 0.0
        difference = bench.cpu_difference(sample, bench.cpu_seconds({"node": shell.pid}))
        assert 0.0 <= difference["node"] < 0.2 and set(difference) == {"node", "bench"}
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()


def test_at_pose_allows_the_tolerances_and_wraps_yaw(bench):
    scene = load_scene(Path(__file__).resolve().parents[2] / "config" / "scenes" / "clutter_fig1.yaml")
    layout = scene.layout
    initial = layout.compose(np.asarray(scene.pusher.position), np.array([spec.pose for spec in scene.objects]))
    near = initial.copy()
    near[0] += 0.8 * bench.POSE_TOLERANCE
    near[layout.yaw_indices[0]] += 2 * math.pi + 0.5 * bench.YAW_TOLERANCE
    near[layout.pusher_velocity] = 1.0  # velocities are not compared
    assert bench.at_pose(near, initial, layout)
    for index in (1, layout.object_pose(0).start, layout.yaw_indices[-1]):
        far = initial.copy()
        far[index] += 2 * max(bench.POSE_TOLERANCE, bench.YAW_TOLERANCE)
        assert not bench.at_pose(far, initial, layout)


def test_drawn_scenes_use_a_new_seed_and_load(bench, tmp_path):
    paths = bench.draw_scenes(bench.SCENE_SEED, 4, tmp_path)
    assert [path.stem for path in paths] == ["stack_obstacle_1", "stack_clutter_1", "stack_obstacle_2",
                                             "stack_clutter_2"]
    for path in paths:
        scene = load_scene(path)
        assert scene.name == path.stem and scene.goal is not None
        assert f"--seed {bench.SCENE_SEED}" in path.read_text().splitlines()[0]
    assert load_scene(paths[0]).obstacles and not load_scene(paths[1]).obstacles
    folders = (BENCH / "scenes", BENCH.parent / "config" / "scenes")
    committed = [path.read_text().splitlines()[0] for folder in folders for path in sorted(folder.glob("*.yaml"))]
    assert committed and not any(f"--seed {bench.SCENE_SEED}" in line for line in committed)
    with pytest.raises(ValueError, match="count"):
        bench.draw_scenes(bench.SCENE_SEED, -1, tmp_path)


def test_the_bench_sizes(bench, tmp_path):
    def plan(**options):
        values = {"cpu_hogs": 0, "seed": bench.SCENE_SEED, "scenes": None, "quick": False, "runs": None}
        return [(path.stem, runs) for path, runs in bench.plan_scenes(argparse.Namespace(**{**values, **options}),
                                                                      tmp_path)]

    quick = plan(quick=True)
    assert quick[0] == ("clutter_fig1", 20) and len(quick) == 5 and all(runs == 3 for _, runs in quick[1:])
    assert plan()[1:] == [(name, bench.FULL_RUNS["drawn"]) for name, _ in quick[1:]]
    assert plan(cpu_hogs=2) == [("clutter_fig1", bench.OVERLOAD_RUNS)]
    assert plan(scenes=["stack_clutter_2"], runs=2) == [("stack_clutter_2", 2)]
    with pytest.raises(ValueError, match="--scenes"):
        plan(scenes=["nope"])


@pytest.mark.parametrize(("arguments", "message"), [
    (["--param", "state_estimator.publish_rate"], "expected node.parameter=value"),
    (["--reference", "--param", "state_estimator.publish_rate=60"], "--reference: run the default"),
])
def test_node_parameters_are_checked_and_never_written_as_a_reference(bench, arguments, message, capsys):
    with pytest.raises(SystemExit) as exited:
        bench.main(arguments)
    assert exited.value.code == 2 and message in capsys.readouterr().err
