"""The prediction stack's one settings tree (the ``model:`` section of ``config/model.yaml``).

Every predictor of the project (the prediction service, the MPC's local predictor, the
identification node's fine model, the benchmarks) is built from a :class:`ModelConfig` by
:class:`parapush.prediction.PredictionEngine`, so the same file gives the same physics
everywhere. ``config/model.yaml`` is a ROS 2 parameter file with a wildcard node section::

    /**:
      ros__parameters:
        model:
          name: parareal
          iterations: 1
          fine: {timestep: 0.001}

Nodes declare ``model.*`` parameters generated from :class:`ModelConfig`
(``parameter_specs(ModelConfig, "model.")``); programs without ROS read the same file with
:func:`load_model_config`. In the file (as in any ROS parameter), a value that means None is
written as the field's stand-in: ``iterations: -1``, ``workers: 0``, ``0.0`` for the
tolerances and the deadline, ``""`` for ``learned_weights`` and ``general_weights``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from parapush.parareal.schedule import SCHEDULES
from parapush.parareal.solver import MODELS
from parapush.physics.backends import BACKEND_NAMES
from parapush.physics.coarse_analytical import ROTATIONS
from parapush.physics.fidelity import FIDELITIES
from parapush.physics.fine_settings import FineSettings
from parapush.settings import SettingsError, check_settings, setting, settings_from_ros_mapping
from parapush.yaml_file import read_yaml

COARSE_MODELS = ("auto", "learned", "general", "analytical")
"""``learned``: the network for the papers' cylinders (1-4 of 51.2 mm, 0.5 kg); ``general``: the
general learned model (any outline, 1-16 objects, physical parameters and obstacles within its
trained ranges); ``auto``: the first of learned, general and analytical (this order, the cheapest
learned model first) that serves the scene (:mod:`parapush.prediction.coarse_models`). On the papers'
cylinders the general model is the more accurate (held-out one-step median 0.76 against 2.22 mm,
its card) but costs 2-4x more per prediction (a 30 x 4 rollout on a papers' scene, 2-core AMD EPYC:
7.8-17 against 3.2-6.3 ms), paid at every coarse iteration of a real-time re-plan; ask for
``general`` where accuracy matters more than time."""

MAX_ITERATIONS = 64
"""Largest configurable Parareal K (a request's K is bounded by its number of controls N)."""

ITERATIONS_UNSET = -1
"""``iterations`` written where None cannot be: a ROS parameter (``model.iterations: -1``:
stop by a tolerance or the deadline) and the ROS interfaces' request fields (``-1``: the
configured ``model.iterations``, converted by
:func:`parapush.prediction.request.iterations_from_interface`)."""


@dataclass(frozen=True)
class ModelConfig:
    """How every predictor is built and what it does when a request does not say.

    A request's stopping rules combine with these defaults field by field
    (:meth:`parapush.prediction.PredictionRequest.stopping_rules`): a rule the request leaves
    unset takes the configured one; ``iterations`` left unset is the configured K capped at
    the request's N; the configured ``deadline`` always applies, a request may only shorten it.

    Attributes:
        name: the model a request gets when it names none: ``"parareal"`` (coarse corrected by
            fine), ``"coarse"`` (Parareal iteration 0) or ``"fine"`` (MuJoCo serially in time).
        coarse_model: ``"auto"`` (the first of learned, general and analytical that serves the
            scene), ``"learned"``, ``"general"`` or ``"analytical"`` (:data:`COARSE_MODELS`).
        learned_weights: path of the learned model's weights (.npz); None: the shipped ones.
        general_weights: path of the general learned model's weights (.npz); None: the shipped ones.
        iterations: Parareal K >= 0 (capped at each request's N); None: stop by a tolerance or
            the deadline (then one of them is required).
        tolerance_position: m; stop when every position update is at most this; None: off.
        tolerance_angle: rad; the same for object yaws; None: off.
        deadline: s of wall time per prediction; None: none.
        schedule: ``"auto"`` (the cost model picks), ``"parareal"`` or ``"sample_parallel"``
            (exact fine serially in time, sequences in parallel).
        backend: fine execution backend: ``"serial"``, ``"threads"``, ``"processes"`` or ``"ray"``
            (actors on a Ray cluster, :mod:`parapush.physics.backends.ray_actors`; needs the
            ``ray`` extra).
        workers: fine workers; None: one per CPU core (``ray``: per CPU of the cluster).
        ray_address: the Ray cluster of ``backend: ray`` (its head, ``host:port``); None:
            ``RAY_ADDRESS``, else a Ray cluster local to the process.
        project: apply the feasibility projection (ISRR Eq 9) to every corrected state.
        max_initial_overlap: m; initial states whose bodies overlap by more are refused,
            smaller overlaps (mocap noise) are projected away.
        fidelity: ``"full"`` (every object simulated), ``"task_informed"`` (only the objects
            a segment's push can reach are dynamic, :mod:`parapush.physics.fidelity`) or
            ``"auto"`` (task-informed from 8 objects on); the simulated world always runs at full
            fidelity. Default by ``bench/fidelity_management.py``: the fine model costs 2.5-3.2x
            less at 8-32 objects and the same at 1-4 (so ``auto`` keeps the plain model there),
            and its error against full fidelity stays within the chaos floor.
        analytical_rotation: how the analytical coarse model moves a pushed object:
            ``"limit_surface"`` (quasi-static pushing with the ellipsoidal limit surface of an
            even pressure over the outline, :mod:`parapush.physics.limit_surface`) or ``"isrr"``
            (ISRR 2019 Eq 5-7: at the pusher's velocity, turning by K_omega = 0.1). Default by
            ``bench/real_pushes.py``: on 62 recorded real pushes the final error's medians are
            2.1 mm / 3.1 deg against 24.5 mm / 11.9 deg, at 3-50x the ISRR model's cost (still
            1-2 % of a fine call).
        fine: the fine MuJoCo model's settings.
    """

    name: str = setting("parareal", "predictive model when a request names none", choices=MODELS)
    coarse_model: str = setting("auto", "coarse model (auto: the first of learned, general, analytical that serves "
                                "the scene)",
                                choices=COARSE_MODELS)
    learned_weights: str | None = setting(None, "learned coarse model weights (.npz)", kind=str,
                                          none="the shipped weights", ros_none="")
    general_weights: str | None = setting(None, "general learned coarse model weights (.npz)", kind=str,
                                          none="the shipped weights", ros_none="")
    iterations: int | None = setting(1, "Parareal iterations K (capped at a request's N)", kind=int, minimum=0,
                                     maximum=MAX_ITERATIONS, none="stop by a tolerance or the deadline",
                                     ros_none=ITERATIONS_UNSET)
    tolerance_position: float | None = setting(None, "stop when every position update is below it", kind=float,
                                               unit="m", above=0.0, maximum=1.0, none="off", ros_none=0.0)
    tolerance_angle: float | None = setting(None, "stop when every angle update is below it", kind=float,
                                            unit="rad", above=0.0, maximum=3.2, none="off", ros_none=0.0)
    deadline: float | None = setting(None, "wall time per prediction (a request may shorten it)", kind=float,
                                     unit="s", above=0.0, maximum=600.0, none="none", ros_none=0.0)
    schedule: str = setting("auto", "Parareal or sample-parallel fine (auto: the cost model picks)",
                            choices=SCHEDULES)
    backend: str = setting("threads", "fine-model execution backend", choices=BACKEND_NAMES)
    workers: int | None = setting(None, "fine workers (threads, processes or Ray actors)", kind=int, minimum=1,
                                  maximum=256, none="one per CPU core (ray: per CPU of the cluster)", ros_none=0)
    ray_address: str | None = setting(None, "Ray cluster head (host:port) for backend ray", kind=str,
                                      none="RAY_ADDRESS, else a local Ray cluster", ros_none="")
    project: bool = setting(True, "project corrected states out of overlap (ISRR Eq 9)")
    max_initial_overlap: float = setting(0.005, "largest body overlap of an initial state that is projected away",
                                         unit="m", minimum=0.0, maximum=0.1)
    fidelity: str = setting("auto", "fine-model fidelity management (task_informed: only reachable objects "
                            "move; auto: task_informed from 8 objects on)", choices=FIDELITIES)
    analytical_rotation: str = setting("limit_surface", "how the analytical coarse model moves a pushed object "
                                       "(limit_surface: quasi-static, even pressure; isrr: ISRR 2019 Eq 6)",
                                       choices=ROTATIONS)
    fine: FineSettings = field(default_factory=FineSettings)

    def __post_init__(self) -> None:
        check_settings(self)
        if not isinstance(self.fine, FineSettings):
            raise ValueError(f"fine: expected FineSettings, got {self.fine!r}")
        if self.iterations is None and self.tolerance_position is None and self.tolerance_angle is None \
                and self.deadline is None:
            raise ValueError("iterations: Parareal needs iterations, a tolerance or a deadline to stop")


def model_config_from_mapping(data: object, where: str = "model") -> ModelConfig:
    """A :class:`ModelConfig` from the plain data of a ``model:`` section as a ROS parameter
    file writes it (stand-ins for None, see the module docstring).

    Raises:
        SettingsError: unknown keys or invalid values, with the dotted path (``model.fine.timestep``).
    """
    return settings_from_ros_mapping(ModelConfig, data, where)


def load_model_config(path: str | Path) -> ModelConfig:
    """The ``model`` section of a ROS parameter file such as ``config/model.yaml``: the one of
    the wildcard section ``/**`` (or of the only node section).

    Raises:
        SettingsError: naming the file and the field.
    """
    path = Path(path)
    data = read_yaml(path, lambda message: SettingsError("", message), "model config")
    if not isinstance(data, Mapping):
        raise SettingsError("", f"{path}: expected a ROS parameter file (a mapping of node sections)")
    sections = data.get("/**") or (next(iter(data.values())) if len(data) == 1 else None)
    if not isinstance(sections, Mapping) or not isinstance(sections.get("ros__parameters"), Mapping):
        raise SettingsError("", f"{path}: expected a '/**: ros__parameters:' section")
    parameters = sections["ros__parameters"]
    if "model" not in parameters:
        raise SettingsError("model", f"{path}: missing")
    try:
        return model_config_from_mapping(parameters["model"])
    except SettingsError as error:
        raise SettingsError(error.path, f"{error.problem} (in {path})") from None


__all__ = [
    "COARSE_MODELS",
    "ITERATIONS_UNSET",
    "MAX_ITERATIONS",
    "ModelConfig",
    "load_model_config",
    "model_config_from_mapping",
]
