"""SceneTracker on synthetic NatNet frames with known truth: the issue's acceptance numbers
(pose error < 1 mm, speed error < 5 mm/s RMS at 0.5 mm noise, 120 Hz, 25-100 mm/s),
staleness within 2 frames of the timeout, recovery, timing and stream diagnostics.

The synthetic server is independent of the code under test: it builds mocap poses with
scipy's Rotation from table-frame trajectories through a known Y-up calibration.
"""

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from parapush.estimation.body_map import BodyMap, BodyMapEntry, BodyMapError, load_body_map
from parapush.estimation.table_frame import TableTransform
from parapush.estimation.tracker import SceneTracker, TrackerSettings
from parapush.natnet import MocapFrame, RigidBody
from parapush.scene import load_scene

ROOT = Path(__file__).resolve().parents[2]
SCENE = load_scene(ROOT / "config" / "scenes" / "clutter_fig1.yaml")
BODY_MAP = load_body_map(ROOT / "config" / "mocap" / "clutter_fig1.yaml", SCENE)
IDS = {entry.body: entry.rigid_body_id for entry in BODY_MAP.entries}
PERIOD = 1.0 / 120.0
# Motive Y-up, rotated 25 deg about the vertical, origin 0.76 m below the table top.
CALIBRATION = TableTransform(
    tuple(
        (
            Rotation.from_euler("z", 25.0, degrees=True) * Rotation.from_euler("x", 90.0, degrees=True)
        ).as_quat()
    ),
    (1.2, -0.3, -0.76),
)
CENTRE_HEIGHT = 0.01225  # m, cylinder centres above the table top
LOCAL_START = 100.0  # s, local clock at the first exposure
SERVER_START = 5000.0  # s, Motive clock at the first exposure


# -- truth ---------------------------------------------------------------------------------
def straight(start, speed, heading, yaw=0.0, yaw_rate=0.0):
    def pose_and_twist(time):
        velocity = speed * np.array([math.cos(heading), math.sin(heading)])
        return (
            np.array([*(np.asarray(start) + velocity * time), yaw + yaw_rate * time]),
            np.array([*velocity, yaw_rate]),
        )

    return pose_and_twist


def circle(centre, radius, speed, phase=0.0):
    rate = speed / radius

    def pose_and_twist(time):
        angle = phase + rate * time
        position = np.asarray(centre) + radius * np.array([math.cos(angle), math.sin(angle)])
        velocity = speed * np.array([-math.sin(angle), math.cos(angle)])
        return np.array([*position, angle + math.pi / 2]), np.array([*velocity, rate])

    return pose_and_twist


# Pusher 100 mm/s; target on a 0.2 m circle at 50 mm/s (turning at 0.25 rad/s); clutter_a
# 25 mm/s; clutter_b at rest; clutter_c 75 mm/s spinning at 1.2 rad/s through +-pi.
TRAJECTORIES = {
    "pusher": straight((-0.35, -0.05), 0.1, 0.2),
    "target": circle((-0.05, 0.0), 0.2, 0.05),
    "clutter_a": straight((0.0, 0.06), 0.025, -2.0, yaw=0.3),
    "clutter_b": straight((0.02, -0.09), 0.0, 0.0, yaw=1.0),
    "clutter_c": straight((0.12, 0.13), 0.075, 2.5, yaw=2.8, yaw_rate=1.2),
}


