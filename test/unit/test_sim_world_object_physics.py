"""SimWorld.set_object_physics: a world whose object differs from the scene file."""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_world import one_object_scene, push

from parapush.sim.noise import PushNoiseSettings
from parapush.sim.world import SimWorld, WorldSettings


def quiet_world() -> SimWorld:
    return SimWorld(one_object_scene(pusher_y=0.0), WorldSettings(push_noise=PushNoiseSettings(enabled=False)))


def pushed_yaw(world: SimWorld) -> float:
    push(world, (0.08, 0.0), 1.5)
    return float(world.true_state()[4])


def test_an_offset_centre_of_mass_turns_a_centred_push_towards_its_side() -> None:
    yaws = {}
    for offset in (0.0, 0.015, -0.015):
        world = quiet_world()
        world.set_object_physics(0, mass=0.5, support_friction=1.0, pusher_friction=0.2, com_offset=(0.0, offset))
        yaws[offset] = pushed_yaw(world)
    assert abs(yaws[0.0]) < 0.1
    assert yaws[0.015] > 0.5 and yaws[-0.015] < -0.5  # the object turns about the side heavy with pressure


def test_mass_and_frictions_are_written_into_the_world_model() -> None:
    world = quiet_world()
    model = world._model
    body = world._object_body[0]
    inertia = model.body_inertia[body].copy()
    world.set_object_physics(0, mass=1.0, support_friction=0.7, pusher_friction=0.3, com_offset=(0.01, 0.0))
    assert model.body_mass[body] == 1.0
    np.testing.assert_allclose(model.body_inertia[body], 2.0 * inertia)  # scene mass 0.5 kg
    np.testing.assert_allclose(model.body_ipos[body][:2], (0.01, 0.0))
    np.testing.assert_allclose(model.pair_friction[world._table_pair[0], :2], 0.7)
    np.testing.assert_allclose(model.pair_friction[world._pusher_pair[0], :2], 0.3)
    world.reset()  # a reset redraws the push noise around the new values, and keeps them
    np.testing.assert_allclose(model.pair_friction[world._table_pair[0], :2], 0.7)


def test_bad_physics_names_the_argument() -> None:
    world = quiet_world()
    with pytest.raises(ValueError, match="mass"):
        world.set_object_physics(0, mass=0.0, support_friction=1.0, pusher_friction=0.2)
    with pytest.raises(ValueError, match="support_friction"):
        world.set_object_physics(0, mass=0.5, support_friction=-1.0, pusher_friction=0.2)
    with pytest.raises(ValueError, match="com_offset"):
        world.set_object_physics(0, mass=0.5, support_friction=1.0, pusher_friction=0.2, com_offset=(0.0,))
    with pytest.raises(IndexError):
        world.set_object_physics(3, mass=0.5, support_friction=1.0, pusher_friction=0.2)
