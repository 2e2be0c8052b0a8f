"""What the state estimator publishes: snapshots restamped and made finite, the snapshot of
a scene whose bodies are unknown, and reading the tracker "now" (ROS-free)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

import numpy as np

from parapush.scene import Scene, SceneSnapshot

T = TypeVar("T")


def publishable_snapshot(snapshot: SceneSnapshot, stamp: float) -> SceneSnapshot:
    """``snapshot`` restamped, never-seen bodies' NaN replaced by 0 (they are already invalid, age inf)."""
    state = np.nan_to_num(snapshot.state, nan=0.0, posinf=0.0, neginf=0.0)
    return replace(snapshot, state=state, stamp=stamp)


def unknown_snapshot(scene: Scene, stamp: float) -> SceneSnapshot:
    """Every body invalid, never seen: what is published while the rigid-body ids are unresolved."""
    count = len(scene.objects)
    return SceneSnapshot(
        stamp=stamp,
        object_names=scene.object_names,
        state=np.zeros(scene.layout.dimension),
        pusher_valid=False,
        object_valid=np.zeros(count, bool),
        pusher_age=math.inf,
        object_age=np.full(count, math.inf),
    )


def call_now(method: Callable[[float], T], now: float) -> tuple[T, float]:
    """``(method(now), now)``; if a frame received after ``now`` was incorporated meanwhile (the
    tracker refuses a ``now`` before its latest measurement), again with a fresh time."""
    try:
        return method(now), now
    except ValueError:
        now = time.monotonic()
        return method(now), now