@dataclass
class SyntheticServer:
    """Motive as seen through NatNet: rigid-body frames of table-frame trajectories."""

    position_noise: float = 0.0005  # m per axis, mocap frame
    orientation_noise: float = 0.003  # rad per body axis
    seed: int = 0
    trajectories: dict = None  # scene body -> truth function; TRAJECTORIES when None

    def __post_init__(self):
        self.rng = np.random.default_rng(self.seed)
        self.rotation = Rotation.from_quat(CALIBRATION.rotation)  # table <- mocap
        self.trajectories = self.trajectories or TRAJECTORIES

    def rigid_body(self, body, table_pose, tracked=True):
        """Mocap pose of the Motive body of scene ``body`` whose centre is at ``table_pose``."""
        entry = BODY_MAP.entry(body)
        x, y, yaw = table_pose
        object_rotation = Rotation.from_euler("z", yaw)
        # R_object = (R R_body R^T) Rz(yaw_offset)  =>  R_body = R^T R_object Rz(-yaw_offset) R
        body_rotation = (
            self.rotation.inv()
            * object_rotation
            * Rotation.from_euler("z", -entry.yaw_offset)
            * self.rotation
        )
        pivot_table = np.array([x, y, CENTRE_HEIGHT]) - object_rotation.apply(entry.centre_offset)
        pivot_mocap = self.rotation.inv().apply(pivot_table - np.asarray(CALIBRATION.translation))
        noisy_rotation = body_rotation * Rotation.from_rotvec(self.rng.normal(0.0, self.orientation_noise, 3))
        position = pivot_mocap + self.rng.normal(0.0, self.position_noise, 3)
        return RigidBody(
            id=IDS[body],
            position=tuple(position),
            orientation=tuple(noisy_rotation.as_quat()),
            mean_error=0.0002,
            tracking_valid=tracked,
        )

    def frame(self, number, time, absent=(), untracked=(), server_time=True):
        bodies = tuple(
            self.rigid_body(body, trajectory(time)[0], tracked=body not in untracked)
            for body, trajectory in self.trajectories.items()
            if body not in absent
        )
        return MocapFrame(
            frame_number=number,
            rigid_bodies=bodies,
            timestamp=SERVER_START + time if server_time else 0.0,
        )


@dataclass
class Timing:
    """How frames are timed: regular exposures with a jittered receive thread (server
    timestamps available), or irregular exposure times with no server timestamps."""

    server_clock: bool
    seed: int = 1

    def __post_init__(self):
        self.rng = np.random.default_rng(self.seed)

    def exposure(self, index):
        jitter = 0.0 if self.server_clock else self.rng.uniform(-0.001, 0.001)
        return index * PERIOD + jitter

    def receive(self, exposure_time):
        """(receive time on the local clock, latency passed to the tracker)."""
        latency = 0.003 + self.rng.uniform(0.0, 0.002)  # server-side, known from the ticks
        unknown = self.rng.exponential(0.001) if self.server_clock else 0.0  # receive-thread jitter
        return LOCAL_START + exposure_time + latency + unknown, latency


def run(
    timing,
    duration=8.0,
    drop_fraction=0.1,
    occlusions=(),
    settings=None,
    seed=0,
    server=None,
):
    """Feed ``duration`` s of frames; return one record per accepted frame.

    ``occlusions``: (body, start, end, mode) with mode 'absent' or 'untracked'.
    """
    server = server or SyntheticServer(seed=seed)
    tracker = SceneTracker(
        SCENE, BODY_MAP, CALIBRATION, settings or TrackerSettings(use_server_clock=timing.server_clock)
    )
    drop_rng = np.random.default_rng(seed + 100)
    records = []
    for index in range(int(duration / PERIOD)):
        time = timing.exposure(index)
        if drop_rng.random() < drop_fraction or 240 <= index < 246:  # random drops + a 6-frame burst at 2 s
            continue
        absent = [body for body, start, end, mode in occlusions if start <= time < end and mode == "absent"]
        untracked = [
            body for body, start, end, mode in occlusions if start <= time < end and mode == "untracked"
        ]
        frame = server.frame(index, time, absent, untracked, server_time=timing.server_clock)
        receive_time, latency = timing.receive(time)
        assert tracker.update(frame, receive_time, latency)
        snapshot = tracker.snapshot(receive_time)
        records.append((time, receive_time, snapshot))
    return tracker, records


def errors_of(records, body, start, end=math.inf, trajectories=TRAJECTORIES):
    """Position (m), speed (m/s), velocity-vector (m/s), yaw (rad) and yaw-rate (rad/s) errors
    of ``body`` at each snapshot with start <= exposure < end, against truth at the stamp."""
    rows = []
    for _time, _receive, snapshot in records:
        truth_time = snapshot.stamp - LOCAL_START
        if not start <= truth_time < end:
            continue
        pose, twist = trajectories[body](truth_time)
        layout = snapshot.layout
        if body == "pusher":
            estimate_pose = np.array([*snapshot.state[layout.pusher_position], math.nan])
            estimate_twist = np.array([*snapshot.state[layout.pusher_velocity], math.nan])
        else:
            index = SCENE.object_index(body)
            estimate_pose = snapshot.state[layout.object_pose(index)]
            estimate_twist = snapshot.state[layout.object_twist(index)]
        rows.append(
            (
                np.linalg.norm(estimate_pose[:2] - pose[:2]),
                np.linalg.norm(estimate_twist[:2]) - np.linalg.norm(twist[:2]),
                np.linalg.norm(estimate_twist[:2] - twist[:2]),
                (estimate_pose[2] - pose[2] + math.pi) % (2 * math.pi) - math.pi,
                estimate_twist[2] - twist[2],
            )
        )
    return np.array(rows)


