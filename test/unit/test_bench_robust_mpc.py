"""The pure parts of ``bench/robust_mpc.py`` on synthetic runs: the summary rows (the issue's
schema), the narrowing rows and the centre-of-mass movement, the planners' overrides, the drawn
world physics and scenes. No planner runs here."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from parapush.identification.parameters import ObjectParameters
from parapush.planning.stack_planner import PlannerSources
from parapush.scene import load_scene

BENCH = Path(__file__).resolve().parents[2] / "bench"
SUMMARY_KEYS = {"planner", "risk", "samples_M", "world", "scene_kind", "runs", "successes", "success_ci95",
                "replan_p50_s", "replan_p95_s", "objects_disturbed"}


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        import robust_mpc

        yield robust_mpc
    finally:
        sys.path.remove(str(BENCH))


def run(planner="nominal", world="randomized", kind="obstacle", *, success=True, replans=(0.1, 0.3),
        disturbed=0, spreads=(), estimates=(), truth=(0.5, 1.0, 0.2, 0.0, 0.0)):
    return {"planner": planner, "world": world, "scene_kind": kind, "success": success, "replan_times": list(replans),
            "objects_disturbed": disturbed, "belief_spreads": [list(s) for s in spreads],
            "belief_estimates": [list(e) for e in estimates], "true_target": list(truth)}


def test_summary_rows_have_the_issue_s_schema_per_planner_world_and_kind(bench) -> None:
    runs = [run(success=True, disturbed=1), run(success=False, replans=(0.5,)), run(kind="clutter"),
            run(planner="robust-cvar", replans=(0.2, 0.4))]
    rows = bench.summarize(runs)
    assert all(set(row) == SUMMARY_KEYS for row in rows)
    nominal = {row["scene_kind"]: row for row in rows if row["planner"] == "nominal"}
    assert (nominal["obstacle"]["successes"], nominal["obstacle"]["runs"]) == (1, 2)
    assert nominal["obstacle"]["replan_p50_s"] == pytest.approx(0.3) and nominal["obstacle"]["objects_disturbed"] == 0.5
    assert nominal["all"]["runs"] == 3 and nominal["obstacle"]["samples_M"] == 1 and nominal["all"]["risk"] == "none"
    robust = [row for row in rows if row["planner"] == "robust-cvar"]
    assert {row["scene_kind"] for row in robust} == {"obstacle", "all"}
    assert robust[0]["risk"] == "cvar" and robust[0]["samples_M"] == 4
    low, high = nominal["obstacle"]["success_ci95"]
    assert 0.0 < low < 0.5 < high < 1.0


def test_narrowing_rows_compare_the_spread_after_three_updates_and_the_com_s_movement(bench) -> None:
    prior = (0.2, 0.3, 0.0, 0.01, 0.01)
    narrowed = (0.2, 0.3, 0.0, 0.004, 0.006)
    estimates = [(0.5, 1.0, 0.2, 0.0, 0.0)] * 3 + [(0.5, 1.0, 0.2, 0.006, 0.0)]
    runs = [run("robust-mean", spreads=[prior, prior, prior, narrowed], estimates=estimates,
                truth=(0.5, 1.0, 0.2, 0.01, 0.0)),
            run("robust-mean", spreads=[prior, prior], estimates=estimates[:2])]  # too few updates: left out
    (row,) = bench.narrowing(runs)
    assert row["runs"] == 1 and row["spread_ratio_com_x"] == pytest.approx(0.4)
    assert row["spread_ratio_pusher_friction"] == 1.0  # no spread: no ratio
    assert row["com_estimate_closer_share"] == 1.0 and row["com_direction_towards_share"] == 1.0
    assert row["com_moved_over_needed_median"] == pytest.approx(0.6)
    away = bench.com_movement(np.array([[-0.004, 0.0]]), np.array([[0.01, 0.0]]))
    assert away["com_estimate_closer_share"] == 0.0 and away["com_direction_cosine_median"] == pytest.approx(-1.0)
    too_close = bench.com_movement(np.array([[0.004, 0.0]]), np.array([[0.001, 0.0]]))  # true com ~ the prior's
    assert too_close["com_runs"] == 0 and math.isnan(too_close["com_estimate_closer_share"])


def test_the_planners_are_the_files_planner_with_their_robust_overrides(bench) -> None:
    sources = PlannerSources.load()
    assert sources.with_overrides(bench.planner_overrides("nominal", 3)).planner.robust.samples == 1
    robust = sources.with_overrides(bench.planner_overrides("robust-cvar", 3)).planner.robust
    assert (robust.samples, robust.risk.kind, robust.risk.alpha, robust.belief.seed) == (4, "cvar", 0.5, 3)
    assert robust.spread == sources.planner.robust.spread  # the file's prior


def test_the_randomized_world_draws_every_object_within_the_spread(bench) -> None:
    paths = bench.scene_paths(1)
    assert [kind for kind, _ in paths.values()] == ["obstacle", "clutter", "box"]
    box = load_scene(paths["robust_box_1"][1])
    assert box.objects[0].shape == "box"
    clutter = load_scene(paths["robust_clutter_1"][1])
    drawn = bench.drawn_physics(clutter, 2)
    assert len(drawn) == len(clutter.objects) and drawn == bench.drawn_physics(clutter, 2)
    for index, parameters in enumerate(drawn):
        nominal = ObjectParameters.from_scene(clutter, index)
        assert abs(parameters.mass / nominal.mass - 1.0) <= 0.5
        assert abs(parameters.support_friction / nominal.support_friction - 1.0) <= 0.3
        assert np.hypot(*parameters.com_offset) <= 0.02
    assert drawn != bench.drawn_physics(clutter, 3)


def test_another_scene_seed_draws_other_scenes_under_their_own_names(bench, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(bench, "SCENES", tmp_path)  # not the committed bench/scenes
    default = bench.scene_paths(1)
    other = bench.scene_paths(1, 5151)
    assert list(default) == ["robust_obstacle_1", "robust_clutter_1", "robust_box_1"]
    assert list(other) == ["robust5151_obstacle_1", "robust5151_clutter_1", "robust5151_box_1"]
    for (kind, path), (other_kind, other_path) in zip(default.values(), other.values(), strict=True):
        assert kind == other_kind and path.parent == other_path.parent == tmp_path
        assert load_scene(path).objects[0].pose != load_scene(other_path).objects[0].pose
        assert "--seed 5151" in other_path.read_text() and "--seed 5151" not in path.read_text()
    assert load_scene(other["robust5151_box_1"][1]).objects[0].shape == "box"
