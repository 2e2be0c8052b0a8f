"""The network's view of a push: a pusher-centred, rotated frame with sliders in fixed slots.

Inputs (all in the *network frame*: origin at the pusher's centre, x-axis towards the
nearest involved slider, see :mod:`parapush.learning.gating`):

- the action: commanded velocity u' (2, m/s), control duration T (1, s) and the pusher's
  travel u' T (2, m; redundant, but the quasi-static motion is nearly a function of it);
- per slot s = 0..S-1: slider centre (x', y') (m) and cos/sin of its yaw relative to the
  frame (the fine model's cylinder rests on three rim contacts, so yaw is not exactly
  irrelevant).

The involved sliders fill the slots in order of their distance from the pusher; the
remaining slots are *parked* at fixed positions (:data:`PARK_DISTANCE` + s *
:data:`PARK_SPACING`, 0) in the network frame, as the authors park unused sliders, so a
model with S slots serves every scene with 1..S sliders. Sorting by distance makes slot 0
the slider the frame points at, so the first slot always holds the slider being pushed,
whatever the scene's object order.

Outputs per slot (network frame): displacement (dx', dy') m, yaw change dyaw rad, final
velocity (vx', vy') m/s and yaw rate omega rad/s. Parked slots have zero targets.

Object velocities are not inputs: with the trained table friction (1.0) a free slider
stops within v / (mu g) ~ 10 ms and ~0.5 mm, and the pusher's velocity servo follows its
command within a step, so the initial velocities barely change the outcome of a 0.5-2 s
push (the training data contains both resting and moving initial states). This also
keeps the network inside its training distribution when Parareal hands it corrected
states with unusual velocities.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from parapush.learning.gating import involved_sliders
from parapush.learning.geometry import ModelMismatchError, TrainedGeometry
from parapush.scene import wrap_angle

ENCODING_VERSION = 1
"""Bumped whenever the features or outputs change; checkpoints of another version are refused."""

ACTION_INPUTS = ("u_x", "u_y", "duration", "travel_x", "travel_y")
SLOT_INPUTS = ("x", "y", "cos_yaw", "sin_yaw")
SLOT_OUTPUTS = ("dx", "dy", "dyaw", "v_x", "v_y", "omega")

PARK_DISTANCE = 1.0
"""x' of the first parked slot, m: beyond the reach of any push the model is trained on."""

PARK_SPACING = 0.25
"""Spacing of the parked slots along x', m."""

_MIRRORED_INPUTS = {"u_y", "travel_y", "y", "sin_yaw"}
_MIRRORED_OUTPUTS = {"dy", "dyaw", "v_y", "omega"}


