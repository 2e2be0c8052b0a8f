"""The belief over an object's parameters: prior, unscented update, draws (parameter_belief)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from parapush.identification.parameter_belief import (
    BeliefSettings,
    ParameterBelief,
    ParameterSpread,
    from_coordinates,
    to_coordinates,
)
from parapush.identification.parameters import PARAMETER_NAMES, ObjectParameters
from parapush.scene import ObjectPatch

NOMINAL = ObjectParameters(mass=0.5, support_friction=1.0, pusher_friction=0.2)


def test_the_prior_has_the_moments_of_the_uniform_spread() -> None:
    spread = ParameterSpread(mass=0.5, support_friction=0.3, pusher_friction=0.1, com_offset=0.02)
    draws = spread.sample(NOMINAL, 200_000, np.random.default_rng(3))
    assert np.all(np.abs(draws[:, 0] / 0.5 - 1.0) <= 0.5) and np.all(np.hypot(draws[:, 3], draws[:, 4]) <= 0.02)
    belief = ParameterBelief.from_spread(NOMINAL, spread)
    coordinates = to_coordinates(draws)
    np.testing.assert_allclose(belief.mean, coordinates.mean(axis=0), atol=2e-3)
    np.testing.assert_allclose(np.diag(belief.covariance), coordinates.var(axis=0), rtol=0.02)
    np.testing.assert_allclose(from_coordinates(to_coordinates(draws[:5])), draws[:5])


EVERY_PARAMETER = BeliefSettings(narrowed=PARAMETER_NAMES)


def test_a_parameter_without_spread_is_held_at_its_value() -> None:
    belief = ParameterBelief.from_spread(NOMINAL, ParameterSpread(pusher_friction=0.0), EVERY_PARAMETER)
    points = belief.sigma_points()
    assert points.shape == (9, 5)  # 2 n + 1 with n = 4 uncertain parameters
    np.testing.assert_allclose(points[:, 2], 0.2)
    np.testing.assert_allclose(belief.representatives(6)[:, 2], 0.2)


def test_by_default_the_update_narrows_what_a_push_shows_and_holds_mass_and_support_friction() -> None:
    belief = ParameterBelief.from_spread(NOMINAL, ParameterSpread(pusher_friction=0.2))
    points = belief.sigma_points()
    assert points.shape == (7, 5)  # pusher friction and the centre of mass
    np.testing.assert_allclose(points[:, :2], np.tile(belief.estimate()[:2], (7, 1)))  # held at the mean
    before = belief.spread()
    coordinates = to_coordinates(points)
    poses = np.stack([coordinates[:, 3] + coordinates[:, 0], coordinates[:, 4], coordinates[:, 2]], axis=1)
    belief.update(poses, np.array([0.01, -0.005, np.log(0.25)]))
    after = belief.spread()
    np.testing.assert_array_equal(after[:2], before[:2])  # held, though the pose depends on the mass here
    assert np.all(after[2:] < before[2:])
    assert BeliefSettings(narrowed=["com_x"]).narrowed == ("com_x",)  # a list from a file


def test_on_a_linear_measurement_the_update_is_the_kalman_filter() -> None:
    settings = BeliefSettings(position_noise=0.004, yaw_noise=0.05)
    belief = ParameterBelief.from_spread(NOMINAL, ParameterSpread(pusher_friction=0.2),
                                         dataclasses.replace(settings, narrowed=PARAMETER_NAMES))
    mean, covariance = belief.mean.copy(), belief.covariance.copy()
    rng = np.random.default_rng(0)
    sensitivity = rng.normal(0.0, 0.05, (3, 5))  # pose = sensitivity @ z + offset
    offset = np.array([0.1, -0.2, 3.1])
    observed = np.array([0.103, -0.198, -3.12])  # a yaw across the wrap from the prediction
    predicted = belief.sigma_points()
    poses = to_coordinates(predicted) @ sensitivity.T + offset
    belief.update(poses, observed)
    noise = np.diag([0.004**2, 0.004**2, 0.05**2])
    innovation = sensitivity @ covariance @ sensitivity.T + noise
    gain = covariance @ sensitivity.T @ np.linalg.inv(innovation)
    residual = observed - (sensitivity @ mean + offset)
    residual[2] = (residual[2] + np.pi) % (2 * np.pi) - np.pi
    np.testing.assert_allclose(belief.mean, mean + gain @ residual, atol=1e-12)
    np.testing.assert_allclose(belief.covariance, covariance - gain @ innovation @ gain.T, atol=1e-14)
    assert belief.updates == 1


def test_a_parameter_the_pose_does_not_depend_on_keeps_its_spread() -> None:
    belief = ParameterBelief.from_spread(NOMINAL, ParameterSpread(), BeliefSettings(position_noise=0.003))
    before = belief.spread()
    points = to_coordinates(belief.sigma_points())
    poses = np.stack([points[:, 3], points[:, 4], np.zeros(len(points))], axis=1)  # only the com moves the pose
    belief.update(poses, np.array([0.01, -0.005, 0.0]))
    after = belief.spread()
    np.testing.assert_allclose(after[:3], before[:3], rtol=1e-12)  # mass and frictions: no information
    assert np.all(after[3:] < 0.5 * before[3:])
    assert belief.estimate()[3] > 0.005 and belief.estimate()[4] < -0.002  # towards the observed offset


def test_representatives_are_fixed_draws_that_follow_the_belief() -> None:
    belief = ParameterBelief.from_spread(NOMINAL, ParameterSpread())
    first = belief.representatives(4)
    np.testing.assert_array_equal(first, belief.representatives(4))
    belief.mean = belief.mean + np.array([0.0, 0.0, 0.0, 0.01, 0.0])
    np.testing.assert_allclose(belief.representatives(4)[:, 3], first[:, 3] + 0.01)
    assert np.all(belief.representatives(64)[:, 0] > 0.0)  # log coordinates: always a valid mass


def test_from_identification_centres_on_the_identified_parameters() -> None:
    identified = ObjectParameters(mass=0.8, support_friction=0.4, pusher_friction=0.3, com_offset=(0.01, 0.0))
    belief = ParameterBelief.from_identification(identified, np.array([0.08, 0.04, 0.0, 0.002, 0.002]))
    np.testing.assert_allclose(belief.estimate(), identified.as_vector())
    np.testing.assert_allclose(belief.spread(), [0.08, 0.04, 0.0, 0.002, 0.002])


def test_bad_inputs_name_the_argument() -> None:
    with pytest.raises(ValueError, match="mass"):
        ParameterSpread(mass=1.0)
    with pytest.raises(ValueError, match="position_noise"):
        BeliefSettings(position_noise=0.0)
    for narrowed in (("com_x", "friction"), (), ("com_x", "com_x")):
        with pytest.raises(ValueError, match="narrowed"):
            BeliefSettings(narrowed=narrowed)
    with pytest.raises(ValueError, match="covariance"):
        ParameterBelief(np.zeros(5), -np.eye(5))
    with pytest.raises(ValueError, match="predicted_poses"):
        ParameterBelief.from_spread(NOMINAL, ParameterSpread()).update(np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="count"):
        ParameterBelief.from_spread(NOMINAL, ParameterSpread()).representatives(0)
    patched = ObjectParameters(mass=0.5, support_friction=1.0, pusher_friction=0.2,
                               patches=(ObjectPatch(center=(0.01, 0.0), mass=0.1),))
    with pytest.raises(ValueError, match="com_offset"):
        ParameterBelief.from_spread(patched, ParameterSpread(com_offset=0.01))
