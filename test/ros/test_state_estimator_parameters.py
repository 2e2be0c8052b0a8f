"""The state estimator node's parameters, its behaviour without a server, its TF messages
and its frame plausibility gate.

* every bad parameter (body map, transform file, ports, addresses, versions, ranges) fails at
  start with a ParameterError naming it, and leaves no NatNet thread behind;
* the shipped config/state_estimator.yaml starts the node; with no server it publishes every
  body stale (valid false, age inf, pose 0: never NaN) and /diagnostics at ERROR;
* body_transforms / mocap_frame_transform carry the tracker's body poses (TF frames);
* FrameGate rejects frames whose stamps are inconsistent (damaged datagrams).
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest
import yaml
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.parameter import Parameter
from test_state_estimator_support import (
    BODY_MAP,
    CONFIG,
    SCENE,
    MovingScene,
    Topics,
    start_estimator,
)

from parapush.estimation.body_map import load_body_map
from parapush.estimation.rotations import quaternion_to_matrix, yaw_about_z
from parapush.estimation.table_frame import TableTransform
from parapush.estimation.tracker import SceneTracker
from parapush.natnet import MocapFrame, RigidBody
from parapush.nodes import state_estimator
from parapush.nodes.conversions import msg_to_snapshot
from parapush.nodes.parameters import ParameterError, flatten_parameters
from parapush.nodes.state_estimator import (
    PARAMETERS,
    StateEstimatorNode,
    body_transforms,
    mocap_frame_transform,
)

pytestmark = pytest.mark.timeout(60)


def natnet_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name in ("NatNetClient", "state-estimator-modeldef")]


def bad_files(tmp_path):
    unknown = tmp_path / "unknown_body.yaml"
    unknown.write_text((CONFIG / "mocap" / "clutter_fig1.yaml").read_text() + "  - {body: ghost, id: 9}\n")
    duplicate = tmp_path / "duplicate_id.yaml"
    duplicate.write_text((CONFIG / "mocap" / "clutter_fig1.yaml").read_text().replace("id: 3", "id: 2"))
    missing = tmp_path / "missing_body.yaml"
    missing.write_text("bodies:\n  - {body: pusher, id: 1}\n  - {body: target, id: 2}\n")
    zero_quaternion = tmp_path / "zero_quaternion.yaml"
    zero_quaternion.write_text("mocap_to_table:\n  translation: [0, 0, 0]\n  rotation: {quaternion: [0, 0, 0, 0]}\n")
    not_yaml = tmp_path / "not_yaml.yaml"
    not_yaml.write_text("mocap_to_table: [unclosed\n")
    wrong_section = tmp_path / "wrong_section.yaml"
    wrong_section.write_text("table_to_mocap:\n  translation: [0, 0, 0]\n  rotation: {preset: y_up}\n")
    return [
        ("body_map_file", str(unknown), "'ghost' is not a body"),
        ("body_map_file", str(duplicate), "duplicate id 2"),
        ("body_map_file", str(missing), "needs a mocap body for"),
        ("body_map_file", "no_such_map.yaml", "cannot read body mapping"),
        ("table_transform_file", "no_such_transform.yaml", "is not a file in"),
        ("table_transform_file", str(zero_quaternion), "quaternion"),
        ("table_transform_file", str(not_yaml), "invalid YAML"),
        ("table_transform_file", str(wrong_section), "mocap_to_table: missing"),
        ("table_transform_file", "", "must not be empty"),
    ]


BAD_VALUES = [
    ("command_port", 0, "out of range"),
    ("command_port", 70000, ""),
    ("command_port", "1510", ""),
    ("data_port", -1, ""),
    ("data_port", 65536, ""),
    ("local_interface", "eth0", "expected an IPv4 address"),
    ("local_interface", "10.255.255.1", "not an address of this host"),
    ("server_address", "300.1.2.3", "expected an IPv4 address"),
    ("server_address", "", "must not be empty"),
    ("multicast_group", "192.168.0.1", "not a multicast address"),
    ("natnet_version", "five", "major.minor"),
    ("natnet_version", "2.0", "3.x and 4.x"),
    ("scene_file", "no_such_scene.yaml", "no_such_scene"),
    ("stale_timeout", 0.0, ""),
    ("filter.position_noise", -1.0, ""),
    ("filter.jump_distance", -0.1, ""),
    ("publish_rate", -1.0, ""),
    ("max_latency", 0.0, ""),
    ("frame_id", "", "must not be empty"),
    ("publish_tf", "yes", ""),
]


def test_bad_parameters_fail_at_start_naming_the_parameter(tmp_path, ros_context):
    cases = bad_files(tmp_path) + BAD_VALUES
    for name, value, detail in cases:
        with pytest.raises(ParameterError) as raised:
            StateEstimatorNode(context=ros_context, parameter_overrides=[Parameter(name, value=value)])
        message = str(raised.value)
        assert f"parameter '{name}'" in message, (name, value, message)
        assert detail in message, (name, value, message)
    assert natnet_threads() == [], "a failed start left NatNet threads running"


def test_the_shipped_parameter_file_starts_and_reports_no_server(ros_context, spinning, free_udp_port):
    """config/state_estimator.yaml as is (the port moved to a free one: nothing answers)."""
    values = flatten_parameters(yaml.safe_load((CONFIG / "state_estimator.yaml").read_text())["state_estimator"]
                      ["ros__parameters"])
    assert set(values) <= {spec.name for spec in PARAMETERS}
    topics = Topics(ros_context, spinning)
    node = start_estimator(ros_context, spinning, free_udp_port, topics, **{**values, "diagnostics_period": 0.1})
    try:
        assert node.body_map == BODY_MAP and node.scene.name == "clutter_fig1"
        if state_estimator.TransformBroadcaster is None:
            assert node._tf_broadcaster is None  # tf2_ros missing: TF skipped (one log line)
        messages = [topics.wait_for(lambda m: True, what="a heartbeat state without a server")]
        time.sleep(0.35)
        messages += topics.snapshot()
        assert len(messages) >= 3  # idle_publish_period 0.1 s
        for message in messages:
            for body in (message.pusher, *message.objects):
                assert not body.valid and math.isinf(body.age), (node.client.stats(), node.client.server_info)
                assert (body.x, body.y, body.yaw, body.vx, body.vy, body.yaw_rate) == (0, 0, 0, 0, 0, 0)
            snapshot = msg_to_snapshot(message, SCENE)  # readable by the consumers: finite, complete
            assert not snapshot.pusher_valid and not snapshot.object_valid.any()
            assert [body.name for body in message.objects] == list(SCENE.object_names)
        status = topics.latest_stream_status()
        assert status["level"] == 2 and status["message"].startswith("no NatNet server answering at 127.0.0.1:")
        assert status["connected"] == "False"
    finally:
        node.close()
    assert natnet_threads() == []
    node.close()  # idempotent


def tracker_with_frame(transform: TableTransform, now: float) -> tuple[SceneTracker, MovingScene]:
    scene = MovingScene(transform, seed=0)
    tracker = SceneTracker(SCENE, BODY_MAP, transform)
    truth = scene.truth(now)
    bodies = []
    for body, (pose, _) in truth.items():
        position, orientation = scene.mocap_pose(body, pose)
        bodies.append(RigidBody(scene.ids[body], tuple(position), tuple(orientation), 0.0, True))
    assert tracker.update(MocapFrame(frame_number=1, rigid_bodies=tuple(bodies)), now)
    return tracker, scene


def test_tf_messages_carry_the_body_poses_and_the_mocap_frame():
    transform = TableTransform.from_rpy(math.radians(90.0), 0.0, math.radians(25.0), (0.35, -0.2, 0.05))
    now = time.monotonic()
    tracker, scene = tracker_with_frame(transform, now)
    stamp = Time(sec=12, nanosec=500)
    transforms = body_transforms(tracker.body_poses(now), stamp, "table", "mocap/")
    truth = scene.truth(now)
    assert [t.child_frame_id for t in transforms] == [f"mocap/{name}" for name in ("pusher", *SCENE.object_names)]
    for message in transforms:
        body = message.child_frame_id.removeprefix("mocap/")
        pose, _ = truth[body]
        assert message.header.frame_id == "table" and message.header.stamp == stamp
        translation = message.transform.translation
        rotation = message.transform.rotation
        np.testing.assert_allclose([translation.x, translation.y], pose[:2], atol=1e-9)
        assert translation.z == pytest.approx(0.0 if body == "pusher" else 0.0125, abs=1e-9)
        quaternion = np.array([rotation.x, rotation.y, rotation.z, rotation.w])
        assert np.linalg.norm(quaternion) == pytest.approx(1.0)
        if body != "pusher":
            assert yaw_about_z(quaternion) == pytest.approx((pose[2] + math.pi) % (2 * math.pi) - math.pi, abs=1e-9)
    # A body stale at `now` has no TF.
    assert "target" not in tracker.body_poses(now + 1.0)
    static = mocap_frame_transform(transform, stamp, "table", "mocap")
    assert (static.header.frame_id, static.child_frame_id) == ("table", "mocap")
    rotation = static.transform.rotation
    matrix = quaternion_to_matrix(np.array([rotation.x, rotation.y, rotation.z, rotation.w]))
    point = np.array([0.1, 0.2, 0.3])  # a mocap point, through the TF and through the transform
    translation = static.transform.translation
    np.testing.assert_allclose(matrix @ point + [translation.x, translation.y, translation.z],
                               transform.points_to_table(point), atol=1e-12)


def test_body_map_setting_follows_the_shared_rule(ros_context, free_udp_port):
    """auto: config/mocap/<scene>.yaml, else generated; "": generated (as the simulated driver)."""
    from parapush.estimation.body_map import default_body_map

    for scene_file, setting, expected in [
        ("clutter_fig1.yaml", "auto", load_body_map(CONFIG / "mocap" / "clutter_fig1.yaml", SCENE)),
        ("clutter_fig1.yaml", "", default_body_map(SCENE)),
        ("isrr_obstacle.yaml", "auto", None),  # no config/mocap/isrr_obstacle.yaml: generated
    ]:
        node = StateEstimatorNode(context=ros_context, parameter_overrides=[
            Parameter("scene_file", value=scene_file), Parameter("body_map_file", value=setting),
            Parameter("command_port", value=free_udp_port)])
        try:
            assert node.body_map == (expected or default_body_map(node.scene)), (scene_file, setting)
            values = {pair.key: pair.value for pair in node.diagnostics()[0].values}
            assert values["body_map"] == node.body_map_source
        finally:
            node.close()


def test_diagnostics_levels_without_a_tracker_are_errors(ros_context, tmp_path, free_udp_port):
    """A mapping by Motive names only cannot track before the model definitions arrive."""
    path = tmp_path / "names.yaml"
    path.write_text("bodies:\n" + "".join(f"  - {{body: {name}, motive_name: m_{name}}}\n"
                                          for name in ("pusher", *SCENE.object_names)))
    node = StateEstimatorNode(context=ros_context, parameter_overrides=[
        Parameter("body_map_file", value=str(path)), Parameter("command_port", value=free_udp_port)])
    try:
        assert node.tracking.tracker is None
        stream = node.diagnostics()[0]
        assert stream.level == DiagnosticStatus.ERROR
        assert len(node.diagnostics()) == 1  # no per-body status without a tracker
        snapshot, _ = node.current_snapshot()
        assert not snapshot.pusher_valid and np.all(snapshot.state == 0.0) and math.isinf(snapshot.pusher_age)
    finally:
        node.close()


def test_the_executable_exits_2_on_a_bad_parameter_and_0_on_sigint_after_disconnecting():
    """``python -m parapush.nodes.state_estimator`` (run_node): a bad parameter exits 2 naming it;
    SIGINT stops it cleanly, the NatNet client sending DISCONNECT."""
    import os
    import signal
    import subprocess
    import sys

    from parapush.estimation.table_frame import load_table_transform
    from parapush.sim.mocap_server import MocapServer, MocapServerSettings

    scene = MovingScene(load_table_transform(CONFIG / "table_transform.yaml"), seed=1)
    with MocapServer(scene, settings=MocapServerSettings(command_port=0)) as server:
        command = [sys.executable, "-m", "parapush.nodes.state_estimator", "--ros-args",
                   "--params-file", str(CONFIG / "state_estimator.yaml")]
        environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
        bad = subprocess.Popen(command + ["-p", "command_port:=0"], env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        good = subprocess.Popen(command + ["-p", f"command_port:={server.command_address[1]}"], env=environment,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            _, errors = bad.communicate(timeout=30)
            assert bad.returncode == 2, errors
            assert "[FATAL] parameter 'command_port'" in errors
            deadline = time.monotonic() + 30
            while not server.stats().clients:
                assert good.poll() is None and time.monotonic() < deadline, "the node never connected"
                time.sleep(0.05)
            time.sleep(0.3)
            good.send_signal(signal.SIGINT)
            output, _ = good.communicate(timeout=20)
        finally:
            for process in (bad, good):
                if process.poll() is None:
                    process.kill()
                    process.wait()
        assert good.returncode == 0, output
        assert server.stats().clients == (), "no DISCONNECT: the client was not stopped"
        assert "Traceback" not in output, output
