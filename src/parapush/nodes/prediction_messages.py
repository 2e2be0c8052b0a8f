"""PredictTrajectory request and response <-> the prediction engine's request and outcome.

Separate from the node so that a benchmark can time exactly the conversions the service
performs on every call (bench/prediction_latency.py).
"""

from __future__ import annotations

from parareal_pushing.srv import PredictTrajectory

from parapush.nodes.conversions import (
    msg_to_snapshot,
    sequences_from_msgs,
    time_to_seconds,
    trajectory_to_msg,
)
from parapush.prediction import PredictionOutcome, PredictionRequest
from parapush.prediction.request import iterations_from_interface
from parapush.scene import Scene

OUTCOME_FIELDS = ("iterations_used", "exact_states", "stop_reason", "schedule", "time_coarse", "time_fine",
                  "time_correction", "time_total")
"""The response fields copied as they are from the engine's outcome (same names, plain values)."""


def _unset_if(value, unset):
    """None where ``value`` is the message's "not set" value, else ``value`` unchanged."""
    return None if value == unset else value


def prediction_request_from_msg(request: PredictTrajectory.Request, scene: Scene) -> PredictionRequest:
    """The engine's request for a service request: types converted, "not set" values
    (``""``, ``0``; ``iterations``' ``-1`` by :func:`iterations_from_interface`) to None; the
    values are checked by :class:`PredictionRequest` and the engine's limits by the engine.

    Raises:
        MessageError: naming the first malformed field of ``request`` (one that has no
            array form: unknown objects, sequences of unequal length, ...).
        RequestError: from :class:`PredictionRequest` or :func:`iterations_from_interface`,
            naming the invalid field.
    """
    snapshot = msg_to_snapshot(request.initial_state, scene)
    controls, durations = sequences_from_msgs(request.sequences)
    return PredictionRequest(
        initial_state=snapshot.state,
        controls=controls,
        durations=durations,
        model=_unset_if(request.model, ""),
        coarse_model=_unset_if(request.coarse_model, ""),
        iterations=iterations_from_interface(request.iterations),
        tolerance_position=_unset_if(request.tolerance_position, 0.0),
        tolerance_angle=_unset_if(request.tolerance_angle, 0.0),
        deadline=_unset_if(request.deadline, 0.0),
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
    response.update_position = [float(v) for v in outcome.update_position]
    response.update_angle = [float(v) for v in outcome.update_angle]
    for name in OUTCOME_FIELDS:
        setattr(response, name, getattr(outcome, name))
    response.message = (
        f"{outcome.model} ({outcome.schedule}): {len(outcome.trajectories)} sequence(s), "
        f"{outcome.iterations_used} iteration(s), stop: {outcome.stop_reason}"
    )
    return response
