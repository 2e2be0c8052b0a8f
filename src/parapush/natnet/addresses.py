"""Validation of the IPv4 addresses NatNet endpoints are configured with."""

from __future__ import annotations

import ipaddress


def check_ipv4(value: object, name: str) -> ipaddress.IPv4Address:
    """``value`` as an IPv4 address; ValueError naming ``name`` otherwise."""
    try:
        return ipaddress.IPv4Address(value)
    except ValueError:
        raise ValueError(f"{name} must be an IPv4 address, got {value!r}") from None


def check_multicast_group(value: object, name: str = "multicast_group") -> ipaddress.IPv4Address:
    """``value`` as an IPv4 multicast address (224.0.0.0/4); ValueError naming ``name`` otherwise."""
    group = check_ipv4(value, name)
    if not group.is_multicast:
        raise ValueError(f"{name} must be a multicast address (224.0.0.0/4), got {group}")
    return group
