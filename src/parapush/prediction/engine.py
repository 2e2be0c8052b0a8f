"""The prediction service's core: a persistent fine-model worker pool, coarse models and Parareal.

:class:`PredictionEngine` owns everything that is expensive to create (the MuJoCo model,
the backend's workers, the coarse models) and answers :class:`PredictionRequest` objects,
from any thread: requests are validated first (:class:`RequestError` names the field),
solved one at a time on the shared pool, and a fine state that turned non-finite is
reported as :class:`PredictionError`, never returned as a prediction. The ROS node
(:mod:`parapush.nodes.prediction_service`) only converts messages and calls it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from parapush.identification import ObjectModelVariants, ObjectParameters
from parapush.parareal import PararealOptions, PararealResult, PararealSolver, PhysicsDivergenceError
from parapush.physics.backends import make_backend
from parapush.physics.backends.processes import WorkerError
from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.physics.fine import FineModel
from parapush.physics.fine_settings import FineSettings
from parapush.physics.projection import FeasibilityProjector
from parapush.prediction.request import PredictionLimits, PredictionRequest, RequestError
from parapush.scene import Scene

BACKENDS = ("serial", "threads", "processes")
COARSE_MODELS = ("auto", "analytical", "learned")
"""``auto``: the learned model where it supports the scene (cylinders, no obstacles, up to the
objects it was trained for), else the analytical one."""
SCHEDULES = ("auto", "parareal", "sample_parallel")


class PredictionError(RuntimeError):
    """A valid request could not be predicted (e.g. the fine physics diverged)."""


def _optional_positive(value: float | None, name: str) -> float | None:
    if value is None:
        return None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: must be finite and > 0 (or None), got {value!r}")
    return float(value)


@dataclass(frozen=True)
class PredictionSettings:
    """How the engine is built and what it does by default.

    Attributes:
        backend: fine execution backend, one of ``BACKENDS``.
        workers: fine workers (threads or processes); None: one per CPU core.
        fine: the fine MuJoCo model's settings.
        coarse_model: default coarse model, one of ``COARSE_MODELS``.
        learned_weights: path of the learned model's weights; None: the shipped ones.
        default_iterations: Parareal iterations K when a request gives none.
        default_tolerance_position: m, or None.
        default_tolerance_angle: rad, or None.
        default_deadline: s, or None.
        schedule: "auto" (cost model picks Parareal or sample-parallel fine), "parareal",
            or "sample_parallel".
        limits: what requests may ask for.
        max_initial_overlap: m; initial states whose bodies overlap by more are refused,
            smaller overlaps (mocap noise) are projected away (ISRR Eq 9).
        latency_window: number of recent requests kept for latency percentiles.
    """

    backend: str = "threads"
    workers: int | None = None
    fine: FineSettings = field(default_factory=FineSettings)
    coarse_model: str = "analytical"
    learned_weights: str | None = None
    default_iterations: int = 1
    default_tolerance_position: float | None = None
    default_tolerance_angle: float | None = None
    default_deadline: float | None = None
    schedule: str = "auto"
    limits: PredictionLimits = field(default_factory=PredictionLimits)
    max_initial_overlap: float = 0.005
    latency_window: int = 1000

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend: expected one of {list(BACKENDS)}, got {self.backend!r}")
        if self.workers is not None and (isinstance(self.workers, bool) or self.workers < 1):
            raise ValueError(f"workers: expected an integer >= 1 or None, got {self.workers!r}")
        if self.coarse_model not in COARSE_MODELS:
            raise ValueError(f"coarse_model: expected one of {list(COARSE_MODELS)}, got {self.coarse_model!r}")
        if isinstance(self.default_iterations, bool) or self.default_iterations < 0:
            raise ValueError(f"default_iterations: expected an integer >= 0, got {self.default_iterations!r}")
        for name in ("default_tolerance_position", "default_tolerance_angle", "default_deadline"):
            object.__setattr__(self, name, _optional_positive(getattr(self, name), name))
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule: expected one of {list(SCHEDULES)}, got {self.schedule!r}")
        if not np.isfinite(self.max_initial_overlap) or self.max_initial_overlap < 0:
            raise ValueError(f"max_initial_overlap: expected a finite number >= 0, got {self.max_initial_overlap!r}")
        if self.latency_window < 1:
            raise ValueError(f"latency_window: expected >= 1, got {self.latency_window!r}")


@dataclass(frozen=True)
class PredictionOutcome:
    """An answered request.

    Attributes:
        trajectories: (B, N+1, D) predicted states at the control boundaries.
        exact_states: the first ``exact_states`` states of every trajectory equal the fine model's.
        iterations_used: Parareal iterations performed (0 for the coarse model, N for fine).
        update_position: (k,) m, largest position update per iteration.
        update_angle: (k,) rad, largest angle update per iteration.
        stop_reason: "iterations", "tolerance", "deadline" or "converged".
        model: the model that answered; schedule: "parareal" or "sample_parallel".
        time_coarse, time_fine, time_correction: s inside the solver.
        time_total: s from the request to the answer, validation included.
        initial_projection: m, how far the initial state's bodies were moved out of overlap.
    """

    trajectories: np.ndarray
    exact_states: int
    iterations_used: int
    update_position: np.ndarray
    update_angle: np.ndarray
    stop_reason: str
    model: str
    schedule: str
    time_coarse: float
    time_fine: float
    time_correction: float
    time_total: float
    initial_projection: float


@dataclass(frozen=True)
class EngineStatistics:
    """Counters for diagnostics.

    Attributes:
        requests: requests received; failures: of which answered with an error.
        latency_p50, latency_p90, latency_p99: s over the recent window (0 when none).
        mean_iterations: mean Parareal iterations over the recent window.
        workers: configured fine workers; backend: its name.
        worker_restarts: fine worker processes replaced so far (process backend).
    """

    requests: int
    failures: int
    latency_p50: float
    latency_p90: float
    latency_p99: float
    mean_iterations: float
    workers: int
    backend: str
    worker_restarts: int


class PredictionEngine:
    """Answers prediction requests for one scene on a persistent pool of MuJoCo workers.

    Use as a context manager (or call :meth:`close`) so the workers are released.
    """

    def __init__(self, scene: Scene, settings: PredictionSettings | None = None) -> None:
        self.scene = scene
        self.settings = settings if settings is not None else PredictionSettings()
        self.layout = scene.layout
        self.fine_model = FineModel(scene, self.settings.fine)
        self.projector = FeasibilityProjector(scene)
        # The solvers project every corrected state (ISRR Eq 9), so the coarse model need not
        # resolve overlaps itself (that would double its cost).
        self._coarse = {"analytical": AnalyticalCoarseModel(scene, resolve_overlaps=False)}
        self.unavailable_coarse: dict[str, str] = {}
        self._load_learned()
        self.default_coarse = self.settings.coarse_model
        if self.default_coarse == "auto":
            self.default_coarse = "learned" if "learned" in self._coarse else "analytical"
        if self.default_coarse not in self._coarse:
            raise ValueError(
                f"coarse_model: {self.default_coarse!r} is unavailable: "
                f"{self.unavailable_coarse.get(self.default_coarse, 'unknown')}"
            )
        self.backend = make_backend(self.settings.backend, self.fine_model, workers=self.settings.workers)
        self._solvers = {
            name: PararealSolver(coarse=model, fine=self.backend, projector=self.projector)
            for name, model in self._coarse.items()
        }
        self._lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._object_variants: dict[int, ObjectModelVariants] = {}
        self._requests = 0
        self._failures = 0
        self._latencies: deque[float] = deque(maxlen=self.settings.latency_window)
        self._iterations: deque[int] = deque(maxlen=self.settings.latency_window)

    def _load_learned(self) -> None:
        try:
            from parapush.learning.coarse_learned import LearnedCoarseModel
        except ImportError as error:
            self.unavailable_coarse["learned"] = f"the learned model cannot be imported ({error})"
            return
        try:
            self._coarse["learned"] = LearnedCoarseModel(
                self.scene, weights_path=self.settings.learned_weights, resolve_overlaps=False
            )
        except (ValueError, OSError) as error:
            self.unavailable_coarse["learned"] = str(error)

    @property
    def coarse_models(self) -> tuple[str, ...]:
        """Names of the coarse models this engine can use."""
        return tuple(self._coarse)

    # -- object parameters ------------------------------------------------------------------
    def object_parameters(self, object_name: str) -> ObjectParameters:
        """The physical parameters the fine model uses now for object ``object_name``."""
        return self._variants(object_name).current()

    def apply_object_parameters(self, object_name: str, parameters: ObjectParameters) -> ObjectParameters:
        """Use ``parameters`` for object ``object_name`` in every later fine-model prediction,
        e.g. ones identified from pushes (:mod:`parapush.identification`); returns the previous
        ones. The coarse models are kinematic and unaffected; Parareal corrects them as always.

        Raises:
            RequestError: unknown object name.
            PredictionError: the process backend (its workers hold their own models).
        """
        if not isinstance(parameters, ObjectParameters):
            raise TypeError(f"parameters: expected ObjectParameters, got {type(parameters).__name__}")
        if self.settings.backend == "processes":
            raise PredictionError(
                "object parameters can only be changed with the 'threads' or 'serial' backend: the 'processes' "
                "backend's workers each hold their own copy of the fine model"
            )
        variants = self._variants(object_name)
        with self._lock:  # never while a prediction reads the model
            previous = variants.current()
            variants.apply(self.fine_model.mj_model, parameters)
        return previous

    def _variants(self, object_name: str) -> ObjectModelVariants:
        try:
            index = self.scene.object_index(object_name)
        except KeyError:
            raise RequestError(
                f"object: unknown object {object_name!r}; the scene has {list(self.scene.object_names)}"
            ) from None
        if index not in self._object_variants:
            self._object_variants[index] = ObjectModelVariants(self.fine_model, index)
        return self._object_variants[index]

    # -- requests ---------------------------------------------------------------------------
    def predict(self, request: PredictionRequest) -> PredictionOutcome:
        """Answer one request.

        Raises:
            RequestError: the request is invalid (the message names the field).
            PredictionError: the physics diverged or the backend failed.
        """
        started = time.perf_counter()
        try:
            outcome = self._predict(request, started)
        except Exception:
            self._record(time.perf_counter() - started, None)
            raise
        self._record(outcome.time_total, outcome.iterations_used)
        return outcome

    def _predict(self, request: PredictionRequest, started: float) -> PredictionOutcome:
        if request.coarse_model is not None and request.coarse_model in self.unavailable_coarse:
            raise RequestError(
                f"coarse_model: {request.coarse_model!r} is unavailable here: "
                f"{self.unavailable_coarse[request.coarse_model]}"
            )
        request.validate(layout=self.layout, limits=self.settings.limits, coarse_models=self.coarse_models)
        initial = np.asarray(request.initial_state, dtype=float)
        projected = self.projector.project(initial[None])[0]
        moved = float(np.max(np.abs(projected - initial)))
        if moved > self.settings.max_initial_overlap:
            raise RequestError(
                f"initial_state: bodies overlap; resolving it moves a body by {moved * 1000:.1f} mm, more than "
                f"the {self.settings.max_initial_overlap * 1000:.1f} mm allowed"
            )
        controls = np.asarray(request.controls, dtype=float)
        durations = np.asarray(request.durations, dtype=float)
        sequences = controls.shape[0]
        initial_states = np.repeat(projected[None], sequences, axis=0)
        solver = self._solvers[request.coarse_model or self.default_coarse]
        with self._lock:
            try:
                if request.model == "fine":
                    result = solver.predict_fine(initial_states, controls, durations, deadline=request.deadline)
                else:
                    result = solver.solve(
                        initial_states, controls, durations, self._options(request), schedule=self._schedule(request)
                    )
            except PhysicsDivergenceError as error:
                raise PredictionError(f"the fine physics diverged: {error}") from None
            except WorkerError as error:
                raise PredictionError(f"a fine worker failed: {error}") from None
        return self._outcome(request, result, started, moved)

    def _options(self, request: PredictionRequest) -> PararealOptions:
        if request.model == "coarse":
            return PararealOptions(iterations=0)
        explicit = (
            request.iterations is not None
            or request.tolerance_position is not None
            or request.tolerance_angle is not None
            or request.deadline is not None
        )
        if explicit:
            return PararealOptions(
                iterations=request.iterations,
                tolerance_position=request.tolerance_position,
                tolerance_angle=request.tolerance_angle,
                deadline=request.deadline,
            )
        settings = self.settings
        return PararealOptions(
            iterations=settings.default_iterations,
            tolerance_position=settings.default_tolerance_position,
            tolerance_angle=settings.default_tolerance_angle,
            deadline=settings.default_deadline,
        )

    def _schedule(self, request: PredictionRequest) -> str:
        # The coarse model alone has nothing to schedule; otherwise the configured rule.
        return "parareal" if request.model == "coarse" else self.settings.schedule

    def _outcome(
        self, request: PredictionRequest, result: PararealResult, started: float, moved: float
    ) -> PredictionOutcome:
        trajectories = np.asarray(result.trajectories)
        if not np.all(np.isfinite(trajectories)):
            raise PredictionError("the prediction contains non-finite states")
        return PredictionOutcome(
            trajectories=trajectories,
            exact_states=int(np.min(result.exact_states)),
            iterations_used=int(result.iterations_used),
            update_position=np.asarray(result.update_position, dtype=float),
            update_angle=np.asarray(result.update_angle, dtype=float),
            stop_reason=result.stop_reason,
            model=request.model,
            schedule=result.schedule,
            time_coarse=float(result.time_coarse),
            time_fine=float(result.time_fine),
            time_correction=float(result.time_correction),
            time_total=time.perf_counter() - started,
            initial_projection=moved,
        )

    # -- bookkeeping ----------------------------------------------------------------------------
    def _record(self, latency: float, iterations: int | None) -> None:
        with self._stats_lock:
            self._requests += 1
            if iterations is None:
                self._failures += 1
                return
            self._latencies.append(latency)
            self._iterations.append(iterations)

    def statistics(self) -> EngineStatistics:
        with self._stats_lock:
            latencies = np.array(self._latencies) if self._latencies else np.zeros(1)
            iterations = float(np.mean(self._iterations)) if self._iterations else 0.0
            p50, p90, p99 = (float(v) for v in np.percentile(latencies, [50, 90, 99]))
            return EngineStatistics(
                requests=self._requests,
                failures=self._failures,
                latency_p50=p50,
                latency_p90=p90,
                latency_p99=p99,
                mean_iterations=iterations,
                workers=int(self.backend.workers),
                backend=self.settings.backend,
                worker_restarts=int(getattr(self.backend, "replaced_workers", 0))  # process backend only,
            )

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> PredictionEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