@dataclass(frozen=True)
class EncodingSpec:
    """Layout of the network's inputs and outputs.

    Attributes:
        slots: number of slider slots S (= the trained maximum number of sliders), >= 1.
        version: :data:`ENCODING_VERSION` of the code that made the features.
    """

    slots: int
    version: int = ENCODING_VERSION

    def __post_init__(self) -> None:
        if isinstance(self.slots, bool) or not isinstance(self.slots, int) or self.slots < 1:
            raise ValueError(f"slots: expected an integer >= 1, got {self.slots!r}")
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 1:
            raise ValueError(f"version: expected an integer >= 1, got {self.version!r}")

    @property
    def input_names(self) -> tuple[str, ...]:
        slots = tuple(f"slot{slot}_{name}" for slot in range(self.slots) for name in SLOT_INPUTS)
        return ACTION_INPUTS + slots

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(f"slot{slot}_{name}" for slot in range(self.slots) for name in SLOT_OUTPUTS)

    @property
    def input_size(self) -> int:
        return len(ACTION_INPUTS) + len(SLOT_INPUTS) * self.slots

    @property
    def output_size(self) -> int:
        return len(SLOT_OUTPUTS) * self.slots

    @property
    def travel_columns(self) -> np.ndarray:
        """(2,) feature columns of the pusher's travel u' T (its final position in the frame)."""
        return np.array([ACTION_INPUTS.index("travel_x"), ACTION_INPUTS.index("travel_y")])

    @property
    def slot_position_columns(self) -> np.ndarray:
        """(S, 2) feature columns of each slot's (x', y')."""
        first = len(ACTION_INPUTS) + len(SLOT_INPUTS) * np.arange(self.slots)
        return np.stack([first + SLOT_INPUTS.index("x"), first + SLOT_INPUTS.index("y")], axis=1)

    @property
    def displacement_columns(self) -> np.ndarray:
        """(S, 2) output columns of each slot's (dx', dy')."""
        first = len(SLOT_OUTPUTS) * np.arange(self.slots)
        return np.stack([first + SLOT_OUTPUTS.index("dx"), first + SLOT_OUTPUTS.index("dy")], axis=1)

    @property
    def yaw_change_columns(self) -> np.ndarray:
        """(S,) output columns of each slot's dyaw."""
        return len(SLOT_OUTPUTS) * np.arange(self.slots) + SLOT_OUTPUTS.index("dyaw")

    @property
    def parked_positions(self) -> np.ndarray:
        """(S, 2) network-frame positions of parked slots, m."""
        positions = np.zeros((self.slots, 2))
        positions[:, 0] = PARK_DISTANCE + PARK_SPACING * np.arange(self.slots)
        return positions

    def mirror_signs(self) -> tuple[np.ndarray, np.ndarray]:
        """Sign flips (input (F,), output (O,)) that mirror a sample about the frame's x-axis.

        Cylinders pushed on a plane are mirror symmetric, so mirrored samples are valid
        training data; parked slots lie on the axis and are unchanged.
        """
        action = [-1.0 if name in _MIRRORED_INPUTS else 1.0 for name in ACTION_INPUTS]
        slot_inputs = [-1.0 if name in _MIRRORED_INPUTS else 1.0 for name in SLOT_INPUTS]
        slot_outputs = [-1.0 if name in _MIRRORED_OUTPUTS else 1.0 for name in SLOT_OUTPUTS]
        inputs = np.array(action + slot_inputs * self.slots)
        outputs = np.array(slot_outputs * self.slots)
        return inputs, outputs

    def to_dict(self) -> dict[str, Any]:
        return {"slots": self.slots, "version": self.version, "input_names": list(self.input_names),
                "output_names": list(self.output_names)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EncodingSpec:
        try:
            return cls(slots=int(data["slots"]), version=int(data["version"]))
        except KeyError as error:
            raise ModelMismatchError(f"encoding: missing field {error.args[0]!r}") from None

    def check_same(self, other: EncodingSpec, what: str) -> None:
        """Raise :class:`ModelMismatchError` if ``other`` (from ``what``) differs."""
        if other.version != self.version:
            raise ModelMismatchError(
                f"{what}: encoding version {other.version}, this code expects version {self.version}"
            )
        if other.slots != self.slots:
            raise ModelMismatchError(f"{what}: {other.slots} slider slots, expected {self.slots}")


@dataclass(frozen=True)
class EncodedPushes:
    """A batch of pushes in the network's view.

    Attributes:
        features: (M, F) network inputs (SI units, see the module docstring).
        frame_angles: (M,) angle of the network frame's x-axis in the table frame, rad.
        slot_sliders: (M, S) index of the slider in each slot (column of the slider
            arrays), -1 for a parked slot.
        involved: (M, n) bool, which sliders the push can move.
    """

    features: np.ndarray
    frame_angles: np.ndarray
    slot_sliders: np.ndarray
    involved: np.ndarray

    @property
    def gated(self) -> np.ndarray:
        """(M,) bool: rows whose path reaches a slider, i.e. where the network is used."""
        return np.any(self.involved, axis=1)

    @property
    def slot_active(self) -> np.ndarray:
        """(M, S) bool: slots that hold a slider."""
        return self.slot_sliders >= 0


def _rotate(vectors: np.ndarray, cosines: np.ndarray, sines: np.ndarray) -> np.ndarray:
    """Rotate (M, ..., 2) vectors by the per-row angles whose cos/sin are (M,)."""
    shape = (-1,) + (1,) * (vectors.ndim - 2)
    cosines = cosines.reshape(shape)
    sines = sines.reshape(shape)
    x, y = vectors[..., 0], vectors[..., 1]
    return np.stack([cosines * x - sines * y, sines * x + cosines * y], axis=-1)


class PusherFrameEncoder:
    """Maps pushes to network features and network outputs back to slider motions.

    Args:
        spec: the feature layout (its slots = the maximum number of sliders).
        geometry: the trained bodies (radii for the gate).
    """

    def __init__(self, spec: EncodingSpec, geometry: TrainedGeometry) -> None:
        if spec.slots != geometry.max_sliders:
            raise ModelMismatchError(
                f"slots: the encoding has {spec.slots} slots but the geometry allows {geometry.max_sliders} sliders"
            )
        self.spec = spec
        self.geometry = geometry

    def encode(
        self,
        pusher_positions: np.ndarray,
        slider_poses: np.ndarray,
        slider_active: np.ndarray,
        controls: np.ndarray,
        durations: np.ndarray,
    ) -> EncodedPushes:
        """Features of M pushes.

        Args:
            pusher_positions: (M, 2) pusher centres, m, table frame.
            slider_poses: (M, n, 3) slider poses (x m, y m, yaw rad), n <= slots.
            slider_active: (M, n) bool, False for absent sliders (their poses are ignored).
            controls: (M, 2) commanded pusher velocities, m/s, table frame.
            durations: (M,) control durations, s.
        Returns:
            the encoded pushes.
        """
        count, sliders = slider_poses.shape[0], slider_poses.shape[1]
        if sliders > self.spec.slots:
            raise ValueError(f"slider_poses: {sliders} sliders, the encoding has {self.spec.slots} slots")
        travel = controls * durations[:, None]
        positions = slider_poses[..., :2]
        involved = involved_sliders(
            pusher_positions, travel, positions, slider_active,
            self.geometry.pusher_radius, self.geometry.slider_radius,
        )
        relative = positions - pusher_positions[:, None, :]
        distances = np.linalg.norm(relative, axis=-1)
        # order: involved sliders by distance, then the others (active before absent) by distance
        rank = np.where(involved, 0.0, np.where(slider_active, 1.0, 2.0)) * 1e6 + np.where(
            slider_active, distances, 0.0
        )
        order = np.argsort(rank, axis=1, kind="stable")
        nearest = order[:, 0]
        rows = np.arange(count)
        frame_vector = relative[rows, nearest]
        frame_angles = np.arctan2(frame_vector[:, 1], frame_vector[:, 0])
        cosines, sines = np.cos(frame_angles), np.sin(frame_angles)

        slot_sliders = np.full((count, self.spec.slots), -1, dtype=np.int64)
        ordered_involved = np.take_along_axis(involved, order, axis=1)
        slot_sliders[:, :sliders] = np.where(ordered_involved, order, -1)

        local_positions = _rotate(relative, cosines, -sines)
        relative_yaw = slider_poses[..., 2] - frame_angles[:, None]
        slot_features = np.zeros((count, self.spec.slots, len(SLOT_INPUTS)))
        slot_features[:, :, 0:2] = self.spec.parked_positions
        slot_features[:, :, 2] = 1.0
        active_slots = slot_sliders >= 0
        source = np.clip(slot_sliders, 0, None)
        gathered_positions = np.take_along_axis(local_positions, source[..., None], axis=1)
        gathered_yaw = np.take_along_axis(relative_yaw, source, axis=1)
        slot_features[..., 0:2] = np.where(active_slots[..., None], gathered_positions, slot_features[..., 0:2])
        slot_features[..., 2] = np.where(active_slots, np.cos(gathered_yaw), 1.0)
        slot_features[..., 3] = np.where(active_slots, np.sin(gathered_yaw), 0.0)

        local_controls = _rotate(controls, cosines, -sines)
        features = np.concatenate(
            [
                local_controls,
                durations[:, None],
                local_controls * durations[:, None],
                slot_features.reshape(count, -1),
            ],
            axis=1,
        )
        return EncodedPushes(features=features, frame_angles=frame_angles, slot_sliders=slot_sliders,
                             involved=involved)

    def targets(
        self,
        encoded: EncodedPushes,
        slider_poses: np.ndarray,
        next_slider_poses: np.ndarray,
        next_slider_twists: np.ndarray,
    ) -> np.ndarray:
        """Network targets of M observed pushes (zeros in parked slots).

        Args:
            encoded: :meth:`encode` of the pushes.
            slider_poses: (M, n, 3) poses before, table frame.
            next_slider_poses: (M, n, 3) poses after.
            next_slider_twists: (M, n, 3) twists after (m/s, m/s, rad/s).
        Returns:
            (M, O) targets in the network frame.
        """
        count = slider_poses.shape[0]
        cosines, sines = np.cos(encoded.frame_angles), np.sin(encoded.frame_angles)
        displacement = _rotate(next_slider_poses[..., :2] - slider_poses[..., :2], cosines, -sines)
        yaw_change = wrap_angle(next_slider_poses[..., 2] - slider_poses[..., 2])
        velocity = _rotate(next_slider_twists[..., :2], cosines, -sines)
        per_slider = np.concatenate(
            [displacement, yaw_change[..., None], velocity, next_slider_twists[..., 2:3]], axis=-1
        )
        active = encoded.slot_active
        source = np.clip(encoded.slot_sliders, 0, None)
        gathered = np.take_along_axis(per_slider, source[..., None], axis=1)
        targets = np.where(active[..., None], gathered, 0.0)
        return targets.reshape(count, -1)

    def decode(
        self, encoded: EncodedPushes, outputs: np.ndarray, slider_poses: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Slider poses and twists after the pushes, from network outputs.

        Involved sliders move as the network says; the others keep their pose and get a
        zero twist (the authors' rule for the gated-off case).

        Args:
            encoded: :meth:`encode` of the pushes.
            outputs: (M, O) network outputs (network frame, SI units).
            slider_poses: (M, n, 3) poses before the pushes.
        Returns:
            (next poses (M, n, 3), next twists (M, n, 3)) in the table frame.
        """
        count, sliders = slider_poses.shape[0], slider_poses.shape[1]
        if sliders > self.spec.slots:
            raise ValueError(f"slider_poses: {sliders} sliders, the encoding has {self.spec.slots} slots")
        per_slot = outputs.reshape(count, self.spec.slots, len(SLOT_OUTPUTS))
        cosines, sines = np.cos(encoded.frame_angles), np.sin(encoded.frame_angles)
        displacement = _rotate(per_slot[..., 0:2], cosines, sines)
        velocity = _rotate(per_slot[..., 3:5], cosines, sines)
        next_poses = slider_poses.copy()
        next_twists = np.zeros_like(slider_poses)
        for slot in range(self.spec.slots):
            rows = np.flatnonzero(encoded.slot_sliders[:, slot] >= 0)
            if rows.size == 0:
                continue
            columns = encoded.slot_sliders[rows, slot]
            next_poses[rows, columns, 0:2] += displacement[rows, slot]
            next_poses[rows, columns, 2] += per_slot[rows, slot, 2]
            next_twists[rows, columns, 0:2] = velocity[rows, slot]
            next_twists[rows, columns, 2] = per_slot[rows, slot, 5]
        return next_poses, next_twists
