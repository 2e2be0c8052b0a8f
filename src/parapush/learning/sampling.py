"""Random valid pushes (initial state + action) for training the learned coarse model.

The distribution follows the authors' training data (authors-code-facts.md, "Learned
coarse model as coded"), extended to 1..S sliders and to several control durations:

- slider count k drawn with ``slider_count_weights``; absent sliders are padding;
- the first slider lies ahead of the pusher at a surface gap U(0, ``first_gap_max``)
  (the authors: x in U(r_p + r_s, r_p + r_s + 0.1)); every further slider lies near a
  randomly chosen placed one (gap U(0, ``neighbour_gap_max``), random bearing), so chains
  and clusters occur; yaw U(-pi, pi);
- with probability ``touching_fraction`` each of these gaps is instead drawn from
  ``touching_gap_range`` (bodies touching, up to a slight soft-contact overlap): in a
  control sequence every push after the first usually starts in contact, a state the
  uniform gaps would almost never produce; bodies never overlap by more than
  ``-touching_gap_range[0]``;
- pusher speed U(0, ``max_speed``); direction relative to the bearing of the nearest
  slider: 40 % in [0, 90] deg, 20 % "backward" in [90, 270], 40 % in [270, 360];
- duration: ``nominal_duration`` (1 s, the journal's) with probability
  ``nominal_duration_fraction``, otherwise U(``duration_range``) in whole milliseconds;
- contact control: each push is drawn to make contact (the pusher's path overlaps a
  slider, :func:`parapush.learning.gating.path_contacts`) with probability
  ``contact_fraction`` and to miss every slider otherwise; actions are redrawn until the
  push is of the wanted kind;
- a fraction ``moving_fraction`` of initial states has random pusher and slider velocities
  (as Parareal's intermediate states have), the rest starts at rest;
- the whole configuration is rotated by U(-pi, pi) and shifted by
  U(-``placement_half_extent``, +) in x and y, so the data covers the table frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from parapush.learning.gating import path_contacts
from parapush.learning.geometry import TrainedGeometry
from parapush.settings import check_settings, setting


def _check_weights(weights: tuple[float, ...], name: str) -> None:
    if len(weights) == 0 or any(weight < 0 for weight in weights):
        raise ValueError(f"{name}: expected non-negative finite weights, got {weights!r}")
    if sum(weights) <= 0:
        raise ValueError(f"{name}: the weights must not all be zero, got {weights!r}")


@dataclass(frozen=True)
class PushSamplingConfig:
    """Distribution of the training pushes (see the module docstring; each field's meaning,
    unit and range: its :func:`setting`; the weights and (low, high) pairs are checked further
    in ``__post_init__``)."""

    slider_count_weights: tuple[float, ...] = setting(
        (0.25, 0.25, 0.25, 0.25),
        "relative probability of 1, 2, ... sliders (non-negative, not all zero); its length is the maximum "
        "slider count", kind=tuple,
    )
    contact_fraction: float = setting(0.8, "probability that a push makes contact", minimum=0.0, maximum=1.0)
    max_speed: float = setting(0.1, "largest pusher speed", unit="m/s", above=0.0)
    direction_weights: tuple[float, float, float] = setting(
        (0.4, 0.2, 0.4),
        "probabilities of the direction sectors [0, 90], [90, 270] and [270, 360] deg relative to the bearing of "
        "the nearest slider (non-negative, not all zero)", kind=tuple, lengths=(3,),
    )
    nominal_duration: float = setting(1.0, "the usual control duration", unit="s", above=0.0)
    nominal_duration_fraction: float = setting(0.5, "probability of nominal_duration", minimum=0.0, maximum=1.0)
    duration_range: tuple[float, float] = setting(
        (0.5, 2.0), "(low, high) of the other durations, 0 < low <= high", kind=tuple, unit="s", lengths=(2,)
    )
    duration_quantum: float = setting(0.001, "durations are multiples of this (the fine timestep)", unit="s", above=0.0)
    first_gap_max: float = setting(0.1, "largest gap from the pusher to the first slider", unit="m", above=0.0)
    neighbour_gap_max: float = setting(0.08, "largest gap from a further slider to its anchor", unit="m", above=0.0)
    touching_fraction: float = setting(0.3, "probability of a touching gap", minimum=0.0, maximum=1.0)
    touching_gap_range: tuple[float, float] = setting(
        (-3.0e-4, 2.0e-3), "(low, high) of touching gaps, -1e-3 < low <= high (low < 0: overlap)", kind=tuple,
        unit="m", lengths=(2,),
    )
    moving_fraction: float = setting(0.5, "fraction of initial states with random velocities", minimum=0.0, maximum=1.0)
    max_initial_speed: float = setting(0.1, "largest initial speed of moving states", unit="m/s", above=0.0)
    max_initial_spin: float = setting(2.0, "largest initial slider yaw rate of moving states", unit="rad/s", above=0.0)
    placement_half_extent: float = setting(0.2, "half side of the square the pusher is placed in", unit="m", above=0.0)
    max_attempts: int = setting(1000, "placements tried per push before giving up", minimum=1)

    def __post_init__(self) -> None:
        check_settings(self)
        _check_weights(self.slider_count_weights, "slider_count_weights")
        _check_weights(self.direction_weights, "direction_weights")
        touching = self.touching_gap_range
        if not -1e-3 < touching[0] <= touching[1]:
            raise ValueError(f"touching_gap_range: expected (low, high) with -1e-3 < low <= high, got {touching!r}")
        low_high = self.duration_range
        if not 0 < low_high[0] <= low_high[1]:
            raise ValueError(f"duration_range: expected (low, high) with 0 < low <= high, got {low_high!r}")
        if not low_high[0] <= self.nominal_duration <= low_high[1]:
            raise ValueError(
                f"nominal_duration: {self.nominal_duration} s lies outside duration_range {low_high}"
            )

    @property
    def max_sliders(self) -> int:
        return len(self.slider_count_weights)


@dataclass(frozen=True)
class PushSamples:
    """M pushes with up to S sliders each (arrays padded to S; padding is zeros).

    Attributes:
        pusher_positions: (M, 2) m.
        pusher_velocities: (M, 2) m/s.
        slider_poses: (M, S, 3) (x m, y m, yaw rad).
        slider_twists: (M, S, 3) (m/s, m/s, rad/s).
        slider_counts: (M,) int, sliders present (the first ``slider_counts`` columns).
        controls: (M, 2) commanded pusher velocities, m/s.
        durations: (M,) s.
        planned_contact: (M,) bool, whether the pusher's path overlaps a slider.
    """

    pusher_positions: np.ndarray
    pusher_velocities: np.ndarray
    slider_poses: np.ndarray
    slider_twists: np.ndarray
    slider_counts: np.ndarray
    controls: np.ndarray
    durations: np.ndarray
    planned_contact: np.ndarray

    def __len__(self) -> int:
        return int(self.controls.shape[0])

    @property
    def slider_active(self) -> np.ndarray:
        """(M, S) bool: which columns hold a slider."""
        return np.arange(self.slider_poses.shape[1])[None, :] < self.slider_counts[:, None]


class PushSampler:
    """Draws :class:`PushSamples` for a trained geometry.

    Args:
        config: the distribution.
        geometry: the bodies (radii); ``geometry.max_sliders`` must equal the length of
            ``config.slider_count_weights``.
    """

    def __init__(self, config: PushSamplingConfig, geometry: TrainedGeometry) -> None:
        if config.max_sliders != geometry.max_sliders:
            raise ValueError(
                f"slider_count_weights: {config.max_sliders} weights for a geometry of {geometry.max_sliders} sliders"
            )
        self.config = config
        self.geometry = geometry

    def sample(self, count: int, rng: np.random.Generator) -> PushSamples:
        """Draw ``count`` pushes with ``rng`` (deterministic for a seeded generator)."""
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ValueError(f"count: expected an integer >= 0, got {count!r}")
        config = self.config
        slots = config.max_sliders
        weights = np.asarray(config.slider_count_weights, dtype=float)
        counts = rng.choice(np.arange(1, slots + 1), size=count, p=weights / weights.sum())
        wants_contact = rng.random(count) < config.contact_fraction
        slider_poses = np.zeros((count, slots, 3))
        controls = np.zeros((count, 2))
        durations = np.zeros(count)
        for row in range(count):
            positions, control, duration = self._push(int(counts[row]), bool(wants_contact[row]), rng)
            slider_poses[row, : counts[row], :2] = positions
            controls[row] = control
            durations[row] = duration
        active = np.arange(slots)[None, :] < counts[:, None]
        slider_poses[..., 2] = np.where(active, rng.uniform(-np.pi, np.pi, (count, slots)), 0.0)

        # initial velocities (canonical frame; rotated with the configuration below)
        moving = rng.random(count) < config.moving_fraction
        pusher_velocities = _random_vectors(rng, count, config.max_initial_speed) * moving[:, None]
        slider_twists = np.zeros((count, slots, 3))
        slider_twists[..., :2] = _random_vectors(rng, count * slots, config.max_initial_speed).reshape(
            count, slots, 2
        )
        slider_twists[..., 2] = rng.uniform(-config.max_initial_spin, config.max_initial_spin, (count, slots))
        slider_twists *= (moving[:, None] & active)[..., None]

        # place the configuration anywhere on the table, at any orientation
        angles = rng.uniform(-np.pi, np.pi, count)
        shifts = rng.uniform(-config.placement_half_extent, config.placement_half_extent, (count, 2))
        rotation = _rotation_matrices(angles)
        slider_poses[..., :2] = np.einsum("mij,msj->msi", rotation, slider_poses[..., :2]) + shifts[:, None, :]
        slider_poses[..., :2] *= active[..., None]
        slider_poses[..., 2] = np.where(active, slider_poses[..., 2], 0.0)
        slider_twists[..., :2] = np.einsum("mij,msj->msi", rotation, slider_twists[..., :2])
        pusher_velocities = np.einsum("mij,mj->mi", rotation, pusher_velocities)
        controls = np.einsum("mij,mj->mi", rotation, controls)
        planned = np.any(
            path_contacts(shifts, controls * durations[:, None], slider_poses[..., :2], active,
                          self.geometry.contact_distance),
            axis=1,
        )
        return PushSamples(
            pusher_positions=shifts,
            pusher_velocities=pusher_velocities,
            slider_poses=slider_poses,
            slider_twists=slider_twists,
            slider_counts=counts.astype(np.int64),
            controls=controls,
            durations=durations,
            planned_contact=planned,
        )

    # -- one push in the canonical frame (pusher at the origin, first slider on +x) ---------
    def _push(self, sliders: int, wants_contact: bool, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        config = self.config
        for _ in range(config.max_attempts):
            positions = self._place(sliders, rng)
            if positions is None:
                continue
            for _ in range(20):
                control, duration = self._action(positions, rng)
                touches = path_contacts(
                    np.zeros((1, 2)), (control * duration)[None, :], positions[None], np.ones((1, sliders), bool),
                    self.geometry.contact_distance,
                )
                if bool(np.any(touches)) == wants_contact:
                    return positions, control, duration
        raise RuntimeError(
            f"max_attempts: no {'contact' if wants_contact else 'no-contact'} push with {sliders} slider(s) found in "
            f"{config.max_attempts} placements; widen the distribution"
        )

    def _place(self, sliders: int, rng: np.random.Generator) -> np.ndarray | None:
        geometry, config = self.geometry, self.config
        overlap = -config.touching_gap_range[0]
        positions = np.zeros((sliders, 2))
        positions[0, 0] = geometry.contact_distance + self._gap(config.first_gap_max, rng)
        for index in range(1, sliders):
            for _ in range(50):
                anchor = positions[rng.integers(index)]
                bearing = rng.uniform(-np.pi, np.pi)
                distance = 2.0 * geometry.slider_radius + self._gap(config.neighbour_gap_max, rng)
                candidate = anchor + distance * np.array([np.cos(bearing), np.sin(bearing)])
                clear_of_pusher = np.linalg.norm(candidate) >= geometry.contact_distance - overlap
                clear_of_sliders = np.all(
                    np.linalg.norm(positions[:index] - candidate, axis=1) >= 2.0 * geometry.slider_radius - overlap
                )
                if clear_of_pusher and clear_of_sliders:
                    positions[index] = candidate
                    break
            else:
                return None
        return positions

    def _gap(self, uniform_max: float, rng: np.random.Generator) -> float:
        """A surface gap, m: touching with probability ``touching_fraction``, else U(0, uniform_max)."""
        if rng.random() < self.config.touching_fraction:
            return float(rng.uniform(*self.config.touching_gap_range))
        return float(rng.uniform(0.0, uniform_max))

    def _action(self, positions: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        config = self.config
        nearest = positions[np.argmin(np.linalg.norm(positions, axis=1))]
        bearing = math.atan2(nearest[1], nearest[0])
        sector = rng.choice(3, p=np.asarray(config.direction_weights) / sum(config.direction_weights))
        low, high = ((0.0, 90.0), (90.0, 270.0), (270.0, 360.0))[sector]
        direction = bearing + math.radians(rng.uniform(low, high))
        speed = rng.uniform(0.0, config.max_speed)
        if rng.random() < config.nominal_duration_fraction:
            duration = config.nominal_duration
        else:
            duration = rng.uniform(*config.duration_range)
        quantum = config.duration_quantum
        duration = min(max(round(duration / quantum) * quantum, config.duration_range[0]), config.duration_range[1])
        return speed * np.array([math.cos(direction), math.sin(direction)]), float(duration)


def _random_vectors(rng: np.random.Generator, count: int, max_norm: float) -> np.ndarray:
    """(count, 2) vectors uniform in direction with norm U(0, max_norm)."""
    angles = rng.uniform(-np.pi, np.pi, count)
    norms = rng.uniform(0.0, max_norm, count)
    return norms[:, None] * np.stack([np.cos(angles), np.sin(angles)], axis=1)


def _rotation_matrices(angles: np.ndarray) -> np.ndarray:
    """(M, 2, 2) rotations by ``angles`` (rad)."""
    cosines, sines = np.cos(angles), np.sin(angles)
    return np.stack([np.stack([cosines, -sines], axis=-1), np.stack([sines, cosines], axis=-1)], axis=-2)
