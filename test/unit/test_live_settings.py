"""Live tuning's pure part (parapush.planning.live_settings): which settings are tunable, their
values and ranges from the settings' own checks, validation naming the parameter, the sources a
goal builds from, and a running goal's planner retuned before its next plan."""

from __future__ import annotations

import pytest

from parapush.graph import config_dir
from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.planning.live_settings import (
    FROM_NEXT_GOAL,
    FROM_NEXT_REPLAN,
    LiveTuning,
    PlanRetuner,
    TunableSetting,
    TuningError,
    tunable_settings,
)
from parapush.planning.predictive_model import PropagatorRollout
from parapush.planning.stack_planner import PlannerSources, build_planner
from parapush.scene import load_scene


@pytest.fixture(scope="module")
def sources():
    return PlannerSources.load()  # config/: the realtime preset


@pytest.fixture(scope="module")
def scene():
    return load_scene(config_dir() / "scenes" / "clutter_fig1.yaml")


def test_the_settings_their_values_and_ranges_come_from_the_files_and_the_checks(sources, scene):
    settings = {item.name: item for item in tunable_settings(sources, scene)}
    # values: the planner file's and the preset's (realtime: 30 samples over the file's 20)
    assert settings["optimizer.samples"].default == 30 == sources.preset.optimizer_overrides["samples"]
    assert settings["optimizer.horizon"].default == sources.planner.optimizer.horizon
    assert settings["costs.smoothness.weight"].default == sources.planner.costs["smoothness"]["weight"]
    assert settings["costs.non_target_objects.goal_entry_margin"].default == 0.02  # the preset's cost override
    assert settings["multifidelity.elites"].default == sources.preset.multifidelity.elites
    # every cost term's parameters (their PARAMETERS), as floats
    assert {name for name in settings if name.startswith("costs.goal_distance.")} == {
        "costs.goal_distance.weight", "costs.goal_distance.outside_slope", "costs.goal_distance.route_margin",
        "costs.goal_distance.hinge_inset", "costs.goal_distance.intermediate_weight",
        "costs.goal_distance.arrival_bonus"}
    assert settings["costs.goal_distance.route_margin"].default == 0.005  # the preset's: the route round obstacles
    assert all(isinstance(item.default, float) for name, item in settings.items() if name.startswith("costs."))
    # ranges read off the checks: weights >= 0, integers >= 1, unbounded tolerances
    assert settings["costs.smoothness.weight"].minimum == 0.0
    assert settings["optimizer.samples"].minimum == 1
    assert settings["mpc.obstacle_tolerance"].minimum is None
    assert settings["costs.off_table.margin"].minimum is None
    assert settings["optimizer.time_budget"].minimum == 0.0  # 0: no budget
    # from when: per re-plan settings are live, structural ones from the next goal
    assert settings["costs.smoothness.weight"].applies == FROM_NEXT_REPLAN
    assert settings["optimizer.horizon"].applies == FROM_NEXT_GOAL
    assert settings["mpc.max_controls"].applies == FROM_NEXT_GOAL
    assert FROM_NEXT_GOAL in settings["optimizer.control_duration"].description


def test_a_single_fidelity_preset_has_no_multifidelity_settings(sources, scene):
    names = {item.name for item in tunable_settings(sources.with_overrides({"preset": "isrr2019"}), scene)}
    assert "optimizer.samples" in names and not any(name.startswith("multifidelity.") for name in names)


@pytest.mark.parametrize(("values", "message"), [
    ({"costs.smoothness.weight": -1.0}, "costs.smoothness.weight: must be >= 0.0"),
    ({"optimizer.samples": 0}, "optimizer.samples: expected an integer >= 1"),
    ({"optimizer.exploration_variance": 0.0}, "optimizer.exploration_variance: expected a finite number > 0"),
    ({"multifidelity.elites": 0}, "multifidelity.elites: expected an integer >= 1"),
    ({"mpc.max_controls": 0}, "mpc.max_controls: expected an integer >= 1"),
    ({"costs.smoothness.weight": float("nan")}, "costs.smoothness.weight: must be finite"),
    # one refused value refuses the whole set
    ({"costs.goal_distance.weight": 2.0, "optimizer.max_iterations": -3}, "optimizer.max_iterations"),
])
def test_a_refused_change_names_the_parameter_and_changes_nothing(sources, scene, values, message):
    tuning = LiveTuning(sources, scene)
    with pytest.raises(TuningError, match=message.replace("(", r"\(")) as refused:
        tuning.propose(values)
    assert refused.value.parameter == message.split(":")[0]
    assert tuning.version() == 0
    assert tuning.value("costs.goal_distance.weight") == 1.0
    assert tuning.sources().preset == sources.preset


