"""Seeded noise of the simulated world: per-push contact variation and mocap measurement noise.

Pushing noise (:class:`PushNoise`)
----------------------------------
Real pushes repeated from the same start do not end in the same place: the friction of the
table varies from patch to patch and with wear, the pressure distribution under an object
depends on its unevenly flat bottom, and the pusher/object friction changes with dust and
the contact point. Yu et al. (IROS 2016, "More than a million ways to be pushed") measured
this scatter; the ISRR paper quotes about 8.10 mm (translation) and 4.20 deg (rotation)
standard deviation after repeated 150 mm pushes at 20 mm/s.

The simulated world reproduces it by drawing, for each object and each *push* (the
pusher touching the object after it was out of contact with it for a while, see
:attr:`PushNoiseSettings.new_push_gap`), an :class:`ObjectContactSample`:

* ``table_friction_scale``: multiplier of the object/table friction coefficient,
  log-normal with median 1 and log-standard deviation ``table_friction_spread``;
* ``pusher_friction_scale``: multiplier of the pusher/object friction coefficient,
  log-normal, ``pusher_friction_spread``;
* ``friction_centre_offset``: (2,) m, the displacement of the object's support (the
  contact patch that carries its weight, hence its centre of friction) from its
  geometric centre, in the object frame; isotropic Gaussian of standard deviation
  ``friction_centre_offset_std`` per axis, truncated to ``max_offset_fraction`` of the
  object's footprint radius. The pusher meets the geometric outline, so an offset centre
  of friction turns and deflects the object as an uneven real bottom does.

The defaults are calibrated with ``python bench/sim_push_noise.py`` (50 seeded 150 mm
pushes of the scene's target object): see the numbers in :data:`PushNoiseSettings`.

Mocap noise (:class:`MocapNoise`)
---------------------------------
Each streamed rigid-body pose gets independent white noise per frame: Gaussian position
noise of ``position_std`` per axis (OptiTrack's static jitter is well below 1 mm; the
default is 0.5 mm) and a small rotation whose rotation vector is Gaussian with
``orientation_std`` per axis (default 0.003 rad, about 0.17 deg, so the yaw noise has that
standard deviation: 0.5 mm of marker noise over a ~10 cm marker base, averaged over 4-5
markers).

All noise comes from ``numpy.random.Generator`` objects seeded by the caller; the push noise
and the mocap noise draw from separate streams of a seed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from parapush.estimation.rotations import axis_angle_quaternion, canonical_quaternion, quaternion_multiply
from parapush.settings import check_settings, setting
from parapush.validation import check_integer

__all__ = [
    "MocapNoise",
    "MocapNoiseSettings",
    "ObjectContactSample",
    "PushNoise",
    "PushNoiseSettings",
]


_PUSH_STREAM = 0
_MOCAP_STREAM = 1


def _generator(seed: int, stream: int) -> np.random.Generator:
    """A generator for ``seed``; each kind of noise has its own stream, so the push noise and
    the mocap noise are independent even when given the same seed."""
    seed = check_integer("seed", seed, minimum=0)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stream,)))


@dataclass(frozen=True)
class PushNoiseSettings:
    """Magnitude of the per-push contact variation (see the module docstring).

    Calibrated defaults (``bench/sim_push_noise.py``, on the simulated world's physics of
    ``config/sim_world.yaml``: the weight on 8 points spread evenly, with roll and pitch, the
    reality proxy chosen by ``bench/real_pushes.py``): repeated 150 mm pushes at 20 mm/s of the
    5.12 cm cylinder of ``clutter_fig1``, the pusher's path a quarter radius off its centre. The
    real-world reference is 8.10 mm / 4.20 deg (Yu et al., a 90 mm square on ABS). With the even
    support these terms cannot give both: the scatter's translation per rotation is the
    physics' (about 0.6 mm per degree for this push against 1.9 real; 30 pushes each: pusher
    friction spread 0.2 / 0.39 gives 1.7 / 3.0 mm and 2.8 / 5.0 deg, a 4x larger centre of
    friction offset adds 0.6 mm and 1 deg, a 6x larger table spread 0.8 mm and 1 deg). The
    rotation, which decides where a planner's pushes go, is matched: ``pusher_friction_spread``
    0.30 (was 0.39 on the old rim-supported physics, which gave 8.07 mm / 4.21 deg); the
    translation scatter stays below the real one (the reference run's figures:
    ``bench/reference/sim_push_noise.json``). A push through the centre of a cylinder is an
    unstable equilibrium: with larger noise or longer pushes it leaves the pusher to either
    side (a bimodal outcome, as real ones show).

    Each field's meaning, unit and range: its :func:`setting`.
    """

    enabled: bool = setting(True, "False gives every push the nominal scene parameters (a noiseless world)")
    table_friction_spread: float = setting(
        0.05, "log-standard deviation of the object/table friction multiplier (0.1 is about +-10 %)", minimum=0.0
    )
    pusher_friction_spread: float = setting(
        0.30, "log-standard deviation of the pusher/object friction multiplier", minimum=0.0
    )
    friction_centre_offset_std: float = setting(
        0.0014, "standard deviation of each component of the centre of friction's offset from the object's centre",
        unit="m", minimum=0.0,
    )
    max_offset_fraction: float = setting(
        0.5, "the offset is truncated to this fraction of the object's footprint radius (cylinder radius, "
        "or the box's smaller half extent)", above=0.0, below=1.0,
    )
    new_push_gap: float = setting(
        0.25, "a pusher/object contact starts a new push (and a new sample) when the pusher was out of contact "
        "with that object for at least this long", unit="s", minimum=0.0,
    )

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass(frozen=True)
class ObjectContactSample:
    """The contact parameters of one object for one push.

    Attributes:
        table_friction_scale: multiplier (> 0) of the nominal object/table friction.
        pusher_friction_scale: multiplier (> 0) of the nominal pusher/object friction.
        friction_centre_offset: (2,) offset of the centre of friction from the object's
            centre in the object frame, m.
    """

    table_friction_scale: float = 1.0
    pusher_friction_scale: float = 1.0
    friction_centre_offset: tuple[float, float] = (0.0, 0.0)


class PushNoise:
    """Draws :class:`ObjectContactSample` s from a seeded generator.

    Args:
        settings: the magnitudes.
        seed: seed of the generator (same seed, same sequence of samples).
    """

    def __init__(self, settings: PushNoiseSettings, *, seed: int) -> None:
        if not isinstance(settings, PushNoiseSettings):
            raise TypeError(f"settings: expected PushNoiseSettings, got {type(settings).__name__}")
        self.settings = settings
        self._generator = _generator(seed, _PUSH_STREAM)

    def reseed(self, seed: int) -> None:
        """Restart the sequence of samples from ``seed``."""
        self._generator = _generator(seed, _PUSH_STREAM)

    def sample(self, footprint_radius: float) -> ObjectContactSample:
        """One object's contact parameters for a new push.

        Args:
            footprint_radius: radius of the object's support footprint, m (bounds the offset).
        """
        settings = self.settings
        if not settings.enabled:
            return ObjectContactSample()
        normals = self._generator.standard_normal(4)
        offset = settings.friction_centre_offset_std * normals[2:]
        limit = settings.max_offset_fraction * footprint_radius
        length = float(np.hypot(*offset))
        if length > limit:
            offset *= limit / length
        return ObjectContactSample(
            table_friction_scale=float(np.exp(settings.table_friction_spread * normals[0])),
            pusher_friction_scale=float(np.exp(settings.pusher_friction_spread * normals[1])),
            friction_centre_offset=(float(offset[0]), float(offset[1])),
        )


@dataclass(frozen=True)
class MocapNoiseSettings:
    """Measurement noise of the streamed rigid-body poses (white, per frame and body).

    Each field's meaning, unit and range: its :func:`setting`.
    """

    position_std: float = setting(
        0.0005, "standard deviation of each position component (default 0.5 mm)", unit="m", minimum=0.0
    )
    orientation_std: float = setting(
        0.003, "standard deviation of each component of the orientation error's rotation vector "
        "(default about 0.17 deg; the yaw error has this standard deviation)", unit="rad", minimum=0.0,
    )

    def __post_init__(self) -> None:
        check_settings(self)


class MocapNoise:
    """Perturbs rigid-body poses with seeded white noise; thread-safe.

    Args:
        settings: the magnitudes.
        seed: seed of the generator.
    """

    def __init__(self, settings: MocapNoiseSettings, *, seed: int) -> None:
        if not isinstance(settings, MocapNoiseSettings):
            raise TypeError(f"settings: expected MocapNoiseSettings, got {type(settings).__name__}")
        self.settings = settings
        self._generator = _generator(seed, _MOCAP_STREAM)
        self._lock = threading.Lock()

    def perturb(self, position: np.ndarray, orientation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A noisy copy of one pose.

        Args:
            position: (3,) m.
            orientation: (4,) unit quaternion (qx, qy, qz, qw).
        Returns:
            (position (3,) m, orientation (4,) unit quaternion with qw >= 0).
        """
        with self._lock:
            position_error = self.settings.position_std * self._generator.standard_normal(3)
            rotation_vector = self.settings.orientation_std * self._generator.standard_normal(3)
        noisy_position = np.asarray(position, dtype=float) + position_error
        angle = float(np.linalg.norm(rotation_vector))
        if angle == 0.0:
            return noisy_position, canonical_quaternion(np.asarray(orientation, dtype=float))
        noisy = quaternion_multiply(
            axis_angle_quaternion(rotation_vector, angle), np.asarray(orientation, dtype=float)
        )
        return noisy_position, canonical_quaternion(noisy / np.linalg.norm(noisy))
