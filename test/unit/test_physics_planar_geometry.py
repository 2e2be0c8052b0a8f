"""The planar geometry's distance from points to segments, against hand values and a brute-force
reference (the segment sampled densely)."""

from __future__ import annotations

import numpy as np
import pytest

from parapush.physics.planar_geometry import segment_point_distance

SAMPLES = 4001
"""Points on each segment of the brute-force reference (its error is at most half their spacing)."""


def sampled_distance(start: np.ndarray, end: np.ndarray, point: np.ndarray) -> float:
    """The smallest distance from ``point`` to ``SAMPLES`` evenly spaced points of the segment."""
    along = np.linspace(0.0, 1.0, SAMPLES)[:, None]
    return float(np.min(np.linalg.norm(start + along * (end - start) - point, axis=-1)))


def test_hand_values_and_a_zero_length_segment():
    starts = np.array([[0.0, 0.0]])
    ends = np.array([[1.0, 0.0]])
    points = np.array([[[0.5, 0.3], [-0.4, -0.3], [1.3, 0.4], [0.2, 0.0]]])
    # beside the segment, beyond either end (distance to the end point), on it
    np.testing.assert_allclose(segment_point_distance(starts[:, None], ends[:, None], points), [[0.3, 0.5, 0.5, 0.0]])
    # a zero-length segment is a point
    assert segment_point_distance(starts, starts, points[:, 0]) == pytest.approx([np.hypot(0.5, 0.3)])
    assert segment_point_distance(np.ones(2), np.ones(2), np.ones(2)) == 0.0


@pytest.mark.parametrize("seed", range(3))
def test_matches_the_brute_force_reference(seed):
    rng = np.random.default_rng(seed)
    starts = rng.uniform(-0.3, 0.3, (40, 2))
    ends = starts + rng.uniform(-0.2, 0.2, (40, 2))
    ends[::7] = starts[::7]  # some points
    ends[3::7, 1] = starts[3::7, 1]  # some along x
    points = rng.uniform(-0.5, 0.5, (40, 5, 2))
    points[:, 0] = starts + rng.uniform(0.0, 1.0, (40, 1)) * (ends - starts)  # on the segment
    distances = segment_point_distance(starts[:, None], ends[:, None], points)
    assert distances.shape == (40, 5)
    for row in range(40):
        spacing = np.linalg.norm(ends[row] - starts[row]) / (SAMPLES - 1)
        for column in range(5):
            reference = sampled_distance(starts[row], ends[row], points[row, column])
            # sampling never finds a closer point, and misses the closest one by at most half a spacing
            assert reference - 0.5 * spacing - 1e-12 <= distances[row, column] <= reference + 1e-12
    np.testing.assert_allclose(distances[:, 0], 0.0, atol=1e-12)


def test_broadcasts_one_point_many_segments_and_pairs():
    rng = np.random.default_rng(7)
    starts = rng.normal(size=(6, 3, 2))
    ends = rng.normal(size=(6, 3, 2))
    points = rng.normal(size=(6, 3, 2))
    pairs = segment_point_distance(starts, ends, points)
    assert pairs.shape == (6, 3)
    for index in np.ndindex(6, 3):
        assert pairs[index] == pytest.approx(sampled_distance(starts[index], ends[index], points[index]), abs=1e-3)
    # one point against every segment is the same as that point repeated
    point = points[2, 1]
    np.testing.assert_array_equal(segment_point_distance(starts, ends, point),
                                  segment_point_distance(starts, ends, np.broadcast_to(point, points.shape)))
    # many points against one segment each: (M, 1, 2) segments and (M, S, 2) points
    many = segment_point_distance(starts[:, :1], ends[:, :1], points)
    np.testing.assert_array_equal(many[:, 0], pairs[:, 0])
    assert many.shape == (6, 3)
