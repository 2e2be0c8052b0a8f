"""Fair sharing of one fine backend between requests in progress on several threads.

:class:`FairFineScheduler` stands in front of a fine backend and is itself one (``propagate``,
``workers``, ``layout``): every call's rows are split into batches of ``batch_rows``, and the
batches of the calls in progress run on the backend one at a time. The next batch is taken
from the call that has had the fewest batches so far (ties: the call that came first), i.e.
least attained service: calls in progress together take turns batch by batch (round-robin),
and a call that just arrived (a small request) goes next, after the batch that is running. A
small request that arrives while a large one runs therefore waits for about one batch, not
for the large one to finish; the large one still advances whenever the small ones leave the
pool a turn, and every call is answered. The thread that waits for its own call runs
whichever batch is next (no extra thread); the backend is only ever called by one thread at
a time.

Every row of a fine batch is simulated independently of the others (a zero warm start,
its own data), so the split changes nothing: the result of a call equals the backend's
result for the whole call, bit for bit.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from parapush.parareal.cost_estimate import CostEstimator, call_overhead_of
from parapush.physics.backends.base import FineBackend
from parapush.validation import check_integer


class _Call:
    """One ``propagate`` call in progress: its rows, the next batch to run, its output."""

    def __init__(
        self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray, batch_rows: int, arrival: int
    ) -> None:
        self.arrival = arrival
        self.states = states
        self.controls = controls
        self.durations = durations
        self.starts = list(range(0, states.shape[0], batch_rows))
        self.batch_rows = batch_rows
        self.next_batch = 0
        self.done_batches = 0
        self.output: np.ndarray | None = None
        self.error: BaseException | None = None

    @property
    def has_pending(self) -> bool:
        return self.error is None and self.next_batch < len(self.starts)

    @property
    def finished(self) -> bool:
        return self.error is not None or self.done_batches == len(self.starts)

    @property
    def priority(self) -> tuple[int, int]:
        """Least attained service first (batches taken so far), then first come."""
        return self.next_batch, self.arrival

    def take(self) -> slice:
        start = self.starts[self.next_batch]
        self.next_batch += 1
        return slice(start, start + self.batch_rows)

    def store(self, rows: slice, states: np.ndarray) -> None:
        if self.output is None:
            self.output = np.empty((self.states.shape[0], *states.shape[1:]), dtype=states.dtype)
        self.output[rows] = states
        self.done_batches += 1


class FairFineScheduler:
    """A fine backend shared fairly by concurrent callers (see the module docstring).

    Args:
        backend: the fine backend that runs the batches; the scheduler does not close it.
        batch_rows: rows per batch; None: two per worker of ``backend`` (each batch keeps
            every worker busy, and a waiting call gets its turn after about two fine controls
            per other call in progress).

    Attributes:
        workers: the backend's workers. layout: the backend's state layout.
        batches_run: batches run so far (diagnostics).
        cost_estimator: the fine rate measured on the batches alone (the backend's own time,
            without the turns a call waited for): what a row costs, whatever the load of requests.
    """

    def __init__(self, backend: FineBackend, *, batch_rows: int | None = None) -> None:
        if not callable(getattr(backend, "propagate", None)):
            raise TypeError(f"backend: expected a fine backend with propagate(), got {type(backend).__name__}")
        self.backend = backend
        self.workers = int(backend.workers)
        self.layout = getattr(backend, "layout", None)
        self.batch_rows = 2 * self.workers if batch_rows is None else check_integer("batch_rows", batch_rows,
                                                                                  minimum=1)
        self.batches_run = 0
        self.cost_estimator = CostEstimator()
        self._condition = threading.Condition()
        self._turns: list[_Call] = []  # calls with batches not yet started
        self._arrivals = 0
        self._running = False
        self._closed = False

    @property
    def calls_in_progress(self) -> int:
        """Calls waiting for or running batches now."""
        with self._condition:
            return len(self._turns) + (1 if self._running else 0)

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        """As the backend's ``propagate``, bit-identical to it; callable from any thread.

        Raises:
            RuntimeError: after :meth:`close`; whatever the backend raised for one of this call's batches.
        """
        states = np.asarray(states)
        controls = np.asarray(controls)
        durations = np.asarray(durations)
        if states.shape[0] == 0:
            return self.backend.propagate(states, controls, durations)
        with self._condition:
            if self._closed:
                raise RuntimeError("FairFineScheduler: propagate called after close()")
            self._arrivals += 1
            call = _Call(states, controls, durations, self.batch_rows, self._arrivals)
            self._turns.append(call)
            while not call.finished:
                if self._running or not self._turns:
                    self._condition.wait()
                    continue
                self._run_next_batch()
        if call.error is not None:
            raise call.error
        assert call.output is not None
        return call.output

    def _run_next_batch(self) -> None:
        """Run the next turn's batch on the backend (called holding the condition, released meanwhile)."""
        turn = min(self._turns, key=lambda call: call.priority)
        rows = turn.take()
        if not turn.has_pending:
            self._turns.remove(turn)
        self._running = True
        self._condition.release()
        result: np.ndarray | None = None
        error: BaseException | None = None
        durations = turn.durations[rows]
        try:
            started = time.perf_counter()
            result = np.asarray(self.backend.propagate(turn.states[rows], turn.controls[rows], durations))
            self.cost_estimator.record_fine(wall_time=time.perf_counter() - started, rows=len(durations),
                                            mean_duration=float(np.mean(durations)), workers=self.workers,
                                            call_overhead=call_overhead_of(self.backend))
        except BaseException as raised:  # noqa: BLE001 - handed to the call's own thread
            error = raised
        finally:
            self._condition.acquire()
        self._running = False
        self.batches_run += 1
        if error is not None:
            turn.error = error
            if turn in self._turns:
                self._turns.remove(turn)
        else:
            assert result is not None
            turn.store(rows, result)
        self._condition.notify_all()

    def close(self) -> None:
        """Refuse new calls (calls in progress finish); idempotent. The backend stays open."""
        with self._condition:
            self._closed = True

    def __enter__(self) -> FairFineScheduler:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


__all__ = ["FairFineScheduler"]
