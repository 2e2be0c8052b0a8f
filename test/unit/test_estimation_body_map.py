"""Mocap body mapping: the shipped example, validation against scenes, Motive name resolution."""

import pytest

from parapush.estimation.body_map import (
    BodyMap,
    BodyMapEntry,
    BodyMapError,
    body_map_from_dict,
    load_body_map,
)
from parapush.graph import config_dir
from parapush.scene import load_scene

CONFIG = config_dir()
CLUTTER = load_scene(CONFIG / "scenes" / "clutter_fig1.yaml")
ISRR = load_scene(CONFIG / "scenes" / "isrr_obstacle.yaml")


def clutter_entries():
    return [
        {"body": "pusher", "id": 1},
        {"body": "target", "id": 2},
        {"body": "clutter_a", "id": 3},
        {"body": "clutter_b", "id": 4},
        {"body": "clutter_c", "id": 5},
    ]


def test_shipped_example_maps_every_body_of_clutter_fig1():
    body_map = load_body_map(CONFIG / "mocap" / "clutter_fig1.yaml", CLUTTER)
    assert set(body_map.bodies) == {"pusher", *CLUTTER.object_names}
    by_id = body_map.entries_by_id()
    assert sorted(by_id) == [1, 2, 3, 4, 5]
    assert by_id[2].body == "target"
    assert by_id[2].centre_offset == (0.0, 0.0, -0.015)


def test_shipped_example_does_not_fit_another_scene():
    with pytest.raises(BodyMapError, match=r"bodies\[1\] \(target\): 'target' is not a body of scene"):
        load_body_map(CONFIG / "mocap" / "clutter_fig1.yaml", ISRR)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda e: e.append({"body": "clutter_d", "id": 6}),
            r"bodies\[5\] \(clutter_d\): 'clutter_d' is not a body",
        ),
        (
            lambda e: e[4].update(id=2),
            r"bodies\[4\] \(clutter_c\): duplicate id 2, already used by bodies\[1\]",
        ),
        (lambda e: e.append({"body": "target", "id": 9}), r"bodies\[5\] \(target\): duplicate scene body"),
        (lambda e: e.pop(0), r"needs a mocap body for \['pusher'\]"),
        (lambda e: e.pop(3), r"needs a mocap body for \['clutter_b'\]"),
        (lambda e: e[1].pop("id"), r"bodies\[1\] \(target\): give an id, a motive_name, or both"),
        (lambda e: e[2].update(id="3"), r"bodies\[2\] \(clutter_a\)\.id: expected an integer"),
        (lambda e: e[2].update(id=True), r"bodies\[2\] \(clutter_a\)\.id: expected an integer"),
        (lambda e: e[3].update(centre_offset=[0, 0]), r"bodies\[3\] \(clutter_b\)\.centre_offset"),
        (
            lambda e: e[3].update(yaw_offset=float("nan")),
            r"bodies\[3\] \(clutter_b\)\.yaw_offset: expected a finite number",
        ),
        (lambda e: e[0].update(offset=[0, 0, 0]), r"bodies\[0\] \(pusher\): unknown field\(s\) \['offset'\]"),
        (lambda e: e[0].pop("body"), r"bodies\[0\]\.body: missing"),
        (
            lambda e: (e[0].update(motive_name="rb"), e[1].update(motive_name="rb")),
            r"bodies\[1\] \(target\): duplicate motive_name 'rb'",
        ),
    ],
)
def test_mapping_errors_name_the_entry(change, message):
    entries = clutter_entries()
    change(entries)
    with pytest.raises(BodyMapError, match=message):
        body_map_from_dict({"bodies": entries}).validate_for(CLUTTER)


def test_mapping_an_obstacle_is_refused():
    data = {
        "bodies": [{"body": "pusher", "id": 1}, {"body": "slider", "id": 2}, {"body": "obstacle", "id": 3}]
    }
    with pytest.raises(BodyMapError, match=r"bodies\[2\] \(obstacle\): 'obstacle' is a static obstacle"):
        body_map_from_dict(data).validate_for(ISRR)


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / "bodies.yaml"
    path.write_text("bodies: [{body: pusher, id: 1}, {body: pusher, id: 2}]\n")
    with pytest.raises(BodyMapError, match=r"bodies.yaml: bodies\[1\] \(pusher\): duplicate scene body"):
        load_body_map(path)
    with pytest.raises(BodyMapError, match="absent.yaml: cannot read"):
        load_body_map(tmp_path / "absent.yaml")
    path.write_text("bodies: {pusher: 1}\n")
    with pytest.raises(BodyMapError, match="bodies: expected a list"):
        load_body_map(path)


def test_motive_names_resolve_to_streaming_ids():
    body_map = BodyMap(
        (
            BodyMapEntry("pusher", motive_name="tip"),
            BodyMapEntry("slider", rigid_body_id=7, motive_name="puck"),
        )
    )
    assert not body_map.is_resolved
    with pytest.raises(BodyMapError, match=r"bodies\[0\] \(pusher\): no streaming id"):
        body_map.entries_by_id()
    resolved = body_map.resolve_ids({3: "tip", 7: "puck", 11: "wand"})
    assert resolved.is_resolved
    assert {body_id: entry.body for body_id, entry in resolved.entries_by_id().items()} == {
        3: "pusher",
        7: "slider",
    }
    resolved.validate_for(ISRR)


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ({3: "wand"}, r"bodies\[0\] \(pusher\)\.motive_name: Motive streams no rigid body named 'tip'"),
        ({3: "tip", 4: "tip", 7: "puck"}, r"several rigid bodies are named 'tip' \(ids \[3, 4\]\)"),
        (
            {3: "tip", 8: "puck"},
            r"bodies\[1\] \(slider\)\.id: the mapping says 7 but Motive streams 'puck' with id 8",
        ),
    ],
)
def test_name_resolution_errors_name_the_entry(names, message):
    body_map = BodyMap(
        (
            BodyMapEntry("pusher", motive_name="tip"),
            BodyMapEntry("slider", rigid_body_id=7, motive_name="puck"),
        )
    )
    with pytest.raises(BodyMapError, match=message):
        body_map.resolve_ids(names)
