"""A prediction request, validated when it is constructed, independent of how it arrived
(ROS service, the MPC's local predictor, a library call).

:class:`PredictionRequest` checks everything about itself in ``__post_init__`` (shapes,
finiteness, names, the stopping rules, K's range 0 <= K <= N), raising :class:`RequestError`
naming the field; this is the only place those are checked on the request path (the ROS
message conversion only converts types, the engine and the solver trust the typed values).
What depends on the engine's scene and limits is checked by :func:`check_request_fits`.

The ROS interfaces (``PredictTrajectory.srv``, ``PushObject.action``) cannot send None: their
``iterations`` field writes "unset" (the configured ``model.iterations``) as
:data:`ITERATIONS_UNSET`; :func:`iterations_from_interface` and :func:`iterations_to_interface`
are the one conversion between that wire value and ``int | None``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parapush.parareal import PararealOptions
from parapush.parareal.solver import MODELS
from parapush.prediction.config import COARSE_MODELS, ITERATIONS_UNSET, ModelConfig
from parapush.scene.state import StateLayout
from parapush.settings import check_settings, setting
from parapush.validation import check_choice, check_integer, check_optional_positive


class RequestError(ValueError):
    """A prediction request is invalid; the message names the field."""


def iterations_from_interface(value: int) -> int | None:
    """A ROS interface's ``iterations`` field as Parareal K: :data:`ITERATIONS_UNSET` (-1) -> None
    (the configured ``model.iterations``), K >= 0 -> K. The upper bound (K <= N, the request's
    number of controls) is the request's to check.

    Raises:
        RequestError: (a ValueError) naming ``iterations`` for anything else (< -1, not an int).
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) \
            and value == ITERATIONS_UNSET:
        return None
    try:
        return check_integer("iterations", value, minimum=0)
    except ValueError as error:
        raise RequestError(f"{error} (or {ITERATIONS_UNSET}: the configured model.iterations)") from None


def iterations_to_interface(value: int | None) -> int:
    """Parareal K (None: the configured ``model.iterations``) as a ROS interface's ``iterations``
    field, the inverse of :func:`iterations_from_interface`.

    Raises:
        RequestError: (a ValueError) naming ``iterations`` for a K that is not an int >= 0.
    """
    if value is None:
        return ITERATIONS_UNSET
    try:
        return check_integer("iterations", value, minimum=0)
    except ValueError as error:
        raise RequestError(str(error)) from None


@dataclass(frozen=True)
class PredictionLimits:
    """What a prediction engine accepts (a sanity bound on requests, not physics).

    Attributes:
        max_sequences: most control sequences per request.
        max_controls: most controls per sequence.
        max_speed: m/s, largest pusher speed a control may ask for.
        max_duration: s, longest single control.
        max_position: m, largest |x| or |y| of any body in the initial state.
        max_body_speed: m/s, largest linear speed of any body in the initial state.
        max_work: worker-s, the most fine-model work a request may be estimated to need
            (:mod:`parapush.prediction.work_budget`); larger ones are refused up front.
    """

    max_sequences: int = setting(64, "most control sequences per request", minimum=1, maximum=4096)
    max_controls: int = setting(32, "most controls per sequence", minimum=1, maximum=1024)
    max_speed: float = setting(0.5, "largest pusher speed a control may ask for", unit="m/s", minimum=1e-3,
                               maximum=5.0)
    max_duration: float = setting(10.0, "longest single control", unit="s", above=0.0, maximum=600.0)
    max_position: float = setting(5.0, "largest |x| or |y| of a body in the initial state", unit="m", above=0.0,
                                  maximum=100.0)
    max_body_speed: float = setting(5.0, "largest body speed in the initial state", unit="m/s", above=0.0,
                                    maximum=100.0)
    max_work: float = setting(120.0, "most estimated fine-model work per request", unit="worker-s", above=0.0,
                              maximum=1e6)

    def __post_init__(self) -> None:
        check_settings(self)


def _checked(name: str, check, *args, **kwargs):
    try:
        return check(name, *args, **kwargs)
    except ValueError as error:
        raise RequestError(str(error)) from None


