r"""What the planner believes about one object's physics, narrowed by each observed control.

On a real table the object's support friction, mass, centre of mass and the pusher's friction
are never known exactly (Yu et al.: ABS friction drifting 0.15 -> 0.13 with wear, 0.017 (1 std)
across one plate). :class:`ParameterBelief` is a Gaussian over the object's parameters in an
unconstrained coordinate z = (log mass, log support friction, log pusher friction, com x,
com y) (kg, -, -, m, m: every z is a valid object), with mean mu and covariance Sigma:

- **Prior**: :meth:`ParameterBelief.from_spread` matches the moments of a uniform
  :class:`ParameterSpread` around the nominal parameters (relative half-widths for mass and
  the two frictions, a disc for the centre of mass); :meth:`ParameterBelief.from_identification`
  centres it on identified parameters with the search's final spread.
- **Update** (:meth:`ParameterBelief.update`: an unscented Kalman measurement step; the
  parameters do not change between controls): the 2n + 1 sigma points z_0 = mu,
  z_{+-i} = mu +- sqrt(n + 1) L_i (L L^T = Sigma over the n parameters the settings narrow
  whose variance is not zero; weights 1 / (n + 1) and 1 / (2 (n + 1))) each predict the
  object's pose y_i after the executed control from the state observed before it (one batched fine-model call,
  :class:`~parapush.identification.online_identification.OnlineIdentification`). With their
  mean y^, S = sum W_i (y_i - y^)(y_i - y^)^T + R and C = sum W_i (z_i - mu)(y_i - y^)^T, the
  observed pose y gives K = C S^-1, mu <- mu + K (y - y^), Sigma <- Sigma - K S K^T (yaw
  differences wrapped). R = diag(sigma_xy^2, sigma_xy^2, sigma_yaw^2) is the push noise plus
  the fine model's own error against the world (:class:`BeliefSettings`): set it too small and
  the belief trusts the model's mismatch as information.
- **Estimate and spread**: the parameters at the mean, and the standard deviation of each
  parameter (for mass and frictions: the mean's value times sigma_z, the relative spread).
- **Representatives** (:meth:`ParameterBelief.representatives`): M parameter vectors
  mu + L w_m with fixed standard-normal draws w_m (seeded), so a robust planner's models follow
  the belief as it narrows and a re-plan sees the same models as the last one for the same belief.

What the pushes can narrow: a velocity-controlled pusher in slow quasi-static pushes moves the
object the same whatever its mass and support friction (both scale the friction force alike),
so their variance stays (the sigma points predict the same pose: no gain), and by default the
update leaves them out (``BeliefSettings.narrowed``); the centre of mass
and the pusher friction set how the object turns and narrow within a few controls
(``bench/robust_mpc.py`` measures it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from parapush.identification.parameters import PARAMETER_NAMES, ObjectParameters, parameter_names
from parapush.scene.state import wrap_angle
from parapush.scene.uncertainty import ParameterSpread
from parapush.settings import check_settings, setting

__all__ = ["BeliefSettings", "ParameterBelief", "ParameterSpread"]

_LOGARITHMIC = np.array([True, True, True, False, False])  # z = log(value) for mass and the frictions
_FRICTION_FLOOR = 1e-4  # a friction of 0 has no logarithm: the coordinate starts here


def to_coordinates(vectors: np.ndarray) -> np.ndarray:
    """(..., 5) parameter vectors -> the belief's unconstrained coordinates z."""
    vectors = np.asarray(vectors, dtype=float)
    return np.where(_LOGARITHMIC, np.log(np.maximum(vectors, _FRICTION_FLOOR)), vectors)


def from_coordinates(coordinates: np.ndarray) -> np.ndarray:
    """Inverse of :func:`to_coordinates`."""
    coordinates = np.asarray(coordinates, dtype=float)
    return np.where(_LOGARITHMIC, np.exp(np.minimum(coordinates, 50.0)), coordinates)


