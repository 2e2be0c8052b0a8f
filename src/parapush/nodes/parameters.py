"""Declared, described and validated node parameters.

A node's parameters come from its settings dataclass (:mod:`parapush.settings`: each field
declared once with default, range, unit and description): :func:`parameter_specs` turns it
into :class:`ParameterSpec` rows and :func:`settings_from_parameters` turns the declared
values back into the dataclass. Parameters that are not settings of the core (the scene file,
a diagnostics period) are listed as :class:`ParameterSpec` rows directly. :func:`declare_parameters`
declares them with a ``ParameterDescriptor`` (description, integer/float range, read-only)
and validates the values at start-up, raising :class:`ParameterError` naming the parameter,
so a bad YAML file or command-line override stops the node before it does anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node

from parapush.settings import SettingsError, setting_fields, settings_from_ros_mapping


class ParameterError(ValueError):
    """A node parameter has an invalid value; the message names the parameter."""


@dataclass(frozen=True)
class ParameterSpec:
    """One node parameter.

    Attributes:
        name: parameter name (dots allowed for groups).
        default: default value; its Python type fixes the parameter type
            (bool, int, float, str, or a list of one of them).
        description: what it is, with its unit.
        minimum, maximum: inclusive range for numbers (None: unbounded).
        choices: allowed values for strings (None: any).
        allow_empty: for strings, whether "" is allowed.
        read_only: False for a parameter the node lets change at run time (it validates and
            applies the change in its own set-parameters callback); the others are refused.
    """

    name: str
    default: Any
    description: str
    minimum: float | None = None
    maximum: float | None = None
    choices: Sequence[str] | None = None
    allow_empty: bool = True
    read_only: bool = True

    def descriptor(self) -> ParameterDescriptor:
        text = self.description
        if self.choices:
            text += f" (one of: {', '.join(self.choices)})"
        descriptor = ParameterDescriptor(name=self.name, description=text, read_only=self.read_only)
        if isinstance(self.default, bool):
            return descriptor
        if isinstance(self.default, int) and (self.minimum is not None or self.maximum is not None):
            descriptor.integer_range = [
                IntegerRange(
                    from_value=int(self.minimum if self.minimum is not None else -(2**62)),
                    to_value=int(self.maximum if self.maximum is not None else 2**62),
                    step=0,
                )
            ]
        elif isinstance(self.default, float) and (self.minimum is not None or self.maximum is not None):
            descriptor.floating_point_range = [
                FloatingPointRange(
                    from_value=float(self.minimum if self.minimum is not None else -1e300),
                    to_value=float(self.maximum if self.maximum is not None else 1e300),
                    step=0.0,
                )
            ]
        return descriptor

    def validate(self, value: Any) -> Any:
        where = f"parameter '{self.name}'"
        if isinstance(self.default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value) is not type(self.default) and not (
            isinstance(self.default, list) and isinstance(value, (list, tuple))
        ):
            raise ParameterError(f"{where}: expected {type(self.default).__name__}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ParameterError(f"{where}: must be finite, got {value!r}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if self.minimum is not None and value < self.minimum:
                raise ParameterError(f"{where}: {value!r} is below the minimum {self.minimum!r}")
            if self.maximum is not None and value > self.maximum:
                raise ParameterError(f"{where}: {value!r} is above the maximum {self.maximum!r}")
        if isinstance(value, str):
            if not value and not self.allow_empty:
                raise ParameterError(f"{where}: must not be empty")
            if self.choices is not None and value not in self.choices:
                raise ParameterError(f"{where}: {value!r} is not one of {list(self.choices)}")
        return list(value) if isinstance(value, tuple) else value


def declare_parameters(node: Node, specs: Iterable[ParameterSpec]) -> dict[str, Any]:
    """Declare every parameter on ``node`` and return the validated values by name.

    Raises:
        ParameterError: naming the first invalid parameter.
    """
    values: dict[str, Any] = {}
    for spec in specs:
        try:
            parameter = node.declare_parameter(spec.name, spec.default, spec.descriptor())
        except InvalidParameterValueException as error:
            raise ParameterError(f"parameter '{spec.name}': {error}") from None
        except (InvalidParameterTypeException, TypeError) as error:  # an override of the wrong type
            raise ParameterError(f"parameter '{spec.name}': {error}") from None
        values[spec.name] = spec.validate(parameter.value)
    return values


def parameter_specs(settings_class: type, prefix: str = "") -> tuple[ParameterSpec, ...]:
    """The parameters of a settings dataclass and its nested sections (``prefix`` + dotted
    field path), with its defaults, ranges, choices and descriptions. A setting that may be
    None is declared with its ``ros_none`` stand-in (a ROS parameter cannot be None)."""
    specs = []
    for item in setting_fields(settings_class, prefix):
        info = item.info
        default = info.ros_none if item.default is None else item.default
        if info.kind is float and isinstance(default, int):
            default = float(default)
        if info.kind is tuple:  # a ROS double array
            default = [float(value) for value in default]
        minimum = info.minimum if info.minimum is not None else info.above
        maximum = info.maximum if info.maximum is not None else info.below
        if info.none is not None and info.kind in (int, float):  # the stand-in must pass the range
            minimum = None if minimum is None else min(minimum, info.ros_none)
            maximum = None if maximum is None else max(maximum, info.ros_none)
        choices = info.choices
        if choices is not None and info.none is not None:
            choices = (*choices, info.ros_none)
        specs.append(
            ParameterSpec(item.path, default, info.text(), minimum=minimum, maximum=maximum, choices=choices)
        )
    return tuple(specs)


def settings_from_parameters(settings_class: type, values: dict[str, Any], prefix: str = "") -> Any:
    """The settings dataclass from declared parameter values (by full name, as
    :func:`declare_parameters` returns them); ``ros_none`` stand-ins become None.

    Raises:
        ParameterError: naming the parameter whose value the settings refuse.
    """
    nested: dict[str, Any] = {}
    for item in setting_fields(settings_class):
        value = values[f"{prefix}{item.path}"]
        section = nested
        *parents, leaf = item.path.split(".")
        for parent in parents:
            section = section.setdefault(parent, {})
        section[leaf] = value
    try:
        return settings_from_ros_mapping(settings_class, nested)
    except SettingsError as error:
        raise ParameterError(f"parameter '{prefix}{error.path}': {error.problem}") from None


def undeclared_keys(declared: Iterable[str], parameter_file_entries: dict[str, Any]) -> list[str]:
    """Keys of a node's parameter-file entries that the node does not declare (for static checks)."""
    names = set(declared) | {"use_sim_time"}
    return sorted(key for key in parameter_file_entries if key not in names)


