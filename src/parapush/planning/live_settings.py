"""Planner settings changed while the MPC runs (live tuning, issue 31), independent of ROS.

The MPC node declares each setting below as a writable parameter (``ros2 param set /mpc
costs.smoothness.weight 0.5``); this module names them, validates a change with the settings'
own dataclasses and applies it to a running goal's planner at its next re-plan.

Which settings, and from when a change applies:

- **from the next re-plan** (a running goal picks it up before its next plan):
  ``costs.<term>.<parameter>`` for every term the node's cost has (the terms' ``PARAMETERS``),
  ``optimizer.samples``, ``optimizer.max_iterations``, ``optimizer.exploration_variance``
  ((m/s)^2), ``optimizer.time_budget`` (s; 0 stands for none; a pipelined preset's re-plans
  still get at most ``PipelineSettings.replan_budget``), ``optimizer.step_size``,
  ``optimizer.sensitivity``, and for a multi-fidelity preset ``multifidelity.elites``,
  ``multifidelity.rounds``, ``multifidelity.refine_iterations``, ``multifidelity.mismatch_tolerance``;
- **from the next goal** (structural: the running goal's warm start, timeline and termination
  checks are built from them): ``optimizer.horizon``, ``optimizer.control_duration`` (s),
  ``optimizer.max_speed`` (m/s), ``mpc.max_controls``, ``mpc.obstacle_tolerance`` (m, the
  clearance at which a body counts as hitting an obstacle), ``mpc.table_margin`` (m),
  ``mpc.replan_proposal``, ``mpc.clear_blockers``, ``mpc.blocker_line_offset`` (m),
  ``mpc.blocker_goal_reach`` (m), ``mpc.blocker_clear_controls``.

Not tunable (read-only node parameters, refused): the preset (``planner``; a goal may name
another), the planner file, the predictive model (``model.*``). The goal region (the "goal
tolerance" a user may look for) is each goal's own ``goal_radius``.

The initial values are the node's planner file and preset (so nothing changes until a
parameter is set). A change is validated by building the settings it changes
(:class:`~parapush.planning.optimizer.OptimizerSettings`,
:class:`~parapush.planning.multifidelity.MultiFidelitySettings`,
:class:`~parapush.planning.mpc.MpcSettings`, the cost terms of the node's scene); a refusal
names the parameter and leaves every value as it was. Changed values are kept as overrides
(:meth:`PlannerSources.with_overrides`) of the goal's preset, so a goal naming another preset
gets the changed values too (multi-fidelity ones only where the preset has that planner).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from parapush.planning.costs import CostConfigError, CostFunction
from parapush.planning.costs.cost_function import TERM_TYPES
from parapush.planning.mpc import MpcSettings
from parapush.planning.multifidelity import MultiFidelityPlanner, MultiFidelitySettings
from parapush.planning.optimizer import OptimizerSettings
from parapush.planning.stack_planner import PlannerSources, planner_settings
from parapush.scene import GoalRegion, Scene
from parapush.settings import SettingInfo

__all__ = ["LiveTuning", "PlanRetuner", "TunableSetting", "TuningError", "tunable_settings"]

OPTIMIZER_LIVE = ("samples", "max_iterations", "exploration_variance", "time_budget", "step_size", "sensitivity")
"""Optimizer fields a running goal's next re-plan uses."""
OPTIMIZER_NEXT_GOAL = ("horizon", "control_duration", "max_speed")
"""Optimizer fields that apply from the next goal."""
MULTIFIDELITY_LIVE = ("elites", "rounds", "refine_iterations", "mismatch_tolerance")
"""Multi-fidelity fields a running goal's next re-plan uses."""
MPC_NEXT_GOAL = ("max_controls", "obstacle_tolerance", "table_margin", "replan_proposal", "clear_blockers",
                 "blocker_line_offset", "blocker_goal_reach", "blocker_clear_controls")
"""MPC loop fields that apply from the next goal."""

FROM_NEXT_REPLAN = "applies from the next re-plan"
FROM_NEXT_GOAL = "applies from the next goal"


class TuningError(ValueError):
    """A refused change; the message starts with the parameter's name (``name: problem``)."""

    @property
    def parameter(self) -> str:
        """The refused parameter's name."""
        return str(self).split(": ", 1)[0]

    @property
    def problem(self) -> str:
        """What is wrong with its value."""
        return str(self).split(": ", 1)[-1]


