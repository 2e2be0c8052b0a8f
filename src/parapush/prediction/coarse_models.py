"""The one factory of coarse models C (Parareal's coarse propagator, the planner's search model).

Every coarse model of the project is built here: the prediction engine's (one per name, a
request may ask for any), the multi-fidelity planner's search model
(:func:`parapush.planning.stack_planner.coarse_model_for`) and every benchmark's. Nowhere
else constructs one (``test/unit/test_coarse_model_factory.py`` checks the source tree).

Names (:data:`~parapush.prediction.config.COARSE_MODELS`, ``model.coarse_model``):

- ``analytical``: the ISRR quasi-static model (:class:`~parapush.physics.coarse_analytical.AnalyticalCoarseModel`),
  any outline, any number of objects;
- ``learned``: the network for the papers' cylinders
  (:class:`~parapush.learning.coarse_learned.LearnedCoarseModel`);
- ``general``: the general learned model
  (:class:`~parapush.learning.coarse_general.GeneralLearnedCoarseModel`: any outline, 1-16
  objects, physical parameters and obstacles within its trained ranges);
- ``auto``: the first of ``learned``, ``general`` and ``analytical`` that serves the scene.

The learned models refuse, with a :class:`~parapush.learning.geometry.ModelMismatchError`
naming the field, every scene outside their trained ranges.

There is no silent fallback: a :class:`CoarseModelChoice` says which model was built, which
was asked for, and, when ``auto`` could not use a model it prefers, why
(:attr:`CoarseModelChoice.note`: each such model's own refusal). The planner logs it, the
``push_object`` action's feedback and result carry it, and the benchmarks record it. An
explicit ``learned`` or ``general`` that cannot serve the scene raises :class:`CoarseModelUnavailableError`
naming ``coarse_model``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.physics.fine_settings import FineSettings
from parapush.physics.propagator import Propagator
from parapush.prediction.config import COARSE_MODELS, ModelConfig
from parapush.scene import Scene
from parapush.validation import check_instance

BUILT_MODELS = tuple(name for name in COARSE_MODELS if name != "auto")
"""The coarse models the factory builds, in the order ``auto`` tries them (the cheapest learned
model first, :data:`~parapush.prediction.config.COARSE_MODELS` says what that costs in accuracy;
the analytical model serves every scene)."""


class CoarseModelUnavailableError(ValueError):
    """The coarse model asked for cannot predict the scene (the message names ``coarse_model``
    and gives the model's own reason)."""


@dataclass(frozen=True)
class CoarseModelChoice:
    """A built coarse model and the reason it is that one.

    Attributes:
        model: the propagator (:class:`~parapush.physics.propagator.Propagator`).
        name: which model it is: ``"analytical"``, ``"learned"``, or ``"given:<type>"`` for a
            propagator a caller passed in (:meth:`given`, tests and studies).
        requested: what was asked for (``"auto"``, ``"analytical"``, ``"learned"``, or ``name``
            for a given one).
        unavailable: why each model that could not be built for the scene was not
            (``{"learned": "<the model's refusal>"}``); empty when all could.
    """

    model: Any
    name: str
    requested: str
    unavailable: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.model, Propagator):
            raise TypeError(f"model: expected a Propagator (layout, propagate), got {type(self.model).__name__}")
        for name in ("name", "requested"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name}: expected a non-empty string, got {value!r}")
        object.__setattr__(self, "unavailable", dict(self.unavailable))

    @classmethod
    def given(cls, model: Any) -> CoarseModelChoice:
        """A caller's own propagator, named after its type."""
        name = f"given:{type(model).__name__}"
        return cls(model=model, name=name, requested=name)

    @property
    def note(self) -> str:
        """Why ``auto`` did not build a model it prefers to the built one (each one's refusal),
        or ``""`` when the model asked for (or ``auto``'s first) was built."""
        if self.requested != "auto" or self.name not in BUILT_MODELS:
            return ""
        skipped = BUILT_MODELS[:BUILT_MODELS.index(self.name)]
        return "; ".join(f"{name} coarse model unavailable: {self.unavailable.get(name, 'unknown')}"
                         for name in skipped)

    def describe(self) -> str:
        """``name`` and, after a fallback, why: what the planner logs."""
        return self.name if not self.note else f"{self.name} ({self.note})"


