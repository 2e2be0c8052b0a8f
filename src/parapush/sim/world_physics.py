"""The simulated world as the physics of a planning world (:class:`parapush.planning.async_world.Physics`).

:class:`SimWorldPhysics` drives a :class:`parapush.sim.world.SimWorld` in manual mode
(no thread): ``advance(u, T)`` streams ``u`` to the simulated arm as table-frame twist
commands (every ``command_period`` of simulated time, as the executor does, so the arm's
0.1 s command timeout never fires) and steps the world for ``T``. The world keeps its own
physics: the pushing noise (contact parameters redrawn at every new push), the arm's
acceleration limit and falling off the table. Requested durations are accumulated and the
world is stepped to the nearest whole physics step, so many short pieces add up exactly.
"""

from __future__ import annotations

import numpy as np

from parapush.execution.commands import TwistCommand
from parapush.sim.world import SimWorld

__all__ = ["SimWorldPhysics"]


class SimWorldPhysics:
    """:class:`~parapush.planning.async_world.Physics` over a manual-mode :class:`SimWorld`.

    Args:
        world: the simulated world (not running its thread).
        command_period: s of simulated time between twist commands.
    """

    def __init__(self, world: SimWorld, *, command_period: float = 0.02) -> None:
        if not isinstance(world, SimWorld):
            raise TypeError(f"world: expected a SimWorld, got {type(world).__name__}")
        if not command_period > 0.0:
            raise ValueError(f"command_period: expected a number of seconds > 0, got {command_period!r}")
        self.world = world
        self.command_period = float(command_period)
        self._requested = world.time

    def state(self) -> np.ndarray:
        """(D,) the world's true state."""
        return self.world.true_state()

    def advance(self, control: np.ndarray, duration: float) -> None:
        """Stream ``control`` (2,) m/s to the arm for ``duration`` s of simulated time."""
        control = np.asarray(control, dtype=float)
        self._requested += float(duration)
        world = self.world
        timestep = world.timestep
        while True:
            remaining = self._requested - world.time
            if remaining < 0.5 * timestep:
                return
            world.command(TwistCommand(stamp_s=world.time, frame_id="table", linear=(control[0], control[1], 0.0)))
            world.step(min(self.command_period, remaining))