def flatten_parameters(mapping: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The dotted parameter names of a parameter file's nested ``ros__parameters`` mapping:
    ``{"limits": {"x_max": 0.3}}`` -> ``{"limits.x_max": 0.3}``."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            flat.update(flatten_parameters(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


SCENE_FILE_PARAMETER = ParameterSpec(
    "scene_file", "clutter_fig1.yaml", "scene YAML: a path or a name in config/scenes/"
)
"""The ``scene_file`` parameter of every node that needs the scene (see :func:`declare_scene_parameters`)."""


def declare_scene_parameters(node: Node, specs: Iterable[ParameterSpec]) -> tuple[dict[str, Any], Any]:
    """Declare :data:`SCENE_FILE_PARAMETER` and ``specs`` on ``node`` (:func:`declare_parameters`)
    and load the scene it names (:func:`load_scene_parameter`).

    Returns:
        (the validated values by name, ``scene_file`` included; the :class:`~parapush.scene.Scene`).
    Raises:
        ParameterError: naming the first invalid parameter, or ``scene_file`` and what is wrong with it.
    """
    values = declare_parameters(node, (SCENE_FILE_PARAMETER, *specs))
    return values, load_scene_parameter(values["scene_file"])


def load_scene_parameter(value: str):
    """The scene named by a node's ``scene_file`` parameter (a path or a name in config/scenes/).

    Raises:
        ParameterError: naming ``scene_file`` and what is wrong with the file.
    """
    from parapush.graph import resolve_scene_path
    from parapush.scene import SceneError, load_scene

    try:
        return load_scene(resolve_scene_path(value))
    except (SceneError, FileNotFoundError) as error:
        raise ParameterError(f"parameter 'scene_file': {error}") from None
