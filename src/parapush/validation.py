"""Checks of single values, with one argument order: ``check_*(name, value, ...)``.

Every check returns the value converted to its plain Python type (``float`` for reals,
``int`` for integers) and raises :class:`ValueError` whose message starts with ``name``
(e.g. ``"timestep: expected a finite number > 0, got -1"``), so a dataclass's
``__post_init__`` or a boundary conversion names the offending field without wrapping.
Booleans are never accepted as numbers.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Collection, Iterable
from typing import Any

import numpy as np


def is_real(value: Any) -> bool:
    """True for a finite int or float (numpy scalars included), False for bools and the rest."""
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and math.isfinite(value)
    )


def _bounds_text(minimum: float | None, maximum: float | None, above: float | None, below: float | None) -> str:
    parts = []
    if above is not None:
        parts.append(f"> {above:g}")
    elif minimum is not None:
        parts.append(f">= {minimum:g}")
    if below is not None:
        parts.append(f"< {below:g}")
    elif maximum is not None:
        parts.append(f"<= {maximum:g}")
    return " and ".join(parts)


def check_real(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    below: float | None = None,
) -> float:
    """``value`` as a finite float within the inclusive ``minimum``/``maximum`` and the
    exclusive ``above``/``below`` bounds (None: unbounded on that side)."""
    bounds = _bounds_text(minimum, maximum, above, below)
    expected = "a finite number" + (f" {bounds}" if bounds else "")
    if not is_real(value):
        raise ValueError(f"{name}: expected {expected}, got {value!r}")
    value = float(value)
    if (
        (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
        or (above is not None and value <= above)
        or (below is not None and value >= below)
    ):
        raise ValueError(f"{name}: expected {expected}, got {value!r}")
    return value


def check_positive(name: str, value: Any) -> float:
    """``value`` as a finite float > 0."""
    return check_real(name, value, above=0.0)


def check_non_negative(name: str, value: Any) -> float:
    """``value`` as a finite float >= 0."""
    return check_real(name, value, minimum=0.0)


def check_optional_positive(name: str, value: Any) -> float | None:
    """None, or ``value`` as a finite float > 0."""
    return None if value is None else check_positive(name, value)


def check_integer(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int within the inclusive bounds (a float is refused, even 2.0)."""
    bounds = _bounds_text(minimum, maximum, None, None)
    expected = "an integer" + (f" {bounds}" if bounds else "")
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}: expected {expected}, got {value!r}")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{name}: expected {expected}, got {value!r}")
    return value


def check_choice(name: str, value: Any, choices: Collection[str]) -> str:
    """``value`` if it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}: expected one of {list(choices)}, got {value!r}")
    return value


def check_not_empty(name: str, value: Any) -> str:
    """``value`` if it is a non-empty string."""
    if not isinstance(value, str):
        raise ValueError(f"{name}: expected a string, got {value!r}")
    if not value:
        raise ValueError(f"{name}: must not be empty")
    return value


def duplicate_names(names: Iterable[str]) -> list[str]:
    """The names that occur more than once in ``names``, each once, sorted (``[]``: all unique);
    the caller raises its own error naming them."""
    names = list(names)
    return sorted({name for name in names if names.count(name) > 1})


def check_fields(instance: Any, check: Callable[[str, Any], Any], *names: str) -> None:
    """Replace each field ``names`` of the frozen dataclass ``instance`` by ``check(name, value)``,
    e.g. ``check_fields(self, check_positive, "mass", "radius")`` in ``__post_init__``."""
    for name in names:
        object.__setattr__(instance, name, check(name, getattr(instance, name)))


def check_instance(name: str, value: Any, expected: type, description: str | None = None) -> Any:
    """``value`` if it is an instance of ``expected``; raises :class:`TypeError` (not ValueError)
    naming ``description`` (default: ``expected``'s name) otherwise."""
    if not isinstance(value, expected):
        raise TypeError(f"{name}: expected {description or expected.__name__}, got {type(value).__name__}")
    return value


def check_finite_array(name: str, value: Any, shape: tuple[int | None, ...] | None = None) -> np.ndarray:
    """``value`` as a float array of ``shape`` (None entries: any size) with finite entries."""
    array = np.asarray(value, dtype=float)
    if shape is not None and (
        array.ndim != len(shape)
        or any(size is not None and size != got for size, got in zip(shape, array.shape, strict=True))
    ):
        wanted = "(" + ", ".join("any" if size is None else str(size) for size in shape) + ")"
        raise ValueError(f"{name}: expected shape {wanted}, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: must be finite")
    return array


__all__ = [
    "check_choice",
    "check_fields",
    "check_finite_array",
    "check_instance",
    "check_integer",
    "check_non_negative",
    "check_not_empty",
    "check_optional_positive",
    "check_positive",
    "check_real",
    "is_real",
]


def check_ipv4(name: str, value: Any, *, multicast: bool = False) -> str:
    """``value`` as a dotted IPv4 address string (a multicast one, 224.0.0.0/4, with ``multicast``)."""
    try:
        address = ipaddress.IPv4Address(value)
    except ValueError:
        raise ValueError(f"{name}: expected an IPv4 address, got {value!r}") from None
    if multicast and not address.is_multicast:
        raise ValueError(f"{name}: {address} is not a multicast address (224.0.0.0/4)")
    return str(address)
