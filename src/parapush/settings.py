"""Settings declared once: a frozen dataclass field carries its default, range, choices, unit
and description, and everything else is generated from it.

A settings class declares its fields with :func:`setting` and calls :func:`check_settings`
in ``__post_init__``::

    @dataclass(frozen=True)
    class ExampleSettings:
        timestep: float = setting(0.001, "simulation step", unit="s", above=0.0, maximum=0.01)
        workers: int | None = setting(None, "fine workers", minimum=1, kind=int,
                                      none="one per CPU core", ros_none=0)

        def __post_init__(self) -> None:
            check_settings(self)

From that one declaration come: the validation (with messages that name the field,
:mod:`parapush.validation`), reading nested YAML mappings with unknown-key errors
(:func:`settings_from_mapping`), and the ROS node parameters with their descriptors and
ranges (``parapush.nodes.parameters.parameter_specs``). A field whose value is itself a
settings dataclass (declared with ``field(default_factory=...)``) is a nested section,
named with a dot (``model.fine.timestep``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass
from typing import Any

import numpy as np

from parapush.validation import check_choice, check_integer, check_real

KINDS = (bool, int, float, str, tuple)
"""The kinds of setting; ``tuple`` is a list of real numbers (a ROS double array), held as a tuple of floats."""


class SettingsError(ValueError):
    """Invalid settings; ``path`` is the dotted name of the offending field (``""`` when the
    whole section is wrong) and the message starts with it."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class SettingInfo:
    """What a :func:`setting` field declares besides its default.

    Attributes:
        description: what it is (one line).
        kind: bool, int, float, str, or tuple (a list of real numbers, held as a tuple of floats).
        unit: SI unit, "" when dimensionless.
        minimum, maximum: inclusive bounds for numbers (None: unbounded).
        above, below: exclusive bounds for numbers (None: unbounded).
        choices: allowed strings (None: any string).
        none: what None means, or None when None is not allowed.
        ros_none: the value that stands for None in a ROS parameter (which cannot be None).
        lengths: for tuples, the allowed numbers of elements (None: any).
    """

    description: str
    kind: type
    unit: str = ""
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    below: float | None = None
    choices: tuple[str, ...] | None = None
    none: str | None = None
    ros_none: Any = None
    lengths: tuple[int, ...] | None = None

    def text(self) -> str:
        """The description with its unit, choices and the meaning of None."""
        text = self.description + (f", {self.unit}" if self.unit else "")
        if self.choices:
            text += f" (one of: {', '.join(self.choices)})"
        if self.none is not None:
            text += f" ({self.ros_none!r}: {self.none})"
        return text

    def check(self, name: str, value: Any) -> Any:
        """``value`` validated and converted (int -> float for float settings)."""
        if value is None:
            if self.none is None:
                raise ValueError(f"{name}: must be given (null is not allowed)")
            return None
        if self.kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"{name}: expected true or false, got {value!r}")
            return bool(value)
        if self.kind is int:
            return check_integer(name, value, minimum=self.minimum, maximum=self.maximum)
        if self.kind is float:
            return check_real(
                name, value, minimum=self.minimum, maximum=self.maximum, above=self.above, below=self.below
            )
        if self.kind is tuple:
            return self._check_numbers(name, value)
        if self.choices is not None:
            return check_choice(name, value, self.choices)
        if not isinstance(value, str):
            raise ValueError(f"{name}: expected a string, got {value!r}")
        if value == "" and self.ros_none == "":
            raise ValueError(f"{name}: empty; null (or \"\" in a ROS parameter) means {self.none}")
        return value

    def _check_numbers(self, name: str, value: Any) -> tuple[float, ...]:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (Sequence, np.ndarray)):
            raise ValueError(f"{name}: expected a list of numbers, got {value!r}")
        numbers = tuple(check_real(f"{name}[{index}]", item) for index, item in enumerate(value))
        if self.lengths is not None and len(numbers) not in self.lengths:
            allowed = " or ".join(str(length) for length in self.lengths)
            raise ValueError(f"{name}: expected {allowed} numbers, got {len(numbers)}")
        return numbers


def setting(
    default: Any = MISSING,
    description: str = "",
    *,
    kind: type | None = None,
    unit: str = "",
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    below: float | None = None,
    choices: Sequence[str] | None = None,
    none: str | None = None,
    ros_none: Any = None,
    lengths: Sequence[int] | None = None,
) -> Any:
    """A dataclass field declared once (see the module docstring).

    Args:
        default: the default value (required: every setting has one).
        description: what it is.
        kind: bool, int, float, str or tuple; None: the default's type (str when ``choices``).
        unit, minimum, maximum, above, below, choices: see :class:`SettingInfo`.
        none: what None means; None: the setting may not be None.
        ros_none: the ROS parameter value standing for None (required with ``none``).
        lengths: for ``kind=tuple``, the allowed numbers of elements.
    """
    if default is MISSING:
        raise TypeError("setting: a default is required")
    if not description:
        raise TypeError("setting: a description is required")
    if kind is None:
        kind = str if choices is not None else type(default)
    if kind not in KINDS:
        raise TypeError(f"setting: kind must be one of {KINDS}, got {kind!r} (give kind= for a None default)")
    if none is not None and ros_none is None:
        raise TypeError("setting: a setting that may be None needs ros_none")
    info = SettingInfo(
        description=description,
        kind=kind,
        unit=unit,
        minimum=minimum,
        maximum=maximum,
        above=above,
        below=below,
        choices=tuple(choices) if choices is not None else None,
        none=none,
        ros_none=ros_none,
        lengths=tuple(lengths) if lengths is not None else None,
    )
    info.check("default", default)
    return dataclasses.field(default=default, metadata={"setting": info})


