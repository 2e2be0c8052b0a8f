"""A push goal (the ``push_object`` action's goal) as typed values checked against the scene.

The action's goal message cannot send None: its ``target_object``, ``model``, ``planner`` and
``risk`` write "unset" as ``""``, ``max_controls`` and ``risk_samples`` as ``0``, ``iterations`` as ``-1``
and ``uncertainty`` as an empty array
(:func:`parapush.prediction.request.iterations_from_interface`). :meth:`PushGoal.from_interface`
turns those fields into a :class:`PushGoal` (None for unset) and checks them against the node's
scene; the MPC node (:mod:`parapush.nodes.mpc`) only copies the message's fields into it, and
aborts a goal it refuses with the ValueError's message, which names the field.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from parapush.parareal.solver import MODELS
from parapush.planning.presets import planner_preset
from parapush.planning.risk import RISK_KINDS
from parapush.prediction.request import iterations_from_interface
from parapush.scene import GoalRegion, Scene, SceneError
from parapush.scene.uncertainty import ParameterSpread
from parapush.settings import SettingsError, settings_from_mapping
from parapush.validation import check_choice, check_instance, check_integer

__all__ = ["PushGoal"]


@dataclass(frozen=True, kw_only=True)
class PushGoal:
    """One push goal: the task, and what it asks of the planner (None: the node's default).

    Attributes:
        scene: the scene to push in, with this goal's target (``scene.target``) and goal region
            (``scene.goal``, m).
        planner: the planner preset's name (:data:`parapush.planning.presets.PRESETS`).
        model: the corrector's predictive model, one of :data:`parapush.parareal.MODELS`.
        iterations: Parareal K of the corrector, >= 0.
        max_controls: controls to execute before giving up, >= 1.
        risk_samples: M, models each elite is scored under (robust planning,
            :class:`~parapush.planning.robust_scoring.RobustSettings`), 1..64.
        risk: how the M costs are combined (:data:`~parapush.planning.risk.RISK_KINDS`).
    Raises:
        ValueError: naming the field (an unknown preset: as :func:`planner_preset` says it).
    """

    scene: Scene
    planner: str | None = None
    model: str | None = None
    iterations: int | None = None
    max_controls: int | None = None
    risk_samples: int | None = None
    risk: str | None = None

    def __post_init__(self) -> None:
        check_instance("scene", self.scene, Scene)
        if self.model is not None:
            check_choice("model", self.model, MODELS)
        if self.iterations is not None:
            check_integer("iterations", self.iterations, minimum=0)
        if self.max_controls is not None:
            check_integer("max_controls", self.max_controls, minimum=1)
        if self.planner is not None:
            planner_preset(self.planner)
        if self.risk_samples is not None:
            check_integer("risk_samples", self.risk_samples, minimum=1, maximum=64)
        if self.risk is not None:
            check_choice("risk", self.risk, RISK_KINDS)

    def planner_overrides(self) -> dict:
        """The goal's changes to the planner file's sections
        (:meth:`parapush.planning.stack_planner.PlannerSources.with_overrides`): its robust
        planning (``risk_samples``, ``risk``), if it asks for any."""
        robust = {} if self.risk_samples is None else {"samples": self.risk_samples}
        if self.risk is not None:
            robust["risk"] = {"kind": self.risk}
        return {"robust": robust} if robust else {}

    @classmethod
    def from_interface(
        cls,
        scene: Scene,
        *,
        target_object: str = "",
        goal_x: float,
        goal_y: float,
        goal_radius: float,
        max_controls: int = 0,
        model: str = "",
        iterations: int = -1,
        planner: str = "",
        risk_samples: int = 0,
        risk: str = "",
        uncertainty: Sequence[float] = (),
    ) -> PushGoal:
        """The goal of the action's fields (module docstring) in ``scene`` (the node's).

        Args:
            scene: the node's scene; the goal replaces its target and goal region.
            target_object: an object of ``scene``; ``""``: the scene's target.
            goal_x, goal_y: m, the goal region's centre, on the table.
            goal_radius: m, > 0, the goal region's radius.
            max_controls: ``0``: the planner's default.
            model: ``""``: the preset's corrector.
            iterations: ``-1``: the preset's (or the model config's) K.
            planner: ``""``: the node's preset.
            risk_samples: ``0``: the planner file's ``robust.samples``.
            risk: ``""``: the planner file's ``robust.risk.kind``.
            uncertainty: robust planning's prior for the target, the fields of
                :class:`~parapush.scene.uncertainty.ParameterSpread` in order (mass, support
                friction, pusher friction, com offset), replacing the target's ``uncertainty`` in
                the scene; ``()``: the scene's (else the planner file's ``robust.spread``).
        Raises:
            ValueError: naming the first field that is not valid.
        """
        target = target_object or scene.target
        if target not in scene.object_names:
            raise ValueError(f"target_object: unknown object {target!r}; the scene has {list(scene.object_names)}")
        for name, value in (("goal_x", goal_x), ("goal_y", goal_y), ("goal_radius", goal_radius)):
            if not math.isfinite(value):
                raise ValueError(f"{name}: must be finite")
        if goal_radius <= 0.0:
            raise ValueError(f"goal_radius: must be > 0, got {goal_radius}")
        if not scene.table.contains(goal_x, goal_y):
            raise ValueError(f"goal_x, goal_y: ({goal_x}, {goal_y}) is not on the table")
        k = iterations_from_interface(iterations)
        spread = spread_from_interface(uncertainty)
        try:
            region = GoalRegion(center=(goal_x, goal_y), radius=goal_radius)
            task_scene = dataclasses.replace(scene, goal=region, target=target)
        except SceneError as error:
            raise ValueError(str(error)) from None
        if spread is not None:  # the target's own prior, replacing the scene file's
            objects = list(task_scene.objects)
            index = task_scene.object_index(target)
            try:
                objects[index] = dataclasses.replace(objects[index], uncertainty=spread)
            except SceneError as error:  # e.g. a centre-of-mass spread for a patched object
                raise ValueError(f"uncertainty: {error}") from None
            task_scene = dataclasses.replace(task_scene, objects=tuple(objects))
        return cls(scene=task_scene, planner=planner or None, model=model or None, iterations=k,
                   max_controls=max_controls or None, risk_samples=risk_samples or None, risk=risk or None)


def spread_from_interface(values: Sequence[float]) -> ParameterSpread | None:
    """The action's ``uncertainty`` array as a :class:`ParameterSpread` (None when empty).

    Raises:
        ValueError: naming ``uncertainty`` (and the field) unless it is empty or the four fields' values.
    """
    values = tuple(values)
    if not values:
        return None
    names = [item.name for item in dataclasses.fields(ParameterSpread)]
    if len(values) != len(names):
        raise ValueError(f"uncertainty: expected {len(names)} values ({', '.join(names)}) or none, got {len(values)}")
    try:
        return settings_from_mapping(ParameterSpread, dict(zip(names, values, strict=True)), "uncertainty")
    except SettingsError as error:
        raise ValueError(str(error)) from None