@dataclass(frozen=True)
class BeliefSettings:
    """The belief's measurement model and draws (module docstring).

    Attributes:
        position_noise: sigma_xy, m: the spread of an observed position around the fine
            model's prediction after one control (push noise, tracking and model error). The
            default is the simulated world's push noise (~8 mm / 4 deg per 15 cm push,
            ``bench/sim_push_noise.py``) scaled to one 10 cm control: 5 mm / 0.05 rad.
        yaw_noise: sigma_yaw, rad: the same for the yaw.
        min_motion: m; a control that moved the object less than this (observed) is not used:
            every hypothesis predicts the same rest, so it carries no information.
        seed: seed of the representatives' standard-normal draws.
        narrowed: the parameters the update narrows (names of ``PARAMETER_NAMES``); the others
            keep their mean and spread (and their covariance with these). The default leaves out
            mass and support friction: a slow push barely depends on them (module docstring; with
            all five, 3 updates left their spread at 0.95-1.0 of the prior's in
            ``bench/robust_mpc.py``), and each narrowed parameter costs the update two fine-model
            rollouts (the sigma points: 5 instead of 9).
    """

    position_noise: float = setting(0.005, "observed position's spread around the fine model's prediction after "
                                           "one control (push noise, tracking, model error)", unit="m", above=0.0)
    yaw_noise: float = setting(0.05, "observed yaw's spread around the fine model's prediction after one control",
                               unit="rad", above=0.0)
    min_motion: float = setting(0.001, "controls that moved the object less than this are not used", unit="m",
                                minimum=0.0)
    seed: int = setting(0, "seed of the representatives' draws", minimum=0)
    # Not a setting: a list of names (a tuple setting holds real numbers), checked below.
    narrowed: tuple[str, ...] = ("pusher_friction", "com_x", "com_y")

    def __post_init__(self) -> None:
        object.__setattr__(self, "narrowed", parameter_names("narrowed", self.narrowed))
        check_settings(self)


