"""A control sequence the executor refuses, and why (ROS-free).

Raised by every check of what reaches the executor: its content and timing
(:mod:`parapush.execution.control_intake`), its sender
(:mod:`parapush.execution.control_source`) and the executor's own state
(:mod:`parapush.execution.executor_control`); the executor node counts and logs it.
"""

from __future__ import annotations


class ControlsRefused(Exception):  # noqa: N818 - a refusal, not an error of this program
    """A control sequence the executor refuses.

    Attributes:
        reason: stable machine-readable reason (counted in diagnostics as ``refused.<reason>``).
        message: what is wrong, for the log.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


__all__ = ["ControlsRefused"]
