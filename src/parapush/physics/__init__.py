"""Physics models of planar pushing: the fine MuJoCo model, its parallel backends, the
analytical coarse model (ISRR 2019, Eq 5-8) and the feasibility projection (Eq 9).

Every model maps a batch of states in the papers' layout (see
:mod:`parapush.scene.state`) and a batch of pusher velocities held for given durations to
the batch of next states; see :class:`parapush.physics.propagator.Propagator`.

Modules: :mod:`~parapush.physics.propagator` (the contract), :mod:`~parapush.physics.mjcf`
(scene -> MuJoCo model), :mod:`~parapush.physics.fine` (F and its settings),
:mod:`~parapush.physics.backends` (serial, threads, processes, Ray actors),
:mod:`~parapush.physics.coarse_analytical` (C), :mod:`~parapush.physics.projection`
(Eq 9), :mod:`~parapush.physics.planar_geometry` (discs and rectangles),
:mod:`~parapush.physics.table_support` (the off-table signal). Import from those modules.
"""

from parapush.physics.propagator import Propagator, check_batch

__all__ = ["Propagator", "check_batch"]
