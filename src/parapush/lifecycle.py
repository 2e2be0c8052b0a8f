"""The two context-manager shapes of this package's resource holders, written once.

* :class:`Closeable`: a resource that is open from construction until :meth:`~Closeable.close`
  (fine-model backends, the identifier, the gripper driver); ``with x as y`` gives ``x`` and
  closes it on exit.
* :class:`Service`: something that runs between :meth:`~Service.start` and
  :meth:`~Service.stop` (emulated devices, the NatNet client); ``with x as y`` starts ``x``,
  gives it and stops it on exit.

Subclasses implement ``close`` (or ``start`` and ``stop``); the context-manager methods are
only ever these. ``__exit__`` never suppresses an exception.
"""

from __future__ import annotations

from typing import TypeVar

_Closeable = TypeVar("_Closeable", bound="Closeable")
_Service = TypeVar("_Service", bound="Service")


class Closeable:
    """A resource released by :meth:`close` (idempotent in every subclass); a context manager
    that returns itself and closes itself on exit."""

    def close(self) -> None:
        """Release what the object holds; idempotent."""
        raise NotImplementedError

    def __enter__(self: _Closeable) -> _Closeable:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Service:
    """Runs between :meth:`start` and :meth:`stop` (idempotent in every subclass); a context
    manager that starts itself, returns itself and stops itself on exit."""

    def start(self) -> object:
        """Start running (a subclass may return itself, for ``x = Service(...).start()``)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop running and release what :meth:`start` acquired; idempotent."""
        raise NotImplementedError

    def __enter__(self: _Service) -> _Service:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
