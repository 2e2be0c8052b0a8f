"""The prediction service's core: a persistent fine-model worker pool, coarse models and Parareal.

:class:`PredictionEngine` owns everything that is expensive to create (the MuJoCo model,
the backend's workers, the coarse models), all built from one
:class:`~parapush.prediction.ModelConfig`, and answers :class:`PredictionRequest` objects
(validated when constructed) from any thread: each is checked against the scene and the
limits and its estimated work against the budget (:mod:`parapush.prediction.work_budget`),
solved concurrently with the other requests in progress, whose fine batches take turns on the
shared pool (:class:`~parapush.prediction.fair_scheduler.FairFineScheduler`), and a fine state that turned non-finite is
reported as :class:`PredictionError`, never returned as a prediction. The prediction service
node, the MPC's local predictor (:class:`parapush.planning.engine_prediction.EnginePrediction`), the
identification node and the benchmarks all build their predictors here.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from parapush.identification import ObjectModelVariants, ObjectParameters, scene_with_object
from parapush.parareal import PararealOptions, PararealResult, PararealSolver, PhysicsDivergenceError
from parapush.physics.backends import FineBackend, make_backend
from parapush.physics.backends.processes import WorkerError
from parapush.physics.fidelity import ManagedFineBackend, resolve_fidelity
from parapush.physics.fine import FineModel
from parapush.physics.projection import FeasibilityProjector
from parapush.physics.propagator import Propagator
from parapush.prediction.coarse_models import build_coarse_models, resolve_coarse_name, unavailable_message
from parapush.prediction.config import ModelConfig
from parapush.prediction.fair_scheduler import FairFineScheduler
from parapush.prediction.model_access import ModelAccessLock
from parapush.prediction.request import PredictionLimits, PredictionRequest, RequestError, check_request_fits
from parapush.prediction.work_budget import WorkEstimate, check_work_budget, estimate_work
from parapush.scene import Scene


class PredictionError(RuntimeError):
    """A valid request could not be predicted (e.g. the fine physics diverged)."""


class DivergedSequenceError(PredictionError):
    """The physics of one control sequence diverged (a non-finite state).

    Attributes:
        sequence: index of that sequence in the request.
    """

    def __init__(self, sequence: int, message: str) -> None:
        super().__init__(message)
        self.sequence = sequence


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
        fidelity_reruns: fine segments of this request run again at full fidelity because a
            static object should have moved (``fidelity: task_informed``; 0 otherwise). Counted
            while the request ran: requests answered concurrently may share their counts.
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
    fidelity_reruns: int = 0


@dataclass(frozen=True)
class EngineStatistics:
    """Counters for diagnostics.

    Attributes:
        requests: requests received; failures: of which answered with an error.
        latency_p50, latency_p90, latency_p99: s over the recent window (0 when none).
        mean_iterations: mean Parareal iterations over the recent window.
        workers: configured fine workers; backend: its name.
        worker_restarts: fine worker processes or Ray actors replaced so far.
        fidelity_reruns: fine segments run again at full fidelity so far (task-informed fidelity).
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
    fidelity_reruns: int = 0


class _CoarseModelUnavailableError(Exception):
    """The configured coarse model cannot predict the scene (the message names ``coarse_model``);
    the engine turns it into ValueError at start and PredictionError on a rebuild."""


@dataclass(frozen=True)
class _SceneModels:
    """What a :class:`PredictionEngine` builds for one scene, at start and again when an
    object's patches change (see the engine's attributes of the same names)."""

    scene: Scene
    fine_model: FineModel
    projector: FeasibilityProjector
    coarse: dict[str, Propagator]
    unavailable_coarse: dict[str, str]
    default_coarse: str
    backend: FineBackend
    fidelity: str
    fine: FineBackend
    fine_scheduler: FairFineScheduler
    solvers: dict[str, PararealSolver]

    @classmethod
    def build(cls, scene: Scene, config: ModelConfig) -> _SceneModels:
        """The models, backend and solvers for ``scene`` as ``config`` sets them up.

        Raises:
            _CoarseModelUnavailableError: the configured coarse model cannot predict ``scene``
                (before the backend's workers are started).
        """
        fine_model = PredictionEngine.build_fine_model(scene, config)
        projector = FeasibilityProjector(scene)
        # With the projection on, the solvers project every corrected state (ISRR Eq 9), so the
        # coarse models need not resolve overlaps themselves (that would double their cost).
        coarse, unavailable = build_coarse_models(scene, config, resolve_overlaps=not config.project)
        default_coarse = resolve_coarse_name(config.coarse_model, coarse)
        if default_coarse is None:
            raise _CoarseModelUnavailableError(unavailable_message(config.coarse_model, unavailable))
        backend = make_backend(config.backend, fine_model, workers=config.workers, ray_address=config.ray_address)
        # what the solvers run: the backend, managed when configured (the simulated world builds
        # its own full-fidelity FineModel; only predictions are managed) ...
        fidelity = resolve_fidelity(config.fidelity, len(scene.objects))
        fine: FineBackend = ManagedFineBackend(backend, fine_model) if fidelity == "task_informed" else backend
        # ... behind the fair scheduler: requests run concurrently and their fine batches take
        # turns on the one backend.
        fine_scheduler = FairFineScheduler(fine)
        solvers = {
            name: PararealSolver(coarse=model, fine=fine_scheduler, projector=projector)
            for name, model in coarse.items()
        }
        return cls(scene=scene, fine_model=fine_model, projector=projector, coarse=coarse,
                   unavailable_coarse=unavailable, default_coarse=default_coarse, backend=backend,
                   fidelity=fidelity, fine=fine, fine_scheduler=fine_scheduler, solvers=solvers)


