"""Node parameters generated from a settings dataclass (parapush.nodes.parameters)."""

from __future__ import annotations

import pytest
from rclpy.parameter import Parameter

from parapush.nodes.parameters import ParameterError, declare_parameters, parameter_specs, settings_from_parameters
from parapush.physics.fine_settings import FineSettings


def test_specs_carry_defaults_ranges_and_none_stand_ins():
    specs = {spec.name: spec for spec in parameter_specs(FineSettings, "fine.")}
    assert specs["fine.timestep"].default == 0.001 and specs["fine.timestep"].maximum == 0.01
    assert specs["fine.integrator"].choices == ("euler", "implicitfast", "rk4")
    assert "s" in specs["fine.timestep"].description


def test_round_trip_through_a_real_node(ros_context):
    import rclpy

    node = rclpy.create_node(
        "settings_round_trip",
        context=ros_context,
        parameter_overrides=[Parameter("fine.timestep", value=0.002), Parameter("fine.integrator", value="rk4")],
    )
    try:
        values = declare_parameters(node, parameter_specs(FineSettings, "fine."))
        settings = settings_from_parameters(FineSettings, values, "fine.")
        assert settings == FineSettings(timestep=0.002, integrator="rk4")
        descriptor = node.describe_parameter("fine.timestep")
        assert descriptor.floating_point_range[0].to_value == 0.01
    finally:
        node.destroy_node()


def test_an_invalid_value_names_the_parameter(ros_context):
    import rclpy

    node = rclpy.create_node(
        "settings_refused", context=ros_context, parameter_overrides=[Parameter("fine.timestep", value=0.0)]
    )
    try:
        with pytest.raises(ParameterError, match=r"parameter 'fine.timestep': expected a finite number > 0"):
            values = declare_parameters(node, parameter_specs(FineSettings, "fine."))
            settings_from_parameters(FineSettings, values, "fine.")
    finally:
        node.destroy_node()


