"""The planning cost J: a weighted sum of cost terms (ISRR Eq 10).

    J(x_{0:N}, u_{0:N-1}) = sum_terms weight_term * term(x_{0:N}, u_{0:N-1})

The running terms (obstacle proximity, smoothness, off-table, non-target objects,
pusher-target distance) sum over the horizon inside each term; the goal distance is the
terminal term whose weight is the paper's w. Built from the ``costs`` mapping of ``config/planner.yaml``::

    costs:
      goal_distance: {weight: 1.0, outside_slope: 0.05}
      smoothness: {weight: 1.0}

Only the listed terms are used; unknown term or parameter names are errors naming them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from parapush.planning.costs.cost_term import CostConfigError, CostTerm, checked_number
from parapush.planning.costs.goal_distance import GoalDistance
from parapush.planning.costs.non_target_objects import NonTargetObjects
from parapush.planning.costs.obstacle_proximity import ObstacleProximity
from parapush.planning.costs.off_table import OffTable
from parapush.planning.costs.pusher_goal_side import PusherGoalSide
from parapush.planning.costs.pusher_target_distance import PusherTargetDistance
from parapush.planning.costs.smoothness import Smoothness
from parapush.scene import Scene
from parapush.validation import duplicate_names

TERM_TYPES: dict[str, type] = {
    term.name: term
    for term in (
        GoalDistance,
        ObstacleProximity,
        Smoothness,
        OffTable,
        NonTargetObjects,
        PusherTargetDistance,
        PusherGoalSide,
    )
}


def validate_cost_config(config: Any, where: str = "costs") -> dict[str, dict[str, float | None]]:
    """Check term and parameter names and that values are finite numbers or null (ranges
    are checked when the terms are built). Returns a plain ``{term: {parameter: value}}``."""
    if not isinstance(config, Mapping):
        raise CostConfigError(f"{where}: expected a mapping of term names, got {type(config).__name__}")
    unknown = sorted(str(name) for name in config if name not in TERM_TYPES)
    if unknown:
        raise CostConfigError(f"{where}: unknown cost term(s) {unknown}; known: {sorted(TERM_TYPES)}")
    if not config:
        raise CostConfigError(f"{where}: at least one cost term is needed; known: {sorted(TERM_TYPES)}")
    validated: dict[str, dict[str, float]] = {}
    for name, parameters in config.items():
        parameters = {} if parameters is None else parameters
        if not isinstance(parameters, Mapping):
            raise CostConfigError(f"{where}.{name}: expected a mapping of parameters, got {parameters!r}")
        allowed = TERM_TYPES[name].PARAMETERS
        unknown = sorted(str(key) for key in parameters if key not in allowed)
        if unknown:
            raise CostConfigError(f"{where}.{name}: unknown parameter(s) {unknown}; known: {sorted(allowed)}")
        validated[name] = {
            key: None if value is None else checked_number(value, f"{where}.{name}.{key}", minimum=-np.inf)
            for key, value in parameters.items()
        }
    return validated


@dataclass(frozen=True)
class CostFunction:
    """Weighted sum of cost terms.

    Attributes:
        terms: the terms, each with ``name``, ``weight`` and ``evaluate``; names unique.
    """

    terms: tuple[CostTerm, ...]

    def __post_init__(self) -> None:
        terms = tuple(self.terms)
        if not terms:
            raise CostConfigError("terms: at least one cost term is needed")
        duplicates = duplicate_names(term.name for term in terms)
        if duplicates:
            raise CostConfigError(f"terms: duplicate term(s) {duplicates}")
        object.__setattr__(self, "terms", terms)

    @classmethod
    def from_config(cls, scene: Scene, config: Mapping[str, Mapping[str, float] | None]) -> CostFunction:
        """Build the terms named in ``config`` (the ``costs`` mapping) for ``scene``."""
        validated = validate_cost_config(config)
        terms = []
        for name, parameters in validated.items():
            try:
                terms.append(TERM_TYPES[name].from_scene(scene, **parameters))
            except CostConfigError as error:
                raise CostConfigError(f"costs.{error}") from None
        return cls(tuple(terms))

    def for_scene(self, scene: Scene, *, keep: tuple[str, ...] = ()) -> CostFunction:
        """The same terms with the same parameters, built for ``scene`` (another target or goal:
        a sub-goal, :mod:`parapush.planning.blocker_clearing`), but the terms named in ``keep``,
        which stay as they are (built for this cost's scene)."""
        unknown = sorted(set(keep) - set(self.names))
        if unknown:
            raise KeyError(f"keep: no cost term(s) {unknown}; terms: {list(self.names)}")
        terms = tuple(
            term if term.name in keep
            else type(term).from_scene(scene, **{name: getattr(term, name) for name in term.PARAMETERS})
            for term in self.terms
        )
        return dataclasses.replace(self, terms=terms)

    @property
    def route(self) -> Any:
        """The goal distance term's route round the obstacles
        (:class:`~parapush.planning.goal_route.GoalRoute`; None: no such term, no obstacles, or
        ``route_margin`` null): what the straight-line proposals push along."""
        for term in self.terms:
            if term.name == "goal_distance":
                return term.route
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(term.name for term in self.terms)

    def term(self, name: str) -> CostTerm:
        """The term called ``name``; KeyError naming it and the known ones."""
        for term in self.terms:
            if term.name == name:
                return term
        raise KeyError(f"no cost term {name!r}; terms: {list(self.names)}")

    def with_previous_control(self, control: np.ndarray | None) -> CostFunction:
        """A copy whose terms that depend on the previously executed control (2,) m/s
        (the smoothness term) use ``control``."""
        terms = tuple(
            term.with_previous_control(control) if hasattr(term, "with_previous_control") else term
            for term in self.terms
        )
        return dataclasses.replace(self, terms=terms)

    def breakdown(self, trajectories: np.ndarray, controls: np.ndarray) -> dict[str, np.ndarray]:
        """Weighted value (S,) of every term, by name."""
        trajectories = np.asarray(trajectories, dtype=float)
        controls = np.asarray(controls, dtype=float)
        return {term.name: term.weight * term.evaluate(trajectories, controls) for term in self.terms}

    def evaluate(self, trajectories: np.ndarray, controls: np.ndarray) -> np.ndarray:
        """Total cost (S,) of trajectories (S, N+1, D) under controls (S, N, 2)."""
        return np.sum(list(self.breakdown(trajectories, controls).values()), axis=0)
