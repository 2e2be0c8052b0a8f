"""parapush.read_only: the read-only attribute views behave as the properties they replace."""

from __future__ import annotations

import threading

import pytest

from parapush.read_only import LockedReadOnly, ReadOnly


class _RecordingLock:
    """A lock that records whether it is held, to see a read happen under it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.held_during_reads: list[bool] = []

    def __enter__(self) -> _RecordingLock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()


class _Holder:
    value: ReadOnly[int] = ReadOnly("_value", "The value.")
    guarded: LockedReadOnly[int] = LockedReadOnly("_guarded_value")

    def __init__(self) -> None:
        self._value = 1
        self._lock = _RecordingLock()
        self._guarded = 2

    @property
    def _guarded_value(self) -> int:
        self._lock.held_during_reads.append(self._lock.locked())
        return self._guarded


def test_reads_the_private_attribute_and_follows_it() -> None:
    holder = _Holder()
    assert holder.value == 1
    holder._value = 5
    assert holder.value == 5


def test_the_class_gives_the_descriptor_with_its_doc_and_name() -> None:
    assert isinstance(_Holder.value, ReadOnly)
    assert _Holder.value.__doc__ == "The value."
    assert _Holder.value.name == "value"
    assert _Holder.guarded.__doc__ is None


@pytest.mark.parametrize("name", ["value", "guarded"])
def test_assigning_or_deleting_raises_as_a_property_does(name: str) -> None:
    holder = _Holder()
    with pytest.raises(AttributeError, match=f"property '{name}' of '_Holder' object has no setter"):
        setattr(holder, name, 3)
    with pytest.raises(AttributeError, match=f"property '{name}' of '_Holder' object has no deleter"):
        delattr(holder, name)


def test_locked_read_holds_the_instance_lock() -> None:
    holder = _Holder()
    assert holder.guarded == 2
    assert holder._lock.held_during_reads == [True]
    assert not holder._lock.locked()


def test_a_plain_read_does_not_take_the_lock() -> None:
    holder = _Holder()
    with holder._lock:  # would deadlock (non-reentrant) if ReadOnly took it
        assert holder.value == 1