@dataclass(frozen=True)
class TunableSetting:
    """One tunable planner setting (a writable node parameter).

    Attributes:
        name: dotted name: ``optimizer.<field>``, ``multifidelity.<field>``, ``mpc.<field>`` or
            ``costs.<term>.<parameter>``.
        default: the planner file's and preset's value (bool, int or float; its type is the
            parameter's).
        description: what it is, with its unit and from when a change applies.
        minimum: the smallest value the settings accept (None: unbounded; a setting that must
            be > 0 gets 0 here and its own check refuses 0).
        live: True: from the next re-plan; False: from the next goal.
    """

    name: str
    default: Any
    description: str
    minimum: float | None = None
    live: bool = True

    def __post_init__(self) -> None:
        section = self.name.split(".")[0]
        if section not in ("optimizer", "multifidelity", "mpc", "costs") or self.name.count(".") != (
            2 if section == "costs" else 1
        ):
            raise ValueError(f"name: expected optimizer.<field>, multifidelity.<field>, mpc.<field> or "
                             f"costs.<term>.<parameter>, got {self.name!r}")
        if not isinstance(self.default, (bool, int, float)):
            raise ValueError(f"{self.name}: expected a bool, int or float default, got {self.default!r}")

    @property
    def applies(self) -> str:
        """From when a change applies (:data:`FROM_NEXT_REPLAN` or :data:`FROM_NEXT_GOAL`)."""
        return FROM_NEXT_REPLAN if self.live else FROM_NEXT_GOAL


def _lowest_accepted(accepts: Callable[[Any], object], default: Any) -> float | None:
    """The smallest of -1, 0 (and 1 for integers) that ``accepts`` does not refuse: the
    range a cost term's check enforces, read off the check itself (None: -1 passes)."""
    if isinstance(default, bool):
        return None
    candidates = (-1, 0, 1) if isinstance(default, int) else (-1.0, 0.0)
    for candidate in candidates:
        try:
            accepts(candidate)
        except (ValueError, TypeError):
            continue
        return None if candidate < 0 else candidate
    return 0 if isinstance(default, int) else 0.0  # strictly positive: the check refuses 0 itself


def _description(text: str, live: bool) -> str:
    return f"{text} ({FROM_NEXT_REPLAN if live else FROM_NEXT_GOAL})"


def _declared(base: Any) -> dict[str, SettingInfo]:
    """The :func:`~parapush.settings.setting` declarations of a settings dataclass, by field."""
    return {item.name: item.metadata["setting"] for item in dataclasses.fields(base) if "setting" in item.metadata}


def _dataclass_settings(section: str, base: Any, names: tuple[str, ...], live: bool) -> list[TunableSetting]:
    """The fields ``names`` of the settings ``base`` as tunable settings: their declared
    description, unit and lower bound (an exclusive one too: the setting's own check refuses it),
    a None value written as its declared ROS stand-in (``optimizer.time_budget``: 0.0)."""
    declared = _declared(base)
    settings = []
    for name in names:
        info = declared[name]
        value = getattr(base, name)
        minimum = info.minimum if info.minimum is not None else info.above
        if info.none is not None and isinstance(info.ros_none, (int, float)) and minimum is not None:
            minimum = min(minimum, info.ros_none)
        settings.append(TunableSetting(f"{section}.{name}", info.ros_none if value is None else value,
                                       _description(info.text(), live), minimum, live))
    return settings


def probe_scene(scene: Scene) -> Scene:
    """``scene`` with a goal region (its table's centre, 5 cm) if it has none: the goal-dependent
    cost terms are built (validated) for it."""
    if scene.goal is not None:
        return scene
    return dataclasses.replace(scene, goal=GoalRegion(center=scene.table.center, radius=0.05))


