"""parapush.lifecycle: the Closeable and Service context managers."""

from __future__ import annotations

import pytest

from parapush.lifecycle import Closeable, Service


class _Resource(Closeable):
    def __init__(self) -> None:
        self.closes = 0

    def close(self) -> None:
        self.closes += 1


class _Runner(Service):
    def __init__(self, *, fail_start: bool = False) -> None:
        self.calls: list[str] = []
        self.fail_start = fail_start

    def start(self) -> None:
        self.calls.append("start")
        if self.fail_start:
            raise OSError("bind failed")

    def stop(self) -> None:
        self.calls.append("stop")


def test_closeable_gives_itself_and_closes_on_exit() -> None:
    resource = _Resource()
    with resource as entered:
        assert entered is resource
        assert resource.closes == 0
    assert resource.closes == 1


def test_closeable_closes_and_lets_the_exception_through() -> None:
    resource = _Resource()
    with pytest.raises(KeyError), resource:
        raise KeyError("x")
    assert resource.closes == 1


def test_service_starts_gives_itself_and_stops_on_exit() -> None:
    runner = _Runner()
    with runner as entered:
        assert entered is runner
        assert runner.calls == ["start"]
    assert runner.calls == ["start", "stop"]


def test_service_stops_after_an_exception_in_the_block_and_lets_it_through() -> None:
    runner = _Runner()
    with pytest.raises(KeyError), runner:
        raise KeyError("x")
    assert runner.calls == ["start", "stop"]


def test_service_whose_start_fails_is_not_entered() -> None:
    runner = _Runner(fail_start=True)
    with pytest.raises(OSError, match="bind failed"), runner:
        pytest.fail("the block ran")
    assert runner.calls == ["start"]


def test_the_bases_name_what_subclasses_implement() -> None:
    with pytest.raises(NotImplementedError):
        Closeable().close()
    with pytest.raises(NotImplementedError):
        Service().start()
    with pytest.raises(NotImplementedError):
        Service().stop()
