"""Task-informed fidelity management of the fine model (Tallavajhula et al., "task-informed
fidelity management"): simulate only the objects a push can reach.

Each object of each segment (Parareal slice) gets a level:

- :data:`HIGH`: dynamic and colliding (the full model's physics);
- :data:`MEDIUM`: static but colliding: it floats exactly in place without its table
  contacts (:meth:`parapush.physics.fine.FineModel.fidelity_model`); the pusher and the
  dynamic objects still collide with it, so a contact moves it and is detected;
- :data:`LOW`: static, no contacts: parked far from everything for the segment and put back
  afterwards (the paper's cache and restore).

**The signal is pure** (:func:`fidelity_levels`): the levels of a segment are a function of
its input (x_n, u_n, duration) only, so a managed fine model is still a function F(x, u, dt)
and Parareal's exactness holds (K = N equals the managed serial fine solution bit for bit).
An object is HIGH if it moves at the start, if the pusher's swept path (start to start + u T)
comes within its bounding disc + ``margin``, or, closed over chains as
:func:`parapush.learning.gating.involved_sliders` closes the gate, if a HIGH object can reach
it. Reach is bounded by a travel budget: an object the pusher's path touches can move at
most the pusher's travel |u| T minus the gap the pusher must first close (its start
distance to the object's bounding disc) plus ``margin``, and it moves along the push: its
bounding disc sweeps a corridor from its centre along u over its budget, straying sideways
by ``margin`` + :data:`PUSH_SPREAD` times the distance travelled. An object moving at the
start but not pushed may move its speed times the duration plus the pusher's travel plus
``margin`` in any direction (a disc). An object reached by another gets the other's budget
minus the gap between their bounding discs (a shortest-path closure) and sweeps its own
corridor along the push. Static objects within :data:`MEDIUM_BAND` margins of a HIGH
object's sweep or of the path are MEDIUM, the rest LOW. The corridor is a likely bound, not
a hard one (a chain can deflect sideways): an object outside it that does get reached is
static, so the contact is detected and the segment re-run (below); ``bench/fidelity_management.py``
counts these re-runs (0 of 800 segments at 8, 16 and 32 objects).

**Never silently wrong** (:class:`ManagedFineBackend`): after each managed segment a static
object that moved at all (a contact touched it), a LOW object whose inflated footprint a
dynamic body's path or the pusher's final position entered, or an unstable row, makes the
segment run again at full fidelity; the re-runs are counted (:class:`FidelityCounts`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import partial

import numpy as np

from parapush.lifecycle import Closeable
from parapush.physics.fine import FineModel
from parapush.physics.planar_geometry import segment_point_distance
from parapush.physics.propagator import check_batch
from parapush.scene import Scene
from parapush.validation import check_fields, check_integer

LOW, MEDIUM, HIGH = 0, 1, 2
"""Fidelity levels: static without contacts, static colliding, dynamic colliding."""

FIDELITIES = ("auto", "full", "task_informed")
"""``auto``: ``task_informed`` for scenes of at least :data:`AUTO_MIN_OBJECTS` objects, else ``full``."""
AUTO_MIN_OBJECTS = 8
"""The crossover measured by ``bench/fidelity_management.py``: management cost the same as full
fidelity at 1 and 4 objects (0.99x, 1.08x) and paid from 8 objects on (2.5x / 3.2x / 3.2x at
8 / 16 / 32)."""


def resolve_fidelity(fidelity: str, object_count: int) -> str:
    """``"full"`` or ``"task_informed"`` for a scene of ``object_count`` objects."""
    if fidelity not in FIDELITIES:
        raise ValueError(f"fidelity: expected one of {list(FIDELITIES)}, got {fidelity!r}")
    if fidelity != "auto":
        return fidelity
    return "task_informed" if object_count >= AUTO_MIN_OBJECTS else "full"
"""Values of ``ModelConfig.fidelity``."""

FIDELITY_MARGIN = 0.01
"""Default inflation of the pusher's swept path and of the reach between objects, m."""

MOVING_SPEED = 1.0e-3
"""An object whose centre speed (or angular speed times its bounding radius) exceeds this at
the start of a segment is dynamic, m/s. Slower objects are held static with zero velocity
(on the table's friction of ~1 they would stop within 0.1 um)."""

