"""The analytical (kinematic) coarse pushing model C of ISRR 2019, Eq 5-8.

For a control u (m/s) held for dt (s) the pusher moves along the straight path
``p -> p + u dt``. For each object the path is intersected with the object inflated by
the pusher radius (a disc of radius r_o + r_p for a cylinder, a rounded rectangle for a
box, in the box's frame, the union of the inflated convex parts for an ellipse (its 48-gon)
or a polygon: :func:`parapush.physics.planar_geometry.segment_outline_entry`); the first
entry at path fraction s gives the contact fraction

    p_c = d_contact / (d_contact + d_free) = 1 - s          (Eq 6; 0 without a hit)

(``p_c = 1`` when the pusher starts touching the object and moves into it). Then

    q_obj  <- q_obj + [u_x, u_y, omega] * p_c * dt          (Eq 5)
    omega   = K_omega * |u| sin(theta) / |r_c|              (Eq 6)
    qdot_obj <- [u_x, u_y, omega] if p_c > 0 else unchanged  (Eq 7)
    q_p <- q_p + u dt,  qdot_p <- u                          (Eq 8)

where r_c is the vector from the contact point (the object's boundary point nearest to the
pusher position of first contact) to the object's centre (its pose: the body frame's
origin, which for a polygon need not be its centroid) and theta the signed angle from u to
r_c, so ``|u| sin(theta) / |r_c| = cross(u, r_c) / |r_c|^2``: pushing +x below the centre
turns the object counter-clockwise. The authors' code uses K_omega = 0.1 and clips omega
to +-0.05 rad/s (``angular_speed_limit``; no clip by default, as in the paper).

Several objects (a deliberate simplification; the journal paper notes the analytical
model is poor there): every object whose inflated shape the pusher path enters is
pushed independently from its own entry on, i.e. in path order, each by the pusher
alone. Objects pushed into other objects, obstacles or the pusher are then separated by
:class:`parapush.physics.projection.FeasibilityProjector` (on by default), which
approximates chain pushes by minimum translations. Every object hit head-on ends touching
the final pusher, so objects lined up exactly behind each other end up at the same place
before the projection, which then separates them along an arbitrary direction: one more
reason why this model is poor for chains.

``rotation="limit_surface"`` replaces Eq 5-7's motion of a pushed object (same entry, same
p_c, same pusher, same multi-object handling and projection) by quasi-static pushing with an
ellipsoidal limit surface of a uniform pressure over the object's outline
(:mod:`parapush.physics.limit_surface`): from the pusher's entry on, the object's centroid
moves and the object turns about it with the motion cone's sticking or sliding twist for the
scene's pusher friction, in substeps of at most ``substep_travel`` of pusher travel that
follow the contact point and normal as the object turns; its twist becomes the last
substep's pose rate (0 where the pusher has slid off). ``rotation_gain`` and
``angular_speed_limit`` apply to ``"isrr"`` only.
"""

from __future__ import annotations

import math

import numpy as np

from parapush.physics.limit_surface import SUBSTEP_TRAVEL, push_outline
from parapush.physics.planar_geometry import closest_point_on_outline, cross, segment_outline_entry
from parapush.physics.projection import FeasibilityProjector
from parapush.physics.propagator import check_batch
from parapush.scene import Scene, StateLayout
from parapush.validation import check_non_negative, check_positive

ROTATIONS = ("isrr", "limit_surface")
"""How :class:`AnalyticalCoarseModel` moves a pushed object (its ``rotation`` argument)."""


