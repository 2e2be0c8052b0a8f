"""Only the allowed node's controls move the robot: publisher GIDs mapped to node names (ROS-free)."""

from __future__ import annotations

import pytest

from parapush.execution.control_refusal import ControlsRefused
from parapush.execution.control_source import (
    UNKNOWN_NODE_NAME,
    ControlPublishers,
    check_node_name,
    full_node_name,
    resolve_node_name,
)
from parapush.execution.execution_settings import ExecutionSettings
from parapush.settings import SettingsError, settings_from_mapping

MPC, OTHER_MPC, INTRUDER = b"\x01" * 16, b"\x02" * 16, b"\x03" * 16
GRAPH = [(MPC, "/lab1", "mpc"), (OTHER_MPC, "/lab2", "mpc"), (INTRUDER, "/lab1", "intruder")]


def test_node_names_resolve_against_the_executor_namespace():
    assert full_node_name("/", "mpc") == "/mpc"
    assert full_node_name("/lab1", "mpc") == "/lab1/mpc"
    assert resolve_node_name("mpc", "/lab1") == "/lab1/mpc"
    assert resolve_node_name("mpc", "/") == "/mpc"
    assert resolve_node_name("/lab2/mpc", "/lab1") == "/lab2/mpc"
    assert resolve_node_name("", "/lab1") == ""


@pytest.mark.parametrize("name", ["", "mpc", "/mpc", "/lab1/mpc", "ns/mpc_2"])
def test_valid_node_names(name):
    assert check_node_name(name, "allowed_publisher") == name


@pytest.mark.parametrize("name", ["a b", "/", "mpc/", "//mpc", "1mpc", "/lab-1/mpc"])
def test_invalid_node_names_name_the_field(name):
    with pytest.raises(ValueError, match="allowed_publisher"):
        check_node_name(name, "allowed_publisher")
    with pytest.raises(SettingsError) as raised:
        settings_from_mapping(ExecutionSettings, {"allowed_publisher": name})
    assert raised.value.path == "allowed_publisher"


def test_only_the_allowed_node_passes_and_others_are_refused_with_their_name():
    publishers = ControlPublishers("/lab1/mpc")
    assert publishers.update(GRAPH) == ["/lab1/intruder", "/lab2/mpc"]  # foreign ones, to warn about
    assert publishers.update(GRAPH) == []  # once
    assert publishers.check(MPC, refresh=_no_refresh) == "/lab1/mpc"
    for gid, name in ((OTHER_MPC, "/lab2/mpc"), (INTRUDER, "/lab1/intruder")):
        with pytest.raises(ControlsRefused) as refused:
            publishers.check(gid, refresh=_no_refresh)
        assert refused.value.reason == "foreign_publisher"
        assert name in refused.value.message and "only /lab1/mpc" in refused.value.message


def test_an_unknown_gid_refreshes_the_graph_once_then_is_refused():
    publishers = ControlPublishers("/lab1/mpc")
    refreshes = []

    def refresh():
        refreshes.append(1)
        publishers.update(GRAPH[:1])

    assert publishers.check(MPC, refresh=refresh) == "/lab1/mpc" and len(refreshes) == 1
    with pytest.raises(ControlsRefused) as refused:
        publishers.check(INTRUDER, refresh=refresh)
    assert refused.value.reason == "unknown_publisher" and INTRUDER.hex() in refused.value.message
    assert len(refreshes) == 2
    with pytest.raises(ControlsRefused, match="no publisher GID"):
        publishers.check(None, refresh=refresh)


def test_a_publisher_whose_node_the_graph_does_not_know_yet_is_asked_about_again():
    """Endpoints are discovered before their node's name: the MPC's first entry may be unknown."""
    publishers = ControlPublishers("/lab1/mpc")
    graphs = [[(MPC, "_NODE_NAMESPACE_UNKNOWN_", UNKNOWN_NODE_NAME)], GRAPH]
    assert publishers.update(graphs.pop(0)) == []
    assert publishers.name_of(MPC) is None
    assert publishers.check(MPC, refresh=lambda: publishers.update(graphs.pop(0))) == "/lab1/mpc"


def test_a_publisher_that_left_the_graph_is_forgotten():
    publishers = ControlPublishers("/lab1/mpc")
    publishers.update(GRAPH)
    publishers.update(GRAPH[1:])
    assert publishers.name_of(MPC) is None


def test_empty_allowed_publisher_accepts_any_node():
    publishers = ControlPublishers("")
    assert publishers.update(GRAPH) == []
    assert publishers.check(INTRUDER, refresh=_no_refresh) == "/lab1/intruder"
    assert publishers.check(None, refresh=_no_refresh) == ""


def _no_refresh() -> None:
    raise AssertionError("the graph should not be queried for a known GID")