def _cost_settings(costs: Mapping[str, Mapping[str, Any]], scene: Scene) -> list[TunableSetting]:
    settings = []
    for term, parameters in costs.items():
        kind = TERM_TYPES[term]
        defaults = {item.name: item.default for item in dataclasses.fields(kind)}
        for parameter in kind.PARAMETERS:
            value = parameters.get(parameter, defaults.get(parameter))
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue  # None (a stand-in would change its meaning) or no default

            def accepts(candidate, kind=kind, parameters=parameters, parameter=parameter):
                return kind.from_scene(scene, **{**parameters, parameter: candidate})

            text = _description(f"cost term {term}'s {parameter} (parapush.planning.costs)", True)
            settings.append(TunableSetting(f"costs.{term}.{parameter}", float(value), text,
                                           _lowest_accepted(accepts, float(value)), True))
    return settings


def tunable_settings(sources: PlannerSources, scene: Scene) -> tuple[TunableSetting, ...]:
    """The tunable settings of ``sources`` (the node's planner file and preset) with their
    values and ranges (module docstring); cost terms are checked against ``scene``."""
    preset = sources.preset
    optimizer = preset.optimizer_settings(sources.planner.optimizer)
    found = [*_dataclass_settings("optimizer", optimizer, OPTIMIZER_LIVE, True),
             *_dataclass_settings("optimizer", optimizer, OPTIMIZER_NEXT_GOAL, False)]
    if preset.multifidelity is not None:
        found += _dataclass_settings("multifidelity", preset.multifidelity, MULTIFIDELITY_LIVE, True)
    found += _dataclass_settings("mpc", sources.planner.mpc, MPC_NEXT_GOAL, False)
    found += _cost_settings(preset.costs(sources.planner.costs), probe_scene(scene))
    return tuple(found)


def _overrides(sources: PlannerSources, changed: Mapping[str, Any]) -> dict[str, Any]:
    """``changed`` (values by parameter name) as :meth:`PlannerSources.with_overrides` sections,
    a setting's declared ROS stand-in as None; a parameter's error names it (TuningError)."""
    preset_multifidelity = sources.preset.multifidelity
    declared = {"optimizer": _declared(OptimizerSettings), "mpc": _declared(MpcSettings),
                "multifidelity": _declared(MultiFidelitySettings)}
    overrides: dict[str, Any] = {}
    multifidelity = {}
    for name, value in changed.items():
        section, *rest = name.split(".")
        if section == "costs":
            term, parameter = rest
            overrides.setdefault("costs", {}).setdefault(term, {})[parameter] = value
            continue
        info = declared[section][rest[0]]
        if info.none is not None and not isinstance(value, bool) and value == info.ros_none:
            value = None
        if section == "multifidelity":
            multifidelity[rest[0]] = value
        else:
            overrides.setdefault(section, {})[rest[0]] = value
    if multifidelity and preset_multifidelity is not None:
        try:
            dataclasses.replace(preset_multifidelity, **multifidelity)
        except (ValueError, TypeError) as error:
            raise TuningError(f"multifidelity.{error}") from None
        overrides["multifidelity"] = multifidelity
    return overrides


def sources_with(sources: PlannerSources, changed: Mapping[str, Any], scene: Scene) -> PlannerSources:
    """``sources`` with the ``changed`` values (by parameter name), validated by the settings'
    dataclasses and the cost terms built for ``scene``.

    Raises:
        TuningError: naming the parameter a setting refuses.
    """
    overrides = _overrides(sources, changed)
    if "mpc" in overrides:
        try:
            dataclasses.replace(sources.planner.mpc, **overrides["mpc"])
        except (ValueError, TypeError) as error:
            raise TuningError(f"mpc.{error}") from None
    try:
        tuned = sources.with_overrides(overrides)
        planner_settings(tuned)
    except (ValueError, TypeError) as error:
        raise TuningError(f"optimizer.{error}") from None
    try:
        CostFunction.from_config(probe_scene(scene), tuned.preset.costs(tuned.planner.costs))
    except CostConfigError as error:
        raise TuningError(str(error)) from None
    return tuned


@dataclass(frozen=True)
class Change:
    """One accepted change: ``name`` went from ``old`` to ``new`` (version ``version`` of the tuning)."""

    version: int
    name: str
    old: Any
    new: Any
    live: bool

    def text(self) -> str:
        return f"{self.name} {self.old!r} -> {self.new!r}"