def rms(values):
    return float(np.sqrt(np.mean(np.square(values))))


def acceptance_metrics(timing):
    """RMS errors per body after 1 s of settling: what the acceptance test checks (and what
    the final report quotes)."""
    _, records = run(timing)
    metrics = {}
    for body in TRAJECTORIES:
        errors = errors_of(records, body, start=1.0)
        metrics[body] = {
            "position_mm": 1e3 * rms(errors[:, 0]),
            "speed_mm_s": 1e3 * rms(errors[:, 1]),
            "velocity_mm_s": 1e3 * rms(errors[:, 2]),
            "yaw_mrad": 1e3 * rms(errors[:, 3]) if body != "pusher" else math.nan,
            "yaw_rate_mrad_s": 1e3 * rms(errors[:, 4]) if body != "pusher" else math.nan,
        }
    return metrics


@pytest.mark.parametrize(
    "server_clock", [True, False], ids=["server-clock+receive-jitter", "irregular-exposures"]
)
def test_acceptance_pose_within_1mm_and_speed_within_5mm_per_s(server_clock):
    metrics = acceptance_metrics(Timing(server_clock))
    for body, values in metrics.items():
        assert values["position_mm"] < 1.0, (body, values)
        assert values["speed_mm_s"] < 5.0, (body, values)
        assert values["velocity_mm_s"] < 5.0, (body, values)
        if body != "pusher":
            assert values["yaw_mrad"] < 5.0, (body, values)
            assert values["yaw_rate_mrad_s"] < 50.0, (body, values)


def speed_ramp(start, heading, initial_speed, final_speed, ramp_start, ramp_end):
    """Straight line; the speed ramps linearly from initial to final between the two times."""
    direction = np.array([math.cos(heading), math.sin(heading)])
    acceleration = (final_speed - initial_speed) / (ramp_end - ramp_start)

    def pose_and_twist(time):
        ramp_time = min(max(time - ramp_start, 0.0), ramp_end - ramp_start)
        distance = initial_speed * time + 0.5 * acceleration * ramp_time**2
        distance += acceleration * ramp_time * max(time - ramp_end, 0.0)
        speed = initial_speed + acceleration * ramp_time
        return np.array([*(np.asarray(start) + distance * direction), heading]), np.array(
            [*(speed * direction), 0.0]
        )

    return pose_and_twist


def test_measured_lag_end_to_end_matches_the_documented_lag():
    """The pusher speeds up from 25 to 100 mm/s at 0.05 m/s^2: during the ramp the velocity
    estimate trails by a * tau_v = 0.05 * 0.0915 = 4.6 mm/s (the filter's documented lag,
    measured through the whole pipeline, low noise to see it clearly), and once the speed is
    constant again the acceptance numbers hold."""
    trajectories = dict(TRAJECTORIES, pusher=speed_ramp((-0.35, -0.05), 0.2, 0.025, 0.1, 1.0, 2.5))
    server = SyntheticServer(position_noise=0.0001, trajectories=trajectories)
    _, records = run(Timing(server_clock=True), duration=4.5, drop_fraction=0.0, server=server)
    lags = []
    for _time, _receive, snapshot in records:
        truth_time = snapshot.stamp - LOCAL_START
        if 1.8 <= truth_time < 2.5:
            _, twist = trajectories["pusher"](truth_time)
            estimate = snapshot.state[SCENE.layout.pusher_velocity]
            lags.append((np.linalg.norm(twist[:2]) - np.linalg.norm(estimate)) / 0.05)
    assert np.mean(lags) == pytest.approx(0.0915, rel=0.05)
    settled = errors_of(records, "pusher", start=3.0, trajectories=trajectories)
    assert rms(settled[:, 0]) < 1e-3 and rms(settled[:, 2]) < 5e-3


