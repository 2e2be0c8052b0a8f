"""Simulated devices that speak the real protocols (motion capture over NatNet, ...)."""
