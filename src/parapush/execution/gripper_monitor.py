"""The Robotiq gripper holding the pusher, watched for the executor (ROS-free).

Start-up connects (retrying until ``connect_timeout``), activates, closes on the pusher tool
and checks that an object of ``tool_width`` is detected; any failure there is an
:class:`ExecutorStartupError` naming the stage and the endpoint. A thread then polls the
status every ``poll_period``; a fault (gFLT or kFLT), a lost activation or the tool no longer
detected (gOBJ != 2) is a *problem*, and so is a gripper that has not answered for
``no_answer_timeout`` (:meth:`GripperMonitor.check_silence`, called from the executor's
watchdog timer so that a poll blocked in request retries cannot delay it). Each new problem
is reported once to ``on_problem`` (the executor latches a stop).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from parapush.execution.execution_settings import GripperSettings
from parapush.execution.gripper import RobotiqGripper
from parapush.execution.gripper_errors import GraspError, GripperError
from parapush.robotiq.registers import GripperStatus, ObjectStatus


class ExecutorStartupError(RuntimeError):
    """The executor cannot start (the gripper could not be connected, activated or closed on the tool)."""


def gripper_problem(status: GripperStatus) -> tuple[str, str] | None:
    """(kind, message) of why the gripper can no longer be trusted to hold the pusher, or None
    when it holds it. ``kind`` is stable while the problem lasts (the message carries the
    changing status), so a persisting problem is reported once."""
    if status.fault or status.controller_fault:
        return f"fault 0x{status.fault:02X}/0x{status.controller_fault:X}", f"gripper fault: {status.describe()}"
    if not status.is_active:
        return "not activated", f"gripper is not activated: {status.describe()}"
    if status.object_status is not ObjectStatus.CONTACT_CLOSING:
        return "tool lost", (
            f"the pusher tool is no longer detected between the fingers (gOBJ != 2): {status.describe()}"
        )
    return None


@dataclass(frozen=True)
class GripperSnapshot:
    """What the gripper monitor knows (for diagnostics and the reset service)."""

    endpoint: str
    status: GripperStatus | None
    problem: str | None
    last_answer_age_s: float
    polls: int
    failed_polls: int
    grasp_width_m: float


class GripperMonitor:
    """Start-up grasp, periodic status polling and release of the Robotiq gripper (ROS-free).

    Args:
        gripper: the driver (not connected yet).
        poll_period_s: time between status polls, s.
        no_answer_timeout_s: a problem is reported when no status came for this long, s.
        on_problem: called from the polling thread with a message when a problem appears or
            changes (not again while it stays the same).
    """

    def __init__(
        self,
        gripper: RobotiqGripper,
        *,
        poll_period_s: float,
        no_answer_timeout_s: float,
        on_problem: Callable[[str], None],
    ) -> None:
        self.gripper = gripper
        self._poll_period = poll_period_s
        self._no_answer_timeout = no_answer_timeout_s
        self._on_problem = on_problem
        self._lock = threading.Lock()
        self._status: GripperStatus | None = None
        self._problem: str | None = None
        self._problem_kind: str | None = None
        self._last_answer = time.monotonic()
        self._polls = 0
        self._failed_polls = 0
        self._grasp_width = math.nan
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def from_settings(cls, settings: GripperSettings, on_problem: Callable[[str], None]) -> GripperMonitor:
        """A monitor of the gripper at ``settings.address`` (not connected yet).

        Raises:
            SettingsError: naming ``address`` when it is not a valid endpoint.
        """
        driver = RobotiqGripper(settings.endpoint(), settings=settings.driver_settings())
        return cls(
            driver,
            poll_period_s=settings.poll_period,
            no_answer_timeout_s=settings.no_answer_timeout,
            on_problem=on_problem,
        )

    def start_up(self, settings: GripperSettings) -> GripperStatus:
        """Connect, activate, close on the tool and check it is detected.

        Raises:
            ExecutorStartupError: naming the stage and the endpoint (the connection is closed).
        """
        where = self.gripper.endpoint.describe()
        stage = "connecting"
        try:
            # The gripper (or its driver, or the simulated one) may come up after this node:
            # keep trying to connect until the timeout, then fail naming the endpoint.
            deadline = time.monotonic() + settings.connect_timeout
            while True:
                try:
                    self.gripper.connect()
                    break
                except GripperError:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.2)
            stage = "activating"
            self.gripper.activate(timeout_s=settings.activation_timeout)
            stage = "closing on the pusher tool"
            grasp = self.gripper.grasp_tool(
                expected_width_m=settings.tool_width,
                width_tolerance_m=settings.width_tolerance,
                speed=settings.grasp_speed,
                force=settings.grasp_force,
                timeout_s=settings.grasp_timeout,
            )
        except GraspError as error:
            self.gripper.close()
            raise ExecutorStartupError(f"gripper start-up failed ({where}): the tool is not held: {error}") from None
        except GripperError as error:
            self.gripper.close()
            raise ExecutorStartupError(f"gripper start-up failed while {stage} ({where}): {error}") from None
        with self._lock:
            self._status = grasp.status
            self._grasp_width = grasp.width_m
            self._last_answer = time.monotonic()
        return grasp.status

    def start(self) -> None:
        """Start polling the status in a background thread."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="executor-gripper-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None

    def poll(self) -> str | None:
        """One status read; returns the current problem (None: holding the tool).

        A new problem is reported to ``on_problem`` after the monitor's lock is released, so the
        callback may take the caller's locks (the node's output lock) without lock-order issues.
        """
        report: str | None = None
        try:
            status = self.gripper.status()
        except GripperError as error:
            with self._lock:
                self._polls += 1
                self._failed_polls += 1
                silence = time.monotonic() - self._last_answer
                if silence > self._no_answer_timeout:
                    report = self._set_problem((
                        "no answer",
                        f"gripper not answering for {silence:.3f} s (limit {self._no_answer_timeout} s): {error}",
                    ))
                problem = self._problem
        else:
            with self._lock:
                self._polls += 1
                self._status = status
                self._last_answer = time.monotonic()
                report = self._set_problem(gripper_problem(status))
                problem = self._problem
        if report is not None:
            self._on_problem(report)
        return problem

    def check_silence(self) -> str | None:
        """Report a gripper that has not answered for ``no_answer_timeout`` (call from a timer: the
        polling thread itself may be blocked in a request with retries for longer)."""
        report = None
        with self._lock:
            silence = time.monotonic() - self._last_answer
            if silence > self._no_answer_timeout:
                report = self._set_problem(
                    ("no answer", f"gripper not answering for {silence:.3f} s (limit {self._no_answer_timeout} s)")
                )
            problem = self._problem
        if report is not None:
            self._on_problem(report)
        return problem

    def _set_problem(self, problem: tuple[str, str] | None) -> str | None:
        """Record ``problem`` (kind, message) (lock held); return its message if its kind is new
        (to be reported), else None."""
        previous = self._problem_kind
        self._problem_kind, self._problem = problem if problem is not None else (None, None)
        if problem is not None and problem[0] != previous:
            return problem[1]
        return None

    def _run(self) -> None:
        while not self._stop.wait(self._poll_period):
            self.poll()

    def snapshot(self) -> GripperSnapshot:
        with self._lock:
            return GripperSnapshot(
                endpoint=self.gripper.endpoint.describe(),
                status=self._status,
                problem=self._problem,
                last_answer_age_s=time.monotonic() - self._last_answer,
                polls=self._polls,
                failed_polls=self._failed_polls,
                grasp_width_m=self._grasp_width,
            )

    def reset_blocker(self) -> str | None:
        """Why the gripper forbids clearing a latched stop (its last polled problem, or a stalled
        poll), or None."""
        snapshot = self.snapshot()
        if snapshot.problem is not None:
            return snapshot.problem
        if snapshot.last_answer_age_s > self._no_answer_timeout:
            return f"no gripper status for {snapshot.last_answer_age_s:.3f} s (limit {self._no_answer_timeout} s)"
        return None

    def release(self, *, timeout_s: float) -> GripperStatus:
        """Open the fingers (polling must be stopped)."""
        return self.gripper.release(timeout_s=timeout_s)

    def close(self) -> None:
        self.stop()
        self.gripper.close()
