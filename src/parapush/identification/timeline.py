"""Push records from a recorded run: a stream of observed states and the controls executed.

A recording (e.g. the demo's ``recording.mcap``: the state estimator's ``scene_state`` and
the MPC's ``controls``) gives observed states at the mocap rate and, for each control
sequence, the time it was sent. Each sequence becomes one :class:`PushRecord` whose states
are the observed ones nearest to the control boundaries (start, start + d1, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parapush.identification.identifier import PushRecord


@dataclass(frozen=True)
class SkippedPush:
    """A control sequence that gave no record, and why."""

    start: float
    reason: str


def push_records_from_timeline(
    state_times: np.ndarray,
    states: np.ndarray,
    sequences: list[tuple[float, np.ndarray, np.ndarray]],
    *,
    tolerance: float = 0.02,
) -> tuple[list[PushRecord], list[SkippedPush]]:
    """One record per executed control sequence.

    Args:
        state_times: (S,) s, increasing: when each observed state held (its stamp).
        states: (S, D) observed states (non-finite rows: not observed then).
        sequences: (start s, controls (N, 2) m/s, durations (N,) s) per sequence sent;
            empty sequences (stop commands) are ignored.
        tolerance: s, how far the nearest observed state may be from a control boundary.
    Returns:
        (records, skipped): the records, and the sequences that gave none with the reason
        (a boundary outside the recording, or no observed state within ``tolerance``).
    """
    state_times = np.asarray(state_times, dtype=float)
    states = np.asarray(states, dtype=float)
    if state_times.ndim != 1 or states.ndim != 2 or states.shape[0] != state_times.shape[0]:
        raise ValueError(f"states: expected (S, D) with S = len(state_times), got {states.shape} and "
                         f"{state_times.shape}")
    if state_times.size and np.any(np.diff(state_times) < 0.0):
        raise ValueError("state_times: must be non-decreasing")
    if not (isinstance(tolerance, (int, float)) and tolerance > 0.0):
        raise ValueError(f"tolerance: expected a number > 0 s, got {tolerance!r}")
    observed = np.all(np.isfinite(states), axis=1)
    times, rows = state_times[observed], states[observed]
    records: list[PushRecord] = []
    skipped: list[SkippedPush] = []
    for start, controls, durations in sequences:
        controls = np.asarray(controls, dtype=float).reshape(-1, 2)
        durations = np.asarray(durations, dtype=float).reshape(-1)
        if controls.shape[0] == 0:
            continue
        boundaries = start + np.concatenate([[0.0], np.cumsum(durations)])
        if times.size == 0 or boundaries[0] < times[0] - tolerance or boundaries[-1] > times[-1] + tolerance:
            skipped.append(SkippedPush(start, "outside the recorded states"))
            continue
        nearest = np.clip(np.searchsorted(times, boundaries), 1, times.size - 1)
        nearest = np.where(np.abs(times[nearest - 1] - boundaries) <= np.abs(times[nearest] - boundaries),
                           nearest - 1, nearest)
        gaps = np.abs(times[nearest] - boundaries)
        if np.any(gaps > tolerance):
            skipped.append(SkippedPush(start, f"no observed state within {tolerance} s of a control boundary "
                                              f"(nearest {gaps.max():.3f} s away)"))
            continue
        try:
            records.append(PushRecord(rows[nearest], controls, durations))
        except ValueError as error:
            skipped.append(SkippedPush(start, str(error)))
    return records, skipped