#: Tracker settings of the occlusion tests: stale after 0.1 s, the filter restarts after a 0.5 s gap.
OCCLUSION_SETTINGS = TrackerSettings(stale_timeout=0.1, reinitialize_after=0.5)


def run_occluded(body: str, start: float, end: float, mode: str, duration: float):
    """``run`` on the server clock with ``body`` occluded (``mode``) from ``start`` to ``end`` s."""
    return run(Timing(server_clock=True), duration=duration, occlusions=[(body, start, end, mode)],
               settings=OCCLUSION_SETTINGS)


def test_untracked_object_goes_stale_within_two_frames_of_its_timeout_and_recovers():
    settings = OCCLUSION_SETTINGS
    tracker, records = run_occluded("clutter_a", 3.0, 4.0, "untracked", duration=6.0)
    index = SCENE.object_index("clutter_a")
    layout = SCENE.layout
    last_seen = None
    first_stale = None
    stale_states = []
    previous_age = -1.0
    for time, receive_time, snapshot in records:
        valid = bool(snapshot.object_valid[index])
        age = float(snapshot.object_age[index])
        occluded = 3.0 <= time < 4.0
        if not occluded:
            last_seen = snapshot.stamp
        assert age == pytest.approx(receive_time - last_seen, abs=1e-9)
        assert valid == (age <= settings.stale_timeout)  # never valid past the timeout
        if occluded and not valid:
            first_stale = receive_time if first_stale is None else first_stale
            stale_states.append(snapshot.state.copy())
            assert age > previous_age  # the age keeps growing
            previous_age = age
            np.testing.assert_array_equal(snapshot.state[layout.object_twist(index)], 0.0)
        if not occluded and time > 3.0:
            assert valid  # recovered on the first frame back
    last_tracked_stamp = max(snapshot.stamp for time, _, snapshot in records if time < 3.0)
    timeout_at = last_tracked_stamp + settings.stale_timeout
    assert timeout_at < first_stale <= timeout_at + 2 * PERIOD
    # The stale pose is frozen at the last estimate, not extrapolated.
    poses = np.array([state[layout.object_pose(index)] for state in stale_states])
    assert len(poses) > 80 and np.all(poses == poses[0])
    diagnostics = tracker.diagnostics(records[-1][1])
    body = next(b for b in diagnostics.bodies if b.name == "clutter_a")
    assert body.reinitializations == 1  # 1 s gap > reinitialize_after
    assert body.missed_frames == sum(1 for t, _, _ in records if 3.0 <= t < 4.0)
    # After the restart the estimate converges again: the acceptance holds from 0.6 s after.
    errors = errors_of(records, "clutter_a", start=4.6)
    assert rms(errors[:, 0]) < 1e-3
    assert rms(errors[:, 2]) < 5e-3
    first_back = errors_of(records, "clutter_a", start=4.0)[0]
    assert first_back[0] < 2e-3  # restarted at the measurement


def test_absent_body_goes_stale_and_a_short_gap_does_not_restart_the_filter():
    settings = OCCLUSION_SETTINGS
    tracker, records = run_occluded("target", 2.0, 2.3, "absent", duration=4.0)
    index = SCENE.object_index("target")
    stale_times = [t for t, _, s in records if not s.object_valid[index]]
    assert stale_times and min(stale_times) > 2.0 + settings.stale_timeout - 0.01 and max(stale_times) < 2.3
    body = next(b for b in tracker.diagnostics(records[-1][1]).bodies if b.name == "target")
    assert body.reinitializations == 0 and body.jump_resets == 0
    errors = errors_of(records, "target", start=2.3)
    assert rms(errors[:, 0]) < 1e-3  # predicted across the 0.3 s gap, then corrected


def test_everything_goes_stale_when_the_stream_stops():
    tracker, records = run(Timing(server_clock=True), duration=1.0)
    last_receive = records[-1][1]
    snapshot = tracker.snapshot(last_receive + 1.5)
    assert not snapshot.pusher_valid and not snapshot.object_valid.any()
    assert snapshot.pusher_age > 1.5
    assert snapshot.stamp == records[-1][2].stamp
    diagnostics = tracker.diagnostics(last_receive + 1.5)
    assert set(diagnostics.stale_bodies) == {"pusher", *SCENE.object_names}
    assert diagnostics.update_rate == 0.0  # no frame within the last rate window


