"""Build a fine backend by name (for configuration files and command lines)."""

from __future__ import annotations

from parapush.physics.backends.base import FineBackend
from parapush.physics.backends.processes import ProcessBackend
from parapush.physics.backends.ray_actors import RayBackend
from parapush.physics.backends.serial import SerialBackend
from parapush.physics.backends.threads import ThreadBackend, check_workers
from parapush.physics.fine import FineModel

BACKEND_NAMES = ("serial", "threads", "processes", "ray")


def make_backend(
    name: str, fine_model: FineModel, *, workers: int | None = None, ray_address: str | None = None
) -> FineBackend:
    """A backend for ``fine_model`` by name.

    Args:
        name: ``"serial"``, ``"threads"`` (:class:`ThreadBackend` with the rollout engine,
            the recommended default), ``"processes"`` (:class:`ProcessBackend`) or ``"ray"``
            (:class:`~parapush.physics.backends.ray_actors.RayBackend`, needs the ``ray`` extra).
        fine_model: the fine model to evaluate.
        workers: threads, processes or Ray actors; None for the cores available to this process
            (for ``"ray"``: the CPUs of the cluster; ignored by ``"serial"``).
        ray_address: the Ray cluster of ``"ray"``; None: ``RAY_ADDRESS``, else a local one.
    """
    if name not in BACKEND_NAMES:
        raise ValueError(f"name: expected one of {BACKEND_NAMES}, got {name!r}")
    if name == "serial":
        return SerialBackend(fine_model)
    if name == "ray":
        return RayBackend(fine_model.scene, fine_model.settings, workers=workers, address=ray_address)
    count = check_workers(workers, "workers")
    if name == "threads":
        return ThreadBackend(fine_model, threads=count)
    return ProcessBackend(fine_model.scene, fine_model.settings, workers=count)
