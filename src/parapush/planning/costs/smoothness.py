"""Running cost: squared change of the pusher velocity between controls (ISRR w_u term).

For controls u_0..u_{N-1} (m/s) and the control executed just before, u_{-1}::

    J_u = sum_{t=0}^{N-1} ||u_t - u_{t-1}||^2        ((m/s)^2)

``previous_control`` is u_{-1}: the MPC loop sets it to the control it executed last
(zero velocity before the first one, the robot being at rest) through
:meth:`Smoothness.with_previous_control`; ``None`` drops the t = 0 term.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from parapush.planning.costs.cost_term import check_batch, check_term_fields
from parapush.scene import Scene, StateLayout


@dataclass(frozen=True)
class Smoothness:
    """Sum of squared control changes, including the change from the previous control.

    Attributes:
        layout: state layout of the scene.
        weight: the paper's w_u.
        previous_control: (2,) m/s, the control executed before u_0, or None.
    """

    name: ClassVar[str] = "smoothness"
    PARAMETERS: ClassVar[tuple[str, ...]] = ("weight",)

    layout: StateLayout
    weight: float = 1.0
    previous_control: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        check_term_fields(self, "weight")
        if self.previous_control is not None:
            previous = np.asarray(self.previous_control, dtype=float)
            if previous.shape != (2,) or not np.all(np.isfinite(previous)):
                raise ValueError(
                    f"{self.name}.previous_control: expected 2 finite numbers, got {self.previous_control!r}"
                )
            object.__setattr__(self, "previous_control", (float(previous[0]), float(previous[1])))

    @classmethod
    def from_scene(cls, scene: Scene, *, weight: float = 1.0) -> Smoothness:
        return cls(layout=scene.layout, weight=weight)

    def with_previous_control(self, control: np.ndarray | None) -> Smoothness:
        """A copy whose u_{-1} is ``control`` (2,) m/s (None: no t = 0 term)."""
        previous = None if control is None else tuple(np.asarray(control, dtype=float).tolist())
        return dataclasses.replace(self, previous_control=previous)

    def evaluate(self, trajectories: np.ndarray, controls: np.ndarray) -> np.ndarray:
        _, controls = check_batch(trajectories, controls, self.layout.dimension)
        changes = np.diff(controls, axis=1)
        total = np.einsum("snk,snk->s", changes, changes)
        if self.previous_control is not None:
            first = controls[:, 0] - np.asarray(self.previous_control)
            total = total + np.einsum("sk,sk->s", first, first)
        return total
