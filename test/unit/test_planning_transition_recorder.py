"""TransitionRecorder: the controls that ran alone, with the states observed around them."""

from __future__ import annotations

import numpy as np
import pytest
from test_planning_fixtures import GluedPropagator, initial_state, tiny_scene

from parapush.planning.async_world import PropagatorPhysics, TransitionRecorder, VirtualClockWorld


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def recorder():
    scene = tiny_scene()
    clock = FakeClock()
    physics = PropagatorPhysics(GluedPropagator(scene.layout), initial_state(scene))
    return TransitionRecorder(VirtualClockWorld(physics, clock=clock)), clock


def test_a_control_observed_when_it_ends_is_recorded_with_its_states() -> None:
    world, _ = recorder()
    before = world.observe()
    begin = world.start(np.array([0.05, 0.0]), 1.0, fallback=np.array([0.02, 0.0]))
    world.wait_until(begin + 1.0)
    after = world.observe()
    (transition,) = world.take()
    np.testing.assert_array_equal(transition.state, before)
    np.testing.assert_array_equal(transition.next_state, after)
    np.testing.assert_array_equal(transition.control, [0.05, 0.0])
    assert transition.duration == 1.0 and after[0] == pytest.approx(before[0] + 0.05)
    assert world.take() == []


def test_a_control_followed_by_its_fallback_or_cut_short_is_not_recorded() -> None:
    world, clock = recorder()
    world.observe()
    begin = world.start(np.array([0.05, 0.0]), 1.0, fallback=np.array([0.02, 0.0]))
    world.wait_until(begin + 1.5)  # the fallback ran half a period
    world.observe()
    assert world.take() == []
    world.observe()
    world.start(np.array([0.05, 0.0]), 1.0)
    clock.now += 0.3
    world.start(np.array([0.0, 0.05]), 1.0)  # replaced before it ended, without an observation
    world.wait_until(world.time() + 1.0)
    world.observe()
    assert world.take() == []
    world.observe()
    begin = world.start(np.array([0.05, 0.0]), 1.0)
    world.stop()
    world.wait_until(begin + 1.0)
    world.observe()
    assert world.take() == []


def test_only_an_async_world_is_wrapped() -> None:
    with pytest.raises(TypeError, match="world"):
        TransitionRecorder(object())
