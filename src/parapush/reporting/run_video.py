"""A video of a pushing run: top views of the world's true state with the goal and the plan, as a GIF.

ROS-free: it takes the scene, the states and the plans with their times, so the demo renders
it after the run from its recording (:mod:`parapush.programs.render_run`) without slowing the
run. Frames are matplotlib top views (table, goal region, obstacles, objects, pusher, the
target's trail, the plan in force and the time stamp) every ``frame_period`` seconds of the
run, played in real time: a run of duration ``T`` gives ``floor(T / frame_period) + 1`` frames of
``frame_period`` each, the first at the run's first state, the last less than a period before
its end. Encoded by Pillow as an animated GIF (palette images; no ffmpeg needed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from parapush.reporting.run_plot import PUSHER_COLOUR, TARGET_COLOUR, draw_outline, draw_table, object_colour
from parapush.scene import Scene
from parapush.scene.outline import Outline

PALETTE_COLOURS = 64
"""Colours of the GIF palette (a top view has few)."""


@dataclass(frozen=True)
class VideoSummary:
    """What :func:`render_run_video` wrote.

    Attributes:
        path: the GIF.
        frames: number of frames.
        frame_period: s of run time per frame (also each frame's display time).
        duration: s, frames x frame_period: the last frame shows the run's end, so the run's
            duration plus at most one frame period.
        run_duration: s, the last state's time minus the first's.
    """

    path: Path
    frames: int
    frame_period: float
    duration: float
    run_duration: float


def frame_times(times: np.ndarray, frame_period: float) -> np.ndarray:
    """Run times (s) of the frames: every ``frame_period`` from the first state's time to the last's.

    Args:
        times: (T,) s, the states' times, non-decreasing.
        frame_period: s, a multiple of 0.01 s (a GIF's frame delays are in centiseconds).
    Returns:
        (floor((times[-1] - times[0]) / frame_period) + 1,) s.
    """
    times = np.asarray(times, dtype=float)
    if times.ndim != 1 or len(times) == 0 or not np.all(np.isfinite(times)):
        raise ValueError(f"times: expected (T,) finite times with T >= 1, got shape {times.shape}")
    if np.any(np.diff(times) < 0.0):
        raise ValueError("times: must be non-decreasing")
    centiseconds = frame_period * 100.0
    if not math.isfinite(frame_period) or frame_period <= 0.0 or abs(centiseconds - round(centiseconds)) > 1e-6:
        raise ValueError(f"frame_period: expected a positive multiple of 0.01 s, got {frame_period!r}")
    count = int(math.floor((times[-1] - times[0]) / frame_period + 1e-9)) + 1
    return times[0] + frame_period * np.arange(count)


def render_run_video(
    scene: Scene,
    times: np.ndarray,
    states: np.ndarray,
    path: str | Path,
    *,
    plan_times: np.ndarray | None = None,
    plans: list[np.ndarray] | None = None,
    frame_period: float = 0.2,
    title: str = "",
    dpi: int = 72,
) -> VideoSummary:
    """Render a run as an animated GIF.

    Args:
        scene: the scene (table, goal, obstacles, shapes, target).
        times: (T,) s, the states' times (any origin; frames are stamped from the first), non-decreasing.
        states: (T, D) states (the world's true state), the scene's layout.
        path: the GIF to write.
        plan_times: (P,) s, when each plan was published (same clock as ``times``).
        plans: P arrays (N + 1, D), the predicted trajectories; each frame shows the last plan
            published at or before its time.
        frame_period: s of run time per frame, a multiple of 0.01 s.
        title: shown above the view.
        dpi: pixels per inch of the 5-inch-wide frames.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    layout = scene.layout
    states = layout.check(np.atleast_2d(states), "states")
    times = np.asarray(times, dtype=float)
    if states.ndim != 2 or len(states) != len(times):
        raise ValueError(f"states: expected ({len(times)}, {layout.dimension}) states, one per time, "
                         f"got shape {states.shape}")
    plans = [layout.check(np.atleast_2d(plan), f"plans[{index}]") for index, plan in enumerate(plans or [])]
    plan_times = np.asarray(plan_times if plan_times is not None else [], dtype=float)
    if plan_times.shape != (len(plans),):
        raise ValueError(f"plan_times: expected ({len(plans)},) times, one per plan, got shape {plan_times.shape}")
    at = frame_times(times, frame_period)

    half_x, half_y = scene.table.half_extents
    figure, axes = plt.subplots(figsize=(5.0, 5.0 * half_y / half_x + 0.6), dpi=dpi)
    draw_table(axes, scene)
    axes.set_title(title or scene.name, fontsize=10)
    target = scene.target_index
    (trail,) = axes.plot([], [], "-", color=TARGET_COLOUR, linewidth=1.0, alpha=0.6)
    (planned_target,) = axes.plot([], [], "--", color=TARGET_COLOUR, linewidth=1.2, label="plan (target)")
    (planned_pusher,) = axes.plot([], [], ":", color=PUSHER_COLOUR, linewidth=1.2, label="plan (pusher)")
    clock = axes.text(0.98, 0.02, "", transform=axes.transAxes, ha="right", va="bottom", fontsize=10,
                      family="monospace", bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
    axes.legend(loc="upper left", fontsize=7, framealpha=0.8)
    figure.tight_layout()
    poses = layout.poses(states)
    pusher_outline = Outline.disc(scene.pusher.radius)
    bodies = []
    frames = []
    try:
        for frame_time in at:
            index = int(np.searchsorted(times, frame_time, side="right")) - 1
            for patch in bodies:
                patch.remove()
            bodies = [
                draw_outline(axes, spec.outline, poses[index, body], facecolor=object_colour(scene, body), alpha=0.6,
                             edgecolor="black", linewidth=0.8)
                for body, spec in enumerate(scene.objects)
            ]
            bodies.append(draw_outline(axes, pusher_outline, (*states[index, layout.pusher_position], 0.0),
                                       facecolor=PUSHER_COLOUR))
            trail.set_data(poses[: index + 1, target, 0], poses[: index + 1, target, 1])
            plan_index = int(np.searchsorted(plan_times, frame_time, side="right")) - 1
            if plan_index >= 0:
                plan = plans[plan_index]
                plan_poses = layout.poses(plan)[:, target]
                planned_target.set_data(plan_poses[:, 0], plan_poses[:, 1])
                planned_pusher.set_data(plan[:, 0], plan[:, 1])
            clock.set_text(f"t = {frame_time - at[0]:6.1f} s")
            figure.canvas.draw()
            rgb = np.asarray(figure.canvas.buffer_rgba())[..., :3]
            image = Image.fromarray(rgb)
            if frames:  # one palette (the first frame's) for all: unchanged pixels keep their index
                frames.append(image.quantize(palette=frames[0], dither=Image.Dither.NONE))
            else:
                frames.append(image.quantize(PALETTE_COLOURS, dither=Image.Dither.NONE))
    finally:
        plt.close(figure)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=round(frame_period * 1000), loop=0,
                   optimize=False)
    return VideoSummary(path, len(frames), frame_period, len(frames) * frame_period, float(times[-1] - times[0]))