@dataclass(frozen=True)
class PredictionRequest:
    """One prediction request; constructing it validates it (:class:`RequestError` names the field).

    A field left None takes the engine's :class:`~parapush.prediction.ModelConfig` value; how
    the stopping rules combine is :meth:`stopping_rules`.

    Attributes:
        initial_state: (D,) state x_0 in the scene's layout (checked against the scene by
            :func:`check_request_fits`).
        controls: (B, N, 2) pusher velocities, m/s; B, N >= 1.
        durations: (B, N) control durations, s, > 0.
        model: ``"parareal"``, ``"coarse"`` or ``"fine"``; None: the configured ``name``.
        coarse_model: ``"auto"``, ``"analytical"`` or ``"learned"``; None: the configured one.
        iterations: Parareal K with 0 <= K <= N; None: the configured K (capped at N).
        tolerance_position: m, > 0; None: the configured one.
        tolerance_angle: rad, > 0; None: the configured one.
        deadline: s of wall time, > 0; the configured deadline applies unless this is shorter.
    """

    initial_state: np.ndarray
    controls: np.ndarray
    durations: np.ndarray
    model: str | None = None
    coarse_model: str | None = None
    iterations: int | None = None
    tolerance_position: float | None = None
    tolerance_angle: float | None = None
    deadline: float | None = None

    def __post_init__(self) -> None:
        state = np.array(self.initial_state, dtype=float)
        if state.ndim != 1:
            raise RequestError(f"initial_state: expected a state vector (D,), got shape {state.shape}")
        if not np.all(np.isfinite(state)):
            bad = np.flatnonzero(~np.isfinite(state)).tolist()
            raise RequestError(f"initial_state: must be finite, non-finite entries at indices {bad}")
        controls = np.array(self.controls, dtype=float)
        durations = np.array(self.durations, dtype=float)
        if controls.ndim != 3 or controls.shape[2] != 2:
            raise RequestError(f"controls: expected shape (B, N, 2), got {controls.shape}")
        sequences, slices = controls.shape[:2]
        if sequences < 1 or slices < 1:
            raise RequestError(f"controls: need at least one sequence of at least one control, got {controls.shape}")
        if durations.shape != (sequences, slices):
            raise RequestError(f"durations: expected shape ({sequences}, {slices}), got {durations.shape}")
        if not np.all(np.isfinite(controls)):
            raise RequestError("controls: must be finite")
        if not np.all(np.isfinite(durations)) or np.any(durations <= 0.0):
            raise RequestError("durations: must be finite and > 0")
        for name, array in (("initial_state", state), ("controls", controls), ("durations", durations)):
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        if self.model is not None:
            _checked("model", check_choice, self.model, MODELS)
        if self.coarse_model is not None:
            _checked("coarse_model", check_choice, self.coarse_model, COARSE_MODELS)
        if self.iterations is not None:
            object.__setattr__(self, "iterations", _checked("iterations", check_integer, self.iterations, minimum=0,
                                                            maximum=slices))
        for name in ("tolerance_position", "tolerance_angle", "deadline"):
            object.__setattr__(self, name, _checked(name, check_optional_positive, getattr(self, name)))

    @property
    def sequences(self) -> int:
        """B, the number of control sequences."""
        return int(self.controls.shape[0])

    @property
    def slices(self) -> int:
        """N, the number of controls per sequence."""
        return int(self.controls.shape[1])

    def model_name(self, config: ModelConfig) -> str:
        """The model that answers: the request's, else the configured one."""
        return self.model if self.model is not None else config.name

    def stopping_rules(self, config: ModelConfig) -> PararealOptions:
        """The Parareal options of this request under ``config``, field by field:

        - ``iterations``: the request's K, else the configured K capped at N (None when the
          configured K is None); ``model: coarse`` is K = 0;
        - ``tolerance_position``, ``tolerance_angle``: the request's, else the configured ones;
        - ``deadline``: the shorter of the request's and the configured one (either may be None);
        - ``project``: the configured switch.
        """
        if self.model_name(config) == "coarse":
            return PararealOptions(iterations=0, project=config.project)
        iterations = self.iterations
        if iterations is None and config.iterations is not None:
            iterations = min(config.iterations, self.slices)
        deadlines = [value for value in (self.deadline, config.deadline) if value is not None]
        return PararealOptions(
            iterations=iterations,
            tolerance_position=(
                self.tolerance_position if self.tolerance_position is not None else config.tolerance_position
            ),
            tolerance_angle=self.tolerance_angle if self.tolerance_angle is not None else config.tolerance_angle,
            deadline=min(deadlines) if deadlines else None,
            project=config.project,
        )


def check_request_fits(request: PredictionRequest, layout: StateLayout, limits: PredictionLimits) -> None:
    """Raise :class:`RequestError` naming the field unless ``request`` fits the scene's
    ``layout`` and ``limits`` (what a valid request may still get wrong for one engine)."""
    state = request.initial_state
    if state.shape != (layout.dimension,):
        raise RequestError(
            f"initial_state: expected shape ({layout.dimension},) for {layout.object_count} object(s), "
            f"got {state.shape}"
        )
    positions = np.concatenate([state[layout.pusher_position], layout.poses(state)[:, :2].ravel()])
    if np.any(np.abs(positions) > limits.max_position):
        raise RequestError(
            f"initial_state: a body is {np.abs(positions).max():.4g} m from the table centre, "
            f"beyond the sanity bound {limits.max_position} m"
        )
    velocities = np.vstack([state[layout.pusher_velocity][None], layout.twists(state)[:, :2]])
    if np.any(np.hypot(velocities[:, 0], velocities[:, 1]) > limits.max_body_speed):
        raise RequestError(f"initial_state: a body moves faster than {limits.max_body_speed} m/s")
    if request.sequences > limits.max_sequences:
        raise RequestError(f"sequences: {request.sequences} sequences, at most {limits.max_sequences} per request")
    if request.slices > limits.max_controls:
        raise RequestError(f"controls: {request.slices} controls per sequence, at most {limits.max_controls}")
    if np.any(request.durations > limits.max_duration):
        raise RequestError(
            f"durations: at most {limits.max_duration} s per control, got {request.durations.max():.4g} s"
        )
    speeds = np.hypot(request.controls[..., 0], request.controls[..., 1])
    if np.any(speeds > limits.max_speed * (1 + 1e-9)):
        raise RequestError(f"controls: speed {speeds.max():.4g} m/s exceeds the limit {limits.max_speed:.4g} m/s")
