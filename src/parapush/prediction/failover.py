"""A predictor that survives the loss of its primary source (e.g. the prediction service).

:class:`FailoverPrediction` implements :class:`parapush.planning.PredictiveModel`. It asks
the primary predictor; when that raises one of ``lost_errors`` (no answer within its per-call
deadline, the service gone), it says so through ``on_event`` and, as configured:

- ``"local"``: builds the backup (``make_backup()``, e.g. a local
  :class:`~parapush.planning.engine_prediction.EnginePrediction` of the same ``model:`` config) once and
  answers this and every later call with it;
- ``"wait"``: waits for the primary to come back (``wait_for_primary(timeout)``, polled once
  per second) and asks it again, for at most ``wait_limit`` s in all; then the error is raised;
- ``"abort"``: raises the error at once.

The caller's loop is planning while this happens, so the pusher does what the loop does for a
late plan (the pipelined loop's fallback for one period, then standing still; the sequential
loop stands still anyway): it never moves without a plan.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["SERVICE_LOSS_POLICIES", "FailoverPrediction"]

SERVICE_LOSS_POLICIES = ("local", "wait", "abort")


class FailoverPrediction:
    """Predictions from ``primary``, or from a backup once the primary is lost (module docstring).

    Args:
        primary: the predictive model to use while it answers.
        lost_errors: exception types that mean the primary is lost (others propagate).
        policy: one of :data:`SERVICE_LOSS_POLICIES`.
        make_backup: builds the backup predictor (``policy="local"``).
        wait_for_primary: ``(timeout s) -> bool``, true once the primary is back (``policy="wait"``).
        wait_limit: s, the longest total wait for the primary (``policy="wait"``).
        on_event: called with a sentence for each thing that happened.

    Attributes:
        using_backup: whether the backup answers now.
        events: the sentences passed to ``on_event`` so far.
    """

    def __init__(
        self,
        primary: Any,
        *,
        lost_errors: tuple[type[BaseException], ...],
        policy: str = "local",
        make_backup: Callable[[], Any] | None = None,
        wait_for_primary: Callable[[float], bool] | None = None,
        wait_limit: float = 60.0,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        if policy not in SERVICE_LOSS_POLICIES:
            raise ValueError(f"policy: expected one of {SERVICE_LOSS_POLICIES}, got {policy!r}")
        if policy == "local" and make_backup is None:
            raise ValueError("make_backup: required with policy 'local'")
        if policy == "wait" and wait_for_primary is None:
            raise ValueError("wait_for_primary: required with policy 'wait'")
        if not (isinstance(wait_limit, (int, float)) and wait_limit >= 0):
            raise ValueError(f"wait_limit: expected a number of seconds >= 0, got {wait_limit!r}")
        self.primary = primary
        self.layout = primary.layout
        self.lost_errors = tuple(lost_errors)
        self.policy = policy
        self.make_backup = make_backup
        self.wait_for_primary = wait_for_primary
        self.wait_limit = float(wait_limit)
        self.on_event = on_event
        self.events: list[str] = []
        self._backup: Any = None
        self._lost_since: float | None = None

    @property
    def using_backup(self) -> bool:
        return self._backup is not None

    def _event(self, sentence: str) -> None:
        self.events.append(sentence)
        if self.on_event is not None:
            self.on_event(sentence)

    def predict(self, initial_state: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """Trajectories (S, N+1, D) for controls (S, N, 2) m/s from initial_state (D,), durations (N,) s."""
        while self._backup is None:
            try:
                trajectories = self.primary.predict(initial_state, controls, durations)
            except self.lost_errors as error:
                self._on_lost(error)
                continue
            if self._lost_since is not None:
                self._event(f"prediction service answering again after {time.monotonic() - self._lost_since:.1f} s")
                self._lost_since = None
            return trajectories
        return self._backup.predict(initial_state, controls, durations)

    def _on_lost(self, error: BaseException) -> None:
        if self.policy == "abort":
            raise error
        if self.policy == "local":
            started = time.monotonic()
            self._backup = self.make_backup()
            self._event(f"prediction service lost ({error}); re-planning with a local engine of the same model "
                        f"config (built in {time.monotonic() - started:.2f} s)")
            return
        now = time.monotonic()
        if self._lost_since is None:
            self._lost_since = now
            self._event(f"prediction service lost ({error}); waiting for it (at most {self.wait_limit:.0f} s)")
        while (waited := time.monotonic() - self._lost_since) < self.wait_limit:
            if self.wait_for_primary(min(1.0, self.wait_limit - waited)):
                return  # ask it again
        raise type(error)(f"{error}; no answer from the prediction service for {self.wait_limit:.0f} s") from error
