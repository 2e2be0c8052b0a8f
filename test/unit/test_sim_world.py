"""The simulated world, its arm and its noise (parapush.sim.world, .arm, .noise)."""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import pytest

from parapush.execution.commands import TwistCommand
from parapush.scene import ObjectSpec, Pusher, Scene, load_scene
from parapush.settings import SettingsError, settings_from_mapping
from parapush.sim.arm import ArmFault, ArmSettings, SimArm
from parapush.sim.noise import (
    MocapNoise,
    MocapNoiseSettings,
    ObjectContactSample,
    PushNoise,
    PushNoiseSettings,
)
from parapush.sim.world import SimWorld, WorldDivergedError, WorldSettings

SCENES = Path(__file__).resolve().parents[2] / "config" / "scenes"
CYLINDER_RADIUS = 0.0512
PUSHER_RADIUS = 0.0145


def one_object_scene(*, object_x: float = 0.0, pusher_y: float = 0.01) -> Scene:
    """A cylinder at (object_x, 0) and the pusher 2 mm behind it (-x), its path ``pusher_y``
    off the centre (far from the object when larger than the radii)."""
    contact_x = math.sqrt(max(0.0, (CYLINDER_RADIUS + PUSHER_RADIUS) ** 2 - pusher_y**2))
    return Scene(
        name="one_object",
        pusher=Pusher(radius=PUSHER_RADIUS, position=(object_x - contact_x - 0.002, pusher_y)),
        objects=(ObjectSpec(name="puck", radius=CYLINDER_RADIUS, pose=(object_x, 0.0, 0.0)),),
    )


def twist(vx: float, vy: float = 0.0, *, frame: str = "table", vz: float = 0.0) -> TwistCommand:
    return TwistCommand(stamp_s=0.0, frame_id=frame, linear=(vx, vy, vz))


def push(world: SimWorld, velocity: tuple[float, float], duration: float, period: float = 0.05) -> None:
    """Command ``velocity`` every ``period`` (as the executor would) for ``duration`` s."""
    for _ in range(round(duration / period)):
        assert world.command(twist(*velocity)).accepted
        world.step(period)


# -- world stepping -------------------------------------------------------------------------------
def test_manual_stepping_is_repeatable_for_a_seed_and_differs_across_seeds():
    scene = one_object_scene()
    finals = []
    for seed in (3, 3, 4):
        world = SimWorld(scene, WorldSettings(seed=seed))
        push(world, (0.05, 0.0), 1.5)
        finals.append(world.true_state())
    np.testing.assert_array_equal(finals[0], finals[1])
    assert np.linalg.norm(finals[0][2:4] - finals[2][2:4]) > 1e-5, "a different seed must change the push"


def test_true_state_starts_at_the_scene_and_reset_restores_it():
    scene = load_scene(SCENES / "clutter_fig1.yaml")
    world = SimWorld(scene, WorldSettings(seed=1))
    initial = scene.layout.compose(np.array(scene.pusher.position), np.array([spec.pose for spec in scene.objects]))
    np.testing.assert_allclose(world.true_state(), initial, atol=1e-12)
    push(world, (0.1, 0.0), 1.5)
    assert world.true_state()[0] > scene.pusher.position[0] + 0.1
    assert world.time == pytest.approx(1.5)
    world.reset()
    np.testing.assert_allclose(world.true_state(), initial, atol=1e-12)
    assert world.time == 0.0
    snapshot = world.snapshot()
    assert snapshot.object_names == scene.object_names and snapshot.all_valid and snapshot.stamp == 0.0


def test_real_time_factor_is_honoured_in_threaded_mode():
    world = SimWorld(one_object_scene(), WorldSettings(real_time_factor=4.0))
    with world:
        started_wall, started_sim = time.monotonic(), world.time
        time.sleep(0.6)
        elapsed_wall, elapsed_sim = time.monotonic() - started_wall, world.time - started_sim
        status = world.status()
    assert status.running
    assert 0.75 * 4.0 <= elapsed_sim / elapsed_wall <= 1.1 * 4.0, (elapsed_sim, elapsed_wall, status)
    assert not world.running
    stopped_at = world.time
    time.sleep(0.05)
    assert world.time == stopped_at, "the world must not step once stopped"