def build_coarse_model(
    scene: Scene,
    config: ModelConfig,
    *,
    resolve_overlaps: bool,
    choice: str | None = None,
    ignore_obstacles: bool = True,
) -> CoarseModelChoice:
    """The coarse model ``config.coarse_model`` (or ``choice``) names for ``scene``.

    Args:
        scene: the scene it predicts.
        config: the model config: ``coarse_model``, ``learned_weights``, ``fine`` (the fine
            settings the learned model is checked against) and ``analytical_rotation``.
        resolve_overlaps: project the model's own predictions out of overlap (ISRR Eq 9); a
            Parareal solver that projects every corrected state passes False.
        choice: overrides ``config.coarse_model`` (one of :data:`COARSE_MODELS`).
        ignore_obstacles: let the learned model serve a scene with obstacles, predicting as
            if they were absent (the planner's search: its costs keep the pusher and objects
            off obstacles); False: such a scene is refused by the learned model.
    Returns:
        the choice (model, name, and why the learned model was not used after ``auto``).
    Raises:
        ValueError naming ``choice``; :class:`CoarseModelUnavailableError` when the model named
        explicitly cannot serve the scene.
    """
    requested = config.coarse_model if choice is None else choice
    if requested not in COARSE_MODELS:
        raise ValueError(f"choice: expected one of {COARSE_MODELS}, got {requested!r}")
    names = BUILT_MODELS if requested == "auto" else (requested,)
    models, unavailable = _build(scene, config, names, resolve_overlaps=resolve_overlaps,
                                 ignore_obstacles=ignore_obstacles)
    for name in names:
        if name in models:
            return CoarseModelChoice(model=models[name], name=name, requested=requested, unavailable=unavailable)
    raise CoarseModelUnavailableError(unavailable_message(requested, unavailable))


def build_coarse_models(
    scene: Scene, config: ModelConfig, *, resolve_overlaps: bool, ignore_obstacles: bool = False,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Every coarse model that can serve ``scene`` by name (the prediction engine's: a request
    may name any), and why each other one cannot (arguments as :func:`build_coarse_model`)."""
    return _build(scene, config, BUILT_MODELS, resolve_overlaps=resolve_overlaps, ignore_obstacles=ignore_obstacles)


def resolve_coarse_name(name: str, available: Mapping[str, object]) -> str | None:
    """The built model ``name`` stands for among ``available`` (``auto`` resolved), None if unavailable."""
    if name == "auto":
        return next((choice for choice in BUILT_MODELS if choice in available), None)
    return name if name in available else None


def unavailable_message(name: str, unavailable: Mapping[str, str]) -> str:
    """Why coarse model ``name`` cannot be used (the message names ``coarse_model``)."""
    names = BUILT_MODELS if name == "auto" else (name,)
    reasons = "; ".join(f"{choice}: {unavailable.get(choice, 'unknown')}" for choice in names if choice in unavailable)
    return f"coarse_model: {name!r} is unavailable here: {reasons or 'unknown'}"


def _build(
    scene: Scene, config: ModelConfig, names: tuple[str, ...], *, resolve_overlaps: bool, ignore_obstacles: bool,
) -> tuple[dict[str, Any], dict[str, str]]:
    check_instance("scene", scene, Scene, "a parapush.scene.Scene")
    check_instance("config", config, ModelConfig, "a parapush.prediction.ModelConfig")
    models: dict[str, Any] = {}
    unavailable: dict[str, str] = {}
    for name in names:
        if name == "analytical":
            models[name] = AnalyticalCoarseModel(scene, resolve_overlaps=resolve_overlaps,
                                                 rotation=config.analytical_rotation)
            continue
        try:
            if name == "learned":
                models[name] = _learned(scene, config.learned_weights, config.fine, resolve_overlaps=resolve_overlaps,
                                        ignore_obstacles=ignore_obstacles)
            else:
                models[name] = _general(scene, config.general_weights, config.fine, resolve_overlaps=resolve_overlaps)
        except ImportError as error:
            unavailable[name] = f"the {name} model cannot be imported ({error})"
        except (ValueError, OSError) as error:
            unavailable[name] = str(error)
    return models, unavailable


def _learned(scene: Scene, weights: str | None, fine: FineSettings, *, resolve_overlaps: bool,
             ignore_obstacles: bool) -> Any:
    from parapush.learning.coarse_learned import LearnedCoarseModel

    return LearnedCoarseModel(scene, weights, ignore_obstacles=ignore_obstacles, resolve_overlaps=resolve_overlaps,
                              fine_settings=fine)


def _general(scene: Scene, weights: str | None, fine: FineSettings, *, resolve_overlaps: bool) -> Any:
    from parapush.learning.coarse_general import GeneralLearnedCoarseModel

    # obstacles are nodes of its graph: it never needs to ignore them
    return GeneralLearnedCoarseModel(scene, weights, resolve_overlaps=resolve_overlaps, fine_settings=fine)
