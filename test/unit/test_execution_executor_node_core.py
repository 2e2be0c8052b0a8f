"""The executor node's ROS-free parts: its settings (parameters declared once), the control
checks, the throttled log, the diagnostics reports and the control logic around the core."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import pytest
import yaml

from parapush.execution.control_intake import check_controls, measurement_time
from parapush.execution.control_refusal import ControlsRefused
from parapush.execution.execution_settings import ExecutionSettings, GripperSettings, LimitSettings
from parapush.execution.executor_control import ExecutorControl
from parapush.execution.executor_diagnostics import (
    ExecutorCounters,
    executor_report,
    gripper_report,
    latched_stop_reason,
)
from parapush.execution.gripper_endpoint import SerialEndpoint, TcpEndpoint
from parapush.execution.gripper_monitor import GripperSnapshot, gripper_problem
from parapush.execution.safety import SafetyReason
from parapush.execution.throttled_log import ThrottledLog
from parapush.graph import config_dir
from parapush.reporting.diagnostic_report import DiagnosticLevel
from parapush.robotiq.registers import ActivationStatus, GripperStatus, ObjectStatus
from parapush.settings import SettingsError, setting_fields, settings_from_mapping


class Logger:
    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(("info", text))

    def warning(self, text):
        self.lines.append(("warning", text))

    def error(self, text):
        self.lines.append(("error", text))


# -- settings ------------------------------------------------------------------------------------
def test_the_parameter_file_lists_every_setting_with_its_default():
    data = yaml.safe_load((config_dir() / "executor.yaml").read_text())["executor"]["ros__parameters"]
    defaults = {item.path: item.default for item in setting_fields(ExecutionSettings)}
    flat = {f"{section}.{key}" if isinstance(values, dict) else section: value
            for section, values in data.items()
            for key, value in (values.items() if isinstance(values, dict) else [(None, values)])}
    assert set(flat) == set(defaults)
    assert settings_from_mapping(ExecutionSettings, data) == ExecutionSettings()  # the file's values are the defaults


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"limits": {"x_min": 0.5}}, "limits.x_max"),
        ({"limits": {"y_max": -0.5}}, "limits.y_max"),
        ({"limits": {"stall_margin": 0.4}}, "limits.stall_margin"),
        ({"limits": {"max_speed": 0.0}}, "limits.max_speed"),
        ({"rate": 10.0}, "rate"),
        ({"queue_mode": "lifo"}, "queue_mode"),
        ({"base_frame": ""}, "base_frame"),
        ({"gripper": {"address": ""}}, "gripper.address"),
        ({"gripper": {"grasp_force": 256}}, "gripper.grasp_force"),
        ({"stop_repeats": 1.5}, "stop_repeats"),
        ({"table_to_base": [0.5, 0.0, 0.0]}, "table_to_base"),
        ({"table_to_base": [0.5, 0.0, 0.0, "yaw"]}, "table_to_base[3]"),
        ({"table_to_base": [0.0] * 7}, "table_to_base"),
    ],
)
def test_invalid_settings_name_the_field(data, path):
    with pytest.raises(SettingsError) as raised:
        settings_from_mapping(ExecutionSettings, data)
    assert raised.value.path == path, str(raised.value)


def test_the_safety_filter_gets_the_box_shrunk_by_the_stall_margin():
    settings = ExecutionSettings(limits=LimitSettings(stall_margin=0.02), rate=50.0, table_to_base=(0, 0, 0, 0))
    core = settings.executor_settings()
    assert (core.limits.x_min_m, core.limits.x_max_m) == pytest.approx((-0.33, 0.33))
    assert (core.limits.y_min_m, core.limits.y_max_m) == pytest.approx((-0.43, 0.43))
    assert core.stream.period_s == pytest.approx(0.02) and core.stop_repeats == 3
    assert LimitSettings().recommended_stall_margin == pytest.approx(0.1 * 0.1 + 0.1**2 / 2.0)


def test_gripper_addresses():
    tcp = GripperSettings(address="127.0.0.1:5020").endpoint()
    assert isinstance(tcp, TcpEndpoint) and (tcp.host, tcp.port, tcp.framing) == ("127.0.0.1", 5020, "socket")
    assert GripperSettings(address="rtu+tcp://robot:54321").endpoint().framing == "rtu"
    serial = GripperSettings(address="/dev/ttyUSB0", device_id=3, baudrate=57600).endpoint()
    assert isinstance(serial, SerialEndpoint) and (serial.port, serial.device_id, serial.baudrate) == (
        "/dev/ttyUSB0", 3, 57600)
    for address in ("tcp://robot", "ftp://host:1"):
        with pytest.raises(SettingsError) as raised:
            GripperSettings(address=address).endpoint()
        assert raised.value.path == "address"


# -- inputs --------------------------------------------------------------------------------------
SETTINGS = ExecutionSettings()


def checked(controls, **overrides):
    arguments = dict(frame_id="table", stamp_s=0.0, ros_now_s=100.0, monotonic_now_s=5.0, settings=SETTINGS)
    return check_controls(controls, **{**arguments, **overrides})


def test_controls_are_checked_and_scheduled():
    controls, start = checked([(0.05, 0.0, 0.5), (0.0, -0.02, 0.25)])
    assert [(c.vx_m_s, c.vy_m_s, c.duration_s) for c in controls] == [(0.05, 0.0, 0.5), (0.0, -0.02, 0.25)]
    assert start is None  # unstamped: at the next tick
    assert checked([(0.1, 0.0, 1.0)], frame_id="")[1] is None
    assert checked([(0.1, 0.0, 1.0)], stamp_s=99.9)[1] is None  # due already: at the next tick
    assert checked([(0.1, 0.0, 1.0)], stamp_s=100.5)[1] == pytest.approx(5.5)  # monotonic time of the stamp


@pytest.mark.parametrize(
    ("controls", "overrides", "reason"),
    [
        ([(0.1, 0.0, 1.0)], {"frame_id": "world"}, "wrong_frame"),
        ([(0.1, 0.0, 0.01)] * 101, {}, "too_many_controls"),
        ([(math.nan, 0.0, 1.0)], {}, "invalid_control"),
        ([(0.1, 0.0, 0.0)], {}, "invalid_control"),
        ([(0.1, 0.0, 11.0)], {}, "invalid_control"),
        ([(0.1, 0.0, 1.0)], {"stamp_s": 99.7}, "stale_plan"),
        ([(0.1, 0.0, 1.0)], {"stamp_s": 101.5}, "start_too_late"),
    ],
)
def test_refused_controls_carry_their_reason(controls, overrides, reason):
    with pytest.raises(ControlsRefused) as refused:
        checked(controls, **overrides)
    assert refused.value.reason == reason


def test_no_age_check_with_a_zero_limit():
    settings = dataclasses.replace(SETTINGS, max_control_age=0.0)
    assert checked([(0.1, 0.0, 1.0)], stamp_s=50.0, settings=settings)[1] is None


def test_measurement_time_is_backdated_by_the_estimate_age():
    # stamp 0.02 s old on the ROS clock; a valid estimate whose body was seen 0.05 s ago
    assert measurement_time(stamp_s=9.98, ros_now_s=10.0, monotonic_now_s=3.0, valid=True, age_s=0.05) == (
        pytest.approx(2.95))
    assert measurement_time(stamp_s=9.98, ros_now_s=10.0, monotonic_now_s=3.0, valid=True, age_s=0.01) == (
        pytest.approx(2.98))
    assert measurement_time(stamp_s=9.98, ros_now_s=10.0, monotonic_now_s=3.0, valid=False, age_s=math.inf) == (
        pytest.approx(2.98))


# -- log and diagnostics -------------------------------------------------------------------------
def test_logging_is_rate_limited_per_reason_with_a_repeat_count():
    now = [0.0]
    logger = Logger()
    log = ThrottledLog(logger, 1.0, clock=lambda: now[0])
    assert log("a", "warning", "speed")
    assert not log("a", "warning", "speed") and not log("a", "warning", "speed")
    assert log("b", "error", "stale")  # another reason is not throttled by the first
    now[0] = 1.5
    assert log("a", "warning", "speed")
    assert logger.lines == [("warning", "speed"), ("error", "stale"),
                            ("warning", "speed (2 more since the last report)")]


def report(counters, **overrides):
    arguments = dict(base_frame="base_link", counts=counters.snapshot(), stop_latched=False, latch_reason="",
                     controls_queued=2, state_age_s=0.01, stale_state_timeout_s=0.1)
    return executor_report("executor", **{**arguments, **overrides})


def test_executor_report_levels_and_counters():
    counters = ExecutorCounters()
    counters.count("commands_sent", 5)
    counters.count("latched_stops.service")
    counters.count_limit(SafetyReason.SPEED_LIMITED)
    counters.count_refusal("stale_plan")
    ready = report(counters)
    assert (ready.level, ready.message, ready.hardware_id) == (DiagnosticLevel.OK, "ready", "base_link")
    assert ready.value("commands_sent") == "5" and ready.value("late_ticks") == "0"
    assert ready.value("latched_stops.service") == "1" and ready.value("refused.stale_plan") == "1"
    assert ready.value("limit.speed_limited") == "1" and ready.value("limit.state_stale") == "0"
    assert ready.value("controls_queued") == "2" and ready.value("state_age_s") == "0.0100"
    stale = report(counters, state_age_s=math.inf)
    assert stale.level is DiagnosticLevel.WARN and "stale" in stale.message
    latched = report(counters, stop_latched=True, latch_reason="service: stop", state_age_s=math.inf)
    assert (latched.level, latched.message) == (DiagnosticLevel.ERROR, "stop latched: service: stop")
    assert latched.value("stop_latched") == "True"


def test_latched_stop_reason_reads_the_published_report():
    def published(report):  # as conversions.report_to_status publishes it (DiagnosticStatus, KeyValue)
        return SimpleNamespace(message=report.message,
                               values=[SimpleNamespace(key=key, value=text) for key, text in report.values])

    counters = ExecutorCounters()
    assert latched_stop_reason(published(report(counters))) is None
    assert latched_stop_reason(published(report(counters, state_age_s=math.inf))) is None
    latched = report(counters, stop_latched=True, latch_reason="service: stop")
    assert latched_stop_reason(published(latched)) == "stop latched: service: stop"


def test_gripper_report():
    assert gripper_report("executor", None).message == "disabled"
    held = GripperStatus(activated=True, go_to=True, activation=ActivationStatus.ACTIVE,
                         object_status=ObjectStatus.CONTACT_CLOSING, requested_position=255, position=140)
    snapshot = GripperSnapshot(endpoint="tcp 127.0.0.1:5020", status=held, problem=None, last_answer_age_s=0.01,
                               polls=10, failed_polls=1, grasp_width_m=0.029)
    ok = gripper_report("executor", snapshot)
    assert (ok.level, ok.message, ok.hardware_id) == (DiagnosticLevel.OK, "tool held", "tcp 127.0.0.1:5020")
    assert ok.value("object_detected") == "True" and ok.value("grasp_width_m") == "0.0290"
    assert gripper_problem(held) is None
    assert gripper_problem(dataclasses.replace(held, object_status=ObjectStatus.MOVING))[0] == "tool lost"
    assert gripper_problem(dataclasses.replace(held, fault=0x0A))[0] == "fault 0x0A/0x0"
    faulted = gripper_report("executor", dataclasses.replace(snapshot, status=None, problem="gripper fault"))
    assert (faulted.level, faulted.message, faulted.value("status")) == (DiagnosticLevel.ERROR, "gripper fault",
                                                                        "unknown")


# -- control logic -------------------------------------------------------------------------------
def make_control():
    published = []
    settings = ExecutionSettings(rate=50.0, table_to_base=(0, 0, 0, 0)).executor_settings()
    control = ExecutorControl(settings, published.append, ThrottledLog(Logger(), 0.0))
    return control, published


def test_a_stale_state_aborts_the_running_control():
    control, published = make_control()
    controls, start = checked([(0.05, 0.0, 1.0)])
    control.accept(controls, start, replace=True)
    control.tick()  # no estimate: exact zero, the control is aborted
    assert published and published[-1].is_zero
    assert control.core.stream.queued == 0
    assert control.counters.snapshot().events["controls_aborted"] == 1


def test_a_latched_stop_refuses_controls_until_reset():
    control, published = make_control()
    assert control.latch("stop service called", source="service")
    assert published[-1].is_zero and control.core.stop_latched
    controls, start = checked([(0.05, 0.0, 1.0)])
    with pytest.raises(ControlsRefused) as refused:
        control.accept(controls, start, replace=True)
    assert refused.value.reason == "stop_latched" and "service: stop service called" in refused.value.message
    assert control.reset(lambda: "gripper fault") == (False, "reset refused: gripper fault")
    assert control.core.stop_latched
    success, message = control.reset(lambda: None)
    assert success and message.startswith("stop cleared (service: stop service called)")
    assert control.reset(lambda: None) == (True, "no stop was latched")
    report = control.report("executor", "base_link")
    assert report.value("latched_stops.service") == "1"


def test_closing_publishes_a_last_zero_once():
    control, published = make_control()
    control.update_state((0.0, 0.0), stamp_s=0.0, valid=True)
    assert control.close_output("shutting down") and published[-1].is_zero
    count = len(published)
    assert not control.close_output("again") and len(published) == count
    assert not control.latch("late", source="gripper")
    control.tick()
    assert len(published) == count  # closed: silent
