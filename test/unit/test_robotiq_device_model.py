"""The emulated gripper's behaviour, driven with explicit times (no Modbus, no real time)."""

from __future__ import annotations

import pytest

from parapush.robotiq.device_model import DeviceModelSettings, GripperDeviceModel
from parapush.robotiq.finger_geometry import FingerGeometry
from parapush.robotiq.registers import ActivationStatus, FaultCode, GripperCommand, ObjectStatus

GEOMETRY = FingerGeometry()
LATENCY = 0.01
ACTIVATION = 0.5


def make_model(**overrides) -> GripperDeviceModel:
    options = {"activation_duration_s": ACTIVATION, "command_latency_s": LATENCY} | overrides
    return GripperDeviceModel(DeviceModelSettings(**options), now_s=0.0)


def activated_model(**overrides) -> tuple[GripperDeviceModel, float]:
    model = make_model(**overrides)
    model.write_command(GripperCommand(), now_s=0.0)
    model.write_command(GripperCommand(activate=True), now_s=0.1)
    return model, 0.1 + LATENCY + ACTIVATION


def go_to(position: int, speed: int = 255, force: int = 100) -> GripperCommand:
    return GripperCommand(activate=True, go_to=True, position=position, speed=speed, force=force)


def test_activation_goes_through_activating_to_active_after_the_duration():
    model = make_model()
    model.write_command(GripperCommand(activate=True), now_s=1.0)
    model.advance(1.0 + LATENCY / 2)
    assert model.status().activation is ActivationStatus.RESET  # latency
    model.advance(1.0 + LATENCY + 0.001)
    status = model.status()
    assert status.activated and status.activation is ActivationStatus.ACTIVATING
    model.advance(1.0 + LATENCY + ACTIVATION - 0.001)
    assert model.status().activation is ActivationStatus.ACTIVATING
    model.advance(1.0 + LATENCY + ACTIVATION + 0.001)
    assert model.status().activation is ActivationStatus.ACTIVE and model.status().is_active


def test_activation_opens_the_fingers():
    model, active_at = activated_model()
    model.write_command(go_to(200), now_s=active_at)
    model.advance(active_at + 3.0)
    model.write_command(GripperCommand(), now_s=active_at + 3.0)
    model.write_command(GripperCommand(activate=True), now_s=active_at + 3.1)
    model.advance(active_at + 3.1 + LATENCY + ACTIVATION / 2)
    assert 0 < model.position < 200  # travelling back to open
    model.advance(active_at + 3.1 + LATENCY + ACTIVATION + 0.001)
    assert model.position == GEOMETRY.open_count


def test_reset_clears_activation():
    model, active_at = activated_model()
    model.advance(active_at + 0.01)
    model.write_command(GripperCommand(), now_s=active_at + 0.01)
    model.advance(active_at + 0.01 + LATENCY)
    status = model.status()
    assert not status.activated and status.activation is ActivationStatus.RESET


def test_go_to_echoes_after_latency_then_moves_at_the_requested_speed():
    model, now = activated_model()
    model.advance(now)
    model.write_command(go_to(200, speed=0), now_s=now)
    model.advance(now + LATENCY / 2)
    assert model.status().requested_position == 0  # not applied yet
    model.advance(now + LATENCY)
    assert model.status().requested_position == 200
    assert model.status().object_status is ObjectStatus.MOVING
    model.advance(now + LATENCY + 0.5)
    expected = GEOMETRY.speed_counts_per_s(0) * 0.5  # 20 mm/s = ~54 counts/s
    assert model.position == pytest.approx(expected)
    assert model.status().current == round(0.25 / 0.010)
    travel_time = 200 / GEOMETRY.speed_counts_per_s(0)
    model.advance(now + LATENCY + travel_time + 1e-6)
    status = model.status()
    assert status.position == 200 and status.object_status is ObjectStatus.AT_POSITION and status.current == 0


def test_faster_speed_arrives_sooner():
    times = []
    for speed in (0, 128, 255):
        model, now = activated_model()
        model.write_command(go_to(150, speed=speed), now_s=now)
        step = 0.001
        while model.status().object_status is ObjectStatus.MOVING:
            now += step
            model.advance(now)
        times.append(now)
    assert times[0] > times[1] > times[2]


def test_closing_onto_the_object_stops_at_its_width_with_contact():
    width = 0.020
    model, now = activated_model(object_width_m=width)
    model.write_command(go_to(255, force=255), now_s=now)
    model.advance(now + 5.0)
    status = model.status()
    assert status.object_status is ObjectStatus.CONTACT_CLOSING and status.object_detected
    contact = GEOMETRY.position_for_opening(width)
    assert contact <= model.position <= contact + 2.0 + 1e-9
    assert GEOMETRY.opening_m(status.position) == pytest.approx(width, abs=0.001)
    assert status.current == round(0.60 / 0.010)  # holding current at full force


def test_a_target_short_of_the_object_is_reached_without_contact():
    model, now = activated_model(object_width_m=0.020)
    model.write_command(go_to(100), now_s=now)
    model.advance(now + 5.0)
    assert model.status().object_status is ObjectStatus.AT_POSITION
    assert model.status().position == 100


def test_requests_past_the_mechanical_limit_stop_there():
    model, now = activated_model()
    model.write_command(go_to(255), now_s=now)
    model.advance(now + 5.0)
    status = model.status()
    assert status.position == GEOMETRY.closed_count and status.object_status is ObjectStatus.AT_POSITION
    assert status.requested_position == 255


