"""The run video: one frame per frame period of the run, played in real time, showing the bodies where they were."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from parapush.reporting.run_plot import draw_outline, plot_run
from parapush.reporting.run_video import frame_times, render_run_video
from parapush.scene import GoalRegion, ObjectSpec, Scene

SCENE = Scene(name="video", objects=(ObjectSpec("puck", pose=(0.0, 0.0, 0.0)),),
              goal=GoalRegion(center=(0.2, 0.0), radius=0.04))


def straight_run(duration: float, rate: float = 30.0):
    """The puck and the pusher move along +x at 0.1 m/s for ``duration`` s, states at ``rate`` Hz."""
    times = 1000.0 + np.arange(0.0, duration + 1e-9, 1.0 / rate)
    layout = SCENE.layout
    states = layout.compose(np.stack([-0.1 + 0.1 * (times - times[0]), 0 * times], axis=1),
                            np.stack([0.1 * (times - times[0]), 0 * times, 0 * times], axis=1)[:, None, :])
    return times, states


def read_gif(path):
    with Image.open(path) as image:
        durations, frames = [], []
        for index in range(image.n_frames):
            image.seek(index)
            durations.append(image.info["duration"])
            frames.append(np.asarray(image.convert("RGB")))
    return durations, frames


def test_frame_count_and_duration_match_the_run(tmp_path):
    times, states = straight_run(3.0)
    plan = states[::15][:4]
    summary = render_run_video(SCENE, times, states, tmp_path / "run.gif", plan_times=[times[10]], plans=[plan],
                               frame_period=0.25)
    durations, frames = read_gif(summary.path)
    assert summary.frames == len(frames) == 13  # 3 s / 0.25 s + the first frame
    assert durations == [250] * 13
    assert summary.run_duration == pytest.approx(3.0)
    assert summary.duration == pytest.approx(sum(durations) / 1000) == pytest.approx(3.25)  # the last frame shows 3 s
    assert summary.path.stat().st_size < 2_000_000
    assert frames[0].shape == frames[-1].shape
    assert not np.array_equal(frames[0], frames[-1])  # the bodies moved


def test_frames_show_the_target_where_it_was(tmp_path):
    """The target (red) is drawn further along +x in the last frame than in the first."""
    times, states = straight_run(2.0)
    summary = render_run_video(SCENE, times, states, tmp_path / "run.gif", frame_period=1.0)
    _, frames = read_gif(summary.path)

    def red_centre(frame):
        red = (frame[..., 0] > 180) & (frame[..., 1] < 150) & (frame[..., 2] < 150)
        assert red.any()
        return np.argwhere(red)[:, 1].mean()

    centres = [red_centre(frame) for frame in frames]
    assert len(centres) == 3 and centres[0] < centres[1] < centres[2]


def test_frame_times_and_bad_arguments():
    assert frame_times(np.array([5.0, 5.3, 5.95]), 0.3) == pytest.approx([5.0, 5.3, 5.6, 5.9])
    assert frame_times(np.array([5.0]), 0.1) == pytest.approx([5.0])
    with pytest.raises(ValueError, match="frame_period"):
        frame_times(np.array([0.0, 1.0]), 0.125)
    with pytest.raises(ValueError, match="non-decreasing"):
        frame_times(np.array([1.0, 0.0]), 0.1)
    times, states = straight_run(1.0)
    with pytest.raises(ValueError, match="plan_times"):
        render_run_video(SCENE, times, states, "unused.gif", plans=[states[:3]])
    with pytest.raises(ValueError, match="states"):
        render_run_video(SCENE, times[:-1], states, "unused.gif")


def test_draw_outline_draws_each_shape_where_the_body_is(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, Polygon

    hexagon = [(0.03 * np.cos(k * np.pi / 3), 0.03 * np.sin(k * np.pi / 3)) for k in range(6)]
    scene = Scene(name="outlines", objects=(
        ObjectSpec("puck", pose=(-0.2, 0.0, 0.0)),
        ObjectSpec("crate", shape="box", half_extents=(0.04, 0.02), pose=(-0.1, 0.1, 0.3)),
        ObjectSpec("oval", shape="ellipse", half_extents=(0.05, 0.02), pose=(0.0, -0.1, 0.7)),
        ObjectSpec("nut", shape="polygon", vertices=hexagon, pose=(0.1, 0.05, -1.0)),
    ), target="nut")
    figure, axes = plt.subplots()
    try:
        for spec in scene.objects:
            patch = draw_outline(axes, spec.outline, spec.pose, facecolor="red")
            x, y, yaw = spec.pose
            if spec.shape == "cylinder":
                assert isinstance(patch, Circle)
                assert patch.center == pytest.approx((x, y)) and patch.radius == pytest.approx(spec.radius)
                continue
            assert isinstance(patch, Polygon)
            corners = patch.get_xy()[:-1]  # closed: the first point repeated
            local = (corners - (x, y)) @ np.array([[np.cos(yaw), -np.sin(yaw)], [np.sin(yaw), np.cos(yaw)]])
            np.testing.assert_allclose(local, spec.outline.boundary(), atol=1e-12)
            assert len(corners) == {"box": 4, "ellipse": 64, "polygon": 6}[spec.shape]
            assert np.all(spec.outline.signed_distance(local) == pytest.approx(0.0, abs=1e-12))
    finally:
        plt.close(figure)
    start = scene.layout.compose(np.array([-0.3, 0.0]), np.array([spec.pose for spec in scene.objects]))
    states = np.tile(start, (3, 1))
    assert plot_run(scene, states, tmp_path / "run.png").stat().st_size > 0
