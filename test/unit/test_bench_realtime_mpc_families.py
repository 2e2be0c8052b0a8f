"""``bench/realtime_mpc.py --families``: the five scene families' generators (valid scenes of
the right kind, deterministic per seed, the committed ``bench/scenes/new_<family>_<k>.yaml``
equal to what they write), the scene validation they pass, the unchanged committed scenes of
the older generators, and the summary's ``coarse_model``. No planner runs here."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from parapush.scene import load_scene

BENCH = Path(__file__).resolve().parents[2] / "bench"
DEFAULT_BOX = (0.0545, 0.077)


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        import make_benchmark_scenes
        import make_crowded_scenes
        import realtime_mpc

        yield realtime_mpc, make_benchmark_scenes, make_crowded_scenes
    finally:
        sys.path.remove(str(BENCH))


def written(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("family", ["box_clutter", "box_obstacle", "crowded_8", "crowded_16", "heavy"])
def test_each_family_draws_valid_scenes_of_its_kind(bench, tmp_path, family) -> None:
    realtime_mpc, scenes, _crowded = bench
    for index in (1, 2):
        path = written(tmp_path, f"new_{family}_{index}", realtime_mpc.family_scene_text(family, index))
        scenes.validate(path)  # raises on an overlap, a started-over task, a covered goal
        scene = load_scene(path)
        target = scene.objects[scene.target_index]
        assert scene.name == f"new_{family}_{index}"
        supports = [max(scene.table.friction, spec.friction) for spec in scene.objects]
        if family.startswith("box_"):
            assert target.shape == "box" and target.half_extents == pytest.approx(DEFAULT_BOX)
            assert scene.table.friction == 1.0 and all(spec.mass == 0.5 for spec in scene.objects)
        if family == "box_clutter":
            assert len(scene.objects) == 4 and not scene.obstacles and scene.goal.radius == 0.06
            assert all(spec.shape == "cylinder" for spec in scene.objects if spec is not target)
        if family == "box_obstacle":
            assert len(scene.objects) == 1 and len(scene.obstacles) == 1 and scene.goal.radius == 0.05
        if family.startswith("crowded_"):
            assert len(scene.objects) == int(family.removeprefix("crowded_")) and target.shape == "cylinder"
            assert {spec.shape for spec in scene.objects} == {"cylinder", "box"} and scene.goal.radius == 0.06
            goal = np.asarray(scene.goal.center)
            assert all(np.hypot(*(np.asarray(spec.pose[:2]) - goal)) >= spec.bounding_radius + scene.goal.radius
                       for spec in scene.objects if spec is not target)
        if family == "heavy":
            assert len(scene.objects) == 4 and scene.goal.radius == 0.06
            assert all(1.0 <= spec.mass <= 2.0 for spec in scene.objects)
            assert all(0.2 <= support <= 0.6 for support in supports) and len(set(supports)) == 4
            assert any(spec.shape == "box" for spec in scene.objects)


def test_the_families_draw_the_same_scenes_again_and_other_scenes_for_another_seed_or_index(bench) -> None:
    realtime_mpc, scenes, crowded = bench
    for family in realtime_mpc.FAMILIES:
        assert realtime_mpc.family_scene_text(family, 1) == realtime_mpc.family_scene_text(family, 1)
        assert realtime_mpc.family_scene_text(family, 1) != realtime_mpc.family_scene_text(family, 2)
    seed = realtime_mpc.FAMILY_SCENE_SEED
    for other in (scenes.clutter_scene(seed, 1, box_target=True), scenes.clutter_scene(seed, 1, heavy=True)):
        assert not np.allclose(other["pusher"], scenes.clutter_scene(seed + 1, 1, box_target=True)["pusher"])
    assert not np.allclose(scenes.obstacle_scene(seed, 1, box_target=True)["pusher"],
                           scenes.obstacle_scene(seed + 1, 1, box_target=True)["pusher"])
    assert not np.allclose(crowded.crowded_scene(seed, 8, 1)["pusher"], crowded.crowded_scene(seed + 1, 8, 1)["pusher"])


def test_held_out_families_are_other_scenes_with_their_seed_in_the_name_and_the_reference(bench, tmp_path,
                                                                                           monkeypatch) -> None:
    realtime_mpc, _scenes, _crowded = bench
    held_out = realtime_mpc.FAMILY_SCENE_SEED + 1
    assert realtime_mpc.family_scene_name("heavy", 2) == "new_heavy_2"
    assert realtime_mpc.family_scene_name("heavy", 2, held_out) == f"new_heavy_2_s{held_out}"
    text = realtime_mpc.family_scene_text("heavy", 2, held_out)
    assert text != realtime_mpc.family_scene_text("heavy", 2) and f"name: new_heavy_2_s{held_out}" in text
    monkeypatch.setattr(realtime_mpc, "HELD_OUT_SCENES", tmp_path)
    written_scenes = realtime_mpc.write_family_scenes(("heavy",), (held_out,))
    count = realtime_mpc.FAMILY_SCENE_COUNT
    assert sorted(written_scenes) == [f"new_heavy_{k}_s{held_out}" for k in range(1, count + 1)]
    assert all(path.parent == tmp_path for _family, path in written_scenes.values())
    arguments = realtime_mpc.argparse.Namespace(families=["all"], planners=["realtime"],
                                                family_scene_seeds=[held_out, held_out + 1])
    assert realtime_mpc.reference_variant(arguments) == f"families_realtime_scenes{held_out}_{held_out + 1}"
    arguments.family_scene_seeds = [realtime_mpc.FAMILY_SCENE_SEED]
    assert realtime_mpc.reference_variant(arguments) == "families_realtime"


def test_the_family_seed_is_new(bench) -> None:
    realtime_mpc, _scenes, _crowded = bench
    import robust_mpc
    import stack_realtime

    used = {2019, 2026, 2027, 2029, realtime_mpc.SCENE_SEED, robust_mpc.SCENE_SEED, stack_realtime.SCENE_SEED}
    assert realtime_mpc.FAMILY_SCENE_SEED not in used


def test_the_committed_family_scenes_are_what_the_generators_write(bench) -> None:
    realtime_mpc, _scenes, _crowded = bench
    for family in realtime_mpc.FAMILIES:
        for index in range(1, realtime_mpc.FAMILY_SCENE_COUNT + 1):
            path = realtime_mpc.NEW_SCENES / f"new_{family}_{index}.yaml"
            assert path.read_text() == realtime_mpc.family_scene_text(family, index), f"{path} differs"


def test_the_older_generators_still_write_the_committed_scenes(bench, capsys) -> None:
    _realtime_mpc, scenes, crowded = bench
    assert scenes.main(["--check"]) == 0
    assert crowded.main(["--check"]) == 0
    assert "differ" not in capsys.readouterr().err


def test_a_pusher_or_an_object_inside_a_box_target_fails_validation(bench, tmp_path) -> None:
    _realtime_mpc, scenes, _crowded = bench
    box = "{name: target, shape: box, half_extents: [0.0545, 0.077], pose: [0.0, 0.0, 0.0]}"

    def scene(pusher: str, other: str, goal: str = "[0.25, 0.0]") -> Path:
        text = (f"name: probe\npusher: {{radius: 0.0145, position: {pusher}}}\nobjects:\n  - {box}\n"
                f"  - {{name: other, shape: cylinder, radius: 0.0512, pose: {other}}}\n"
                f"goal: {{center: {goal}, radius: 0.05}}\ntarget: target\n")
        return written(tmp_path, "probe", text)

    scenes.validate(scene("[-0.08, 0.0]", "[0.0, 0.2, 0.0]"))
    # the pusher 6.5 cm from the centre: outside a 5.45 + 1.45 cm disc test, inside the 7.7 cm half length
    with pytest.raises(RuntimeError, match="the pusher overlaps target"):
        scenes.validate(scene("[0.0, 0.065]", "[0.0, 0.25, 0.0]"))
    # centres 12 cm apart: clear for two cylinders' radii (5.12 + 5.12), not for the box's corner
    corner = 0.12 / math.sqrt(2.0)
    with pytest.raises(RuntimeError, match="other overlaps target"):
        scenes.validate(scene("[-0.08, 0.0]", f"[{corner}, {corner}, 0.0]"))
    with pytest.raises(RuntimeError, match="goal centre lies inside other"):
        scenes.validate(scene("[-0.08, 0.0]", "[0.2, 0.049, 0.0]", goal="[0.2, 0.1]"))


def test_a_drawn_box_reaches_along_its_rotated_sides(bench) -> None:
    _realtime_mpc, scenes, _crowded = bench
    box = scenes.DrawnObject("b", np.zeros(2), 0.0, shape="box")
    turned = scenes.DrawnObject("b", np.zeros(2), math.pi / 2, shape="box")
    assert box.extent_along(np.array([1.0, 0.0])) == pytest.approx(DEFAULT_BOX[0])
    assert turned.extent_along(np.array([1.0, 0.0])) == pytest.approx(DEFAULT_BOX[1])
    assert box.bound == pytest.approx(math.hypot(*DEFAULT_BOX))
    with pytest.raises(ValueError, match="shape"):
        scenes.DrawnObject("b", np.zeros(2), shape="ellipse")
    with pytest.raises(ValueError, match="position"):
        scenes.DrawnObject("b", np.zeros(3))


def run(planner="realtime", kind="box_clutter", coarse="learned", *, success=True, replans=(0.1, 0.3)) -> dict:
    return {"planner": planner, "kind": kind, "coarse_model": coarse, "success": success, "replan_times": list(replans),
            "replan_cpu_total": 0.2, "execution_time": 5.0, "task_time": 5.5, "waiting_time": 0.5, "controls": 5}


def test_summary_rows_per_planner_and_family_carry_the_coarse_model(bench) -> None:
    realtime_mpc, _scenes, _crowded = bench
    runs = [run(), run(success=False), run(kind="heavy", coarse="analytical"), run(kind="heavy"),
            run(kind="heavy", coarse="analytical"), run("isrr2019-fine", coarse="none")]
    rows = realtime_mpc.summarize(runs)
    realtime = {row["scene_kind"]: row for row in rows if row["planner"] == "realtime"}
    assert list(realtime) == ["box_clutter", "heavy", "all"]
    assert realtime["box_clutter"]["coarse_model"] == "learned"
    assert realtime["heavy"]["coarse_model"] == "analytical x2, learned x1"
    assert realtime["all"]["coarse_model"] == "analytical x2, learned x3"
    assert (realtime["box_clutter"]["successes"], realtime["box_clutter"]["runs"]) == (1, 2)
    low, high = realtime["box_clutter"]["success_ci95"]
    assert 0.0 < low < 0.5 < high < 1.0
    fine = [row for row in rows if row["planner"] == "isrr2019-fine"]
    assert [row["coarse_model"] for row in fine] == ["none", "none"]
    assert "analytical x2, learned x1" in realtime_mpc.table(rows)


def test_the_horizon_planners_correct_the_first_control_or_the_whole_horizon_whatever_the_workers(bench) -> None:
    realtime_mpc, _scenes, _crowded = bench
    from parapush.planning.stack_planner import PlannerSources

    scene = load_scene("config/scenes/clutter_fig1.yaml")
    corrected = {}
    for planner in realtime_mpc.HORIZON_PLANNERS:
        for workers in (2, 16):
            sources = PlannerSources.load().with_overrides({"model": {"backend": "threads", "workers": workers}})
            assert set(realtime_mpc.planner_overrides(planner, sources)) == {"multifidelity"}
            with realtime_mpc.build(planner, scene, 0, sources) as built:
                corrected[planner, workers] = (realtime_mpc.corrected_controls(built.planner),
                                               realtime_mpc.corrector_workers(built.model, built.model_config))
    assert corrected == {("realtime-first-control", 2): (1, 2), ("realtime-first-control", 16): (1, 16),
                         ("realtime-whole-horizon", 2): ("all", 2), ("realtime-whole-horizon", 16): ("all", 16)}


def test_summary_rows_count_the_corrected_controls_and_workers_of_their_runs(bench) -> None:
    realtime_mpc, _scenes, _crowded = bench
    runs = [{**run("realtime-whole-horizon"), "corrected_controls": "all", "corrector_workers": 16},
            {**run("realtime-first-control"), "corrected_controls": 1, "corrector_workers": 16},
            {**run("realtime"), "corrected_controls": 1, "corrector_workers": 2},
            {**run("realtime"), "corrected_controls": "all", "corrector_workers": 8}]
    rows = {(row["planner"], row["scene_kind"]): row for row in realtime_mpc.summarize(runs)}
    assert [planner for planner, kind in rows if kind == "all"] == [
        "realtime", "realtime-first-control", "realtime-whole-horizon"]
    assert rows["realtime-whole-horizon", "all"]["corrected_controls"] == "all"
    assert rows["realtime-first-control", "box_clutter"]["corrector_workers"] == "16"
    assert rows["realtime", "all"]["corrected_controls"] == "1 x1, all x1"
    assert rows["realtime", "all"]["corrector_workers"] == "2 x1, 8 x1"
