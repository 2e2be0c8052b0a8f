"""Stopping rules and switches of one Parareal solve."""

from __future__ import annotations

from dataclasses import dataclass

from parapush.validation import check_fields, check_optional_positive


@dataclass(frozen=True, kw_only=True)
class PararealOptions:
    """When to stop Parareal and what to keep.

    Parareal stops at the first of these rules that applies (at least one of
    ``iterations``, a tolerance or ``deadline`` must be given):

    * ``iterations`` (the papers' K) have been done; K = 0 is the coarse model alone and
      K must not exceed the number of slices N (checked when solving). When omitted the
      solver iterates until another rule stops it, at most N times.
    * every sequence's last update is within the tolerances: the largest change of any
      position (pusher and object x, y) between consecutive iterates is at most
      ``tolerance_position`` and the largest change of any object yaw is at most
      ``tolerance_angle``. A sequence that meets them stops iterating while the others go
      on. A tolerance left as None is not checked. Contact makes pushing chaotic: position
      tolerances below ~1e-4 m are meaningless on the MuJoCo fine model (design notes).
    * the wall-clock ``deadline`` (s since the solve began) has passed, or the next
      iteration is predicted to end after it; the latest iterate is returned with the
      number of states that are already exact.
    * every sequence has done N iterations: the result equals the serial fine solution.

    Attributes:
        iterations: K, iterations to run, >= 0, or None.
        tolerance_position: m, > 0, or None.
        tolerance_angle: rad, > 0, or None.
        deadline: s of wall time, > 0, or None.
        keep_iterates: keep every iterate x^0..x^k in the result (memory: (k+1) B (N+1) D).
        project: apply the solver's feasibility projection to every corrected state and to
            the initial coarse sweep (ISRR Eq 9); ignored when the solver has no projector.
    """

    iterations: int | None = None
    tolerance_position: float | None = None
    tolerance_angle: float | None = None
    deadline: float | None = None
    keep_iterates: bool = False
    project: bool = True

    def __post_init__(self) -> None:
        if self.iterations is not None:
            if isinstance(self.iterations, bool) or not isinstance(self.iterations, int):
                raise TypeError(f"iterations: expected an integer or None, got {self.iterations!r}")
            if self.iterations < 0:
                raise ValueError(f"iterations: must be >= 0, got {self.iterations}")
        check_fields(self, check_optional_positive, "tolerance_position", "tolerance_angle", "deadline")
        for name in ("keep_iterates", "project"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name}: expected a bool, got {getattr(self, name)!r}")
        if self.iterations is None and not self.has_tolerance and self.deadline is None:
            raise ValueError(
                "iterations, tolerance_position, tolerance_angle, deadline: give at least one stopping rule"
            )

    @property
    def has_tolerance(self) -> bool:
        """Whether a tolerance rule is set."""
        return self.tolerance_position is not None or self.tolerance_angle is not None

    def iteration_limit(self, slices: int) -> int:
        """The largest number of iterations for a problem of ``slices`` (N) slices.

        Raises ValueError naming ``iterations`` when K > N.
        """
        if self.iterations is None:
            return slices
        if self.iterations > slices:
            raise ValueError(
                f"iterations: K = {self.iterations} exceeds the number of slices N = {slices} "
                "(Parareal equals the fine solution after N iterations)"
            )
        return self.iterations