PUSH_SPREAD = 0.5
"""How far a pushed object may stray sideways from the push line per metre it travels (an
object pushed off-centre turns away from the line); objects outside that corridor are static
(MEDIUM), and a contact with them makes the segment run again at full fidelity."""

MEDIUM_BAND = 4.0
"""Static objects within this many margins beyond the HIGH reach are MEDIUM, the rest LOW."""

PARKING_DISTANCE = 1000.0
"""LOW objects are parked at (PARKING_DISTANCE + i, PARKING_DISTANCE) m for the segment."""


def bounding_radii(scene: Scene) -> np.ndarray:
    """(n,) radius of each object's bounding disc, m."""
    return np.array([spec.bounding_radius for spec in scene.objects])


def fidelity_levels(
    scene: Scene, states: np.ndarray, controls: np.ndarray, durations: np.ndarray, margin: float
) -> np.ndarray:
    """The level of every object in every segment, from the segment's input only.

    Args:
        scene: the scene (object shapes, pusher radius).
        states: (M, D) segment start states; a non-finite row gets every object HIGH.
        controls: (M, 2) pusher velocities, m/s.
        durations: (M,) s.
        margin: inflation of the swept path and of the reach between objects, m (> 0).
    Returns:
        (M, n) int8 levels (:data:`LOW`, :data:`MEDIUM`, :data:`HIGH`).
    """
    layout = scene.layout
    states = np.asarray(states, dtype=float)
    count = layout.object_count
    radii = bounding_radii(scene)
    finite = np.all(np.isfinite(states), axis=1)
    safe = np.where(finite[:, None], states, 0.0)
    poses = layout.poses(safe)  # (M, n, 3)
    twists = layout.twists(safe)
    centres = poses[..., :2]
    speeds = np.linalg.norm(twists[..., :2], axis=-1) + np.abs(twists[..., 2]) * radii
    moving = speeds > MOVING_SPEED
    pusher = safe[:, layout.pusher_position]
    durations = np.asarray(durations, dtype=float)
    travel = np.asarray(controls, dtype=float) * durations[:, None]
    length = np.linalg.norm(travel, axis=-1)
    heading = np.divide(travel, length[:, None], out=np.zeros_like(travel), where=length[:, None] > 0.0)
    path_distance = segment_point_distance(pusher[:, None], (pusher + travel)[:, None], centres)  # (M, n)
    path_gap = path_distance - scene.pusher.radius - radii[None, :]
    start_gap = np.maximum(np.linalg.norm(centres - pusher[:, None, :], axis=-1) - scene.pusher.radius - radii, 0.0)
    # budget: how far (m) an object may move in the segment, an upper bound; -inf: it cannot move
    pushed_budget = np.where(path_gap < margin, length[:, None] - start_gap + margin, -np.inf)
    drift_budget = np.where(moving, length[:, None] + speeds * durations[:, None] + margin, -np.inf)
    budget = np.maximum(pushed_budget, drift_budget)
    # pushed objects sweep a corridor along the push, objects only drifting a disc of their budget
    drifting = moving & ~np.isfinite(pushed_budget)
    separation = np.linalg.norm(centres[:, :, None, :] - centres[:, None, :, :], axis=-1)
    contact = radii[None, :, None] + radii[None, None, :]
    gaps = np.maximum(separation - contact, 0.0)  # (M, i, j)
    rows = centres.shape[0]
    for _ in range(count):
        clearance, lateral = _reach(centres, heading, contact, budget, drifting, margin)
        offered = np.where((clearance < lateral) & ~np.eye(count, dtype=bool), budget[:, :, None] - gaps, -np.inf)
        passed = np.max(offered, axis=1)
        passed = np.where(passed > 0.0, passed, -np.inf)
        source = np.argmax(offered, axis=1)
        grown = np.maximum(budget, passed)
        if np.array_equal(grown, budget):
            break
        newly = grown > budget
        drifting = np.where(newly, drifting[np.arange(rows)[:, None], source], drifting)
        budget = grown
    high = np.isfinite(budget)
    band = MEDIUM_BAND * margin
    clearance, lateral = _reach(centres, heading, contact, budget, drifting, margin)
    close = (path_gap < margin + band) | np.any(high[:, :, None] & (clearance < lateral + band), axis=1)
    levels = np.where(high, HIGH, np.where(close, MEDIUM, LOW)).astype(np.int8)
    levels[~finite] = HIGH
    return levels


