"""Scalar signals of a run that plots show over time: pusher speed and re-plan time.

ROS-free; the visualizer node publishes them (``std_msgs/Float64``), with the distance to
the goal (:class:`parapush.planning.termination.TerminationCheck`), so that Foxglove plots
them from the recording.
"""

from __future__ import annotations

import numpy as np

from parapush.scene import Scene


def pusher_speed(scene: Scene, state: np.ndarray) -> float:
    """m/s, the pusher's planar speed in ``state``."""
    layout = scene.layout
    state = layout.check(state, "state")
    return float(np.hypot(*state[layout.pusher_velocity]))


def replan_time(previous_plan_stamps: np.ndarray, plan_stamps: np.ndarray) -> float:
    """s from the end of the previous plan's first control to this plan's start.

    A plan's states are stamped at the control boundaries (``states[0]``: when the plan was
    published, ``states[1]``: when its first control ends). The MPC executes that control,
    observes, and plans again: this is how long the pusher waited for the new plan (observing
    and planning); a pipelined MPC that planned during the control gives zero or less.

    Args:
        previous_plan_stamps: (N + 1,) s, the previous plan's state stamps.
        plan_stamps: (M + 1,) s, this plan's.
    """
    previous_plan_stamps = np.asarray(previous_plan_stamps, dtype=float)
    plan_stamps = np.asarray(plan_stamps, dtype=float)
    if previous_plan_stamps.ndim != 1 or len(previous_plan_stamps) < 2:
        raise ValueError(f"previous_plan_stamps: expected (N + 1,) stamps with N >= 1, "
                         f"got shape {previous_plan_stamps.shape}")
    if plan_stamps.ndim != 1 or len(plan_stamps) < 1:
        raise ValueError(f"plan_stamps: expected (M + 1,) stamps, got shape {plan_stamps.shape}")
    return float(plan_stamps[0] - previous_plan_stamps[1])
