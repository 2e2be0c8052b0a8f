"""The state estimator node's ROS-free parts: its settings (parameters declared once), the
frame gate, the clock map, the published snapshots and the tracking state with its diagnostics."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from parapush.estimation.body_map import BodyMap, BodyMapEntry
from parapush.estimation.body_tracking import BodyTracking, StreamStatus
from parapush.estimation.clock_map import ClockMap
from parapush.estimation.estimator_settings import EstimatorSettings
from parapush.estimation.frame_gate import FrameGate
from parapush.estimation.natnet_client import NatNetClientStats
from parapush.estimation.published_snapshots import call_now, publishable_snapshot, unknown_snapshot
from parapush.estimation.table_frame import TableTransform
from parapush.estimation.velocity_filter import PoseFilterSettings
from parapush.natnet import MocapFrame, NatNetVersion
from parapush.reporting.diagnostic_report import DiagnosticLevel
from parapush.scene import load_scene
from parapush.settings import SettingsError, setting_fields, settings_from_mapping

ROOT = Path(__file__).resolve().parents[2]
SCENE = load_scene(ROOT / "config" / "scenes" / "clutter_fig1.yaml")
BODIES = ("pusher", *SCENE.object_names)


# -- settings ------------------------------------------------------------------------------------
def test_the_parameter_file_lists_settings_with_their_defaults():
    data = yaml.safe_load((ROOT / "config" / "state_estimator.yaml").read_text())["state_estimator"]
    data = data["ros__parameters"]
    paths = {item.path for item in setting_fields(EstimatorSettings)}
    keys = {f"filter.{key}" for key in data["filter"]} | {key for key in data if key != "filter"}
    assert keys == paths
    assert settings_from_mapping(EstimatorSettings, data) == EstimatorSettings()


@pytest.mark.parametrize(
    ("data", "path", "detail"),
    [
        ({"local_interface": "eth0"}, "local_interface", "expected an IPv4 address"),
        ({"server_address": "300.1.2.3"}, "server_address", "expected an IPv4 address"),
        ({"server_address": ""}, "server_address", "must not be empty"),
        ({"multicast_group": "192.168.0.1"}, "multicast_group", "not a multicast address"),
        ({"natnet_version": "five"}, "natnet_version", "major.minor"),
        ({"natnet_version": "2.0"}, "natnet_version", "3.x and 4.x"),
        ({"filter": {"position_noise": -1.0}}, "filter.position_noise", ""),
        ({"command_port": 0}, "command_port", ""),
        ({"frame_id": ""}, "frame_id", "must not be empty"),
    ],
)
def test_invalid_settings_name_the_field(data, path, detail):
    with pytest.raises(SettingsError) as raised:
        settings_from_mapping(EstimatorSettings, data)
    assert raised.value.path == path and detail in raised.value.problem


def test_core_settings_from_the_settings():
    settings = EstimatorSettings(natnet_version="4.1", multicast=True, multicast_group="239.255.42.99",
                                 filter=PoseFilterSettings(jump_distance=0.0))
    tracker = settings.tracker_settings()
    assert tracker.stale_timeout == 0.1 and tracker.pose_filter.jump_distance == 0.0
    assert tracker.pose_filter.jump_angle == 0.5
    client = settings.client_settings()
    assert client.requested_version == NatNetVersion(4, 1)
    assert (client.multicast, client.multicast_group, client.data_port) == (True, "239.255.42.99", None)
    with pytest.raises(SettingsError) as raised:
        EstimatorSettings(local_interface="10.255.255.1").client_settings()
    assert raised.value.path == "local_interface" and "not an address of this host" in raised.value.problem


# -- frame gate, clock map, snapshots ------------------------------------------------------------

def frame(number: int, timestamp: float, mid: int, received: int | None = None, transmit: int | None = None):
    received = mid + 1000 if received is None else received
    transmit = mid + 2000 if transmit is None else transmit
    return MocapFrame(frame_number=number, rigid_bodies=(), timestamp=timestamp, mid_exposure_ticks=mid,
                      data_received_ticks=received, transmit_ticks=transmit)


def test_frame_gate_rejects_damaged_stamps():
    frequency = 10_000_000
    period_ticks = frequency // 120
    gate = FrameGate(max_latency=0.1, clock_tolerance=0.002)
    good = [frame(n, 1.0 + n / 120, 10**9 + n * period_ticks) for n in range(6)]
    assert gate.check(good[0], frequency) == (None, pytest.approx(2000 / frequency))
    assert gate.check(good[1], frequency)[0] is None
    # Timestamp damaged (+0.3 s): rejected, and the next frame too (checked against it).
    assert gate.check(frame(2, good[2].timestamp + 0.3, good[2].mid_exposure_ticks), frequency)[0] == "clock"
    assert gate.check(good[3], frequency)[0] == "clock"
    assert gate.check(good[4], frequency)[0] is None
    # Latency of 5 s, and stamps out of order.
    assert gate.check(frame(5, good[5].timestamp, good[5].mid_exposure_ticks,
                            transmit=good[5].mid_exposure_ticks + 5 * frequency), frequency)[0] == "latency"
    assert gate.check(frame(6, 1.05, 10**9 + 6 * period_ticks, received=10**9), frequency)[0] == "latency"
    # No high-resolution stamps, or no frequency: passes, latency unknown.
    assert gate.check(MocapFrame(frame_number=7, rigid_bodies=(), timestamp=1.1), frequency) == (None, None)
    assert gate.check(good[5], 0) == (None, None)
    # Tolerance 0: no clock check.
    lenient = FrameGate(max_latency=0.1, clock_tolerance=0.0)
    lenient.check(good[0], frequency)
    assert lenient.check(frame(1, 9.0, good[1].mid_exposure_ticks), frequency)[0] is None



def test_clock_map_keeps_the_offset_of_short_brackets():
    """A read of the ROS clock delayed by a preemption must not shift the stamps."""
    state = {"offset": 100.0, "delay": 0.0}

    def clock():
        reading = time.monotonic() + state["offset"]
        time.sleep(state["delay"])  # preempted after reading: the bracket is long
        return reading

    clock_map = ClockMap(clock, max_bracket=0.0005)
    assert clock_map.offset() == pytest.approx(100.0, abs=0.001)
    state.update(offset=200.0, delay=0.003)
    assert clock_map.offset() == pytest.approx(100.0, abs=0.001)  # every try too slow: kept
    state.update(delay=0.0)
    assert clock_map.offset() == pytest.approx(200.0, abs=0.001)  # a genuine change is followed


def test_published_snapshots_are_finite():
    unknown = unknown_snapshot(SCENE, 12.5)
    assert unknown.stamp == 12.5 and not unknown.pusher_valid and not unknown.object_valid.any()
    assert unknown.pusher_age == math.inf and np.all(unknown.object_age == math.inf)
    state = unknown.state.copy()
    state[:3] = math.nan
    published = publishable_snapshot(unknown.__class__(**{**unknown.__dict__, "state": state}), 20.0)
    assert published.stamp == 20.0 and np.all(published.state == 0.0)


def test_call_now_retries_with_a_fresh_time():
    calls = []

    def method(now):
        calls.append(now)
        if len(calls) == 1:
            raise ValueError("now is before the latest measurement")
        return "done"

    result, now = call_now(method, -1.0)
    assert result == "done" and now == calls[1] > 0.0 and calls[0] == -1.0


# -- tracking state and diagnostics --------------------------------------------------------------
def names_only_tracking() -> BodyTracking:
    body_map = BodyMap(tuple(BodyMapEntry(body=name, motive_name=f"m_{name}") for name in BODIES))
    return BodyTracking(SCENE, body_map, "names.yaml", TableTransform((0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0)),
                        EstimatorSettings())


def stream(**overrides) -> StreamStatus:
    values = dict(endpoint="127.0.0.1:1510", multicast=False, connected=True, server="Motive (NatNet 4.1)",
                  stats=NatNetClientStats(), silence_s=0.01)
    return StreamStatus(**{**values, **overrides})


def test_names_are_resolved_by_the_model_definitions():
    tracking = names_only_tracking()
    assert tracking.tracker is None
    assert not tracking.on_frame(MocapFrame(frame_number=1, rigid_bodies=(), timestamp=1.0), 5.0, 0)
    [status] = tracking.reports("estimator", stream(), time.monotonic())
    assert (status.level, status.message) == (DiagnosticLevel.ERROR, "waiting for model definitions")
    assert status.value("frames_unresolved") == "1" and status.value("ids_from") == "body_map_file"
    definitions = {number: f"m_{name}" for number, name in enumerate(BODIES, start=10)}
    is_error, line = tracking.apply_model_definitions(definitions)
    assert not is_error and line.startswith("rigid-body ids from the model definitions: pusher=10")
    assert tracking.tracker is not None
    assert tracking.apply_model_definitions(definitions) is None  # nothing changed: nothing to log
    reports = tracking.reports("estimator", stream(), time.monotonic())
    assert [report.name for report in reports] == ["estimator: mocap stream"] + [
        f"estimator: body {name}" for name in BODIES]
    assert all(report.level is DiagnosticLevel.ERROR and report.message == "never seen" for report in reports[1:])
    assert reports[0].value("rigid_body_ids").startswith("pusher=10,")
    assert reports[0].value("model_definitions_received") == "2"
    # Definitions that contradict the mapping stop tracking, and are logged once.
    is_error, line = tracking.apply_model_definitions({1: "someone_else"})
    assert is_error and "tracking stopped" in line and tracking.tracker is None
    assert tracking.apply_model_definitions({1: "someone_else"}) is None
    [status] = tracking.reports("estimator", stream(), time.monotonic())
    assert status.level is DiagnosticLevel.ERROR and status.message.startswith("not tracking: ")


def test_stream_levels():
    tracking = names_only_tracking()
    tracking.apply_model_definitions({number: f"m_{name}" for number, name in enumerate(BODIES, start=1)})
    now = time.monotonic()
    offline = tracking.reports("estimator", stream(connected=False), now)[0]
    assert (offline.level, offline.message) == (DiagnosticLevel.ERROR, "no NatNet server answering at 127.0.0.1:1510")
    silent = tracking.reports("estimator", stream(silence_s=0.5), now)[0]
    assert (silent.level, silent.message) == (DiagnosticLevel.ERROR, "no mocap frames for 0.50 s")
    stale = tracking.reports("estimator", stream(), now)[0]
    assert stale.level is DiagnosticLevel.WARN  # never-seen bodies are stale
    malformed = stream(stats=NatNetClientStats(malformed_packets=3))
    assert "3 malformed packet(s) dropped" in tracking.reports("estimator", malformed, now, advance=True)[0].message
    assert "malformed" not in tracking.reports("estimator", malformed, now)[0].message  # already reported
