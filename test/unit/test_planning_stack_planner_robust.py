"""build_planner's robust planning: the planner file's robust section and a bench's robust overrides."""

from __future__ import annotations

import pytest

from parapush.planning.planner_config import PlannerConfigError, planner_config_from_dict
from parapush.planning.stack_planner import PlannerSources, build_planner
from parapush.scene import load_scene

SCENE = "config/scenes/isrr_obstacle_1.yaml"


def test_the_files_planner_is_nominal_and_a_robust_override_builds_robust_scoring() -> None:
    scene = load_scene(SCENE)
    sources = PlannerSources.load()
    assert sources.planner.robust.samples == 1
    with build_planner(scene, sources) as nominal:
        assert nominal.robust is None and nominal.planner.robust is None
        assert nominal.settings()["robust"] is None
    robust_sources = sources.with_overrides({"robust": {"samples": 3, "risk": {"kind": "worst"}}})
    assert robust_sources.planner.robust.risk.kind == "worst"
    assert robust_sources.planner.robust.risk.alpha == sources.planner.robust.risk.alpha  # merged, not replaced
    with build_planner(scene, robust_sources) as robust:
        assert robust.planner.robust is robust.robust.scoring
        assert robust.settings()["robust"]["samples"] == 3
        assert robust.robust.target == 0
    state = scene.layout.compose(scene.pusher.position, [spec.pose for spec in scene.objects])
    with pytest.raises(RuntimeError, match="close"):  # its fine-model threads were closed with the planner
        robust.robust.identifier.propagate(state[None], [[0.05, 0.0]], [1.0], [[0.5, 1.0, 0.2, 0.0, 0.0]])


def test_robust_settings_errors_name_the_field() -> None:
    sources = PlannerSources.load()
    with pytest.raises(ValueError, match="robust.risk.kind"):
        sources.with_overrides({"robust": {"risk": {"kind": "median"}}})
    with pytest.raises(ValueError, match="robust.samples"):
        build_planner(load_scene(SCENE), sources.with_overrides({"preset": "isrr2019", "robust": {"samples": 2}}))
    with pytest.raises(PlannerConfigError, match="robust.spread.mass"):
        planner_config_from_dict({"costs": {"goal_distance": {"weight": 1.0}}, "robust": {"spread": {"mass": 1.5}}})