def test_accepted_changes_are_overrides_of_every_goal_s_preset(sources, scene):
    tuning = LiveTuning(sources, scene)
    # the declared values themselves (what the node proposes at start-up) change nothing: a goal
    # naming isrr2019 keeps its 20 samples (the realtime preset's 30 is no override of it)
    assert tuning.propose({item.name: item.default for item in tunable_settings(sources, scene)}) == []
    assert tuning.sources("isrr2019").preset.optimizer_settings(sources.planner.optimizer).samples == 20
    changes = tuning.propose({"costs.smoothness.weight": 0.5, "optimizer.samples": 7, "multifidelity.elites": 2,
                              "optimizer.time_budget": 0.0, "planner": "ignored: not tunable"})
    assert [change.text() for change in changes] == [
        "costs.smoothness.weight 1.0 -> 0.5", "optimizer.samples 30 -> 7", "multifidelity.elites 4 -> 2",
        "optimizer.time_budget 5.0 -> 0.0"]
    assert tuning.propose({"costs.smoothness.weight": 0.5}) == []  # the same value: no change
    realtime = tuning.sources()
    assert realtime.preset.costs(realtime.planner.costs)["smoothness"]["weight"] == 0.5
    optimizer = realtime.preset.optimizer_settings(realtime.planner.optimizer)
    assert optimizer.samples == 7 and optimizer.time_budget is None  # 0 stands for no budget
    assert realtime.preset.multifidelity.elites == 2
    isrr = tuning.sources("isrr2019")  # a goal naming another preset gets the changed values too
    assert isrr.preset.name == "isrr2019" and isrr.preset.multifidelity is None
    assert isrr.preset.optimizer_settings(isrr.planner.optimizer).samples == 7
    assert isrr.preset.costs(isrr.planner.costs)["smoothness"]["weight"] == 0.5


def test_a_running_planner_takes_the_live_changes_before_its_next_plan(sources, scene):
    tuning = LiveTuning(sources, scene)
    coarse = AnalyticalCoarseModel(scene)
    built = build_planner(scene, tuning.sources(), model=PropagatorRollout(coarse), coarse=coarse)
    events: list[str] = []
    retune = PlanRetuner(tuning, built, tuning.version(), events.append)
    loop = built.loop
    retune(loop)  # nothing changed
    assert events == [] and loop.cost.term("smoothness").weight == 1.0
    tuning.propose({"optimizer.horizon": 6})  # structural: the running goal keeps its horizon
    retune(loop)
    assert events == [] and built.planner.settings.horizon == 4
    budget = built.planner.settings.time_budget  # the pipelined preset's re-plan budget
    tuning.propose({"costs.smoothness.weight": 0.5, "optimizer.samples": 7, "multifidelity.elites": 2})
    retune(loop)
    assert events == ["parameters changed: costs.smoothness.weight 1.0 -> 0.5, optimizer.samples 30 -> 7, "
                      "multifidelity.elites 4 -> 2 (from this re-plan)"]
    assert loop.cost.term("smoothness").weight == 0.5 and built.costs["smoothness"]["weight"] == 0.5
    assert built.planner.settings.samples == 7 and built.planner.multifidelity.elites == 2
    assert built.planner.settings.horizon == 4 and built.planner.settings.time_budget == budget
    retune(loop)  # applied once
    assert len(events) == 1


def test_a_tunable_setting_is_named_by_its_section():
    with pytest.raises(ValueError, match="name"):
        TunableSetting("weight", 1.0, "no section")
    with pytest.raises(ValueError, match="costs.smoothness"):
        TunableSetting("costs.smoothness", 1.0, "no parameter")
