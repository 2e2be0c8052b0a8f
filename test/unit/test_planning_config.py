"""config/planner.yaml and the planner configuration's validation."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from test_planning_fixtures import tiny_scene

from parapush.planning import PlannerConfigError, load_planner_config, planner_config_from_dict
from parapush.planning.costs import TERM_TYPES

CONFIG = Path("config/planner.yaml")


def shipped() -> dict:
    return yaml.safe_load(CONFIG.read_text())


def test_the_shipped_configuration_loads_with_the_isrr_settings() -> None:
    config = load_planner_config(CONFIG)
    assert config.optimizer.samples == 20
    assert config.optimizer.exploration_variance == 1e-4
    assert config.optimizer.horizon == 4 and config.optimizer.control_duration == 1.0
    assert config.mpc.max_controls == 20
    assert set(config.costs) <= set(TERM_TYPES)
    cost = config.cost_function(tiny_scene())
    assert cost.names == tuple(config.costs)


def test_unknown_cost_terms_are_named() -> None:
    data = shipped()
    data["costs"]["goal_distanse"] = {"weight": 1.0}
    data["costs"]["wobble"] = {}
    with pytest.raises(
        PlannerConfigError, match=r"costs: unknown cost term\(s\) \['goal_distanse', 'wobble'\]"
    ):
        planner_config_from_dict(data)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("optimizer", "samples"), 0, "optimizer.samples: expected an integer >= 1"),
        (("optimizer", "exploration_variance"), "big", "optimizer.exploration_variance: expected a finite number"),
        (("optimizer", "step"), 1.0, r"optimizer: unknown field\(s\) \['step'\]"),
        (("mpc", "max_controls"), -1, "mpc.max_controls: expected an integer >= 1"),
        (("costs", "smoothness", "weight"), "heavy", "costs.smoothness.weight: expected a number"),
        (("costs", "off_table", "height"), 1.0, r"costs.off_table: unknown parameter\(s\) \['height'\]"),
    ],
)
def test_invalid_fields_are_named(path, value, message) -> None:
    data = copy.deepcopy(shipped())
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(PlannerConfigError, match=message):
        planner_config_from_dict(data)


def test_range_errors_of_cost_parameters_name_the_field_when_built() -> None:
    data = shipped()
    data["costs"]["goal_distance"]["weight"] = -1.0
    config = planner_config_from_dict(data)
    with pytest.raises(PlannerConfigError, match="costs.goal_distance.weight: must be >= 0"):
        config.cost_function(tiny_scene())


def test_file_errors_name_the_file(tmp_path) -> None:
    with pytest.raises(PlannerConfigError, match="cannot read planner config"):
        load_planner_config(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("costs: [unclosed")
    with pytest.raises(PlannerConfigError, match=r"broken.yaml: invalid YAML"):
        load_planner_config(broken)
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("costs: {smoothness: {}}\nplanner: {}\n")
    with pytest.raises(
        PlannerConfigError, match=r"unknown.yaml: planner config: unknown section\(s\) \['planner'\]"
    ):
        load_planner_config(unknown)
    missing = tmp_path / "nocosts.yaml"
    missing.write_text("optimizer: {samples: 10}\n")
    with pytest.raises(PlannerConfigError, match="costs: missing"):
        load_planner_config(missing)


def test_a_model_section_points_to_model_yaml() -> None:
    data = shipped()
    data["model"] = {"name": "parareal", "iterations": 1}
    with pytest.raises(PlannerConfigError, match="model: the predictive model is configured in config/model.yaml"):
        planner_config_from_dict(data)