def test_manual_step_is_refused_while_the_thread_runs():
    world = SimWorld(one_object_scene(), WorldSettings(real_time_factor=1.0))
    with world, pytest.raises(RuntimeError, match="manual mode"):
        world.step(0.01)
    world.step(0.01)


def test_commands_from_another_thread_move_the_pusher_in_threaded_mode():
    world = SimWorld(one_object_scene(), WorldSettings(real_time_factor=2.0))
    start = world.true_state()[1]
    with world:
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            world.command(twist(0.0, 0.05))
            time.sleep(0.01)
    assert world.true_state()[1] - start > 0.01


# -- the arm --------------------------------------------------------------------------------------
def test_command_timeout_stops_the_pusher():
    world = SimWorld(one_object_scene(pusher_y=0.3), WorldSettings(seed=0))
    assert world.command(twist(0.0, 0.05)).accepted
    world.step(0.08)
    assert world.true_state()[world.layout.pusher_velocity][1] == pytest.approx(0.05, rel=1e-3)
    assert not world.arm.status().timed_out
    world.step(0.2)  # no command for 0.2 s > command_timeout 0.1 s
    stopped = world.true_state()
    assert np.all(np.abs(stopped[world.layout.pusher_velocity]) < 1e-9)
    assert world.arm.status().timed_out
    world.step(0.2)
    assert world.true_state()[1] == pytest.approx(stopped[1], abs=1e-9)
    # 0.05 m/s until 0.1 s (the timeout) after the command; the 0.05 s ramp at 1 m/s^2 loses
    # as much as the 0.05 s halt adds
    assert stopped[1] - 0.3 == pytest.approx(0.05 * 0.1, abs=2e-4)


def test_the_arm_counts_halts_for_lack_of_commands_and_the_longest_gap_while_moving():
    world = SimWorld(one_object_scene(pusher_y=0.3), WorldSettings(seed=0))
    world.command(twist(0.0, 0.05))
    world.step(0.05)
    world.command(twist(0.0, 0.05))  # 0.05 s later: no halt
    world.step(0.08)
    assert (world.arm.status().halts_without_command, world.arm.status().longest_command_gap) == (
        0, pytest.approx(0.05, abs=0.002))
    world.step(0.1)  # 0.18 s without a command: halted once, however long it stays halted
    world.step(0.3)
    assert world.arm.status().halts_without_command == 1
    world.command(twist(0.0, 0.05))  # moving again after a 0.48 s gap
    world.step(0.2)
    assert world.arm.status().halts_without_command == 2
    assert world.arm.status().longest_command_gap == pytest.approx(0.48, abs=0.002)
    world.command(twist(0.0, 0.0))  # a stop command, then silence: not a halt while moving
    world.step(0.3)
    world.command(twist(0.0, 0.0))
    status = world.arm.status()
    assert status.halts_without_command == 2
    assert status.longest_command_gap == pytest.approx(0.48, abs=0.002)  # gaps after a stop are not counted
    world.command(twist(0.0, 0.05))  # a protective stop while moving, then cleared: its halt is the fault's
    world.arm.inject_fault(ArmFault.PROTECTIVE_STOP)
    world.step(0.3)
    world.arm.inject_fault(ArmFault.NONE)
    world.step(0.3)
    assert world.arm.status().halts_without_command == 2


def test_repeated_commands_keep_the_pusher_moving_past_the_timeout():
    world = SimWorld(one_object_scene(pusher_y=0.3))
    push(world, (0.0, 0.04), 0.5)
    assert world.true_state()[world.layout.pusher_velocity][1] == pytest.approx(0.04, rel=1e-3)
    assert world.true_state()[1] - 0.3 == pytest.approx(0.04 * 0.5, abs=0.001)