class LiveTuning:
    """The node's current tunable values, thread-safe: the parameter callback proposes changes
    (:meth:`propose`), goals read the sources they build from (:meth:`sources`) and a running
    goal's :class:`PlanRetuner` the changes since it last looked.

    Args:
        sources: the node's planner file, model and preset (the values' origin).
        scene: the node's scene (cost terms are validated for it).
    """

    def __init__(self, sources: PlannerSources, scene: Scene) -> None:
        self.base = sources
        self.scene = scene
        self.settings = {item.name: item for item in tunable_settings(sources, scene)}
        self._values = {name: item.default for name, item in self.settings.items()}
        self._changed: dict[str, Any] = {}
        self._log: list[Change] = []
        self._lock = threading.Lock()

    def propose(self, values: Mapping[str, Any]) -> list[Change]:
        """Validate and keep ``values`` (by parameter name; names not tunable are ignored) all
        together or none; returns the changes (a value equal to the current one is none: a goal
        naming another preset keeps that preset's value of a setting never changed).

        Raises:
            TuningError: naming the refused parameter (nothing changed).
        """
        with self._lock:
            values = {name: value for name, value in values.items()
                      if name in self.settings and value != self._values[name]}
            for name, value in values.items():
                if isinstance(value, float) and not math.isfinite(value):
                    raise TuningError(f"{name}: must be finite, got {value!r}")
            changed = {**self._changed, **values}  # only what differs from the node's values
            sources_with(self.base, changed, self.scene)
            version = len(self._log) + 1
            changes = [Change(version, name, self._values[name], value, self.settings[name].live)
                       for name, value in values.items()]
            self._changed = changed
            self._values.update(values)
            self._log.extend(changes)
            return changes

    def value(self, name: str) -> Any:
        with self._lock:
            return self._values[name]

    def version(self) -> int:
        """Increases with every accepted change."""
        with self._lock:
            return len(self._log)

    def changes_since(self, version: int) -> tuple[int, list[Change]]:
        """(the current version, the changes after ``version``)."""
        with self._lock:
            return len(self._log), [change for change in self._log if change.version > version]

    def sources(self, preset: str | None = None) -> PlannerSources:
        """What a goal builds its planner from: the node's sources (``preset``: another preset's
        name) with every changed value."""
        with self._lock:
            changed = dict(self._changed)
        base = self.base.with_overrides({"preset": preset}) if preset else self.base
        if base.preset.multifidelity is None:
            changed = {name: value for name, value in changed.items() if not name.startswith("multifidelity.")}
        return sources_with(base, changed, self.scene)


class PlanRetuner:
    """A running goal's hook (the loops' ``before_plan``): before each plan, applies the
    settings changed since the goal's planner was built (the live ones; the structural ones
    wait for the next goal) and reports them through ``on_event``.

    Args:
        tuning: the node's :class:`LiveTuning`.
        built: the goal's :class:`~parapush.planning.presets.BuiltPlanner`.
        version: ``tuning``'s version the planner was built at.
        on_event: receives "parameters changed: ..." sentences (the action feedback's event).
    """

    def __init__(self, tuning: LiveTuning, built: Any, version: int, on_event: Callable[[str], None]) -> None:
        self.tuning = tuning
        self.built = built
        self.version = version
        self.on_event = on_event

    def __call__(self, loop: Any) -> None:
        version, changes = self.tuning.changes_since(self.version)
        if version == self.version:
            return
        self.version = version
        live = [change for change in changes if change.live]
        if not live:
            return
        sources = self.tuning.sources(self.built.preset.name)
        self.retune(loop, sources)
        self.on_event("parameters changed: " + ", ".join(change.text() for change in live) + " (from this re-plan)")

    def retune(self, loop: Any, sources: PlannerSources) -> None:
        """Give the goal's loop the live settings of ``sources``: its cost, and its planner's
        optimizer and multi-fidelity settings (the running goal's structural fields kept)."""
        built = self.built
        costs = sources.preset.costs(sources.planner.costs)
        loop.cost = CostFunction.from_config(loop.scene, costs)
        built.costs = costs
        planner = built.planner
        fresh = planner_settings(sources)
        settings = dataclasses.replace(planner.settings, **{name: getattr(fresh, name) for name in OPTIMIZER_LIVE})
        if isinstance(planner, MultiFidelityPlanner):
            planner.retune(settings, sources.preset.multifidelity or planner.multifidelity)
        else:
            planner.settings = settings