def test_removing_the_held_object_lets_the_fingers_close():
    model, now = activated_model(object_width_m=0.030)
    model.write_command(go_to(255), now_s=now)
    model.advance(now + 5.0)
    assert model.status().object_status is ObjectStatus.CONTACT_CLOSING
    model.set_object_width(None, now_s=now + 5.0)
    assert model.status().object_status is ObjectStatus.MOVING
    model.advance(now + 10.0)
    assert model.status().object_status is ObjectStatus.AT_POSITION
    assert model.status().position == GEOMETRY.closed_count


def test_go_to_zero_stops_the_fingers():
    model, now = activated_model()
    model.write_command(go_to(200, speed=0), now_s=now)
    model.advance(now + 1.0)
    model.write_command(GripperCommand(activate=True, go_to=False, position=200), now_s=now + 1.0)
    model.advance(now + 1.0 + LATENCY)
    stopped = model.position
    model.advance(now + 3.0)
    assert model.position == stopped < 200
    assert not model.status().go_to


def test_go_to_without_activation_reports_0x07():
    model = make_model()
    model.write_command(GripperCommand(go_to=True, position=100), now_s=0.0)
    model.advance(LATENCY)
    assert model.status().fault == FaultCode.ACTIVATION_BIT_NOT_SET
    assert model.position == GEOMETRY.open_count


def test_go_to_during_activation_reports_0x05_then_executes():
    model = make_model()
    model.write_command(go_to(50), now_s=0.0)
    model.advance(LATENCY + ACTIVATION / 2)
    assert model.status().fault == FaultCode.ACTION_DELAYED
    model.advance(LATENCY + ACTIVATION + 2.0)
    status = model.status()
    assert status.fault == 0 and status.position == 50 and status.object_status is ObjectStatus.AT_POSITION


@pytest.mark.parametrize("code", [0x0A, 0x0C, 0x0E])
def test_major_fault_stops_motion_until_a_rising_edge(code):
    model, now = activated_model()
    model.write_command(go_to(200, speed=0), now_s=now)
    model.advance(now + 0.5)
    model.inject_fault(code, now_s=now + 0.5)
    frozen = model.position
    model.advance(now + 1.0)
    assert model.position == frozen and model.status().fault == code
    model.write_command(go_to(100), now_s=now + 1.0)  # refused
    model.advance(now + 2.0)
    assert model.position == frozen and model.status().fault == code
    model.write_command(GripperCommand(), now_s=now + 2.0)
    model.advance(now + 2.1)
    assert model.status().fault == code  # a reset alone does not clear a major fault
    model.write_command(GripperCommand(activate=True), now_s=now + 2.1)
    model.advance(now + 2.1 + LATENCY + 0.001)
    assert model.status().fault == 0 and model.status().activation is ActivationStatus.ACTIVATING


def test_overtemperature_blocks_motion_until_cleared():
    model, now = activated_model()
    model.inject_fault(FaultCode.OVERTEMPERATURE, now_s=now)
    model.write_command(go_to(100), now_s=now)
    model.advance(now + 2.0)
    assert model.position == GEOMETRY.open_count and model.status().fault == 0x08
    model.clear_fault(now_s=now + 2.0)
    model.write_command(go_to(101), now_s=now + 2.0)
    model.advance(now + 5.0)
    assert model.status().position == 101 and model.status().fault == 0


def test_no_communication_fault_is_only_reported():
    model, now = activated_model()
    model.inject_fault(FaultCode.NO_COMMUNICATION, now_s=now)
    model.write_command(go_to(80), now_s=now)
    model.advance(now + 3.0)
    assert model.status().position == 80 and model.status().fault == 0x09


def test_controller_fault_is_reported_in_kflt():
    model = make_model()
    model.set_controller_fault(0x3, now_s=0.0)
    assert model.status().controller_fault == 0x3
    with pytest.raises(ValueError, match="code"):
        model.set_controller_fault(16, now_s=0.0)


def test_automatic_release_opens_then_requires_reactivation():
    model, now = activated_model(object_width_m=0.03)
    model.write_command(go_to(255), now_s=now)
    model.advance(now + 5.0)
    model.write_command(
        GripperCommand(activate=True, auto_release=True, release_direction_open=True), now_s=now + 5.0
    )
    model.advance(now + 5.0 + LATENCY + 0.1)
    assert model.status().fault == FaultCode.AUTO_RELEASE_IN_PROGRESS
    model.advance(now + 20.0)
    assert model.status().fault == FaultCode.AUTO_RELEASE_COMPLETED
    assert model.position == GEOMETRY.open_count
    model.write_command(GripperCommand(), now_s=now + 20.0)
    model.write_command(GripperCommand(activate=True), now_s=now + 20.1)
    model.advance(now + 20.1 + LATENCY + ACTIVATION + 0.01)
    assert model.status().fault == 0 and model.status().is_active


def test_zero_activation_duration_and_latency_are_immediate():
    model = make_model(activation_duration_s=0.0, command_latency_s=0.0)
    model.write_command(GripperCommand(activate=True), now_s=0.0)
    assert model.status().is_active


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"activation_duration_s": -1.0}, "activation_duration_s"),
        ({"command_latency_s": float("inf")}, "command_latency_s"),
        ({"object_width_m": 0.2}, "object_width_m"),
        ({"holding_current_min_a": 1.0, "holding_current_max_a": 0.5}, "holding_current_max_a"),
        ({"moving_current_a": 3.0}, "moving_current_a"),
    ],
)
def test_settings_validation_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        DeviceModelSettings(**kwargs)


def test_inject_fault_rejects_zero():
    with pytest.raises(ValueError, match="code"):
        make_model().inject_fault(0, now_s=0.0)