class ParameterBelief:
    """A Gaussian over one object's parameters in the coordinates z (module docstring).

    Args:
        mean: (5,) mu, in the coordinates z (:func:`to_coordinates` of a parameter vector).
        covariance: (5, 5) Sigma, symmetric positive semi-definite.
        settings: the measurement model.
    """

    def __init__(self, mean: np.ndarray, covariance: np.ndarray, settings: BeliefSettings | None = None) -> None:
        mean = np.array(mean, dtype=float)
        covariance = np.array(covariance, dtype=float)
        size = len(PARAMETER_NAMES)
        if mean.shape != (size,) or not np.all(np.isfinite(mean)):
            raise ValueError(f"mean: expected {size} finite values, got {mean}")
        if covariance.shape != (size, size) or not np.all(np.isfinite(covariance)) \
                or not np.allclose(covariance, covariance.T, atol=1e-12) \
                or np.min(np.linalg.eigvalsh(covariance)) < -1e-12:
            raise ValueError(f"covariance: expected a symmetric positive semi-definite ({size}, {size}) matrix")
        self.settings = BeliefSettings() if settings is None else settings
        if not isinstance(self.settings, BeliefSettings):
            raise TypeError(f"settings: expected BeliefSettings, got {type(self.settings).__name__}")
        self.mean = mean
        self.covariance = covariance
        self.initial_spread = self.spread()
        self.updates = 0
        self._draws = np.random.default_rng(self.settings.seed).standard_normal((64, size))

    @classmethod
    def from_spread(cls, nominal: ObjectParameters, spread: ParameterSpread,
                    settings: BeliefSettings | None = None) -> ParameterBelief:
        """The Gaussian with the moments, in z, of ``spread``'s uniform prior around ``nominal``:
        for a value uniform in nominal x [1 - a, 1 + a], z is the nominal's logarithm plus
        log(t), t uniform in [1 - a, 1 + a] (:func:`_log_uniform_moments`); a disc of radius r
        has a variance r^2 / 4 per axis."""
        spread.check_nominal(nominal)
        shift, variance = _log_uniform_moments(spread.relative_widths())
        mean = to_coordinates(nominal.as_vector())
        mean[:3] += shift
        variance = np.concatenate([variance, np.full(2, spread.com_offset**2 / 4.0)])
        return cls(mean, np.diag(variance), settings)

    @classmethod
    def from_identification(cls, parameters: ObjectParameters, spread: np.ndarray,
                            settings: BeliefSettings | None = None) -> ParameterBelief:
        """Centred on identified ``parameters`` with standard deviations ``spread`` (5,) in the
        parameters' units (an :class:`~parapush.identification.IdentificationResult`'s ``spread``;
        relative in z for mass and the frictions)."""
        spread = np.asarray(spread, dtype=float)
        if spread.shape != (len(PARAMETER_NAMES),) or not np.all(np.isfinite(spread)) or np.any(spread < 0.0):
            raise ValueError(f"spread: expected {len(PARAMETER_NAMES)} non-negative standard deviations, got {spread}")
        vector = parameters.as_vector()
        deviation = np.where(_LOGARITHMIC, spread / np.maximum(vector, _FRICTION_FLOOR), spread)
        return cls(to_coordinates(vector), np.diag(deviation**2), settings)

    # -- summaries ------------------------------------------------------------------------------
    def estimate(self) -> np.ndarray:
        """(5,) the parameter vector at the mean."""
        return from_coordinates(self.mean)

    def spread(self) -> np.ndarray:
        """(5,) standard deviation per parameter (kg, -, -, m, m; for mass and the frictions the
        estimate times sigma_z)."""
        deviation = np.sqrt(np.maximum(np.diag(self.covariance), 0.0))
        return np.where(_LOGARITHMIC, self.estimate() * deviation, deviation)

    def estimated_parameters(self) -> ObjectParameters:
        """:meth:`estimate` as :class:`ObjectParameters`."""
        return ObjectParameters.from_vector(self.estimate())

    def representatives(self, count: int) -> np.ndarray:
        """(count, 5) parameter vectors mu + L w_m (fixed seeded draws w_m; at most 64)."""
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or not 1 <= count <= 64:
            raise ValueError(f"count: expected an integer in [1, 64], got {count!r}")
        return from_coordinates(self.mean + self._draws[:count] @ _factor(self.covariance).T)

    # -- the measurement step -------------------------------------------------------------------
    def sigma_points(self) -> np.ndarray:
        """(2n + 1, 5) parameter vectors at the sigma points (n: the settings' ``narrowed``
        parameters whose variance is > 0)."""
        return from_coordinates(self._sigma_coordinates())

    def _sigma_coordinates(self) -> np.ndarray:
        narrowed = np.isin(PARAMETER_NAMES, self.settings.narrowed)
        active = np.flatnonzero((np.diag(self.covariance) > 0.0) & narrowed)
        columns = np.zeros((len(PARAMETER_NAMES), active.size))
        columns[active] = math.sqrt(active.size + 1.0) * _factor(self.covariance[np.ix_(active, active)])
        return np.vstack([self.mean, self.mean + columns.T, self.mean - columns.T])

    def update(self, predicted_poses: np.ndarray, observed_pose: np.ndarray) -> None:
        """The unscented measurement step (module docstring).

        Args:
            predicted_poses: (2n + 1, 3) x, y (m), yaw (rad) predicted at each of
                :meth:`sigma_points`, in their order.
            observed_pose: (3,) the pose observed.
        """
        points = self._sigma_coordinates()
        predicted_poses = np.asarray(predicted_poses, dtype=float)
        if predicted_poses.shape != (points.shape[0], 3):
            raise ValueError(f"predicted_poses: expected shape ({points.shape[0]}, 3), got {predicted_poses.shape}")
        observed_pose = np.asarray(observed_pose, dtype=float)
        if observed_pose.shape != (3,) or not np.all(np.isfinite(observed_pose)):
            raise ValueError(f"observed_pose: expected 3 finite values, got {observed_pose}")
        if not np.all(np.isfinite(predicted_poses)):
            return  # a hypothesis could not be predicted: no consistent update
        count = (points.shape[0] - 1) // 2
        weights = np.full(points.shape[0], 1.0 / (2.0 * (count + 1.0)))
        weights[0] = 1.0 / (count + 1.0)
        # poses relative to the observation (yaw wrapped there), so the mean of yaws is safe
        residuals = predicted_poses - observed_pose
        residuals[:, 2] = wrap_angle(residuals[:, 2])
        predicted = weights @ residuals
        spread_y = residuals - predicted
        spread_z = points - self.mean
        noise = self.settings
        innovation = (spread_y.T * weights) @ spread_y + np.diag(
            [noise.position_noise**2, noise.position_noise**2, noise.yaw_noise**2])
        cross = (spread_z.T * weights) @ spread_y
        gain = np.linalg.solve(innovation, cross.T).T
        self.mean = self.mean + gain @ (-predicted)
        covariance = self.covariance - gain @ innovation @ gain.T
        self.covariance = 0.5 * (covariance + covariance.T)
        self.updates += 1


def _log_uniform_moments(widths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of log(t) for t uniform in [1 - a, 1 + a], per half-width a (< 1):
    the integrals of log t and log^2 t, t log t - t and t (log^2 t - 2 log t + 2), over 2 a."""
    widths = np.asarray(widths, dtype=float)
    low, high = 1.0 - widths, 1.0 + widths

    def first(t):
        return t * np.log(t) - t

    def second(t):
        return t * (np.log(t) ** 2 - 2.0 * np.log(t) + 2.0)

    width = np.where(widths > 0.0, 2.0 * widths, 1.0)
    mean = np.where(widths > 0.0, (first(high) - first(low)) / width, 0.0)
    square = np.where(widths > 0.0, (second(high) - second(low)) / width, 0.0)
    return mean, np.maximum(square - mean**2, 0.0)


def _factor(covariance: np.ndarray) -> np.ndarray:
    """L with L L^T = ``covariance`` (symmetric PSD; eigen-decomposition, so singular ones work)."""
    values, vectors = np.linalg.eigh(covariance)
    return vectors * np.sqrt(np.maximum(values, 0.0))