def test_stream_diagnostics_rate_latency_and_drops():
    tracker, records = run(Timing(server_clock=True), duration=3.0, drop_fraction=0.0)
    diagnostics = tracker.diagnostics(records[-1][1])
    assert diagnostics.frames_dropped == 6  # the burst
    assert diagnostics.frames_used == diagnostics.frames_received == len(records)
    assert diagnostics.update_rate == pytest.approx(120.0, rel=0.02)
    assert diagnostics.latency_mean == pytest.approx(0.004, abs=0.0003)
    assert diagnostics.stale_bodies == () and diagnostics.never_seen_bodies == ()
    assert diagnostics.frames_with_unknown_ids == 0
    assert "Hz" in diagnostics.summary()


def test_stamps_are_latency_corrected_and_dejittered():
    _, records = run(Timing(server_clock=True), duration=3.0)
    offsets = [s.stamp - LOCAL_START - t for t, _, s in records[240:]]
    assert max(abs(o) for o in offsets) < 2e-4  # receive jitter (mean 1 ms) removed
    _, records = run(Timing(server_clock=False), duration=1.0)
    for time, _, snapshot in records:
        assert snapshot.stamp == pytest.approx(LOCAL_START + time, abs=1e-12)  # receive - latency


# -- stream handling on hand-made frames ----------------------------------------------------
IDENTITY = (0.0, 0.0, 0.0, 1.0)


def simple_tracker(**settings):
    body_map = BodyMap(
        (
            BodyMapEntry("pusher", 1),
            BodyMapEntry("slider", 2, centre_offset=(0.1, 0.0, 0.0)),
        )
    )
    scene = load_scene(ROOT / "config" / "scenes" / "isrr_obstacle.yaml")
    settings.setdefault("use_server_clock", False)
    return SceneTracker(scene, body_map, TableTransform.z_up(), TrackerSettings(**settings))


def body(body_id, x=0.0, y=0.0, orientation=IDENTITY, tracked=True):
    return RigidBody(body_id, (x, y, 0.0), orientation, 0.0, tracked)


def test_out_of_order_duplicate_dropped_and_restarted_frames_are_counted():
    tracker = simple_tracker()
    assert tracker.update(MocapFrame(10, (body(1), body(2))), 1.0)
    assert not tracker.update(MocapFrame(9, (body(1), body(2))), 1.01)  # late
    assert not tracker.update(MocapFrame(10, (body(1), body(2))), 1.02)  # duplicate
    assert tracker.update(MocapFrame(13, (body(1), body(2))), 1.03)  # 11, 12 lost
    assert not tracker.update(MocapFrame(13 - 119, (body(1), body(2))), 1.04)  # still "late"
    assert tracker.update(MocapFrame(13 - 120, (body(1), body(2))), 1.05)  # server restarted
    diagnostics = tracker.diagnostics(1.06)
    assert diagnostics.frames_received == 6 and diagnostics.frames_used == 3
    assert diagnostics.frames_out_of_order == 3
    assert diagnostics.frames_dropped == 2
    assert diagnostics.stream_restarts == 1


def test_a_newer_frame_stamped_earlier_is_dropped_and_counted():
    tracker = simple_tracker()
    assert tracker.update(MocapFrame(1, (body(1),)), 1.0, latency=0.002)
    assert not tracker.update(MocapFrame(2, (body(1),)), 1.005, latency=0.010)  # stamp 0.995 < 0.998
    assert tracker.update(MocapFrame(3, (body(1),)), 1.012, latency=0.002)
    diagnostics = tracker.diagnostics(1.02)
    assert diagnostics.frames_stamp_not_increasing == 1 and diagnostics.frames_out_of_order == 0
    assert diagnostics.frames_dropped == 0 and diagnostics.frames_used == 2  # received, not lost


