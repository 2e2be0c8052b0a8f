"""Generate the planning benchmark's scenes (seeded): ISRR obstacle scenes and journal clutter scenes.

    python bench/make_benchmark_scenes.py [--seed 2019] [--obstacle-scenes 5] [--clutter-scenes 3] [--check]

Writes ``config/scenes/isrr_obstacle_<k>.yaml`` and ``config/scenes/clutter_<k>.yaml``
(k = 1, 2, ...). The files are committed: the benchmark (``bench/mpc_benchmark.py``)
reads them, never this script, so the scenes stay fixed even if this generator changes.
Re-running it with the same arguments rewrites the same bytes. ``--check`` compares
instead of writing and fails if a file differs.

Both kinds use the geometry of the papers (and of ``isrr_obstacle.yaml`` /
``clutter_fig1.yaml``): a 0.8 m x 1.0 m table (friction 1.0), a pusher of radius 1.45 cm,
cylindrical sliders of radius 5.12 cm and 0.5 kg. Each scene is drawn in a *task frame*:
a push axis d through a point c near the table centre, at an angle uniform in +-30 deg
of the table's +x or -x axis (chosen at random), with l the lateral axis.

ISRR obstacle scenes (ISRR 2019 Sec 4.3: "5 randomly generated scenes where the pusher
must avoid the obstacle at the center of the table before bringing the slider to the
goal location"; the straight-line push "collides with the obstacle in all our scenes"):

- obstacle: cylinder, radius 3.75 cm, at c, c uniform in +-3 cm around the table centre;
- slider: 13-18 cm before c along d, +-3 cm laterally, random yaw;
- goal: radius 5 cm, 17-22 cm beyond c along d, +-3 cm laterally;
- accepted only if the straight line slider -> goal passes the obstacle centre closer
  than r_obstacle + r_slider - 2 cm (the slider would hit it with at least 2 cm overlap);
- pusher: behind the slider (opposite the goal) with a 1-4 cm gap, rotated by +-20 deg
  around the slider.

Clutter scenes (journal Sec 6.3.2 and Fig 1: push the marked target into the goal among
three other sliders; none may leave the table or enter the goal region):

- target: 10-14 cm before c along d, +-4 cm laterally; goal: radius 6 cm, 18-22 cm
  beyond c, +-4 cm laterally; pusher behind the target as above;
- three clutter cylinders, uniform in [-4, 16] cm along d and +-15 cm laterally;
  every pair of sliders at least 5 mm apart (surface to surface), each at least 12 cm
  from the goal centre and 2 cm from the pusher;
- accepted only if at least one clutter slider blocks the straight push (its centre
  within 2 slider radii of the segment target -> goal).

Every object keeps a 10 cm margin to the table edges. Scene k of a kind draws from
``numpy.random.default_rng([seed, kind, k])``, so adding scenes does not change the others.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCENES = ROOT / "config" / "scenes"

TABLE = (0.8, 1.0)  # m, length (x) and width (y)
TABLE_FRICTION = 1.0
PUSHER_RADIUS = 0.0145
SLIDER_RADIUS = 0.0512
SLIDER_MASS = 0.5
OBSTACLE_RADIUS = 0.0375
EDGE_MARGIN = 0.10  # m, object centres stay this far inside the table edges
KIND_OBSTACLE, KIND_CLUTTER = 1, 2


def segment_distance(start: np.ndarray, end: np.ndarray, point: np.ndarray) -> float:
    """Distance from ``point`` to the segment start-end, m."""
    segment = end - start
    t = float(np.clip(np.dot(point - start, segment) / max(float(np.dot(segment, segment)), 1e-300), 0.0, 1.0))
    return float(np.linalg.norm(start + t * segment - point))


def on_table(point: np.ndarray, margin: float = EDGE_MARGIN) -> bool:
    return abs(point[0]) <= TABLE[0] / 2 - margin and abs(point[1]) <= TABLE[1] / 2 - margin


def task_frame(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(c, d, l): frame origin near the table centre, push axis, lateral axis."""
    centre = rng.uniform(-0.03, 0.03, size=2)
    angle = math.radians(rng.uniform(-30.0, 30.0)) + (math.pi if rng.random() < 0.5 else 0.0)
    axis = np.array([math.cos(angle), math.sin(angle)])
    return centre, axis, np.array([-axis[1], axis[0]])


