"""Physics models of planar pushing: the fine MuJoCo model, its parallel backends, the
analytical coarse model (ISRR 2019, Eq 5-8) and the feasibility projection (Eq 9).

Every model maps a batch of states in the papers' layout (see
:mod:`parapush.scene.state`) and a batch of pusher velocities held for given durations to
the batch of next states; see :class:`parapush.physics.propagator.Propagator`.
"""

from parapush.physics.propagator import Propagator, check_batch

__all__ = ["Propagator", "check_batch"]
