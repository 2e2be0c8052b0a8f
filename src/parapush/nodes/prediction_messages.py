"""PredictTrajectory request and response <-> the prediction engine's request and outcome.

Separate from the node so that a benchmark can time exactly the conversions the service
performs on every call (bench/prediction_latency.py).
"""

from __future__ import annotations

from parareal_pushing.srv import PredictTrajectory

from parapush.nodes.conversions import (
    MessageError,
    msg_to_snapshot,
    sequences_from_msgs,
    time_to_seconds,
    trajectory_to_msg,
)
from parapush.prediction import PredictionLimits, PredictionOutcome, PredictionRequest
from parapush.scene import Scene


def _nonzero(value: float, name: str) -> float | None:
    """``value`` where > 0; None for 0 (off). Raises MessageError naming ``name`` otherwise."""
    if value == 0.0:
        return None
    if not value > 0.0 or value == float("inf"):
        raise MessageError(f"{name}: must be > 0 and finite, or 0 for off; got {value!r}")
    return float(value)


def prediction_request_from_msg(
    request: PredictTrajectory.Request, scene: Scene, limits: PredictionLimits
) -> PredictionRequest:
    """The engine's request for a service request.

    Raises:
        MessageError: naming the first malformed field of ``request``.
    """
    snapshot = msg_to_snapshot(request.initial_state, scene)
    controls, durations = sequences_from_msgs(
        request.sequences,
        max_sequences=limits.max_sequences,
        max_controls=limits.max_controls,
        max_speed=limits.max_speed,
    )
    if request.iterations < -1:
        raise MessageError(f"iterations: must be >= 0, or -1 for the default, got {request.iterations}")
    return PredictionRequest(
        initial_state=snapshot.state,
        controls=controls,
        durations=durations,
        model=request.model or "parareal",
        coarse_model=request.coarse_model or None,
        iterations=None if request.iterations == -1 else request.iterations,
        tolerance_position=_nonzero(request.tolerance_position, "tolerance_position"),
        tolerance_angle=_nonzero(request.tolerance_angle, "tolerance_angle"),
        deadline=_nonzero(request.deadline, "deadline"),
    )


def fill_prediction_response(
    response: PredictTrajectory.Response,
    outcome: PredictionOutcome,
    request: PredictTrajectory.Request,
    scene: Scene,
) -> PredictTrajectory.Response:
    """Fill ``response`` with a successful ``outcome`` of ``request``; states stamped at their predicted times."""
    stamp = time_to_seconds(request.initial_state.header.stamp)
    response.trajectories = [
        trajectory_to_msg(
            states,
            scene,
            exact_states=outcome.exact_states,
            start_stamp=stamp,
            durations=[control.duration for control in sequence.controls],
        )
        for states, sequence in zip(outcome.trajectories, request.sequences, strict=True)
    ]
    response.success = True
    response.iterations_used = outcome.iterations_used
    response.exact_states = outcome.exact_states
    response.update_position = [float(v) for v in outcome.update_position]
    response.update_angle = [float(v) for v in outcome.update_angle]
    response.stop_reason = outcome.stop_reason
    response.schedule = outcome.schedule
    response.time_coarse = outcome.time_coarse
    response.time_fine = outcome.time_fine
    response.time_correction = outcome.time_correction
    response.time_total = outcome.time_total
    response.message = (
        f"{outcome.model} ({outcome.schedule}): {len(outcome.trajectories)} sequence(s), "
        f"{outcome.iterations_used} iteration(s), stop: {outcome.stop_reason}"
    )
    return response
