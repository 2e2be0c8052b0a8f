"""The planner's configuration file (``config/planner.yaml``): optimizer, MPC loop,
predictive model and cost weights, validated with errors that name the field.

Layout (every section optional except ``costs``; omitted fields take the defaults of
:class:`~parapush.planning.optimizer.OptimizerSettings`,
:class:`~parapush.planning.mpc.MpcSettings` and :class:`ModelSettings`)::

    optimizer: {samples: 20, exploration_variance: 1.0e-4, horizon: 4, ...}
    mpc: {max_controls: 20, ...}
    model: {name: parareal, iterations: 1, backend: threads}
    costs:
      goal_distance: {weight: 1.0}
      obstacle_proximity: {weight: 1.0e-4, pusher_gain: 0.5}
      ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parapush.planning.costs import CostConfigError, CostFunction, validate_cost_config
from parapush.planning.mpc import MpcSettings
from parapush.planning.optimizer import OptimizerSettings
from parapush.planning.predictive_model import MODEL_NAMES, make_predictive_model
from parapush.scene import Scene
from parapush.yaml_file import read_yaml

BACKEND_NAMES = ("serial", "threads", "processes")


class PlannerConfigError(ValueError):
    """The planner configuration is invalid; the message names the offending field."""


def _optional_positive(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not value > 0
        or value == float("inf")
    ):
        raise PlannerConfigError(f"{name}: expected a finite number > 0 or null, got {value!r}")
    return float(value)


@dataclass(frozen=True, kw_only=True)
class ModelSettings:
    """Which predictive model the planner uses (:func:`make_predictive_model`).

    Attributes:
        name: ``"coarse"``, ``"fine"`` or ``"parareal"``.
        iterations: Parareal iterations K (>= 0) or None (then a tolerance or deadline).
        tolerance_position: m, or None.
        tolerance_angle: rad, or None.
        deadline: s per prediction, or None.
        backend: fine backend: ``"serial"``, ``"threads"`` or ``"processes"``.
        workers: fine workers, or None for one per CPU core.
    """

    name: str = "parareal"
    iterations: int | None = 1
    tolerance_position: float | None = None
    tolerance_angle: float | None = None
    deadline: float | None = None
    backend: str = "threads"
    workers: int | None = None

    def __post_init__(self) -> None:
        if self.name not in MODEL_NAMES:
            raise PlannerConfigError(f"model.name: expected one of {MODEL_NAMES}, got {self.name!r}")
        if self.iterations is not None and (
            isinstance(self.iterations, bool) or not isinstance(self.iterations, int) or self.iterations < 0
        ):
            raise PlannerConfigError(
                f"model.iterations: expected an integer >= 0 or null, got {self.iterations!r}"
            )
        for name in ("tolerance_position", "tolerance_angle", "deadline"):
            object.__setattr__(self, name, _optional_positive(getattr(self, name), f"model.{name}"))
        if self.backend not in BACKEND_NAMES:
            raise PlannerConfigError(f"model.backend: expected one of {BACKEND_NAMES}, got {self.backend!r}")
        if self.workers is not None and (
            isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1
        ):
            raise PlannerConfigError(f"model.workers: expected an integer >= 1 or null, got {self.workers!r}")
        if (
            self.name == "parareal"
            and self.iterations is None
            and self.tolerance_position is None
            and self.tolerance_angle is None
            and self.deadline is None
        ):
            raise PlannerConfigError(
                "model.iterations: Parareal needs iterations, a tolerance or a deadline to stop"
            )


@dataclass(frozen=True)
class PlannerConfig:
    """Everything ``config/planner.yaml`` sets.

    Attributes:
        optimizer: optimizer settings.
        mpc: MPC loop settings.
        model: predictive model settings.
        costs: ``{term: {parameter: value}}``, validated names (see :mod:`parapush.planning.costs`).
    """

    optimizer: OptimizerSettings
    mpc: MpcSettings
    model: ModelSettings
    costs: Mapping[str, Mapping[str, float]]

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

    def predictive_model(self, scene: Scene, **overrides: Any) -> Any:
        """Build the configured predictive model for ``scene``; ``overrides`` replace
        :class:`ModelSettings` fields (e.g. ``name="coarse"``, ``iterations=2``)."""
        settings = dataclasses.replace(self.model, **overrides) if overrides else self.model
        return make_predictive_model(
            settings.name,
            scene,
            iterations=settings.iterations,
            tolerance_position=settings.tolerance_position,
            tolerance_angle=settings.tolerance_angle,
            deadline=settings.deadline,
            backend=settings.backend,
            workers=settings.workers,
        )


_SECTIONS = {"optimizer": OptimizerSettings, "mpc": MpcSettings, "model": ModelSettings}


def _section(data: Mapping[str, Any], name: str) -> Any:
    kind = _SECTIONS[name]
    values = data.get(name) or {}
    if not isinstance(values, Mapping):
        raise PlannerConfigError(f"{name}: expected a mapping, got {type(values).__name__}")
    known = {item.name for item in dataclasses.fields(kind)}
    unknown = sorted(str(key) for key in values if key not in known)
    if unknown:
        raise PlannerConfigError(f"{name}: unknown field(s) {unknown}; known: {sorted(known)}")
    try:
        return kind(**values)
    except PlannerConfigError:
        raise
    except (TypeError, ValueError) as error:
        raise PlannerConfigError(f"{name}.{error}") from None


def planner_config_from_dict(data: Any) -> PlannerConfig:
    """Build a validated :class:`PlannerConfig` from plain data (parsed YAML)."""
    if not isinstance(data, Mapping):
        raise PlannerConfigError(f"planner config: expected a mapping, got {type(data).__name__}")
    unknown = sorted(str(key) for key in data if key not in (*_SECTIONS, "costs"))
    if unknown:
        raise PlannerConfigError(
            f"planner config: unknown section(s) {unknown}; known: {sorted((*_SECTIONS, 'costs'))}"
        )
    if "costs" not in data:
        raise PlannerConfigError("costs: missing")
    return PlannerConfig(
        optimizer=_section(data, "optimizer"),
        mpc=_section(data, "mpc"),
        model=_section(data, "model"),
        costs=data["costs"],
    )


def load_planner_config(path: str | Path) -> PlannerConfig:
    """Read ``config/planner.yaml``-style files; errors name the file and the field."""
    path = Path(path)
    data = read_yaml(path, PlannerConfigError, "planner config")
    try:
        return planner_config_from_dict(data)
    except PlannerConfigError as error:
        raise PlannerConfigError(f"{path}: {error}") from None
