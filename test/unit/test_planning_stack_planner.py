"""The one construction path: PlannerSources from the config files, overrides, build_planner."""

from __future__ import annotations

import pytest
import yaml

from parapush.graph import config_dir
from parapush.planning.stack_planner import PlannerSources, build_planner, load_mpc_preset
from parapush.prediction import load_model_config
from parapush.scene import load_scene


def test_sources_are_the_three_files() -> None:
    sources = PlannerSources.load()
    assert sources.model == load_model_config(config_dir() / "model.yaml")
    assert sources.preset.name == load_mpc_preset(config_dir() / "mpc.yaml") == "realtime"
    assert sources.overrides == {}


def test_mpc_file_without_a_planner_gives_the_default_and_a_bad_one_is_named(tmp_path) -> None:
    path = tmp_path / "mpc.yaml"
    path.write_text(yaml.safe_dump({"mpc": {"ros__parameters": {"settle_time": 0.1}}}))
    assert load_mpc_preset(path) == "realtime"
    path.write_text(yaml.safe_dump({"mpc": {"ros__parameters": {"planner": "fastest"}}}))
    with pytest.raises(ValueError, match="fastest"):
        load_mpc_preset(path)


def test_overrides_change_what_they_name_and_are_kept() -> None:
    sources = PlannerSources.load()
    changed = sources.with_overrides({"preset": "isrr2019", "optimizer": {"max_iterations": 2},
                                      "mpc": {"max_controls": 5}, "model": {"name": "fine"},
                                      "costs": {"smoothness": {"weight": 2.0}}})
    assert changed.preset.name == "isrr2019"
    assert changed.preset.optimizer_settings(changed.planner.optimizer).max_iterations == 2
    assert changed.planner.mpc.max_controls == 5 and changed.model.name == "fine"
    assert changed.preset.costs(changed.planner.costs)["smoothness"]["weight"] == 2.0
    assert changed.overrides["optimizer"] == {"max_iterations": 2}
    assert sources.planner.mpc.max_controls != 5  # the sources themselves are unchanged
    for bad, name in (({"optimiser": {}}, "optimiser"), ({"optimizer": {"sample": 3}}, "sample"),
                      ({"mpc": {"max_control": 3}}, "max_control"), ({"model": {"nme": "fine"}}, "nme")):
        with pytest.raises(ValueError, match=name):
            sources.with_overrides(bad)


def test_mpc_overrides_win_over_the_presets_own_mpc_fields() -> None:
    """The realtime preset sets ``initial_speed`` and ``clear_blockers``; a user's override of either
    (the planner file's ``mpc`` section, a node's ``mpc.*`` parameter) is what the loop gets."""
    sources = PlannerSources.load()
    preset = sources.preset
    assert preset.name == "realtime" and preset.mpc_settings(sources.planner.mpc).clear_blockers
    assert preset.mpc_settings(sources.planner.mpc).initial_speed == 0.1
    changed = sources.with_overrides({"mpc": {"initial_speed": 0.05, "clear_blockers": False}})
    settings = changed.preset.mpc_settings(changed.planner.mpc)
    assert settings.initial_speed == 0.05 and not settings.clear_blockers
    assert sources.preset.mpc_settings(sources.planner.mpc).clear_blockers  # the sources are unchanged


def test_the_pipelined_preset_gets_the_replan_budget_and_the_sequential_one_the_files() -> None:
    scene = load_scene(config_dir() / "scenes" / "isrr_obstacle.yaml")
    sources = PlannerSources.load().with_overrides({"model": {"workers": 1}})
    with build_planner(scene, sources) as built:
        pipeline = built.preset.pipeline
        duration = built.planner.settings.control_duration
        assert built.planner.settings.time_budget == pytest.approx(pipeline.replan_budget(duration))
    with build_planner(scene, sources.with_overrides({"preset": "isrr2019"})) as built:
        assert built.planner.settings.time_budget == sources.planner.optimizer.time_budget
        assert built.coarse is None and built.settings()["coarse"] is None
