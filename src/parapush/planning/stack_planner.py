"""The one construction path of a planner and its predictor (issue 28).

The MPC node, the demo (through the node) and every benchmark build their planner with
:func:`build_planner` from :class:`PlannerSources`: the content of the three configuration
files,

- ``config/planner.yaml``: optimizer, MPC loop and cost weights (:class:`PlannerConfig`);
- ``config/model.yaml``'s ``model:`` section: the predictive model (:class:`ModelConfig`:
  schedule, backend, fidelity, the coarse model's choice, learned weights and fine settings);
- ``config/mpc.yaml``'s ``planner``: the preset (:mod:`parapush.planning.presets`).

What a benchmark changes is an explicit ``overrides`` mapping (:meth:`PlannerSources.with_overrides`),
which the built planner keeps (``BuiltPlanner.overrides``) so the benchmark can print and store
it; with no overrides a benchmark's planner equals the node's for the same files
(``BuiltPlanner.settings``).

Sections of ``overrides`` (applied in this order):

- ``preset``: another preset's name (e.g. ``"isrr2019"``);
- ``preset_fields``: :class:`~parapush.planning.presets.PlannerPreset` fields replaced (e.g.
  ``{"model": "fine"}``);
- ``multifidelity``: :class:`~parapush.planning.multifidelity.MultiFidelitySettings` fields of the
  preset (e.g. ``{"full_horizon_workers": None}``: never correct the whole horizon);
- ``optimizer``: :class:`~parapush.planning.optimizer.OptimizerSettings` fields, on top of the
  file's and the preset's;
- ``costs``: ``{term: {parameter: value}}`` merged into the file's and the preset's;
- ``mpc``: :class:`~parapush.planning.mpc.MpcSettings` fields, on top of the file's and the preset's;
- ``model``: :class:`~parapush.prediction.ModelConfig` fields (e.g. ``{"schedule": "parareal"}``);
- ``robust``: :class:`~parapush.planning.robust_scoring.RobustSettings` fields, nested sections as
  mappings (e.g. ``{"samples": 4, "risk": {"kind": "cvar"}}``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from parapush.planning.costs import CostFunction
from parapush.planning.mpc import MpcLoop
from parapush.planning.multifidelity import MultiFidelityPlanner
from parapush.planning.optimizer import OptimizerSettings, StochasticTrajectoryOptimizer
from parapush.planning.pipelined_mpc import PipelinedMpcLoop
from parapush.planning.planner_config import PlannerConfig, load_planner_config
from parapush.planning.predictive_model import PropagatorRollout
from parapush.planning.presets import DEFAULT_PRESET, BuiltPlanner, PlannerPreset, planner_preset
from parapush.planning.robust_scoring import RobustSettings
from parapush.prediction.coarse_models import CoarseModelChoice, build_coarse_model
from parapush.scene import Scene
from parapush.settings import SettingsError, settings_from_mapping, settings_to_mapping
from parapush.validation import check_instance

__all__ = ["OVERRIDE_SECTIONS", "PlannerSources", "build_planner", "coarse_model_for", "load_mpc_preset",
           "planner_settings"]

OVERRIDE_SECTIONS = ("preset", "preset_fields", "multifidelity", "optimizer", "costs", "mpc", "model", "robust")
"""The sections of :meth:`PlannerSources.with_overrides`, in the order they are applied."""


def _config_dir() -> Path:
    from parapush.graph import config_dir

    return config_dir()


def load_mpc_preset(path: str | Path) -> str:
    """The ``planner`` parameter (a preset name) of a ROS parameter file such as ``config/mpc.yaml``
    (its ``mpc`` or ``/**`` section); the default preset when it sets none.

    Raises:
        ValueError naming the file when it is not a parameter file or names an unknown preset.
    """
    path = Path(path)
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, Mapping):
        raise ValueError(f"path: {path} is not a ROS parameter file (a mapping of node sections)")
    for section in ("mpc", "/mpc", "/**"):
        body = data.get(section)
        parameters = body.get("ros__parameters") if isinstance(body, Mapping) else None
        if isinstance(parameters, Mapping) and "planner" in parameters:
            return planner_preset(parameters["planner"]).name
    return DEFAULT_PRESET


@dataclass(frozen=True, kw_only=True)
class PlannerSources:
    """What a planner is built from (module docstring).

    Attributes:
        planner: ``config/planner.yaml`` (optimizer, MPC settings, costs).
        model: ``config/model.yaml``'s ``model:`` section (a :class:`~parapush.prediction.ModelConfig`).
        preset: the preset (``config/mpc.yaml``'s ``planner``).
        overrides: what :meth:`with_overrides` changed, by section (empty: the files as they are).
    """

    planner: PlannerConfig
    model: Any
    preset: PlannerPreset
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from parapush.prediction import ModelConfig

        check_instance("planner", self.planner, PlannerConfig, "a PlannerConfig")
        check_instance("model", self.model, ModelConfig, "a ModelConfig")
        check_instance("preset", self.preset, PlannerPreset, "a PlannerPreset")
        object.__setattr__(self, "overrides", MappingProxyType(dict(self.overrides)))

    @classmethod
    def load(
        cls,
        folder: str | Path | None = None,
        *,
        planner_file: str | Path = "planner.yaml",
        model_file: str | Path = "model.yaml",
        mpc_file: str | Path = "mpc.yaml",
    ) -> PlannerSources:
        """The three files of ``folder`` (default: the package's ``config/``); a file may be
        given as a path instead of a name in ``folder``."""
        from parapush.prediction import load_model_config

        folder = _config_dir() if folder is None else Path(folder)
        return cls(planner=load_planner_config(folder / planner_file), model=load_model_config(folder / model_file),
                   preset=planner_preset(load_mpc_preset(folder / mpc_file)))

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> PlannerSources:
        """These sources with ``overrides`` applied (module docstring); ``overrides`` is kept,
        merged with earlier ones, in ``self.overrides``.

        Raises:
            ValueError naming an unknown section or field.
        """
        overrides = dict(overrides or {})
        unknown = sorted(set(overrides) - set(OVERRIDE_SECTIONS))
        if unknown:
            raise ValueError(f"overrides: unknown section(s) {unknown}; known: {list(OVERRIDE_SECTIONS)}")
        preset, planner, model = self.preset, self.planner, self.model
        if "preset" in overrides:
            preset = planner_preset(overrides["preset"])
        try:
            preset = dataclasses.replace(preset, **overrides.get("preset_fields", {}))
            if overrides.get("multifidelity"):
                if preset.multifidelity is None:
                    raise ValueError(f"overrides: multifidelity: the preset {preset.name!r} has no multi-fidelity "
                                     "split")
                preset = dataclasses.replace(preset, multifidelity=dataclasses.replace(
                    preset.multifidelity, **overrides["multifidelity"]))
            if overrides.get("optimizer") or overrides.get("costs"):
                costs = {term: {**preset.cost_overrides.get(term, {}), **values}
                         for term, values in overrides.get("costs", {}).items()}
                preset = dataclasses.replace(
                    preset, optimizer_overrides={**preset.optimizer_overrides, **overrides.get("optimizer", {})},
                    cost_overrides={**preset.cost_overrides, **costs})
            if overrides.get("mpc"):
                # on top of the preset's own MPC fields too (a preset's value would replace the file's)
                planner = dataclasses.replace(planner, mpc=dataclasses.replace(planner.mpc, **overrides["mpc"]))
                preset = dataclasses.replace(preset, mpc_overrides={**preset.mpc_overrides, **overrides["mpc"]})
            model = dataclasses.replace(model, **overrides.get("model", {}))
            if overrides.get("robust"):
                planner = dataclasses.replace(planner, robust=_robust_with(planner.robust, overrides["robust"]))
        except TypeError as error:  # an unknown field
            raise ValueError(f"overrides: {error}") from None
        merged = {**self.overrides}
        for section, values in overrides.items():
            merged[section] = values if not isinstance(values, Mapping) else {**merged.get(section, {}), **values}
        return PlannerSources(planner=planner, model=model, preset=preset, overrides=merged)


def _robust_with(settings: RobustSettings, changes: Mapping[str, Any]) -> RobustSettings:
    """``settings`` with ``changes`` (fields; nested sections as mappings of their fields).

    Raises:
        ValueError naming the field (``robust.<path>``).
    """
    merged = settings_to_mapping(settings)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    try:
        return settings_from_mapping(RobustSettings, merged, "robust")
    except SettingsError as error:
        raise ValueError(f"overrides: {error}") from None


def coarse_model_for(scene: Scene, preset: PlannerPreset, model: Any) -> CoarseModelChoice | None:
    """The multi-fidelity planner's coarse propagator for ``scene`` (None for a single-fidelity
    preset), from the one factory (:func:`parapush.prediction.coarse_models.build_coarse_model`):
    ``model.coarse_model`` of the model config (``auto``: the first of the cylinder network, the
    general learned model and the analytical model that serves the scene, the cylinder network
    ignoring obstacles for prediction; the choice says why a preferred one refused), with the
    config's weights, fine settings and analytical rotation, projecting overlaps as the preset says.

    Raises:
        CoarseModelUnavailableError (a ValueError naming ``coarse_model``) when the config names
        a learned model (``learned`` or ``general``) that cannot serve the scene.
    """
    if preset.coarse is None:
        return None
    return build_coarse_model(scene, model, resolve_overlaps=preset.coarse_resolves_overlaps)


def corrector_workers(model: Any, config: Any) -> int:
    """The fine workers behind the loop's predictive ``model``: its engine's backend's (a local
    :class:`~parapush.planning.engine_prediction.EnginePrediction`), else ``config.workers`` of its
    model config (a prediction service built from the same file), one per CPU core when None."""
    backend = getattr(getattr(model, "engine", None), "backend", None)
    workers = getattr(backend, "workers", None)
    if isinstance(workers, int) and workers >= 1:
        return workers
    return config.workers if config.workers is not None else (os.cpu_count() or 1)


class EngineTargetParameters:
    """A local engine's parameters of one object (robust planning's
    :class:`~parapush.planning.robust_planning.CorrectorParameters`)."""

    def __init__(self, engine: Any, name: str) -> None:
        self.engine = engine
        self.name = name

    def current(self) -> Any:
        return self.engine.object_parameters(self.name)

    def apply(self, parameters: Any) -> Any:
        return self.engine.apply_object_parameters(self.name, parameters)


def corrector_parameters(model: Any, scene: Scene) -> EngineTargetParameters | None:
    """The target's parameters in the corrector ``model``: a local engine's (thread or serial
    backend); None for a prediction service's predictor or a process/Ray engine, whose fine
    models live elsewhere (the MPC node gives the service its own, :mod:`parapush.nodes.mpc`)."""
    engine = getattr(model, "engine", None)
    if not callable(getattr(engine, "apply_object_parameters", None)) or not scene.target \
            or getattr(engine.config, "backend", None) not in ("threads", "serial"):
        return None
    return EngineTargetParameters(engine, scene.target)


def planner_settings(sources: PlannerSources, seed: int | None = None) -> OptimizerSettings:
    """The optimizer settings :func:`build_planner` gives the planner of ``sources`` (before a
    coarse model's speed cap): the planner file's, the preset's overrides, then ``seed`` (None:
    the file's); a pipelined preset's re-plans get at most ``PipelineSettings.replan_budget`` s
    of the control duration. Also what a running goal's live tuning recomputes
    (:mod:`parapush.planning.live_settings`).

    Raises:
        ValueError naming the field the settings refuse.
    """
    preset = sources.preset
    settings = preset.optimizer_settings(sources.planner.optimizer)
    if seed is not None:
        settings = dataclasses.replace(settings, seed=seed)
    if preset.pipeline is not None and preset.pipeline.replan_margin is not None:
        budget = preset.pipeline.replan_budget(settings.control_duration)
        if settings.time_budget is None or budget < settings.time_budget:
            settings = dataclasses.replace(settings, time_budget=budget)
    return settings


def build_planner(
    scene: Scene,
    sources: PlannerSources,
    *,
    seed: int | None = None,
    model: Any = None,
    coarse: Any = None,
    target_parameters: Any = None,
) -> BuiltPlanner:
    """The loop of ``sources.preset`` for ``scene``, built from ``sources``.

    Optimizer settings: the planner file's, the preset's overrides, then ``seed``; a pipelined
    preset's re-plans get at most ``PipelineSettings.replan_budget`` of the control duration
    (anytime planning); a coarse model's ``max_speed`` (the learned model's trained range) caps
    the speed.

    Args:
        scene: the task.
        sources: the files' content (and a benchmark's overrides).
        seed: the optimizer's seed (None: the planner file's).
        model: the loop's predictive model (the corrector), e.g. the MPC node's predictor built
            from the same model config; None: an :class:`~parapush.planning.engine_prediction.EnginePrediction`
            of ``preset.corrector_config(sources.model)``, owned (closed) by the returned planner.
        coarse: the coarse model (e.g. the node's, cached): a
            :class:`~parapush.prediction.coarse_models.CoarseModelChoice`, or a propagator of the
            caller's own (:meth:`CoarseModelChoice.given`); None: :func:`coarse_model_for`.
        target_parameters: with robust planning (``robust.samples`` > 1), the target's parameters
            in the corrector (:class:`~parapush.planning.robust_planning.CorrectorParameters`: the
            belief's centre, given its estimate after each narrowing with ``robust.adapt``; e.g.
            the MPC node's, through a prediction service); None: :func:`corrector_parameters` of
            ``model`` (a local engine's, else none).
    Returns:
        a :class:`~parapush.planning.presets.BuiltPlanner`; close it (or use ``with``) to release
        what it owns.
    """
    preset = sources.preset
    settings = planner_settings(sources, seed)
    model_config = preset.corrector_config(sources.model)
    owned = model is None
    if model is None:
        from parapush.planning.engine_prediction import EnginePrediction

        model = EnginePrediction.build(scene, model_config)
    planner: Any = StochasticTrajectoryOptimizer(settings)
    choice: CoarseModelChoice | None = None
    if preset.coarse is not None:
        choice = (coarse_model_for(scene, preset, sources.model) if coarse is None
                  else coarse if isinstance(coarse, CoarseModelChoice) else CoarseModelChoice.given(coarse))
        speed_limit = getattr(choice.model, "max_speed", None)
        if speed_limit is not None and speed_limit < settings.max_speed:
            planner = StochasticTrajectoryOptimizer(dataclasses.replace(settings, max_speed=speed_limit))
        multifidelity = preset.multifidelity.for_workers(corrector_workers(model, model_config))
        planner = MultiFidelityPlanner(planner, PropagatorRollout(choice.model), multifidelity)
    robust = None
    if sources.planner.robust.samples > 1:
        if not isinstance(planner, MultiFidelityPlanner):
            raise ValueError(f"robust.samples: robust scoring ranks a multi-fidelity planner's elites; preset "
                             f"{preset.name!r} plans with one model (use samples 1, or the realtime preset)")
        from parapush.planning.robust_planning import RobustPlanning

        robust = RobustPlanning(scene, sources.planner.robust, model_config.fine,
                                corrector=target_parameters or corrector_parameters(model, scene))
        planner.robust = robust.scoring
    costs = preset.costs(sources.planner.costs)
    cost = CostFunction.from_config(scene, costs)
    if preset.loop == "pipelined":
        loop: Any = PipelinedMpcLoop(scene, planner, model, cost, preset.mpc_settings(sources.planner.mpc),
                                     preset.pipeline)
    else:
        loop = MpcLoop(scene, planner, model, cost, preset.mpc_settings(sources.planner.mpc))
    return BuiltPlanner(preset=preset, loop=loop, planner=planner, model=model, owns_model=owned,
                        model_config=model_config, coarse_choice=choice, costs=costs, overrides=dict(sources.overrides),
                        robust=robust)
