"""A stack's network (parapush.stack_network): domain reservation, discovery ports, device ports,
config/network.yaml; and the bringup built on it (no node started, no ROS)."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from parapush.graph import load_graph
from parapush.programs.bringup import isolated_bringup
from parapush.stack_network import (
    AUTO_DOMAINS,
    DEVICE_PORT_OFFSETS,
    DOMAIN_GAIN,
    MAX_DOMAIN,
    PORT_BASE,
    NetworkError,
    NetworkSettings,
    SimDevicePorts,
    StackNetwork,
    device_port_candidates,
    domain_in_use,
    domain_ports,
    ephemeral_ports,
    load_network_settings,
    reserve_domain,
    try_lease,
)

ROOT = Path(__file__).resolve().parents[2]


def test_network_environment_is_what_rcl_reads():
    network = StackNetwork(23, "LOCALHOST")
    assert network.environment() == {"ROS_DOMAIN_ID": "23", "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    assert "23" in network.describe() and "LOCALHOST" in network.describe()


@pytest.mark.parametrize(("domain", "discovery_range", "field"), [
    (-1, "LOCALHOST", "domain"), (233, "LOCALHOST", "domain"), (True, "LOCALHOST", "domain"),
    ("5", "LOCALHOST", "domain"), (5, "localhost", "discovery_range"), (5, "", "discovery_range"),
])
def test_network_refuses_invalid_values_naming_the_field(domain, discovery_range, field):
    with pytest.raises(NetworkError, match=field):
        StackNetwork(domain, discovery_range)


def test_settings_accept_auto_only_for_the_domain():
    assert NetworkSettings("auto", "LOCALHOST", "auto").domain == "auto"
    with pytest.raises(NetworkError, match="device_ports"):
        NetworkSettings(3, "SUBNET", "free")
    with pytest.raises(NetworkError, match="domain"):
        NetworkSettings("any", "SUBNET")


def test_rtps_port_mapping():
    """DDS-RTPS 9.6.1.1: PB 7400, DG 250, PG 2, d1 10 (discovery multicast, then unicast per participant).
    Domain 141's 42650 and 42660 are the ports a Fast DDS participant of these wheels was seen to hold."""
    assert domain_ports(0, 3) == (7400, 7410, 7412, 7414)
    assert domain_ports(141, 1) == (42650, 42660)
    assert domain_ports(232)[-1] <= 65535
    with pytest.raises(NetworkError, match="domain"):
        domain_ports(233)


def test_a_domain_whose_discovery_port_is_held_is_in_use():
    domain = next(candidate for candidate in AUTO_DOMAINS if not domain_in_use(candidate))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as participant:
        participant.bind(("127.0.0.1", domain_ports(domain)[3]))  # participant 2's unicast discovery port
        assert domain_in_use(domain)
    assert not domain_in_use(domain)


def test_a_lease_is_exclusive_until_released(tmp_path):
    lease = try_lease(12, tmp_path)
    assert lease is not None and lease.held and lease.path == tmp_path / "domain-12.lock"
    assert try_lease(12, tmp_path) is None  # flock: a second open file of this process is refused too
    other = try_lease(13, tmp_path)
    assert other is not None
    lease.release()
    assert not lease.held
    again = try_lease(12, tmp_path)
    assert again is not None
    again.release()
    other.release()


def test_reserve_skips_leased_domains_and_domains_in_use(tmp_path):
    candidates = [domain for domain in AUTO_DOMAINS if not domain_in_use(domain)][:3]
    leased = try_lease(candidates[0], tmp_path)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as participant:
        participant.bind(("0.0.0.0", domain_ports(candidates[1])[0]))
        with reserve_domain(candidates, tmp_path) as lease:
            assert lease.domain == candidates[2]
            with pytest.raises(NetworkError, match=f"{candidates[0]}-{candidates[2]}"):
                reserve_domain(candidates, tmp_path)
    leased.release()


