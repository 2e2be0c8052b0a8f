"""Named planner presets: the papers' planner for reproduction and the real-time default.

A :class:`PlannerPreset` says which loop runs (sequential plan-then-execute
:class:`~parapush.planning.MpcLoop` or :class:`~parapush.planning.pipelined_mpc.PipelinedMpcLoop`),
which predictive model the loop uses, and, for the multi-fidelity planner, the coarse
model and the split (:class:`~parapush.planning.multifidelity.MultiFidelitySettings`).
Optimizer fields that differ from ``config/planner.yaml`` are listed in
``optimizer_overrides``; everything else (cost weights, MPC settings) comes from the
planner configuration, so a preset never duplicates it.

- ``isrr2019``: the ISRR 2019 planner: S = 20 samples, variance 1e-4, N = 4 x 1 s,
  every sample rolled out with Parareal K = 1 (``model="fine"`` for the fine model),
  planned then executed. Its optimizer settings are ``config/planner.yaml``'s.
- ``realtime`` (the default, :data:`DEFAULT_PRESET`): the multi-fidelity planner (coarse
  search with 30 samples x 10 iterations, 4 elites corrected with the fine model, at most
  2 rounds) in the pipelined loop; measured in ``bench/realtime_mpc.py``.

Select one by name with :func:`planner_preset`; build its loop with :meth:`PlannerPreset.build`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from parapush.planning.mpc import MpcLoop
from parapush.planning.multifidelity import (
    COARSE_CHOICES,
    MultiFidelityPlanner,
    MultiFidelitySettings,
    choose_coarse_model,
)
from parapush.planning.optimizer import OptimizerSettings, StochasticTrajectoryOptimizer
from parapush.planning.pipelined_mpc import PipelinedMpcLoop, PipelineSettings
from parapush.planning.predictive_model import PropagatorRollout
from parapush.scene import Scene

__all__ = ["DEFAULT_PRESET", "PRESETS", "BuiltPlanner", "PlannerPreset", "planner_preset"]

LOOPS = ("sequential", "pipelined")
LOOP_MODELS = ("fine", "parareal")


@dataclass(frozen=True, kw_only=True)
class PlannerPreset:
    """A named planner.

    Attributes:
        name: the preset's name.
        loop: ``"sequential"`` (plan, then execute) or ``"pipelined"``.
        model: the loop's predictive model: ``"fine"`` or ``"parareal"`` (the multi-fidelity
            planner's corrector).
        parareal_iterations: K for ``model="parareal"``.
        coarse: None for the single-fidelity optimizer; else the multi-fidelity planner's
            coarse model, one of :data:`~parapush.planning.multifidelity.COARSE_CHOICES`.
        multifidelity: the multi-fidelity split (with ``coarse``).
        pipeline: the pipelined loop's policies (with ``loop="pipelined"``).
        optimizer_overrides: optimizer fields replacing ``config/planner.yaml``'s.
    """

    name: str
    loop: str
    model: str
    parareal_iterations: int = 1
    coarse: str | None = None
    multifidelity: MultiFidelitySettings | None = None
    pipeline: PipelineSettings | None = None
    optimizer_overrides: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name: expected a non-empty string, got {self.name!r}")
        if self.loop not in LOOPS:
            raise ValueError(f"loop: expected one of {LOOPS}, got {self.loop!r}")
        if self.model not in LOOP_MODELS:
            raise ValueError(f"model: expected one of {LOOP_MODELS}, got {self.model!r}")
        if isinstance(self.parareal_iterations, bool) or not isinstance(self.parareal_iterations, int) or (
            self.parareal_iterations < 1
        ):
            raise ValueError(f"parareal_iterations: expected an integer >= 1, got {self.parareal_iterations!r}")
        if self.coarse is not None and self.coarse not in COARSE_CHOICES:
            raise ValueError(f"coarse: expected None or one of {COARSE_CHOICES}, got {self.coarse!r}")
        if (self.coarse is None) != (self.multifidelity is None):
            raise ValueError("multifidelity: give it exactly when coarse is set (the multi-fidelity planner)")
        if (self.loop == "pipelined") != (self.pipeline is not None):
            raise ValueError("pipeline: give it exactly when loop is 'pipelined'")
        known = {item.name for item in dataclasses.fields(OptimizerSettings)}
        unknown = sorted(set(self.optimizer_overrides) - known)
        if unknown:
            raise ValueError(f"optimizer_overrides: unknown field(s) {unknown}; known: {sorted(known)}")
        object.__setattr__(self, "optimizer_overrides", MappingProxyType(dict(self.optimizer_overrides)))

    def optimizer_settings(self, base: OptimizerSettings) -> OptimizerSettings:
        """``base`` (``config/planner.yaml``'s) with this preset's overrides."""
        return dataclasses.replace(base, **self.optimizer_overrides)

    def build(
        self,
        scene: Scene,
        config: Any,
        *,
        seed: int | None = None,
        backend: str = "threads",
        workers: int | None = None,
        model: Any = None,
        coarse: Any = None,
        coarse_max_speed: float | None = None,
    ) -> BuiltPlanner:
        """The loop of this preset for ``scene``.

        Args:
            scene: the task.
            config: a :class:`~parapush.planning.PlannerConfig` (optimizer base, MPC settings, costs).
            seed: optimizer seed (default: the configuration's).
            backend, workers: the fine backend of the predictive model built here (without ``model``).
            model: the loop's predictive model (the corrector), e.g. the MPC node's predictor;
                None: a :class:`~parapush.prediction.EnginePrediction` of this preset's ``model``
                and K, owned (closed) by the returned planner.
            coarse: the multi-fidelity planner's coarse predictive model (with ``coarse`` set in
                the preset); None: the rollout of :func:`choose_coarse_model` (``self.coarse``).
            coarse_max_speed: m/s, the given ``coarse`` model's speed limit (the learned model's
                trained range), or None.
        Returns:
            a :class:`BuiltPlanner`; close it (or use ``with``) to release what it owns.
        """
        overrides = {} if seed is None else {"seed": seed}
        settings = dataclasses.replace(self.optimizer_settings(config.optimizer), **overrides)
        owned = model is None
        if model is None:
            from parapush.prediction import EnginePrediction, ModelConfig

            # forced "parareal": "auto" would pick sample-parallel fine on 2 cores (mpc_benchmark)
            model_config = ModelConfig(name=self.model, iterations=self.parareal_iterations,
                                       schedule="parareal" if self.model == "parareal" else "auto",
                                       backend=backend, workers=workers)
            model = EnginePrediction.build(scene, model_config)
        optimizer = StochasticTrajectoryOptimizer(settings)
        planner: Any = optimizer
        if self.coarse is not None:
            if coarse is None:
                coarse_propagator = choose_coarse_model(scene, self.coarse)
                coarse = PropagatorRollout(coarse_propagator)
                coarse_max_speed = getattr(coarse_propagator, "max_speed", None)
            if coarse_max_speed is not None and coarse_max_speed < settings.max_speed:
                optimizer = StochasticTrajectoryOptimizer(dataclasses.replace(settings, max_speed=coarse_max_speed))
            planner = MultiFidelityPlanner(optimizer, coarse, self.multifidelity)
        cost = config.cost_function(scene)
        if self.loop == "pipelined":
            loop: Any = PipelinedMpcLoop(scene, planner, model, cost, config.mpc, self.pipeline)
        else:
            loop = MpcLoop(scene, planner, model, cost, config.mpc)
        return BuiltPlanner(preset=self, loop=loop, planner=planner, model=model, owns_model=owned)


@dataclass
class BuiltPlanner:
    """A preset's loop and the objects behind it.

    Attributes:
        preset: the preset.
        loop: an :class:`MpcLoop` (runs on a ``World``) or a :class:`PipelinedMpcLoop`
            (runs on an ``AsyncWorld``).
        planner: the optimizer or :class:`MultiFidelityPlanner`.
        model: the loop's predictive model.
        owns_model: whether :meth:`close` closes ``model`` (it was built here).
    """

    preset: PlannerPreset
    loop: Any
    planner: Any
    model: Any
    owns_model: bool = True

    @property
    def pipelined(self) -> bool:
        return isinstance(self.loop, PipelinedMpcLoop)

    def close(self) -> None:
        close = getattr(self.model, "close", None)
        if self.owns_model and callable(close):
            close()

    def __enter__(self) -> BuiltPlanner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


ISRR2019 = PlannerPreset(name="isrr2019", loop="sequential", model="parareal", parareal_iterations=1)
REALTIME = PlannerPreset(
    name="realtime",
    loop="pipelined",
    model="fine",
    coarse="auto",
    multifidelity=MultiFidelitySettings(elites=4, rounds=2, refine_iterations=4, mismatch_tolerance=0.2),
    pipeline=PipelineSettings(replan_distance=0.01, fallback_clearance=0.005),
    optimizer_overrides={"samples": 30, "max_iterations": 10, "time_budget": None},
)
PRESETS: Mapping[str, PlannerPreset] = MappingProxyType({ISRR2019.name: ISRR2019, REALTIME.name: REALTIME})
"""The presets by name."""
DEFAULT_PRESET = REALTIME.name


def planner_preset(name: str = DEFAULT_PRESET) -> PlannerPreset:
    """The preset called ``name``; ValueError naming the known ones otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"name: unknown planner preset {name!r}; known: {sorted(PRESETS)}") from None
