"""Start a program or node by its module's name, so that a stop while it imports is quiet.

    python -m parapush.program_entry parapush.nodes.mpc --ros-args ...

runs ``parapush.nodes.mpc.main()`` with ``sys.argv`` = ``["parapush.nodes.mpc", "--ros-args",
...]``. The installed scripts (``ros2 run``, ``ros2 launch``; CMakeLists.txt) and the bringup start
every node and program this way.

Why: before a program's main loop there is its import, seconds on a slow machine (rclpy, MuJoCo,
the learned models). Python's own SIGINT handler raises KeyboardInterrupt there, so a stack
stopped right after its start printed tracebacks and its nodes exited -2 (seen: a visualizer at
nice +10 still importing 20 s after the start). Here a SIGINT or SIGTERM during the import ends
the program with exit code 0, as a stop in its main loop does
(:class:`~parapush.stop_signals.StopSignals`), and one line on stderr.
"""

from __future__ import annotations

import importlib
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from parapush.stop_signals import STOP_SIGNALS

__all__ = ["StoppedWhileStarting", "main", "run_program"]


class StoppedWhileStarting(BaseException):
    """Raised into the import by a stop signal (its number in ``args[0]``) that arrived while
    :func:`run_program` imported its program. A BaseException, as KeyboardInterrupt is, so that
    an ``except Exception`` of the imported code does not swallow it."""


def run_program(module: str) -> int:
    """Import ``module`` (e.g. ``"parapush.nodes.mpc"``) and return its ``main()``'s exit code.

    A SIGINT or SIGTERM during the import returns 0 after a line on stderr naming the signal,
    whatever the import made of the :class:`StoppedWhileStarting` raised into it (a C extension's
    initialisation turns it into an ImportError; a library may swallow it and finish importing).
    Python's default handlers are back before ``main()`` runs, which installs its own.
    """
    received: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001 - the handler's signature
        received.append(signum)
        raise StoppedWhileStarting(signum)

    previous = {number: signal.signal(number, stop) for number in STOP_SIGNALS}
    try:
        program_main = importlib.import_module(module).main
    except BaseException:
        if not received:
            raise
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if received:
        print(f"[INFO] {module}: stopped by {signal.Signals(received[0]).name} while starting", file=sys.stderr,
              flush=True)
        return 0
    return program_main()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m parapush.program_entry MODULE [ARGS...]``: :func:`run_program` of ``MODULE``
    with ``sys.argv`` set to ``[MODULE, *ARGS]`` (what the program parses)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or arguments[0].startswith("-"):
        print("usage: python -m parapush.program_entry MODULE [ARGS...] (e.g. parapush.nodes.mpc --ros-args ...)",
              file=sys.stderr)
        return 2
    sys.argv = arguments
    return run_program(arguments[0])


if __name__ == "__main__":
    sys.exit(main())
