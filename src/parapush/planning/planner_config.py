"""The planner's configuration file (``config/planner.yaml``): optimizer, MPC loop and cost
weights, validated with errors that name the field. The predictive model is configured
separately, once for every predictor (``config/model.yaml``, :class:`parapush.prediction.ModelConfig`).

Layout (every section optional except ``costs``; omitted fields take the defaults of
:class:`~parapush.planning.optimizer.OptimizerSettings` and
:class:`~parapush.planning.mpc.MpcSettings`)::

    optimizer: {samples: 20, exploration_variance: 1.0e-4, horizon: 4, ...}
    mpc: {max_controls: 20, ...}
    robust: {samples: 1, risk: {kind: cvar, alpha: 0.5}, spread: {...}, belief: {...}}
    costs:
      goal_distance: {weight: 1.0}
      obstacle_proximity: {weight: 1.0e-4, pusher_gain: 0.5}
      ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parapush.planning.costs import CostConfigError, CostFunction, validate_cost_config
from parapush.planning.mpc import MpcSettings
from parapush.planning.optimizer import OptimizerSettings
from parapush.planning.robust_scoring import RobustSettings
from parapush.scene import Scene
from parapush.settings import SettingsError, settings_from_mapping
from parapush.yaml_file import load_yaml


class PlannerConfigError(ValueError):
    """The planner configuration is invalid; the message names the offending field."""


@dataclass(frozen=True)
class PlannerConfig:
    """Everything ``config/planner.yaml`` sets.

    Attributes:
        optimizer: optimizer settings.
        mpc: MPC loop settings.
        costs: ``{term: {parameter: value}}``, validated names (see :mod:`parapush.planning.costs`).
        robust: robust planning over the target's physics (:class:`~parapush.planning.robust_scoring.RobustSettings`;
            ``samples`` 1: the nominal planner).
    """

    optimizer: OptimizerSettings
    mpc: MpcSettings
    costs: Mapping[str, Mapping[str, float]]
    robust: RobustSettings = field(default_factory=RobustSettings)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "costs", validate_cost_config(self.costs))
        except CostConfigError as error:
            raise PlannerConfigError(str(error)) from None

    def cost_function(self, scene: Scene) -> CostFunction:
        """The cost for ``scene`` (its goal, target, obstacles and table)."""
        try:
            return CostFunction.from_config(scene, self.costs)
        except CostConfigError as error:
            raise PlannerConfigError(str(error)) from None


_SECTIONS = {"optimizer": OptimizerSettings, "mpc": MpcSettings}


def _section(data: Mapping[str, Any], name: str) -> Any:
    """The settings of section ``name`` (omitted: the defaults), read by their declarations."""
    try:
        return settings_from_mapping(_SECTIONS[name], data.get(name), name)
    except SettingsError as error:
        raise PlannerConfigError(str(error)) from None


def planner_config_from_dict(data: Any) -> PlannerConfig:
    """Build a validated :class:`PlannerConfig` from plain data (parsed YAML)."""
    if not isinstance(data, Mapping):
        raise PlannerConfigError(f"planner config: expected a mapping, got {type(data).__name__}")
    if "model" in data:
        raise PlannerConfigError(
            "model: the predictive model is configured in config/model.yaml now (its 'model' section, "
            "parapush.prediction.ModelConfig), read by every node that predicts"
        )
    unknown = sorted(str(key) for key in data if key not in (*_SECTIONS, "costs", "robust"))
    if unknown:
        raise PlannerConfigError(
            f"planner config: unknown section(s) {unknown}; known: {sorted((*_SECTIONS, 'costs', 'robust'))}"
        )
    if "costs" not in data:
        raise PlannerConfigError("costs: missing")
    try:
        robust = settings_from_mapping(RobustSettings, data.get("robust"), "robust")
    except SettingsError as error:
        raise PlannerConfigError(str(error)) from None
    return PlannerConfig(
        optimizer=_section(data, "optimizer"),
        mpc=_section(data, "mpc"),
        costs=data["costs"],
        robust=robust,
    )


def load_planner_config(path: str | Path) -> PlannerConfig:
    """Read ``config/planner.yaml``-style files; errors name the file and the field."""
    return load_yaml(path, planner_config_from_dict, PlannerConfigError, "planner config")