class AnalyticalCoarseModel:
    """Kinematic pushing model C(x, u, dt); a :class:`~parapush.physics.propagator.Propagator`.

    Args:
        scene: the scene (object shapes and the pusher radius are used).
        rotation_gain: K_omega of Eq 6, dimensionless, >= 0 (authors' code: 0.1).
        angular_speed_limit: |omega| is clipped to this, rad/s (authors' code: 0.05).
        resolve_overlaps: project the result with a
            :class:`~parapush.physics.projection.FeasibilityProjector` so that pushed objects
            do not end inside each other, obstacles or the pusher.
        rotation: how a pushed object moves: ``"isrr"`` (Eq 5-7: at the pusher's velocity,
            turning with K_omega) or ``"limit_surface"`` (quasi-static pushing, see the module
            docstring).
        substep_travel: ``"limit_surface"``: the largest pusher travel per substep, m (> 0).

    Attributes:
        layout: the scene's state layout.
    """

    def __init__(
        self, scene: Scene, *, rotation_gain: float = 0.1, angular_speed_limit: float = math.inf,
        resolve_overlaps: bool = True, rotation: str = "isrr", substep_travel: float = SUBSTEP_TRAVEL,
    ) -> None:
        if not isinstance(scene, Scene):
            raise TypeError(f"scene: expected a parapush.scene.Scene, got {type(scene).__name__}")
        check_non_negative("rotation_gain", rotation_gain)
        if angular_speed_limit != math.inf:  # inf: no limit
            check_positive("angular_speed_limit", angular_speed_limit)
        if rotation not in ROTATIONS:
            raise ValueError(f"rotation: expected one of {ROTATIONS}, got {rotation!r}")
        check_positive("substep_travel", substep_travel)
        self.scene = scene
        self.layout: StateLayout = scene.layout
        self.rotation_gain = float(rotation_gain)
        self.angular_speed_limit = float(angular_speed_limit)
        self.rotation = rotation
        self.substep_travel = float(substep_travel)
        self.projector = FeasibilityProjector(scene) if resolve_overlaps else None

    def contact_fractions(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """p_c of Eq 6 for every object: (M, n) in [0, 1]."""
        states, controls, durations = check_batch(self.layout, states, controls, durations)
        return 1.0 - np.minimum(self._entries(states, controls, durations), 1.0)

    def _entries(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """(M, n) path fraction of first contact with each object (inf: none)."""
        pusher = states[:, self.layout.pusher_position]
        moves = controls * durations[:, None]
        poses = self.layout.poses(states)
        radius = self.scene.pusher.radius
        entries = np.empty(poses.shape[:2])
        for index, spec in enumerate(self.scene.objects):
            entries[:, index] = segment_outline_entry(
                pusher, moves, poses[:, index, :2], poses[:, index, 2], spec.outline, radius
            )
        return entries

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """Eq 5-8 on a batch. Args and returns as
        :meth:`parapush.physics.propagator.Propagator.propagate`; NaN rows stay NaN."""
        states, controls, durations = check_batch(self.layout, states, controls, durations)
        layout = self.layout
        entries = self._entries(states, controls, durations)
        fractions = 1.0 - np.minimum(entries, 1.0)  # p_c, (M, n)
        pusher = states[:, layout.pusher_position]
        moves = controls * durations[:, None]
        poses = layout.poses(states)
        twists = layout.twists(states)
        new_poses = poses.copy()
        new_twists = twists.copy()
        for index, spec in enumerate(self.scene.objects):
            fraction = fractions[:, index]
            hit = fraction > 0.0
            if not np.any(hit):
                continue
            centres = poses[:, index, :2]
            touch = pusher + np.where(hit, entries[:, index], 0.0)[:, None] * moves  # pusher centre at contact
            if self.rotation == "limit_surface":
                new_poses[hit, index], new_twists[hit, index] = push_outline(
                    touch[hit], controls[hit], fraction[hit] * durations[hit], poses[hit, index], spec.outline,
                    self.scene.pusher.radius, self.scene.pusher.friction, substep_travel=self.substep_travel)
                continue
            if spec.shape == "cylinder":
                towards_centre = centres - touch
                distance = np.linalg.norm(towards_centre, axis=-1, keepdims=True)
                contact = centres - towards_centre / np.where(distance > 0, distance, 1.0) * spec.radius
            else:
                contact = closest_point_on_outline(touch, centres, poses[:, index, 2], spec.outline)
            lever = centres - contact  # r_c
            lever_squared = np.sum(lever * lever, axis=-1)
            with np.errstate(invalid="ignore", divide="ignore"):
                omega = self.rotation_gain * cross(controls, lever) / lever_squared
            omega = np.where(lever_squared > 0.0, omega, 0.0)
            omega = np.clip(omega, -self.angular_speed_limit, self.angular_speed_limit)
            rate = np.concatenate([controls, omega[:, None]], axis=1)  # [u_x, u_y, omega]
            new_poses[hit, index] = poses[hit, index] + rate[hit] * (fraction[hit] * durations[hit])[:, None]
            new_twists[hit, index] = rate[hit]
        result = layout.compose(pusher + moves, new_poses, controls, new_twists)
        result[~np.all(np.isfinite(states), axis=1)] = np.nan
        if self.projector is not None:
            result = self.projector.project(result)
        return result