def test_a_lease_held_by_another_process_is_skipped_and_freed_when_it_dies(tmp_path):
    domain = next(candidate for candidate in AUTO_DOMAINS if not domain_in_use(candidate))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from parapush.stack_network import "
         f"try_lease; lease = try_lease({domain}, Path(sys.argv[1])); print(lease.domain, flush=True); "
         "time.sleep(60)", str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == str(domain)
        with reserve_domain([domain, domain + 1], tmp_path) as lease:
            assert lease.domain == domain + 1
    finally:
        holder.kill()  # SIGKILL: the kernel drops the flock
        holder.wait()
    deadline = time.monotonic() + 5
    while (lease := try_lease(domain, tmp_path)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lease is not None
    lease.release()


def test_free_device_ports_differ_and_reach_parameters_the_nodes_have():
    ports = SimDevicePorts.free()
    assert len({ports.natnet_command, ports.natnet_data}) == 2
    graph = load_graph(ROOT / "config" / "graph.yaml")
    overrides = ports.overrides()
    for node, values in overrides.items():
        for name in values:  # each one is set in the node's parameter files: a parameter it declares
            assert graph.parameter_value(graph.node(node), "sim", name) is not None, (node, name)
    assert overrides["executor"]["gripper.address"] == f"tcp://127.0.0.1:{ports.gripper_tcp}"
    assert overrides["state_estimator"]["command_port"] == overrides["sim_driver"]["natnet_command_port"]
    with pytest.raises(NetworkError, match="natnet_data"):
        SimDevicePorts(1510, 1510, 15020)
    with pytest.raises(NetworkError, match="gripper_tcp"):
        SimDevicePorts(1510, 1511, 0)


def test_device_port_candidates_are_no_dds_port_of_any_domain_and_outside_the_ephemeral_range():
    candidates = device_port_candidates()
    assert len(candidates) >= 100 and len(set(candidates)) == len(candidates)
    ephemeral = ephemeral_ports()
    assert not any(port in ephemeral for port in candidates)
    # Every RTPS port: multicast discovery and user (offsets 0, 1), unicast of 120 participants from 10.
    rtps = {PORT_BASE + DOMAIN_GAIN * domain + offset
            for domain in range(MAX_DOMAIN + 1) for offset in (0, 1, *range(10, 10 + 2 * 120))}
    assert rtps.isdisjoint(candidates)
    assert all((port - PORT_BASE) % DOMAIN_GAIN in DEVICE_PORT_OFFSETS for port in candidates)


def test_free_device_ports_skip_held_ones():
    first = device_port_candidates()
    random.Random(5).shuffle(first)
    ports = SimDevicePorts.free(order=random.Random(5))
    assert ports == SimDevicePorts(*first[:3])  # this machine holds none of them; the three differ
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, \
            socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        udp.bind(("127.0.0.1", first[0]))
        tcp.bind(("127.0.0.1", first[0]))
        tcp.listen()
        held = SimDevicePorts.free(order=random.Random(5))
    assert held == SimDevicePorts(*first[1:4])


def test_project_network_file():
    settings = load_network_settings(ROOT / "config" / "network.yaml")
    assert settings["sim"] == NetworkSettings("auto", "LOCALHOST", "auto")
    assert isinstance(settings["real"].domain, int) and settings["real"].discovery_range == "SUBNET"


def test_network_file_errors_name_the_profile_and_field(tmp_path):
    path = tmp_path / "network.yaml"
    path.write_text(yaml.safe_dump({"real": {"domain": 300, "discovery_range": "SUBNET"}}))
    with pytest.raises(NetworkError, match=r"real\.domain"):
        load_network_settings(path)
    path.write_text(yaml.safe_dump({"sim": {"domain": 3, "discovery_range": "SUBNET", "port": 1}}))
    with pytest.raises(NetworkError, match=r"sim: unknown field\(s\) \['port'\]"):
        load_network_settings(path)


def test_two_sim_bringups_get_their_own_domains_and_ports(capsys):
    # "isolated": a domain of each stack's own although the test suite exports ROS_DOMAIN_ID (conftest)
    first = isolated_bringup("sim", domain="isolated")
    second = isolated_bringup("sim", overrides={"executor": {"gripper.address": "tcp://127.0.0.1:1"}},
                              domain="isolated")
    try:
        assert first.network.domain != second.network.domain
        assert {first.network.domain, second.network.domain} <= set(AUTO_DOMAINS)
        assert first.network.discovery_range == "LOCALHOST"
        assert first.child_environment()["ROS_DOMAIN_ID"] == str(first.network.domain)
        assert first.device_ports != second.device_ports
        driver = first.own_parameters(first.graph.node("sim_driver"))
        assert driver["natnet_command_port"] == first.device_ports.natnet_command
        assert driver["gripper_tcp_port"] == first.device_ports.gripper_tcp
        estimator = first.own_parameters(first.graph.node("state_estimator"))
        assert estimator["command_port"] == first.device_ports.natnet_command
        assert second.overrides["executor"]["gripper.address"] == "tcp://127.0.0.1:1"  # the caller's wins
        lines = first.describe_network()
        assert str(first.network.domain) in lines[0] and str(first.device_ports.gripper_tcp) in lines[1]
    finally:
        first.stop()
        second.stop()
    assert not first.domain_lease.held and not second.domain_lease.held


def test_fixed_ports_and_an_explicit_domain_are_kept(tmp_path):
    network_file = tmp_path / "network.yaml"
    network_file.write_text(yaml.safe_dump({"sim": {"domain": "auto", "discovery_range": "LOCALHOST",
                                                    "device_ports": "fixed"}}))
    bringup = isolated_bringup("sim", network_file=network_file, domain="isolated")
    try:
        assert bringup.device_ports is None and "sim_driver" not in bringup.overrides
        assert "gripper.address = tcp://127.0.0.1:15020" in bringup.describe_network()[-1]
    finally:
        bringup.stop()
    with pytest.raises(NetworkError, match="ports"):
        isolated_bringup("sim", ports="free")
    with pytest.raises(NetworkError, match="no network for profile 'real'"):
        isolated_bringup("real", network_file=network_file)