def test_unknown_ids_invalid_poses_and_duplicate_ids_are_counted_not_used():
    tracker = simple_tracker()
    tracker.update(MocapFrame(1, (body(1, 0.1), body(2, 0.2), body(99))), 1.0)
    tracker.update(MocapFrame(2, (body(1, 0.1), body(2, 5.0, orientation=(0, 0, 0, 0)), body(1, 0.7))), 1.01)
    diagnostics = tracker.diagnostics(1.02)
    assert diagnostics.unknown_ids == (99,) and diagnostics.frames_with_unknown_ids == 1
    assert diagnostics.duplicate_ids == 1
    slider = diagnostics.bodies[1]
    assert slider.invalid_poses == 1 and slider.observations == 1 and slider.missed_frames == 1
    snapshot = tracker.snapshot(1.02)
    assert snapshot.state[SCENE.layout.pusher_position][0] == pytest.approx(0.1)  # not the duplicate 0.7
    assert snapshot.state[2] == pytest.approx(0.3)  # slider: pivot 0.2 + centre offset 0.1, not 5.0


def test_pusher_orientation_is_ignored_for_its_planar_state():
    tracker = simple_tracker()
    upright = IDENTITY
    upside_down = (1.0, 0.0, 0.0, 0.0)  # yaw undefined
    spun = (0.0, 0.0, 1.0, 0.0)  # half turn about z: a "yaw jump" of pi
    for number, orientation in enumerate((upright, upside_down, spun), start=1):
        tracker.update(MocapFrame(number, (body(1, 0.01 * number, orientation=orientation),)), number / 120)
    pusher = tracker.diagnostics(3 / 120).bodies[0]
    assert pusher.observations == 3 and pusher.invalid_poses == 0 and pusher.jump_resets == 0


def test_never_seen_bodies_are_nan_with_infinite_age():
    tracker = simple_tracker()
    before = tracker.snapshot(5.0)
    assert before.stamp == 5.0 and not before.pusher_valid and np.all(np.isnan(before.state))
    tracker.update(MocapFrame(1, (body(1, 0.1, 0.2),)), 6.0)
    snapshot = tracker.snapshot(6.0)
    assert snapshot.pusher_valid and not snapshot.object_valid[0]
    assert math.isinf(snapshot.object_age[0])
    assert np.all(np.isnan(snapshot.state[snapshot.layout.object_pose(0)]))
    assert tracker.diagnostics(6.0).never_seen_bodies == ("slider",)


def test_tf_poses_of_valid_bodies_include_the_centre_offset():
    tracker = simple_tracker()
    quarter_turn = (0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5))
    tracker.update(MocapFrame(1, (body(1, 0.1), body(2, 0.2, 0.3, quarter_turn))), 1.0)
    poses = tracker.body_poses(1.0)
    np.testing.assert_allclose(poses["slider"].translation, [0.2, 0.4, 0.0], atol=1e-12)
    np.testing.assert_allclose(poses["slider"].rotation, quarter_turn, atol=1e-12)
    assert set(tracker.body_poses(2.0)) == set()  # both stale by then


def test_latency_and_clock_errors_are_clear():
    tracker = simple_tracker()
    with pytest.raises(ValueError, match="latency"):
        tracker.update(MocapFrame(1, (body(1),)), 1.0, latency=-0.001)
    with pytest.raises(ValueError, match="receive_time"):
        tracker.update(MocapFrame(1, (body(1),)), math.nan)
    tracker.update(MocapFrame(1, (body(1),)), 1.0, latency=0.004)
    assert tracker.snapshot(1.0).stamp == pytest.approx(0.996)
    with pytest.raises(ValueError, match="precedes the latest frame"):
        tracker.snapshot(0.5)


def test_tracker_refuses_a_mapping_that_does_not_fit():
    scene = load_scene(ROOT / "config" / "scenes" / "isrr_obstacle.yaml")
    with pytest.raises(BodyMapError, match="no streaming id"):
        SceneTracker(
            scene,
            BodyMap((BodyMapEntry("pusher", 1), BodyMapEntry("slider", motive_name="s"))),
            TableTransform(),
        )
    with pytest.raises(BodyMapError, match="needs a mocap body"):
        SceneTracker(scene, BodyMap((BodyMapEntry("pusher", 1),)), TableTransform())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("stale_timeout", 0.0),
        ("reinitialize_after", -1.0),
        ("clock_window", math.inf),
        ("stream_restart_jump", math.nan),
        ("rate_window", "1"),
        ("stream_restart_frames", 0),
        ("use_server_clock", 1),
        ("pose_filter", None),
    ],
)
def test_settings_errors_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        TrackerSettings(**{field: value})