def same_setting(cls: type, name: str) -> Any:
    """A dataclass field declared as the :func:`setting` ``name`` of the settings class ``cls``
    (the same default, range, unit and description): a settings class that hands a setting on
    to another one's (e.g. a node's settings to a library class's) declares it there only.

    Raises:
        TypeError: ``cls`` has no setting ``name``.
    """
    for item in dataclasses.fields(cls):
        if item.name == name and "setting" in item.metadata:
            return dataclasses.field(default=item.default, metadata=item.metadata)
    raise TypeError(f"same_setting: {cls.__name__} has no setting {name!r}")


def check_settings(instance: Any) -> None:
    """Validate (and convert) every :func:`setting` field of a frozen dataclass instance.

    Raises:
        ValueError: naming the first invalid field.
    """
    for item in dataclasses.fields(instance):
        info = item.metadata.get("setting")
        if info is not None:
            object.__setattr__(instance, item.name, info.check(item.name, getattr(instance, item.name)))


def _section_type(item: dataclasses.Field) -> type | None:
    """The settings class of a nested-section field (declared with a dataclass default_factory, or
    with ``metadata={"section": <class>}`` where the default is a particular instance)."""
    if item.metadata.get("section") is not None:
        return item.metadata["section"]
    factory = item.default_factory
    if factory is not MISSING and isinstance(factory, type) and dataclasses.is_dataclass(factory):
        return factory
    return None


@dataclass(frozen=True)
class SettingField:
    """One leaf setting of a (possibly nested) settings class.

    Attributes:
        path: dotted name (``model.fine.timestep``).
        info: its declaration.
        default: its default value.
    """

    path: str
    info: SettingInfo
    default: Any


def setting_fields(cls: type, prefix: str = "") -> Iterator[SettingField]:
    """Every :func:`setting` field of ``cls`` and its nested sections, depth first."""
    for item in dataclasses.fields(cls):
        if item.name.startswith("_"):
            continue
        info = item.metadata.get("setting")
        if info is not None:
            yield SettingField(f"{prefix}{item.name}", info, item.default)
            continue
        section = _section_type(item)
        if section is not None:
            yield from setting_fields(section, f"{prefix}{item.name}.")


def settings_from_mapping(cls: type, data: Any, where: str = "") -> Any:
    """An instance of the settings class ``cls`` from plain data (parsed YAML): omitted
    fields take their defaults; nested sections are mappings.

    Raises:
        SettingsError: unknown keys, a section that is not a mapping, or an invalid value,
            with the dotted path of the field.
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise SettingsError(where, f"expected a mapping, got {type(data).__name__}")
    known = {item.name: item for item in dataclasses.fields(cls) if item.init and not item.name.startswith("_")}
    unknown = sorted(str(key) for key in data if key not in known)
    if unknown:
        raise SettingsError(where, f"unknown field(s) {unknown}; known: {sorted(known)}")
    prefix = f"{where}." if where else ""
    values: dict[str, Any] = {}
    for key, value in data.items():
        section = _section_type(known[key])
        if section is not None and not isinstance(value, section):
            value = settings_from_mapping(section, value, f"{prefix}{key}")
        values[key] = value
    try:
        return cls(**values)
    except SettingsError as error:
        raise SettingsError(f"{prefix}{error.path}" if error.path else where, error.problem) from None
    except ValueError as error:
        field_name, _, problem = str(error).partition(": ")
        if field_name.split(".")[0].split("[")[0] in known and problem:  # a field, or a part of one
            raise SettingsError(f"{prefix}{field_name}", problem) from None
        raise SettingsError(where, str(error)) from None


def _ros_none_to_none(cls: type, data: Any) -> Any:
    """``data`` (a mapping for ``cls``) with every field's ``ros_none`` stand-in replaced by None."""
    if not isinstance(data, Mapping):
        return data
    converted = dict(data)
    for item in dataclasses.fields(cls):
        if item.name not in converted:
            continue
        info = item.metadata.get("setting")
        value = converted[item.name]
        if info is not None:
            if info.none is not None and type(value) is type(info.ros_none) and value == info.ros_none:
                converted[item.name] = None
        elif (section := _section_type(item)) is not None:
            converted[item.name] = _ros_none_to_none(section, value)
    return converted


def settings_from_ros_mapping(cls: type, data: Any, where: str = "") -> Any:
    """Like :func:`settings_from_mapping`, for values written as ROS parameters (in a parameter
    file or declared on a node), where a field's ``ros_none`` stands for None (ROS parameters
    cannot be None): ``iterations: -1`` -> None. Int stand-ins of float fields must be written
    as floats (``0.0``), as ROS types them.

    Raises:
        SettingsError: as :func:`settings_from_mapping`.
    """
    return settings_from_mapping(cls, _ros_none_to_none(cls, data), where)


def settings_to_mapping(instance: Any) -> dict[str, Any]:
    """Plain data of a settings instance (nested sections as mappings), e.g. to record it."""
    return dataclasses.asdict(instance)


__all__ = [
    "SettingField",
    "SettingInfo",
    "SettingsError",
    "check_settings",
    "same_setting",
    "setting",
    "setting_fields",
    "settings_from_mapping",
    "settings_from_ros_mapping",
    "settings_to_mapping",
]