def test_base_frame_twists_are_rotated_into_the_table_frame():
    arm_settings = ArmSettings(table_rpy_in_base=(0.0, 0.0, math.pi / 2))
    world = SimWorld(one_object_scene(pusher_y=0.3), WorldSettings(arm=arm_settings))
    outcome = world.command(twist(0.05, 0.0, frame="base_link"))
    assert outcome.accepted and outcome.planar_velocity == pytest.approx((0.0, -0.05), abs=1e-12)
    world.step(0.09)
    velocity = world.true_state()[world.layout.pusher_velocity]
    np.testing.assert_allclose(velocity, [0.0, -0.05], atol=1e-6)


def test_unknown_frames_are_rejected_and_fast_commands_clipped():
    arm = SimArm(ArmSettings(max_speed=0.1))
    rejected = arm.command(twist(0.05, frame="tool0"), received_at=0.0)
    assert not rejected.accepted and "tool0" in rejected.reason
    clipped = arm.command(twist(0.3, 0.4), received_at=0.0)
    assert clipped.accepted and clipped.clipped
    assert clipped.planar_velocity == pytest.approx((0.06, 0.08))
    out_of_plane = arm.command(twist(0.01, vz=0.02), received_at=0.0)
    assert out_of_plane.accepted
    status = arm.status()
    assert (status.commands_rejected, status.commands_clipped, status.out_of_plane_commands) == (1, 1, 1)


def test_acceleration_is_limited():
    arm = SimArm(ArmSettings(max_acceleration=0.5))
    arm.command(twist(0.1), received_at=0.0)
    velocities = [arm.advance(0.001 * step, 0.001)[0] for step in range(100)]
    assert np.all(np.diff(velocities) <= 0.5 * 0.001 + 1e-15)
    assert velocities[-1] == pytest.approx(0.05)


def test_protective_stop_halts_and_rejects_until_cleared():
    world = SimWorld(one_object_scene(pusher_y=0.3))
    push(world, (0.0, 0.05), 0.2)
    world.arm.inject_fault(ArmFault.PROTECTIVE_STOP)
    outcome = world.command(twist(0.0, 0.05))
    assert not outcome.accepted and "protective stop" in outcome.reason
    world.step(0.06)  # halts within 0.05 m/s / 1 m/s^2 = 0.05 s
    assert np.all(world.true_state()[world.layout.pusher_velocity] == 0.0)
    world.arm.inject_fault(ArmFault.NONE)
    push(world, (0.0, 0.05), 0.2)
    assert world.true_state()[world.layout.pusher_velocity][1] == pytest.approx(0.05, rel=1e-3)


def test_ignored_commands_let_the_timeout_halt_the_arm():
    world = SimWorld(one_object_scene(pusher_y=0.3))
    push(world, (0.0, 0.05), 0.2)
    world.arm.inject_fault(ArmFault.COMMANDS_IGNORED)
    for _ in range(4):
        assert not world.command(twist(0.0, 0.05)).accepted
        world.step(0.05)
    assert np.all(world.true_state()[world.layout.pusher_velocity] == 0.0)
    assert world.arm.status().commands_ignored == 4


def test_twist_validation_names_the_field():
    with pytest.raises(ValueError, match="linear"):
        TwistCommand(stamp_s=0.0, frame_id="table", linear=(0.0, math.nan, 0.0))
    with pytest.raises(ValueError, match="angular"):
        TwistCommand(stamp_s=0.0, frame_id="table", linear=(0.0, 0.0, 0.0), angular=(1.0, 2.0))
    with pytest.raises(ValueError, match="command_timeout: expected a finite number > 0"):
        ArmSettings(command_timeout=0.0)
    with pytest.raises(SettingsError, match=r"arm: unknown field\(s\) \['max_sped'\]"):
        settings_from_mapping(ArmSettings, {"max_sped": 1.0}, "arm")


