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

Variants of the two generators (kinds of their own, so they draw other numbers; the
benches that use them write the files, e.g. ``bench/realtime_mpc.py --families``):

- ``box_obstacle`` (:func:`obstacle_scene` ``box_target=True``): the target is the scene
  format's default box (:class:`parapush.scene.ObjectSpec`, 10.9 x 15.4 cm) at a random yaw;
  its centre at least its bounding radius + the obstacle's + 1 cm from the obstacle, the
  straight push judged with the box's half width across the push line, the pusher behind
  the box's side (its support distance + 1-4 cm);
- ``box_clutter`` (:func:`clutter_scene` ``box_target=True``): the clutter task with that box
  as the target among three cylinders;
- ``heavy`` (:func:`clutter_scene` ``heavy=True``): the clutter task with the target a
  cylinder or the default box (even odds), ``clutter_a`` the box, every mass uniform in
  1-2 kg and every support friction uniform in 0.2-0.6 (the table's friction is 0.2, the
  support being ``max(table, object)``).

Clutter objects larger than the cylinders keep their bounding discs apart (5 mm) and as far
beyond 12 cm from the goal centre as their bounding radius exceeds the cylinder's.
:func:`validate` checks a written scene with the scene loader and the objects' outlines.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from parapush.scene import ObjectSpec
from parapush.scene.outline import Outline

ROOT = Path(__file__).resolve().parents[1]
SCENES = ROOT / "config" / "scenes"

TABLE = (0.8, 1.0)  # m, length (x) and width (y)
TABLE_FRICTION = 1.0
PUSHER_RADIUS = 0.0145
SLIDER_RADIUS = 0.0512
SLIDER_MASS = 0.5
OBSTACLE_RADIUS = 0.0375
EDGE_MARGIN = 0.10  # m, object centres stay this far inside the table edges
DEFAULT_BOX = next(f.default for f in dataclasses.fields(ObjectSpec) if f.name == "half_extents")
"""(x, y) m: the half sizes of the scene format's default box (``ObjectSpec.half_extents``)."""
HEAVY_MASS = (1.0, 2.0)  # kg, uniform
HEAVY_SUPPORT_FRICTION = (0.2, 0.6)  # uniform
HEAVY_TABLE_FRICTION = 0.2  # the lower end: an object's support friction is max(table, object)
KIND_OBSTACLE, KIND_CLUTTER, KIND_BOX_CLUTTER, KIND_BOX_OBSTACLE, KIND_HEAVY = 1, 2, 3, 4, 5


@dataclass(frozen=True)
class DrawnObject:
    """A generated movable object.

    Attributes:
        name: the object's name in the scene.
        position: (2,) m, centre in the table frame.
        yaw: rad.
        shape: ``"cylinder"`` or ``"box"``.
        radius: m (cylinders).
        half_extents: (x, y) m, half sizes in the body frame (boxes).
        mass: kg.
        friction: object/table coefficient (the support's is ``max(table, friction)``).
    """

    name: str
    position: np.ndarray
    yaw: float = 0.0
    shape: str = "cylinder"
    radius: float = SLIDER_RADIUS
    half_extents: tuple[float, float] = DEFAULT_BOX
    mass: float = SLIDER_MASS
    friction: float = 1.0

    def __post_init__(self) -> None:
        position = np.asarray(self.position, dtype=float)
        if position.shape != (2,) or not np.all(np.isfinite(position)):
            raise ValueError(f"position: expected 2 finite numbers, got {self.position!r}")
        object.__setattr__(self, "position", position)
        if self.shape not in ("cylinder", "box"):
            raise ValueError(f"shape: expected 'cylinder' or 'box', got {self.shape!r}")
        if not (self.mass > 0.0 and self.friction >= 0.0 and math.isfinite(self.yaw)):
            raise ValueError(f"mass/friction/yaw: expected mass > 0, friction >= 0, a finite yaw; got {self!r}")

    @property
    def outline(self) -> Outline:
        """The body-frame outline (raises ValueError naming a non-positive size)."""
        return Outline.disc(self.radius) if self.shape == "cylinder" else Outline.rectangle(*self.half_extents)

    @property
    def bound(self) -> float:
        """Bounding radius about the centre, m."""
        return self.outline.bounding_radius

    def extent_along(self, direction: np.ndarray) -> float:
        """How far the object reaches from its centre along the table-frame unit ``direction`` (2,), m."""
        cos, sin = math.cos(self.yaw), math.sin(self.yaw)
        body = np.array([cos * direction[0] + sin * direction[1], -sin * direction[0] + cos * direction[1]])
        return float(self.outline.extent_along(body))

    def yaml_line(self) -> str:
        size = (f"radius: {_number(self.radius)}" if self.shape == "cylinder"
                else f"half_extents: {_pair(np.asarray(self.half_extents))}")
        return (f"  - {{name: {self.name}, shape: {self.shape}, {size}, mass: {_number(self.mass)}, "
                f"friction: {_number(self.friction)}, pose: [{_number(self.position[0])}, "
                f"{_number(self.position[1])}, {_number(self.yaw)}]}}")


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


