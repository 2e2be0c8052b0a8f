"""Build a fine backend by name (for configuration files and command lines)."""

from __future__ import annotations

from parapush.physics.backends.base import FineBackend
from parapush.physics.backends.processes import ProcessBackend
from parapush.physics.backends.serial import SerialBackend
from parapush.physics.backends.threads import ThreadBackend
from parapush.physics.fine import FineModel

BACKEND_NAMES = ("serial", "threads", "processes")


def make_backend(name: str, fine_model: FineModel, *, workers: int | None = None) -> FineBackend:
    """``"serial"``, ``"threads"`` (default engine ``rollout``) or ``"processes"``.

    Args:
        name: backend name.
        fine_model: the fine model to evaluate.
        workers: threads or processes; defaults to ``os.cpu_count()`` (ignored by serial).
    """
    if name == "serial":
        return SerialBackend(fine_model)
    if name == "threads":
        return ThreadBackend(fine_model, threads=workers)
    if name == "processes":
        import os

        return ProcessBackend(fine_model.scene, fine_model.settings, workers=workers or os.cpu_count() or 1)
    raise ValueError(f"name: expected one of {BACKEND_NAMES}, got {name!r}")
