"""Ways to evaluate the fine model on a batch: serially, on threads, on processes, on Ray actors.

All backends implement :class:`FineBackend` and return results bit-identical to
:meth:`parapush.physics.fine.FineModel.propagate`.
"""

from parapush.physics.backends.base import FineBackend
from parapush.physics.backends.factory import BACKEND_NAMES, make_backend
from parapush.physics.backends.processes import ProcessBackend, WorkerError
from parapush.physics.backends.ray_actors import RayBackend
from parapush.physics.backends.serial import SerialBackend
from parapush.physics.backends.threads import ThreadBackend

__all__ = [
    "BACKEND_NAMES",
    "FineBackend",
    "ProcessBackend",
    "RayBackend",
    "SerialBackend",
    "ThreadBackend",
    "WorkerError",
    "make_backend",
]