def pusher_behind(rng: np.random.Generator, slider: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """Pusher position behind ``slider`` (opposite ``goal``), 1-4 cm gap, +-20 deg off the line."""
    back = slider - goal
    back_angle = math.atan2(back[1], back[0]) + math.radians(rng.uniform(-20.0, 20.0))
    distance = SLIDER_RADIUS + PUSHER_RADIUS + rng.uniform(0.01, 0.04)
    return slider + distance * np.array([math.cos(back_angle), math.sin(back_angle)])


def obstacle_scene(seed: int, index: int) -> dict:
    rng = np.random.default_rng([seed, KIND_OBSTACLE, index])
    for _attempt in range(10_000):
        centre, axis, lateral = task_frame(rng)
        slider = centre - rng.uniform(0.13, 0.18) * axis + rng.uniform(-0.03, 0.03) * lateral
        goal = centre + rng.uniform(0.17, 0.22) * axis + rng.uniform(-0.03, 0.03) * lateral
        if segment_distance(slider, goal, centre) >= OBSTACLE_RADIUS + SLIDER_RADIUS - 0.02:
            continue
        pusher = pusher_behind(rng, slider, goal)
        if not (on_table(slider) and on_table(goal) and on_table(pusher, EDGE_MARGIN / 2)):
            continue
        if np.linalg.norm(pusher - centre) < OBSTACLE_RADIUS + PUSHER_RADIUS + 0.02:
            continue
        return {
            "name": f"isrr_obstacle_{index}",
            "pusher": pusher,
            "objects": [("slider", slider, rng.uniform(-math.pi, math.pi))],
            "obstacle": centre,
            "goal": (goal, 0.05),
            "target": "slider",
            "line_clearance": segment_distance(slider, goal, centre) - OBSTACLE_RADIUS - SLIDER_RADIUS,
        }
    raise RuntimeError(f"no obstacle scene {index} found for seed {seed}")


def clutter_scene(seed: int, index: int) -> dict:
    rng = np.random.default_rng([seed, KIND_CLUTTER, index])
    goal_radius = 0.06
    for _attempt in range(100_000):
        centre, axis, lateral = task_frame(rng)
        target = centre - rng.uniform(0.10, 0.14) * axis + rng.uniform(-0.04, 0.04) * lateral
        goal = centre + rng.uniform(0.18, 0.22) * axis + rng.uniform(-0.04, 0.04) * lateral
        pusher = pusher_behind(rng, target, goal)
        if not (on_table(target) and on_table(goal) and on_table(pusher, EDGE_MARGIN / 2)):
            continue
        placed = [target]
        for _clutter in range(3):
            for _try in range(200):
                candidate = centre + rng.uniform(-0.04, 0.16) * axis + rng.uniform(-0.15, 0.15) * lateral
                if (
                    on_table(candidate)
                    and all(np.linalg.norm(candidate - other) >= 2 * SLIDER_RADIUS + 0.005 for other in placed)
                    and np.linalg.norm(candidate - goal) >= 0.12
                    and np.linalg.norm(candidate - pusher) >= SLIDER_RADIUS + PUSHER_RADIUS + 0.02
                ):
                    placed.append(candidate)
                    break
            else:
                break
        if len(placed) < 4:
            continue
        blocking = [segment_distance(target, goal, other) < 2 * SLIDER_RADIUS for other in placed[1:]]
        if not any(blocking):
            continue
        names = ("target", "clutter_a", "clutter_b", "clutter_c")
        return {
            "name": f"clutter_{index}",
            "pusher": pusher,
            "objects": [(name, position, 0.0) for name, position in zip(names, placed, strict=True)],
            "obstacle": None,
            "goal": (goal, goal_radius),
            "target": "target",
            "blocking": int(sum(blocking)),
        }
    raise RuntimeError(f"no clutter scene {index} found for seed {seed}")


def _number(value: float) -> str:
    text = f"{value:.4f}".rstrip("0")
    text = text + "0" if text.endswith(".") else text
    return "0.0" if text == "-0.0" else text


def _pair(values: np.ndarray) -> str:
    return "[" + ", ".join(_number(float(v)) for v in values) + "]"


def scene_yaml(scene: dict, seed: int, arguments: str) -> str:
    """The YAML text of a generated scene (fixed formatting, so re-generation is byte-identical)."""
    clutter = scene["obstacle"] is None
    lines = [f"# Generated by bench/make_benchmark_scenes.py {arguments} -- do not edit by hand."]
    if clutter:
        lines += [
            "# Journal Sec 6.3.2 / Fig 1 task: push the target into the goal among three other objects;",
            "# none may leave the table or enter the goal region. "
            f"{scene['blocking']} clutter object(s) block the straight push.",
        ]
    else:
        lines += [
            "# ISRR 2019 Sec 4.3 task: push the slider around the central obstacle into the goal region;",
            "# the straight push from the slider to the goal would hit the obstacle "
            f"(overlap {-100 * scene['line_clearance']:.1f} cm).",
        ]
    goal, goal_radius = scene["goal"]
    lines += [
        f"name: {scene['name']}",
        f"table: {{length: {_number(TABLE[0])}, width: {_number(TABLE[1])}, friction: {_number(TABLE_FRICTION)}}}",
        f"pusher: {{radius: {_number(PUSHER_RADIUS)}, position: {_pair(scene['pusher'])}}}",
        "objects:",
    ]
    for name, position, yaw in scene["objects"]:
        lines.append(
            f"  - {{name: {name}, shape: cylinder, radius: {_number(SLIDER_RADIUS)}, mass: {_number(SLIDER_MASS)}, "
            f"friction: 1.0, pose: [{_number(position[0])}, {_number(position[1])}, {_number(yaw)}]}}"
        )
    if not clutter:
        lines += [
            "obstacles:",
            f"  - {{name: obstacle, shape: cylinder, radius: {_number(OBSTACLE_RADIUS)}, "
            f"pose: [{_number(scene['obstacle'][0])}, {_number(scene['obstacle'][1])}, 0.0]}}",
        ]
    lines += [f"goal: {{center: {_pair(goal)}, radius: {_number(goal_radius)}}}", f"target: {scene['target']}", ""]
    return "\n".join(lines)


def validate(path: Path) -> None:
    """Load the file and check the initial state: no overlaps, task not already over."""
    from parapush.physics.planar_geometry import disc_obstacle_clearance
    from parapush.planning import TerminationCheck
    from parapush.scene import load_scene

    scene = load_scene(path)
    layout = scene.layout
    poses = np.array([spec.pose for spec in scene.objects])
    state = layout.compose(np.array(scene.pusher.position), poses)
    status = TerminationCheck(scene=scene).check(state)
    if status.finished:
        raise RuntimeError(f"{path}: the task is over in the initial state ({status.outcome.name})")
    pusher = np.array(scene.pusher.position)
    for i, spec in enumerate(scene.objects):
        if np.linalg.norm(poses[i, :2] - pusher) < spec.radius + scene.pusher.radius:
            raise RuntimeError(f"{path}: the pusher overlaps {spec.name}")
        for j in range(i):
            if np.linalg.norm(poses[i, :2] - poses[j, :2]) < spec.radius + scene.objects[j].radius:
                raise RuntimeError(f"{path}: {spec.name} overlaps {scene.objects[j].name}")
    for obstacle in scene.obstacles:
        if disc_obstacle_clearance(pusher, scene.pusher.radius, obstacle) <= 0.0:
            raise RuntimeError(f"{path}: the pusher overlaps {obstacle.name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2019, help="generator seed (default 2019)")
    parser.add_argument("--obstacle-scenes", type=int, default=5, help="ISRR obstacle scenes (default 5)")
    parser.add_argument("--clutter-scenes", type=int, default=3, help="clutter scenes (default 3)")
    parser.add_argument("--output", type=Path, default=SCENES, help="directory (default config/scenes)")
    parser.add_argument("--check", action="store_true", help="compare with the files instead of writing")
    args = parser.parse_args(argv)
    arguments = f"--seed {args.seed}"
    scenes = [obstacle_scene(args.seed, k) for k in range(1, args.obstacle_scenes + 1)]
    scenes += [clutter_scene(args.seed, k) for k in range(1, args.clutter_scenes + 1)]
    differing = []
    for scene in scenes:
        path = args.output / f"{scene['name']}.yaml"
        text = scene_yaml(scene, args.seed, arguments)
        if args.check:
            if not path.is_file() or path.read_text() != text:
                differing.append(path)
            continue
        path.write_text(text)
        validate(path)
        print(f"wrote {path}")
    if differing:
        print("differ from the generator: " + ", ".join(str(path) for path in differing), file=sys.stderr)
        return 1
    if args.check:
        print(f"{len(scenes)} scene files match the generator")
    return 0


if __name__ == "__main__":
    sys.exit(main())
