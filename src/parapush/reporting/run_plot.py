"""A top view of a pushing run: table, goal, obstacles, object and pusher paths (PNG).

ROS-free: it takes a scene and the observed states, so the demo, the benchmarks and users'
scripts draw runs the same way.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from parapush.scene import Scene

TARGET_COLOUR = "#d62728"
PUSHER_COLOUR = "#1f3b73"


def draw_outline(axes, outline, pose, **style):
    """Add ``outline`` (:class:`parapush.scene.outline.Outline`, e.g. a scene body's ``outline``) at
    pose (x m, y m, yaw rad) to ``axes``: a disc as a Circle, any other outline as the Polygon of
    its ``boundary()`` (a box's 4 corners, an ellipse's 64 points on the curve, a polygon's
    vertices). Returns the patch."""
    from matplotlib.patches import Circle, Polygon

    x, y, yaw = (float(value) for value in pose)
    if outline.kind == "disc":
        return axes.add_patch(Circle((x, y), outline.radius, **style))
    rotation = np.array([[np.cos(yaw), -np.sin(yaw)], [np.sin(yaw), np.cos(yaw)]])
    return axes.add_patch(Polygon(outline.boundary() @ rotation.T + [x, y], closed=True, **style))


def object_colour(scene: Scene, index: int):
    """The colour of object ``index``: red for the target, tab10 colours (not red or orange) for the others."""
    import matplotlib.pyplot as plt

    if scene.objects[index].name == scene.target:
        return TARGET_COLOUR
    colours = plt.get_cmap("tab10")
    others = [colours(k) for k in (0, 2, 4, 5, 6, 8, 9)]
    return others[index % len(others)]


def draw_table(axes, scene: Scene) -> None:
    """The static part of a top view: table, goal region, obstacles, axis limits and labels."""
    from matplotlib.patches import Circle, Rectangle

    half_x, half_y = scene.table.half_extents
    axes.add_patch(Rectangle((-half_x, -half_y), 2 * half_x, 2 * half_y, facecolor="#f3efe6",
                             edgecolor="#6b5b45", linewidth=2, label="table"))
    if scene.goal is not None:
        axes.add_patch(Circle(scene.goal.center, scene.goal.radius, facecolor="#b9e4b0", edgecolor="#2f7d32",
                              linewidth=1.5, label="goal region"))
    for obstacle in scene.obstacles:
        draw_outline(axes, obstacle.outline, obstacle.pose, facecolor="#555555", edgecolor="black")
    margin = 0.05
    axes.set_xlim(-half_x - margin, half_x + margin)
    axes.set_ylim(-half_y - margin, half_y + margin)
    axes.set_aspect("equal")
    axes.set_xlabel("x (m, table frame)")
    axes.set_ylabel("y (m)")
    axes.grid(alpha=0.3)


def plot_run(
    scene: Scene,
    states: np.ndarray,
    path: str | Path,
    *,
    title: str = "",
    planned: np.ndarray | None = None,
) -> Path:
    """Draw a run and save it as a PNG.

    Args:
        scene: the scene (table, goal, obstacles, object shapes, target).
        states: (T, D) observed states in time order (the scene's layout); rows with
            non-finite entries (untracked bodies) are skipped per body.
        path: PNG file to write.
        title: figure title (e.g. the outcome).
        planned: optional (N+1, D) last predicted trajectory, drawn dashed.
    Returns:
        the path written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle

    layout = scene.layout
    states = layout.check(np.atleast_2d(states), "states")
    if len(states) == 0:
        raise ValueError("states: need at least one state to draw")
    half_x, half_y = scene.table.half_extents
    figure, axes = plt.subplots(figsize=(7, 7 * half_y / half_x if half_x else 7))
    draw_table(axes, scene)
    poses = layout.poses(states)
    for index, spec in enumerate(scene.objects):
        colour = object_colour(scene, index)
        track = poses[:, index]
        finite = np.all(np.isfinite(track), axis=1)
        if not finite.any():
            continue
        track = track[finite]
        axes.plot(track[:, 0], track[:, 1], "-", color=colour, linewidth=1.5,
                  label=f"{spec.name}{' (target)' if spec.name == scene.target else ''}")
        draw_outline(axes, spec.outline, track[0], facecolor="none", edgecolor=colour, linestyle=":", linewidth=1.2)
        draw_outline(axes, spec.outline, track[-1], facecolor=colour, alpha=0.35, edgecolor=colour)
    pusher = states[:, layout.pusher_position]
    pusher = pusher[np.all(np.isfinite(pusher), axis=1)]
    if len(pusher):
        axes.plot(pusher[:, 0], pusher[:, 1], "-", color=PUSHER_COLOUR, linewidth=1.0, label="pusher")
        axes.add_patch(Circle(pusher[-1], scene.pusher.radius, facecolor=PUSHER_COLOUR))
    if planned is not None:
        planned = layout.check(np.atleast_2d(planned), "planned")
        target = layout.poses(planned)[:, scene.target_index]
        axes.plot(target[:, 0], target[:, 1], "--", color=TARGET_COLOUR, linewidth=1.0, label="last plan (target)")
    axes.set_title(title or scene.name)
    axes.legend(loc="upper left", fontsize=8, framealpha=0.8)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