# -- the pusher and the gripper -------------------------------------------------------------------
def test_a_pusher_that_is_not_held_stays_while_the_arm_moves():
    scene = one_object_scene(pusher_y=0.3)
    world = SimWorld(scene, WorldSettings(pusher_held_at_start=False))
    start = world.true_state()[:2].copy()
    ramp_loss = 0.5 * 0.05 * 0.05  # reaching 0.05 m/s at 1 m/s^2
    push(world, (0.0, 0.05), 0.4)
    world.step(0.3)  # command timeout: the arm halts
    np.testing.assert_allclose(world.true_state()[:2], start, atol=1e-9)
    # the last command (at 0.35 s) runs until its timeout at 0.45 s; ramp and halt cancel
    assert world.end_effector_position()[1] - start[1] == pytest.approx(0.05 * 0.45, abs=1e-4)
    assert not world.grasp(), "the gripper cannot grasp the pusher 2 cm away"
    push(world, (0.0, -0.05), 0.4)
    world.step(0.3)
    assert world.grasp() and world.pusher_held
    push(world, (0.0, 0.05), 0.4)
    assert world.true_state()[1] - start[1] == pytest.approx(0.02 - ramp_loss, abs=1e-4)
    world.release()
    held_until = world.true_state()[1]
    push(world, (0.0, 0.05), 0.2)
    assert world.true_state()[1] == pytest.approx(held_until, abs=1e-4)


# -- off the table --------------------------------------------------------------------------------
def test_an_object_pushed_over_the_edge_is_flagged_and_falls_to_the_floor():
    scene = one_object_scene(object_x=0.3, pusher_y=0.0)
    world = SimWorld(scene, WorldSettings(push_noise=PushNoiseSettings(enabled=False)))
    half_length = scene.table.half_extents[0]
    push(world, (0.1, 0.0), 0.5)
    assert not world.off_table()[0]
    assert world.true_state()[2] < half_length
    push(world, (0.1, 0.0), 1.0)
    assert world.off_table()[0] and world.status().off_table == (True,)
    world.step(1.0)
    centre_height = world.body_poses()[1].position[2]
    assert centre_height < -world.settings.floor_depth + scene.objects[0].height
    assert world.off_table()[0], "off the table is latched"
    world.reset()
    assert not world.off_table()[0]
    assert world.body_poses()[1].position[2] == pytest.approx(0.5 * scene.objects[0].height, abs=1e-3)


def test_currently_off_table_follows_the_models_rule():
    scene = one_object_scene(object_x=0.35, pusher_y=0.0)
    world = SimWorld(scene)
    assert not world.currently_off_table()[0]
    push(world, (0.1, 0.0), 1.0)
    assert world.currently_off_table()[0]


# -- pushing noise --------------------------------------------------------------------------------
def test_push_noise_is_seeded():
    def draws(seed: int) -> list[ObjectContactSample]:
        noise = PushNoise(PushNoiseSettings(), seed=seed)
        return [noise.sample(0.05) for _ in range(5)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)


def test_push_noise_magnitudes_and_truncation():
    settings = PushNoiseSettings(table_friction_spread=0.1, pusher_friction_spread=0.2,
                                 friction_centre_offset_std=0.01, max_offset_fraction=0.2)
    noise = PushNoise(settings, seed=0)
    samples = [noise.sample(0.05) for _ in range(4000)]
    table = np.log([sample.table_friction_scale for sample in samples])
    pusher = np.log([sample.pusher_friction_scale for sample in samples])
    offsets = np.array([sample.friction_centre_offset for sample in samples])
    assert np.std(table) == pytest.approx(0.1, rel=0.05) and abs(np.mean(table)) < 0.01
    assert np.std(pusher) == pytest.approx(0.2, rel=0.05)
    assert np.max(np.linalg.norm(offsets, axis=1)) <= 0.2 * 0.05 + 1e-12
    disabled = PushNoise(dataclasses.replace(settings, enabled=False), seed=0)
    assert disabled.sample(0.05) == ObjectContactSample()


def test_a_new_push_redraws_the_objects_contact_parameters():
    world = SimWorld(one_object_scene(), WorldSettings(seed=2))
    before = world.contact_samples()[0]
    push(world, (0.05, 0.0), 0.3)
    assert world.status().push_counts == (1,)
    during = world.contact_samples()[0]
    assert during != before
    push(world, (0.05, 0.0), 0.3)
    assert world.status().push_counts == (1,), "continued contact is the same push"
    push(world, (-0.05, 0.0), 0.4)  # back off for longer than new_push_gap
    push(world, (0.05, 0.0), 0.8)
    assert world.status().push_counts == (2,)
    assert world.contact_samples()[0] != during