def _reach(centres: np.ndarray, heading: np.ndarray, contact: np.ndarray, budget: np.ndarray,
           drifting: np.ndarray, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """Clearance (M, i, j) between object j and the path object i may sweep, and the lateral
    allowance (M, i, j) within which j counts as reached, m.

    A pushed object i moves its bounding disc from its centre along the push ``heading``
    (M, 2) over its ``budget`` (M, n), straying sideways by up to ``margin`` +
    :data:`PUSH_SPREAD` times the distance travelled (an object pushed off-centre turns
    away from the push line); a ``drifting`` object (M, n), moving at the start but not
    pushed, sweeps the disc of its budget. ``contact`` (1, n, n): sums of bounding radii.
    Objects that cannot move (budget -inf) sweep nothing (clearance inf).
    """
    movable = np.isfinite(budget)
    along = np.where(movable & ~drifting, budget, 0.0)
    relative = centres[:, None, :, :] - centres[:, :, None, :]  # (M, i, j, 2): from i to j
    travelled = np.clip(np.einsum("mijk,mk->mij", relative, heading), 0.0, along[:, :, None])
    offset = relative - travelled[..., None] * heading[:, None, None, :]
    clearance = np.where(movable[:, :, None], np.maximum(np.linalg.norm(offset, axis=-1) - contact, 0.0), np.inf)
    lateral = np.where(drifting[:, :, None], budget[:, :, None], margin + PUSH_SPREAD * travelled)
    return clearance, lateral


@dataclass(frozen=True)
class FidelityCounts:
    """What a :class:`ManagedFineBackend` did so far.

    Attributes:
        segments: segments simulated.
        managed: segments simulated with at least one static object.
        static_objects: object-segments held static (MEDIUM or LOW).
        reruns: managed segments run again at full fidelity (a static object should have moved).
    """

    segments: int = 0
    managed: int = 0
    static_objects: int = 0
    reruns: int = 0

    def __post_init__(self) -> None:
        check_fields(self, partial(check_integer, minimum=0), "segments", "managed", "static_objects", "reruns")

    def __sub__(self, other: FidelityCounts) -> FidelityCounts:
        return FidelityCounts(self.segments - other.segments, self.managed - other.managed,
                              self.static_objects - other.static_objects, self.reruns - other.reruns)


class ManagedFineBackend(Closeable):
    """A fine backend with task-informed fidelity management around another backend.

    Args:
        backend: the backend that simulates (serial, threads, processes); it must accept
            ``dynamic=`` (every backend of :mod:`parapush.physics.backends` does).
        fine_model: the fine model (for the scene).
        margin: the signal's inflation, m (:func:`fidelity_levels`).

    Attributes:
        workers: the wrapped backend's.
        margin: the signal's inflation, m.
        layout: the state layout.
        fine_model: the fine model.
        backend: the wrapped backend (full fidelity).
        counts: :class:`FidelityCounts` since construction.
    """

    def __init__(self, backend: object, fine_model: FineModel, *, margin: float = FIDELITY_MARGIN) -> None:
        if not isinstance(fine_model, FineModel):
            raise TypeError(f"fine_model: expected FineModel, got {type(fine_model).__name__}")
        if getattr(backend, "layout", fine_model.layout) != fine_model.layout:
            raise ValueError("backend: simulates another scene than fine_model")
        if not (isinstance(margin, (int, float)) and 0.0 < margin <= 1.0):
            raise ValueError(f"margin: expected a value in (0, 1] m, got {margin!r}")
        self.margin = float(margin)
        self.backend = backend
        self.fine_model = fine_model
        self.layout = fine_model.layout
        self.workers = int(getattr(backend, "workers", 1))
        self.counts = FidelityCounts()
        self._counts_lock = threading.Lock()
        self._radii = bounding_radii(fine_model.scene)

    def levels(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """(M, n) :func:`fidelity_levels` with :attr:`margin`."""
        return fidelity_levels(self.fine_model.scene, states, controls, durations, self.margin)

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """As :meth:`parapush.physics.fine.FineModel.propagate` with static objects where the
        signal allows; a segment whose static object should have moved is run again at full
        fidelity."""
        states, controls, durations = check_batch(self.layout, states, controls, durations)
        levels = self.levels(states, controls, durations)
        prepared = self._prepare(states, levels)
        result = self.backend.propagate(prepared, controls, durations, dynamic=levels == HIGH)
        rerun = self._violations(prepared, result, states, levels)
        restored = self._restore(result, states, levels)
        rows = np.flatnonzero(rerun)
        if rows.size:
            restored[rows] = self.backend.propagate(states[rows], controls[rows], durations[rows])
        static = levels != HIGH
        with self._counts_lock:
            self.counts = FidelityCounts(
                self.counts.segments + states.shape[0], self.counts.managed + int(np.any(static, axis=1).sum()),
                self.counts.static_objects + int(static.sum()), self.counts.reruns + int(rows.size))
        return restored

    def _prepare(self, states: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """Static objects at rest; LOW objects parked far from everything."""
        layout = self.layout
        prepared = states.copy()
        poses = layout.poses(prepared)
        twists = layout.twists(prepared)
        twists[levels != HIGH] = 0.0
        parking = PARKING_DISTANCE + np.arange(layout.object_count, dtype=float)
        low = levels == LOW
        poses[..., 0] = np.where(low, parking[None, :], poses[..., 0])
        poses[..., 1] = np.where(low, PARKING_DISTANCE, poses[..., 1])
        prepared[:, layout.object_poses] = poses.reshape(states.shape[0], -1)
        prepared[:, layout.object_twists] = twists.reshape(states.shape[0], -1)
        return prepared

    def _restore(self, result: np.ndarray, states: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """LOW objects back at their start pose (at rest, as they were simulated)."""
        layout = self.layout
        restored = result.copy()
        poses = layout.poses(restored)
        low = levels == LOW
        poses[low] = layout.poses(states)[low]
        restored[:, layout.object_poses] = poses.reshape(states.shape[0], -1)
        return restored

    def _violations(
        self, prepared: np.ndarray, result: np.ndarray, states: np.ndarray, levels: np.ndarray
    ) -> np.ndarray:
        """(M,) bool: segments that must run again at full fidelity."""
        layout = self.layout
        static = levels != HIGH
        unstable = ~np.all(np.isfinite(result), axis=1) & np.all(np.isfinite(states), axis=1)
        moved_pose = np.any(layout.poses(result) != layout.poses(prepared), axis=-1)
        moved_twist = np.any(layout.twists(result) != layout.twists(prepared), axis=-1)
        touched = np.any(static & (moved_pose | moved_twist), axis=1)
        # LOW objects: did the pusher or a dynamic object come near (start -> end of the segment)?
        margin = self.margin
        low = levels == LOW
        finite = np.where(np.all(np.isfinite(result), axis=1)[:, None], result, states)
        start = layout.poses(states)[..., :2]
        end = layout.poses(finite)[..., :2]
        count = layout.object_count
        entered = np.zeros(states.shape[0], dtype=bool)
        for index in range(count):
            rows = np.any(low, axis=1) & (levels[:, index] == HIGH)
            if not np.any(rows):
                continue
            distance = segment_point_distance(start[rows, index, None], end[rows, index, None], start[rows])
            entered[rows] |= np.any(low[rows] & (distance < self._radii[index] + self._radii + margin), axis=1)
        pusher_end = finite[:, layout.pusher_position][:, None, :]
        pusher_distance = np.linalg.norm(start - pusher_end, axis=-1)
        entered |= np.any(low & (pusher_distance < self.fine_model.scene.pusher.radius + self._radii + margin),
                          axis=1)
        return touched | entered | unstable

    def close(self) -> None:
        """Close the wrapped backend; idempotent."""
        self.backend.close()


__all__ = [
    "AUTO_MIN_OBJECTS", "FIDELITIES", "FIDELITY_MARGIN", "HIGH", "LOW", "MEDIUM", "FidelityCounts",
    "ManagedFineBackend", "bounding_radii", "fidelity_levels", "resolve_fidelity",
]
