"""Identify an object's mass, friction and centre of mass from observed pushes.

The papers' approach (shared/papers/differentiable-physics-sliding-unknown-objects.txt):
search for the mechanical parameters that make simulated pushes match the observed ones.
Here the simulator is the fine MuJoCo model itself, so the identified parameters are the
ones the predictions use; instead of analytic gradients, a cross-entropy search evaluates
a population of hypotheses per iteration, all of them in one batched ``mujoco.rollout``
(one model variant per row, :mod:`parapush.identification.model_variants`).

The error of a hypothesis is the mean one-step prediction error of the object's pose over
every control of every record, each step starting from the *observed* state (as a Parareal
slice starts from its iterate), so errors do not compound and every step counts alike:
``|xy predicted - xy observed| + angle_weight |yaw predicted - yaw observed|`` (m).

What the data can tell apart depends on the pushes: slow quasi-static pushes say little
about mass and support friction (both scale the friction force and the inertia alike);
rotation under off-centre pushes carries the pusher friction and the centre of mass. The
result's ``spread`` (the search's final standard deviation per parameter) shows which
parameters the data pinned down.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from parapush.identification.model_variants import ObjectModelVariants
from parapush.identification.parameters import PARAMETER_NAMES, ObjectParameters, ParameterBounds, parameter_names
from parapush.lifecycle import Closeable
from parapush.physics.backends import ThreadBackend
from parapush.physics.fine import FineModel
from parapush.scene import wrap_angle
from parapush.settings import check_settings, setting
from parapush.validation import check_finite_array


@dataclass(frozen=True)
class PushRecord:
    """One observed push.

    Attributes:
        states: (T + 1, D) observed states at the control boundaries (m, rad, m/s, rad/s):
            states[0] before controls[0], states[t + 1] after controls[t].
        controls: (T, 2) pusher velocities, m/s, table frame.
        durations: (T,) s, each a whole number of fine-model timesteps.
    """

    states: np.ndarray
    controls: np.ndarray
    durations: np.ndarray

    def __post_init__(self) -> None:
        states = np.array(self.states, dtype=float)
        controls = np.array(self.controls, dtype=float)
        durations = np.array(self.durations, dtype=float)
        if controls.ndim != 2 or controls.shape[1] != 2 or controls.shape[0] < 1:
            raise ValueError(f"controls: expected shape (T, 2) with T >= 1, got {controls.shape}")
        steps = controls.shape[0]
        if states.ndim != 2 or states.shape[0] != steps + 1:
            raise ValueError(f"states: expected shape ({steps + 1}, D) for {steps} controls, got {states.shape}")
        if durations.shape != (steps,):
            raise ValueError(f"durations: expected shape ({steps},), got {durations.shape}")
        for name, array in (("states", states), ("controls", controls), ("durations", durations)):
            check_finite_array(name, array)
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        if np.any(durations <= 0.0):
            raise ValueError("durations: must be > 0 s")


@dataclass(frozen=True, kw_only=True)
class IdentificationSettings:
    """The cross-entropy search (each field's meaning, unit and range: its :func:`setting`).

    Attributes:
        fit: the parameters searched (names of ``PARAMETER_NAMES``); the others keep their
            initial values.
    """

    # Not a setting: a list of names (a tuple setting holds real numbers), checked below.
    fit: tuple[str, ...] = PARAMETER_NAMES
    population: int = setting(32, "hypotheses evaluated per iteration (one batched fine-model call)", minimum=2)
    elite: int = setting(8, "the best hypotheses the next distribution is fitted to (< population)", minimum=1)
    iterations: int = setting(12, "most search iterations", minimum=1)
    initial_spread: float = setting(
        0.3, "initial standard deviation, as a fraction of each bound's width", above=0.0, maximum=10.0
    )
    minimum_spread: float = setting(
        0.01, "stop when every searched standard deviation is below this fraction of its bound's width",
        minimum=0.0, maximum=1.0,
    )
    smoothing: float = setting(
        0.8, "weight of the elite statistics in each update (1: replace)", above=0.0, maximum=1.0
    )
    angle_weight: float = setting(
        0.05, "weight of the yaw error in the pose error (0.05: 1 deg counts as 0.87 mm)", unit="m/rad",
        minimum=0.0, maximum=10.0,
    )
    sensitivity_step: float = setting(
        0.1, "fraction of each bound's width by which the result's parameters are moved to measure its sensitivity",
        minimum=0.0, maximum=1.0,
    )
    seed: int = setting(0, "the sampler's seed")

    def __post_init__(self) -> None:
        object.__setattr__(self, "fit", parameter_names("fit", self.fit))
        check_settings(self)
        if self.elite >= self.population:
            raise ValueError(f"elite: must be < population ({self.population}), got {self.elite}")


@dataclass(frozen=True)
class IdentificationResult:
    """What :meth:`ObjectIdentifier.identify` found.

    Attributes:
        parameters: the best hypothesis evaluated.
        error: m, its mean one-step pose error over the records.
        initial_error: m, the same for the initial parameters.
        spread: (5,) the search's final standard deviation per parameter (order of
            ``PARAMETER_NAMES``; 0 for the parameters not searched). The search narrows every
            parameter, so this is not an uncertainty: see ``sensitivity``.
        sensitivity: (5,) m, how much the error grows, on average, when a searched parameter
            moves from the result by ``sensitivity_step`` of its bound's width either way (0
            for the parameters not searched). Near 0: the records do not determine it.
        history: (iterations + 1,) m, the best error so far after each iteration (first: initial).
        evaluations: hypotheses evaluated.
        iterations: iterations run.
    """

    parameters: ObjectParameters
    error: float
    initial_error: float
    spread: np.ndarray
    history: np.ndarray
    sensitivity: np.ndarray
    evaluations: int
    iterations: int
    stop_reason: str = field(default="iterations")


class ObjectIdentifier(Closeable):
    """Evaluates and searches parameters of object ``object_index`` against observed pushes.

    Args:
        fine_model: the fine model (its scene gives the nominal parameters and the other
            objects, which keep theirs).
        object_index: the object to identify, in scene order.
        bounds: the search box (default :class:`ParameterBounds`).
        workers: fine-model threads; default: the cores available.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        fine_model: FineModel,
        object_index: int,
        *,
        bounds: ParameterBounds | None = None,
        workers: int | None = None,
    ) -> None:
        self.variants = ObjectModelVariants(fine_model, object_index)
        self.fine_model = fine_model
        self.object_index = object_index
        self.bounds = ParameterBounds() if bounds is None else bounds
        if not isinstance(self.bounds, ParameterBounds):
            raise TypeError(f"bounds: expected ParameterBounds, got {type(self.bounds).__name__}")
        self._backend = ThreadBackend(fine_model, threads=workers)
        self._pose = fine_model.layout.object_pose(object_index)

    # -- evaluation -------------------------------------------------------------------------
    def _check_records(self, records: list[PushRecord]) -> None:
        if not records:
            raise ValueError("records: at least one push record is needed")
        dimension = self.fine_model.layout.dimension
        for index, record in enumerate(records):
            if not isinstance(record, PushRecord):
                raise TypeError(f"records[{index}]: expected PushRecord, got {type(record).__name__}")
            if record.states.shape[1] != dimension:
                raise ValueError(
                    f"records[{index}].states: expected {dimension} values per state for this scene, "
                    f"got {record.states.shape[1]}"
                )
            self.fine_model.steps_for_each(record.durations)  # ValueError naming the duration

    def prediction_errors(
        self, records: list[PushRecord], vectors: np.ndarray, *, angle_weight: float = 0.05
    ) -> np.ndarray:
        """Mean one-step pose error (m) of each hypothesis.

        Args:
            records: the observed pushes.
            vectors: (P, 5) parameter vectors (order of ``PARAMETER_NAMES``).
            angle_weight: m per rad.
        Returns:
            (P,) m; inf where a prediction was unstable.
        """
        return self._errors(self._steps(records), vectors, angle_weight)

    def _steps(self, records: list[PushRecord]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every step of the checked ``records``: (starts, targets, controls, durations), stacked."""
        self._check_records(records)
        return (
            np.concatenate([record.states[:-1] for record in records]),
            np.concatenate([record.states[1:] for record in records]),
            np.concatenate([record.controls for record in records]),
            np.concatenate([record.durations for record in records]),
        )

    def _errors(self, steps: tuple[np.ndarray, ...], vectors: np.ndarray, angle_weight: float) -> np.ndarray:
        """(P,) mean one-step pose error (m) of hypotheses (P, 5) over stacked ``steps``."""
        starts, targets, controls, durations = steps
        vectors = np.atleast_2d(np.asarray(vectors, dtype=float))
        slices = starts.shape[0]
        count = vectors.shape[0]
        predicted = self.propagate(
            np.tile(starts, (count, 1)), np.tile(controls, (count, 1)), np.tile(durations, count),
            np.repeat(vectors, slices, axis=0),
        ).reshape(count, slices, -1)
        pose = predicted[..., self._pose] - targets[None, :, self._pose]
        error = np.hypot(pose[..., 0], pose[..., 1]) + angle_weight * np.abs(wrap_angle(pose[..., 2]))
        mean = error.mean(axis=1)
        return np.where(np.isfinite(mean), mean, np.inf)

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray,
                  vectors: np.ndarray) -> np.ndarray:
        """One control per row under that row's parameters (one batched fine-model call).

        Args:
            states: (R, D) start states.
            controls: (R, 2) m/s.
            durations: (R,) s.
            vectors: (R, 5) parameter vectors (order of ``PARAMETER_NAMES``).
        Returns:
            (R, D) the states after the controls (NaN rows where the simulation failed).
        """
        vectors = np.asarray(vectors, dtype=float)
        states = np.asarray(states, dtype=float)
        if vectors.ndim != 2 or vectors.shape[1] != len(PARAMETER_NAMES) or vectors.shape[0] != states.shape[0]:
            raise ValueError(f"vectors: expected shape ({states.shape[0]}, {len(PARAMETER_NAMES)}), "
                             f"got {vectors.shape}")
        distinct, row_model = np.unique(vectors, axis=0, return_inverse=True)  # one model copy per hypothesis
        made = self.variants.make_many(distinct)
        return self._backend.propagate(states, controls, durations, models=[made[i] for i in row_model.ravel()])

    def rollouts(self, initial_state: np.ndarray, controls: np.ndarray, durations: np.ndarray,
                 vectors: np.ndarray) -> np.ndarray:
        """Every sequence under every parameter vector, from one initial state (a robust
        planner's models: :mod:`parapush.planning.robust_scoring`).

        Args:
            initial_state: (D,).
            controls: (S, k, 2) m/s, S sequences of k controls.
            durations: (k,) s.
            vectors: (M, 5) parameter vectors.
        Returns:
            (M, S, k + 1, D) trajectories (row m, sequence s: ``controls[s]`` under ``vectors[m]``).
        """
        controls = np.asarray(controls, dtype=float)
        vectors = np.atleast_2d(np.asarray(vectors, dtype=float))
        initial_state = np.asarray(initial_state, dtype=float)
        if controls.ndim != 3 or controls.shape[2] != 2:
            raise ValueError(f"controls: expected shape (S, k, 2), got {controls.shape}")
        durations = np.asarray(durations, dtype=float)
        if durations.shape != (controls.shape[1],):
            raise ValueError(f"durations: expected shape ({controls.shape[1]},), got {durations.shape}")
        models, sequences, steps = vectors.shape[0], controls.shape[0], controls.shape[1]
        rows = np.repeat(vectors, sequences, axis=0)  # (M S, 5): model-major
        tiled = np.tile(controls, (models, 1, 1))  # (M S, k, 2)
        trajectories = np.empty((models * sequences, steps + 1, initial_state.size))
        trajectories[:, 0] = initial_state
        for step in range(steps):
            trajectories[:, step + 1] = self.propagate(trajectories[:, step], tiled[:, step],
                                                       np.full(models * sequences, durations[step]), rows)
        return trajectories.reshape(models, sequences, steps + 1, initial_state.size)

    def predict_push(self, record: PushRecord, parameters: ObjectParameters) -> np.ndarray:
        """Open-loop prediction of a whole push from its first state with ``parameters``.

        Returns:
            (T + 1, D) states at the control boundaries (the first is ``record.states[0]``).
        """
        self._check_records([record])
        model = self.variants.make(parameters)
        states = [record.states[0]]
        for control, duration in zip(record.controls, record.durations, strict=True):
            states.append(
                self._backend.propagate(states[-1][None], control[None], np.array([duration]), models=[model])[0]
            )
        return np.array(states)

    # -- search -----------------------------------------------------------------------------
    def identify(
        self,
        records: list[PushRecord],
        *,
        settings: IdentificationSettings | None = None,
        initial: ObjectParameters | None = None,
    ) -> IdentificationResult:
        """Search the parameters that best predict ``records`` (cross-entropy method).

        Args:
            records: the observed pushes.
            settings: the search (default :class:`IdentificationSettings`).
            initial: where the search starts, inside the bounds (default: the fine model's current
                parameters: the scene's, unless others were applied to it).
        """
        settings = IdentificationSettings() if settings is None else settings
        if not isinstance(settings, IdentificationSettings):
            raise TypeError(f"settings: expected IdentificationSettings, got {type(settings).__name__}")
        initial = self.variants.current() if initial is None else initial
        if not isinstance(initial, ObjectParameters):
            raise TypeError(f"initial: expected ObjectParameters, got {type(initial).__name__}")
        if not self.bounds.contains(initial):
            raise ValueError(f"initial: {initial} is outside the bounds {self.bounds}")
        steps = self._steps(records)  # checked and stacked once for the whole search
        low, high = self.bounds.low, self.bounds.high
        width = high - low
        searched = np.array([name in settings.fit for name in PARAMETER_NAMES]) & (width > 0.0)
        rng = np.random.default_rng(settings.seed)
        mean = initial.as_vector()
        spread = np.where(searched, settings.initial_spread * width, 0.0)
        best = mean.copy()
        weight = settings.angle_weight
        best_error = initial_error = float(self._errors(steps, mean[None], weight)[0])
        history = [best_error]
        evaluations, iterations, stop_reason = 1, 0, "iterations"
        for _ in range(settings.iterations):
            samples = np.clip(mean + spread * rng.standard_normal((settings.population, mean.size)), low, high)
            samples[0] = best  # the best so far competes again: the result never gets worse
            errors = self._errors(steps, samples, weight)
            evaluations += settings.population
            iterations += 1
            order = np.argsort(errors, kind="stable")
            if errors[order[0]] < best_error:
                best, best_error = samples[order[0]].copy(), float(errors[order[0]])
            history.append(best_error)
            elite = samples[order[: settings.elite]]
            mean = settings.smoothing * elite.mean(axis=0) + (1.0 - settings.smoothing) * mean
            elite_spread = settings.smoothing * elite.std(axis=0) + (1.0 - settings.smoothing) * spread
            spread = np.where(searched, elite_spread, 0.0)
            if np.all(spread[searched] <= settings.minimum_spread * width[searched]):
                stop_reason = "converged"
                break
        sensitivity, probes = self._sensitivity(steps, best, best_error, searched, settings)
        return IdentificationResult(
            parameters=ObjectParameters.from_vector(best),
            error=best_error,
            initial_error=initial_error,
            spread=spread,
            sensitivity=sensitivity,
            history=np.array(history),
            evaluations=evaluations + probes,
            iterations=iterations,
            stop_reason=stop_reason,
        )

    def _sensitivity(
        self, steps: tuple[np.ndarray, ...], best: np.ndarray, best_error: float, searched: np.ndarray,
        settings: IdentificationSettings,
    ) -> tuple[np.ndarray, int]:
        """(5,) mean error growth (m) with each searched parameter moved either way; evaluations used."""
        low, high = self.bounds.low, self.bounds.high
        indices = np.flatnonzero(searched)
        probes = []
        for index in indices:
            for sign in (-1.0, 1.0):
                probe = best.copy()
                probe[index] = np.clip(probe[index] + sign * settings.sensitivity_step * (high - low)[index],
                                       low[index], high[index])
                probes.append(probe)
        sensitivity = np.zeros(best.size)
        if probes:
            errors = self._errors(steps, np.array(probes), settings.angle_weight)
            sensitivity[indices] = (errors.reshape(-1, 2) - best_error).mean(axis=1)
        return sensitivity, len(probes)

    def close(self) -> None:
        """Stop the fine-model threads; idempotent."""
        self._backend.close()