def test_noiseless_pushes_repeat_exactly():
    world = SimWorld(one_object_scene(), WorldSettings(push_noise=PushNoiseSettings(enabled=False)))
    finals = []
    for seed in (0, 1):
        world.reset(seed=seed)
        push(world, (0.05, 0.0), 1.0)
        finals.append(world.true_state())
    np.testing.assert_array_equal(finals[0], finals[1])


def test_mocap_noise_is_seeded_and_has_the_configured_spread():
    settings = MocapNoiseSettings(position_std=0.001, orientation_std=0.01)
    position, orientation = np.array([0.1, 0.2, 0.3]), np.array([0.0, 0.0, 0.0, 1.0])
    first, second = MocapNoise(settings, seed=5), MocapNoise(settings, seed=5)
    draws = [first.perturb(position, orientation) for _ in range(3000)]
    again = second.perturb(position, orientation)
    np.testing.assert_array_equal(draws[0][0], again[0])
    positions = np.array([draw[0] for draw in draws])
    np.testing.assert_allclose(np.std(positions, axis=0), 0.001, rtol=0.08)
    yaw = np.array([2.0 * math.atan2(draw[1][2], draw[1][3]) for draw in draws])
    assert np.std(yaw) == pytest.approx(0.01, rel=0.08)
    norms = np.linalg.norm([draw[1] for draw in draws], axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-12)
    other = MocapNoise(settings, seed=6).perturb(position, orientation)
    assert not np.array_equal(other[0], again[0])


def test_noise_settings_errors_name_the_field():
    with pytest.raises(ValueError, match="pusher_friction_spread: expected a finite number >= 0"):
        PushNoiseSettings(pusher_friction_spread=-0.1)
    with pytest.raises(ValueError, match="max_offset_fraction: expected a finite number > 0 and < 1"):
        PushNoiseSettings(max_offset_fraction=1.0)
    with pytest.raises(SettingsError, match=r"mocap_noise: unknown field\(s\) \['position'\]"):
        settings_from_mapping(MocapNoiseSettings, {"position": 0.1}, "mocap_noise")


# -- settings -------------------------------------------------------------------------------------
def test_world_settings_errors_name_the_field():
    with pytest.raises(ValueError, match="real_time_factor: expected a finite number > 0"):
        WorldSettings(real_time_factor=0.0)
    with pytest.raises(ValueError, match="seed: expected an integer >= 0"):
        WorldSettings(seed=-1)
    with pytest.raises(SettingsError, match=r"world\.physics\.integrator"):
        settings_from_mapping(WorldSettings, {"physics": {"integrator": "leapfrog"}}, "world")
    with pytest.raises(SettingsError, match=r"world\.push_noise\.table_friction_spread"):
        settings_from_mapping(WorldSettings, {"push_noise": {"table_friction_spread": "much"}}, "world")
    with pytest.raises(SettingsError, match=r"world: unknown field\(s\) \['speed'\]"):
        settings_from_mapping(WorldSettings, {"speed": 2}, "world")
    parsed = settings_from_mapping(WorldSettings, {"real_time_factor": 3, "arm": {"max_speed": 0.2}})
    assert parsed.real_time_factor == 3.0 and parsed.arm.max_speed == 0.2


def test_a_failing_world_thread_is_reported(monkeypatch):
    world = SimWorld(one_object_scene(), WorldSettings(real_time_factor=1.0))

    def broken() -> None:
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(world, "_advance_one", broken)
    with world:
        deadline = time.monotonic() + 2.0
        while world.running and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not world.running
    assert "solver exploded" in world.status().error


def test_a_diverging_simulation_is_reported():
    world = SimWorld(one_object_scene())
    world._data.qvel[0] = math.nan  # a blown-up solver
    with pytest.raises(WorldDivergedError, match="diverged"):
        world.step(0.01)
    assert "diverged" in world.status().error