class PredictionEngine:
    """Answers prediction requests for one scene on a persistent pool of MuJoCo workers; the one
    factory of the prediction stack (fine model, backend, coarse models, projector, solvers, all
    from a :class:`ModelConfig`).

    Use as a context manager (or call :meth:`close`) so the workers are released.
    """

    def __init__(
        self,
        scene: Scene,
        config: ModelConfig | None = None,
        *,
        limits: PredictionLimits | None = None,
        latency_window: int = 1000,
    ) -> None:
        """Build the fine model, its backend, the coarse models, the projector and one solver
        per coarse model for ``scene`` from ``config``.

        Args:
            scene: the scene every request predicts.
            config: the model settings; None: the defaults.
            limits: what requests may ask for; None: the defaults.
            latency_window: number of recent requests kept for latency percentiles.
        Raises:
            ValueError: the configured coarse model cannot be used for this scene (naming
                ``coarse_model``).
        """
        self.config = config if config is not None else ModelConfig()
        self.limits = limits if limits is not None else PredictionLimits()
        if latency_window < 1:
            raise ValueError(f"latency_window: expected >= 1, got {latency_window!r}")
        try:
            self._use(_SceneModels.build(scene, self.config))
        except _CoarseModelUnavailableError as error:  # a configuration this scene cannot use
            raise ValueError(str(error)) from None
        self._lock = ModelAccessLock()  # predictions share the fine model; changing it is exclusive
        self._stats_lock = threading.Lock()
        self._requests = 0
        self._failures = 0
        self._latencies: deque[float] = deque(maxlen=latency_window)
        self._iterations: deque[int] = deque(maxlen=latency_window)

    def _use(self, models: _SceneModels) -> None:
        """Predict with ``models`` from now on (the object variants start afresh with its fine model)."""
        self.scene = models.scene
        self.layout = models.scene.layout
        self.fine_model = models.fine_model
        self.projector = models.projector
        self._coarse = models.coarse
        self.unavailable_coarse = models.unavailable_coarse
        self.default_coarse = models.default_coarse
        self.backend = models.backend
        self.fidelity = models.fidelity
        self.fine = models.fine
        self.fine_scheduler = models.fine_scheduler
        self._solvers = models.solvers
        self._object_variants: dict[int, ObjectModelVariants] = {}

    @staticmethod
    def build_fine_model(scene: Scene, config: ModelConfig) -> FineModel:
        """The fine MuJoCo model of ``scene`` as ``config`` sets it up (also what the
        identification node searches with, so that its results apply here)."""
        return FineModel(scene, config.fine)

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

        Parameters whose patches (regions with their own mass and friction: an identified
        distribution) differ from the fine model's, or that drop or add patches, change its geoms:
        the engine then rebuilds its models for the scene with the object so described (between
        predictions). The learned coarse model refuses objects with patches, so ``auto`` falls
        back to the analytical one; a configured ``learned`` refuses them.

        Raises:
            RequestError: unknown object name.
            PredictionError: the process or Ray backend (its workers hold their own models), or
                patches the configured coarse model cannot predict (the model is then unchanged).
            ValueError: patches that do not fit the object (outside its outline).
        """
        if not isinstance(parameters, ObjectParameters):
            raise TypeError(f"parameters: expected ObjectParameters, got {type(parameters).__name__}")
        if self.config.backend in ("processes", "ray"):
            raise PredictionError(
                f"object parameters can only be changed with the 'threads' or 'serial' backend: the "
                f"'{self.config.backend}' backend's workers each hold their own copy of the fine model"
            )
        self._variants(object_name)  # RequestError for an unknown name, before waiting for the lock
        with self._lock.exclusive():  # never while a prediction reads the model
            variants = self._variants(object_name)  # (after the wait: an earlier change may have rebuilt it)
            previous = variants.current()
            if not variants.matches(parameters):
                self._rebuild(scene_with_object(self.scene, variants.object_index, parameters))
                variants = self._variants(object_name)
            variants.apply(self.fine_model.mj_model, parameters)
            self.fine_model.parameters_changed()
        return previous

    def _rebuild(self, scene: Scene) -> None:
        """Swap in models for ``scene`` and close the old ones; when the new ones cannot be
        built, the old ones stay in use (nothing was swapped).

        Raises:
            PredictionError: the configured coarse model cannot predict ``scene``.
        """
        try:
            models = _SceneModels.build(scene, self.config)
        except _CoarseModelUnavailableError as error:
            raise PredictionError(str(error)) from None
        retired_scheduler, retired_backend = self.fine_scheduler, self.backend
        self._use(models)
        retired_scheduler.close()
        retired_backend.close()

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
        """Answer one request (its unset fields take this engine's config, see
        :meth:`PredictionRequest.stopping_rules`).

        Raises:
            RequestError: the request does not fit this engine's scene or limits, or asks for
                an unavailable coarse model (the message names the field).
            DivergedSequenceError: the physics of one sequence diverged (a PredictionError).
            PredictionError: the backend failed.
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
        if not isinstance(request, PredictionRequest):
            raise TypeError(f"request: expected a PredictionRequest, got {type(request).__name__}")
        check_request_fits(request, self.layout, self.limits)
        # shared: the models stay the same until the answer (apply_object_parameters may rebuild them)
        with self._lock.shared():
            coarse = self.default_coarse
            if request.coarse_model is not None:
                coarse = resolve_coarse_name(request.coarse_model, self._coarse)
                if coarse is None:
                    raise RequestError(unavailable_message(request.coarse_model, self.unavailable_coarse))
            initial = request.initial_state
            projected = self.projector.project(initial[None])[0]
            moved = float(np.max(np.abs(projected - initial)))
            if moved > self.config.max_initial_overlap:
                raise RequestError(
                    f"initial_state: bodies overlap; resolving it moves a body by {moved * 1000:.1f} mm, more than "
                    f"the {self.config.max_initial_overlap * 1000:.1f} mm allowed"
                )
            initial_states = np.repeat(projected[None], request.sequences, axis=0)
            model = request.model_name(self.config)
            options = request.stopping_rules(self.config)
            # The coarse model alone has nothing to schedule; otherwise the configured rule.
            schedule = "parareal" if model == "coarse" else self.config.schedule
            check_work_budget(self._estimate_work(request, model, options, schedule), self.limits.max_work)
            solver = self._solvers[coarse]
            reruns_before = self.fidelity_reruns
            try:
                if model == "fine":
                    result = solver.predict_fine(
                        initial_states, request.controls, request.durations, deadline=options.deadline
                    )
                else:
                    result = solver.solve(initial_states, request.controls, request.durations, options,
                                          schedule=schedule)
            except PhysicsDivergenceError as error:
                raise DivergedSequenceError(error.sequence, f"the fine physics diverged: {error}") from None
            except WorkerError as error:
                raise PredictionError(f"a fine worker failed: {error}") from None
            reruns = self.fidelity_reruns - reruns_before
            return self._outcome(model, result, started, moved, reruns)

    @property
    def fidelity_reruns(self) -> int:
        """Fine segments run again at full fidelity so far (0 with ``fidelity: full``)."""
        return self.fine.counts.reruns if isinstance(self.fine, ManagedFineBackend) else 0

    # -- work budget --------------------------------------------------------------------------
    def estimate_work(self, request: PredictionRequest) -> WorkEstimate:
        """The fine-model work ``request`` is estimated to need (:mod:`parapush.prediction.work_budget`),
        what :meth:`predict` compares with ``limits.max_work`` before running it."""
        model = request.model_name(self.config)
        schedule = "parareal" if model == "coarse" else self.config.schedule
        return self._estimate_work(request, model, request.stopping_rules(self.config), schedule)

    def _estimate_work(
        self, request: PredictionRequest, model: str, options: PararealOptions, schedule: str
    ) -> WorkEstimate:
        return estimate_work(
            request.durations, model, schedule, options.iteration_limit(request.slices),
            fine_rate=self.fine_scheduler.cost_estimator.fine_rate, timestep=self.config.fine.timestep,
            deadline=options.deadline, workers=self.fine_scheduler.workers,
        )

    def _outcome(
        self, model: str, result: PararealResult, started: float, moved: float, reruns: int
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
            model=model,
            schedule=result.schedule,
            time_coarse=float(result.time_coarse),
            time_fine=float(result.time_fine),
            time_correction=float(result.time_correction),
            time_total=time.perf_counter() - started,
            initial_projection=moved,
            fidelity_reruns=reruns,
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
                backend=self.config.backend,
                worker_restarts=int(getattr(self.backend, "replaced_workers", 0)),  # process and Ray backends
                fidelity_reruns=self.fidelity_reruns,
            )

    def close(self) -> None:
        self.fine_scheduler.close()
        self.backend.close()

    def __enter__(self) -> PredictionEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
