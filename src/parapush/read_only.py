"""Read-only public views of private attributes, the one way this package writes them.

``ReadOnly("_name", doc)`` is the descriptor form of::

    @property
    def name(self) -> T:
        \"\"\"doc\"\"\"
        return self._name

and ``LockedReadOnly("_name", doc)`` the form of the same property that reads the attribute
while holding the instance's ``_lock`` (for attributes that other threads write under it)::

    @property
    def name(self) -> T:
        with self._lock:
            return self._name

Both behave as such a property: read on the class they give the descriptor itself, and
assigning or deleting the public name raises :class:`AttributeError`. Annotate the class
attribute with the value type for type checkers::

    class Solver:
        layout: ReadOnly[StateLayout] = ReadOnly("_layout", "State layout of the models.")
"""

from __future__ import annotations

from typing import Any, Generic, NoReturn, TypeVar, overload

_T = TypeVar("_T")
_Descriptor = TypeVar("_Descriptor", bound="ReadOnly[Any]")


class ReadOnly(Generic[_T]):
    """A read-only property returning the instance's attribute ``attribute``.

    Args:
        attribute: the private attribute read (e.g. ``"_settings"``).
        doc: the property's docstring.
    """

    def __init__(self, attribute: str, doc: str | None = None) -> None:
        self.attribute = attribute
        self.name = attribute  # the public name, set by __set_name__
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self: _Descriptor, instance: None, owner: type | None = None) -> _Descriptor: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return self._read(instance)

    def _read(self, instance: Any) -> _T:
        return getattr(instance, self.attribute)

    def __set__(self, instance: object, value: object) -> NoReturn:
        raise AttributeError(f"property {self.name!r} of {type(instance).__name__!r} object has no setter")

    def __delete__(self, instance: object) -> NoReturn:
        raise AttributeError(f"property {self.name!r} of {type(instance).__name__!r} object has no deleter")


class LockedReadOnly(ReadOnly[_T]):
    """A read-only property returning the instance's attribute ``attribute`` read while holding
    the instance's ``_lock`` (a lock or condition that the writers of the attribute hold)."""

    def _read(self, instance: Any) -> _T:
        with instance._lock:
            return getattr(instance, self.attribute)