def pusher_behind(rng: np.random.Generator, slider: DrawnObject, goal: np.ndarray) -> np.ndarray:
    """Pusher position behind ``slider`` (opposite ``goal``), 1-4 cm gap (from the slider's
    extent in that direction), +-20 deg off the line."""
    back = slider.position - goal
    back_angle = math.atan2(back[1], back[0]) + math.radians(rng.uniform(-20.0, 20.0))
    direction = np.array([math.cos(back_angle), math.sin(back_angle)])
    distance = slider.extent_along(direction) + PUSHER_RADIUS + rng.uniform(0.01, 0.04)
    return slider.position + distance * direction


def across(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Unit vector perpendicular to the line start -> end (2,)."""
    along = (end - start) / max(float(np.linalg.norm(end - start)), 1e-300)
    return np.array([-along[1], along[0]])


def default_box(rng: np.random.Generator, name: str, position: np.ndarray, **physics: float) -> DrawnObject:
    """The scene format's default box at ``position``, at a uniform random yaw."""
    return DrawnObject(name, position, rng.uniform(-math.pi, math.pi), shape="box", **physics)


def obstacle_scene(seed: int, index: int, *, box_target: bool = False) -> dict:
    """ISRR obstacle scene ``index`` (``box_target``: the ``box_obstacle`` variant) as plain data."""
    rng = np.random.default_rng([seed, KIND_BOX_OBSTACLE if box_target else KIND_OBSTACLE, index])
    for _attempt in range(10_000):
        centre, axis, lateral = task_frame(rng)
        position = centre - rng.uniform(0.13, 0.18) * axis + rng.uniform(-0.03, 0.03) * lateral
        goal = centre + rng.uniform(0.17, 0.22) * axis + rng.uniform(-0.03, 0.03) * lateral
        slider = default_box(rng, "slider", position) if box_target else DrawnObject("slider", position)
        half_width = slider.extent_along(across(position, goal))
        if segment_distance(position, goal, centre) >= OBSTACLE_RADIUS + half_width - 0.02:
            continue
        if box_target and np.linalg.norm(position - centre) < slider.bound + OBSTACLE_RADIUS + 0.01:
            continue
        pusher = pusher_behind(rng, slider, goal)
        if not (on_table(position) and on_table(goal) and on_table(pusher, EDGE_MARGIN / 2)):
            continue
        if np.linalg.norm(pusher - centre) < OBSTACLE_RADIUS + PUSHER_RADIUS + 0.02:
            continue
        if not box_target:
            slider = dataclasses.replace(slider, yaw=rng.uniform(-math.pi, math.pi))
        overlap = OBSTACLE_RADIUS + half_width - segment_distance(position, goal, centre)
        target = "the scene format's default box" if box_target else "the slider"
        return {
            "name": f"isrr_obstacle_{index}",
            "description": [
                f"# ISRR 2019 Sec 4.3 task: push {target} around the central obstacle into the goal region;",
                f"# the straight push from the {'box' if box_target else 'slider'} to the goal would hit the "
                f"obstacle (overlap {100 * overlap:.1f} cm).",
            ],
            "pusher": pusher,
            "objects": [slider],
            "obstacle": centre,
            "goal": (goal, 0.05),
            "target": "slider",
        }
    raise RuntimeError(f"no obstacle scene {index} found for seed {seed}")


def clutter_scene(seed: int, index: int, *, box_target: bool = False, heavy: bool = False) -> dict:
    """Clutter scene ``index`` as plain data; ``box_target``: the ``box_clutter`` variant,
    ``heavy``: the ``heavy`` one (one at most)."""
    if box_target and heavy:
        raise ValueError("box_target, heavy: choose one variant")
    kind = KIND_BOX_CLUTTER if box_target else KIND_HEAVY if heavy else KIND_CLUTTER
    rng = np.random.default_rng([seed, kind, index])
    goal_radius = 0.06

    def drawn(name: str, position: np.ndarray, box: bool) -> DrawnObject:
        physics = {"mass": rng.uniform(*HEAVY_MASS), "friction": rng.uniform(*HEAVY_SUPPORT_FRICTION)} if heavy else {}
        return default_box(rng, name, position, **physics) if box else DrawnObject(name, position, **physics)

    for _attempt in range(100_000):
        centre, axis, lateral = task_frame(rng)
        position = centre - rng.uniform(0.10, 0.14) * axis + rng.uniform(-0.04, 0.04) * lateral
        goal = centre + rng.uniform(0.18, 0.22) * axis + rng.uniform(-0.04, 0.04) * lateral
        target = drawn("target", position, box_target or (heavy and rng.random() < 0.5))
        pusher = pusher_behind(rng, target, goal)
        if not (on_table(position) and on_table(goal) and on_table(pusher, EDGE_MARGIN / 2)):
            continue
        placed = [target]
        for name in ("clutter_a", "clutter_b", "clutter_c"):
            for _try in range(200):
                candidate = centre + rng.uniform(-0.04, 0.16) * axis + rng.uniform(-0.15, 0.15) * lateral
                other = drawn(name, candidate, heavy and name == "clutter_a")
                if (
                    on_table(candidate)
                    and all(np.linalg.norm(candidate - item.position) >= other.bound + item.bound + 0.005
                            for item in placed)
                    and np.linalg.norm(candidate - goal) >= 0.12 + (other.bound - SLIDER_RADIUS)
                    and np.linalg.norm(candidate - pusher) >= other.bound + PUSHER_RADIUS + 0.02
                ):
                    placed.append(other)
                    break
            else:
                break
        if len(placed) < 4:
            continue
        half_width = target.extent_along(across(position, goal))
        blocking = [segment_distance(position, goal, other.position) < half_width + other.bound for other in placed[1:]]
        if not any(blocking):
            continue
        if box_target:
            task = "push the target, the scene format's default box, into the goal among three cylinders;"
        elif heavy:
            task = "push the target into the goal among three other objects, all 1-2 kg on support friction 0.2-0.6;"
        else:
            task = "push the target into the goal among three other objects;"
        return {
            "name": f"clutter_{index}",
            "description": [
                f"# Journal Sec 6.3.2 / Fig 1 task: {task}",
                f"# none may leave the table or enter the goal region. {sum(blocking)} clutter object(s) block the "
                "straight push.",
            ],
            "pusher": pusher,
            "objects": placed,
            "obstacle": None,
            "goal": (goal, goal_radius),
            "target": "target",
            "table_friction": HEAVY_TABLE_FRICTION if heavy else TABLE_FRICTION,
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
    lines = [f"# Generated by bench/make_benchmark_scenes.py {arguments} -- do not edit by hand.",
             *scene["description"]]
    goal, goal_radius = scene["goal"]
    table_friction = scene.get("table_friction", TABLE_FRICTION)
    lines += [
        f"name: {scene['name']}",
        f"table: {{length: {_number(TABLE[0])}, width: {_number(TABLE[1])}, friction: {_number(table_friction)}}}",
        f"pusher: {{radius: {_number(PUSHER_RADIUS)}, position: {_pair(scene['pusher'])}}}",
        "objects:",
        *(drawn.yaml_line() for drawn in scene["objects"]),
    ]
    if scene["obstacle"] is not None:
        lines += [
            "obstacles:",
            f"  - {{name: obstacle, shape: cylinder, radius: {_number(OBSTACLE_RADIUS)}, "
            f"pose: [{_number(scene['obstacle'][0])}, {_number(scene['obstacle'][1])}, 0.0]}}",
        ]
    lines += [f"goal: {{center: {_pair(goal)}, radius: {_number(goal_radius)}}}", f"target: {scene['target']}", ""]
    return "\n".join(lines)


def _world_boundary(outline: Outline, pose: np.ndarray, spacing: float = 0.001) -> np.ndarray:
    """(N, 2) points along ``outline``'s boundary at ``pose`` (x, y, yaw), at most ``spacing`` m apart."""
    corners = outline.boundary(256)
    following = np.roll(corners, -1, axis=0)
    points = [corner + np.linspace(0.0, 1.0, max(1, math.ceil(np.linalg.norm(end - corner) / spacing)),
                                   endpoint=False)[:, None] * (end - corner)
              for corner, end in zip(corners, following, strict=True)]
    cos, sin = math.cos(pose[2]), math.sin(pose[2])
    local = np.concatenate(points)
    return local @ np.array([[cos, sin], [-sin, cos]]) + pose[:2]


def _inside(outline: Outline, pose: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Which table-frame ``points`` (N, 2) lie inside ``outline`` at ``pose``."""
    cos, sin = math.cos(pose[2]), math.sin(pose[2])
    local = (points - pose[:2]) @ np.array([[cos, -sin], [sin, cos]])
    return outline.contains(local)


def outlines_overlap(first: Outline, first_pose: np.ndarray, second: Outline, second_pose: np.ndarray) -> bool:
    """Whether two outlines at their poses (x, y, yaw) overlap: a boundary point (1 mm apart) of
    either inside the other."""
    first_pose, second_pose = np.asarray(first_pose, dtype=float), np.asarray(second_pose, dtype=float)
    return bool(np.any(_inside(second, second_pose, _world_boundary(first, first_pose)))
                or np.any(_inside(first, first_pose, _world_boundary(second, second_pose))))


def validate(path: Path) -> None:
    """Load the file and check the initial state: the task not already over (target and pusher
    clear of obstacles, every object's centre on the table, no other object in the goal), no
    two bodies (objects, pusher, obstacles) overlapping, the goal centre inside no other object
    and every object's outline on the table top."""
    from parapush.planning import TerminationCheck
    from parapush.scene import load_scene

    scene = load_scene(path)
    layout = scene.layout
    poses = np.array([spec.pose for spec in scene.objects])
    state = layout.compose(np.array(scene.pusher.position), poses)
    status = TerminationCheck(scene=scene).check(state)
    if status.finished:
        raise RuntimeError(f"{path}: the task is over in the initial state ({status.outcome.name})")
    pusher_pose = np.array([*scene.pusher.position, 0.0])
    bodies = [(spec.name, spec.outline, np.asarray(spec.pose, dtype=float)) for spec in scene.objects]
    bodies += [("the pusher", Outline.disc(scene.pusher.radius), pusher_pose)]
    bodies += [(item.name, item.outline, np.asarray(item.pose, dtype=float)) for item in scene.obstacles]
    for i, (name, outline, pose) in enumerate(bodies):
        for other_name, other_outline, other_pose in bodies[:i]:
            if outlines_overlap(outline, pose, other_outline, other_pose):
                raise RuntimeError(f"{path}: {name} overlaps {other_name}")
    half = np.array(scene.table.half_extents)
    for name, outline, pose in bodies[: len(scene.objects)]:
        if np.any(np.abs(_world_boundary(outline, pose)) > half):
            raise RuntimeError(f"{path}: {name} reaches over the table's edge")
        if name != scene.target and _inside(outline, pose, np.array([scene.goal.center]))[0]:
            raise RuntimeError(f"{path}: the goal centre lies inside {name}")


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
