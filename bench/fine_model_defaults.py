"""Choose the fine model's defaults: friction cone, integrator and colliders, cost vs accuracy.

1. Friction isotropy: a disc and a box launched at 0.5 m/s along 0, 22.5 and 45 deg; the
   stopping distance must not depend on the direction (Coulomb: v^2 / (2 mu g) = 12.74 mm).
2. For each configuration and scene: the cost of one 1 s control (serial reference, one
   thread, CPU time, best of interleaved repetitions over the pushes' first second) and
   the end-position difference of a few 4 s pushes (ISRR protocol: push angles 0 and
   +-15 deg, pusher offset across the object) against the reference rk4 + cylinder
   colliders with the same (elliptic) cone. The pyramidal rows show how much the cone
   alone changes the prediction, the tilt rows how much roll and pitch do (``object_tilt``:
   the weight shared as on a rigid body, not as the solver chooses). Contact makes pushing
   chaotic (1e-9 m in gives ~1e-5 m out after 1 s), so differences below ~0.1 mm are noise,
   not accuracy.

    python bench/fine_model_defaults.py [--quick]

Writes bench/results/fine_model_defaults.{json,png}.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

import parareal_common as common
import reference as bench_reference
from parapush.physics.fine import FineModel
from parapush.physics.fine_settings import FineSettings
from parapush.scene import Scene, load_scene, scene_from_dict

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = FineSettings(integrator="rk4", pusher_collider="cylinder", object_collider="cylinder", cone="elliptic")
PUSH_SPEED = 0.05  # m/s
PUSH_DURATION = 4.0  # s


def configurations() -> list[tuple[str, FineSettings]]:
    configs = []
    for integrator in ("euler", "implicitfast", "rk4"):
        for collider in ("capsule", "cylinder"):
            settings = FineSettings(integrator=integrator, pusher_collider=collider, object_collider=collider,
                                    cone="elliptic")
            configs.append((f"{integrator}+{collider}", settings))
    for integrator in ("euler", "rk4"):
        settings = FineSettings(integrator=integrator, cone="pyramidal")
        configs.append((f"{integrator}+capsule+pyramidal", settings))
    # roll and pitch (FineSettings.object_tilt), with the default and the exact pusher collider: what
    # the physically shared weight costs and how far it moves predictions (as the pyramidal rows do)
    for collider in ("cylinder", "capsule"):
        configs.append((f"euler+{collider}+tilt",
                        FineSettings(pusher_collider=collider, support="collider", object_tilt=True)))
    return configs


def friction_isotropy() -> list[dict]:
    """Stopping distance (mm) of a disc and a box launched at 0.5 m/s in three directions."""
    rows = []
    for shape in ("cylinder", "box"):
        scene = scene_from_dict({"name": shape, "pusher": {"position": [-1.0, -1.0]},
                                 "objects": [{"name": "slider", "shape": shape}]})
        for cone in ("pyramidal", "elliptic"):
            model = FineModel(scene, FineSettings(cone=cone))
            distances = {}
            for degrees in (0.0, 22.5, 45.0):
                velocity = 0.5 * np.array([math.cos(math.radians(degrees)), math.sin(math.radians(degrees)), 0.0])
                state = model.layout.compose(np.array([[-1.0, -1.0]]), np.zeros((1, 1, 3)), None, velocity[None, None])
                end = model.propagate(state, np.zeros((1, 2)), [0.5])[0]
                distances[f"{degrees:g} deg"] = 1e3 * float(np.hypot(*end[2:4]))
            rows.append({"shape": shape, "cone": cone, "stopping_distance_mm": distances,
                         "coulomb_mm": 1e3 * 0.5**2 / (2 * 9.81)})
    return rows


def scenes() -> list[Scene]:
    single = scene_from_dict({
        "name": "one_cylinder", "pusher": {"position": [-0.25, 0.0]},
        "objects": [{"name": "slider", "radius": 0.0512, "pose": [-0.15, 0.0, 0.0]}],
    })
    box = scene_from_dict({
        "name": "one_box", "pusher": {"position": [-0.25, 0.0]},
        "objects": [{"name": "box", "shape": "box", "half_extents": [0.0545, 0.077], "pose": [-0.15, 0.0, 0.0]}],
    })
    return [single, box, load_scene(ROOT / "config" / "scenes" / "clutter_fig1.yaml")]


def pushes(scene: Scene, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """ISRR open-loop protocol around the first object: (count, D) states, (count, 2) controls."""
    rng = np.random.default_rng(seed)
    layout = scene.layout
    target = scene.objects[0]
    half_width = target.radius if target.shape == "cylinder" else target.half_extents[1]
    angles = np.radians(np.resize([0.0, 15.0, -15.0], count))
    offsets = rng.uniform(-half_width, half_width, count)
    reach = target.bounding_radius + scene.pusher.radius + 0.02
    poses = np.array([spec.pose for spec in scene.objects])
    states, controls = [], []
    for angle, offset in zip(angles, offsets, strict=True):
        direction = np.array([math.cos(angle), math.sin(angle)])
        normal = np.array([-direction[1], direction[0]])
        pusher = np.array(target.pose[:2]) - reach * direction + offset * normal
        states.append(layout.compose(pusher, poses)[None])
        controls.append(PUSH_SPEED * direction)
    return np.concatenate(states), np.array(controls)


def time_per_second(model: FineModel, states: np.ndarray, controls: np.ndarray) -> float:
    """CPU time of this process per 1 s control, s: the pushes' first seconds, serially.

    The serial reference runs on one thread, so process CPU time is its cost and is not
    inflated by other processes competing for the cores (wall time is, on a shared machine).
    """
    start = time.process_time()
    model.propagate(states, controls, np.ones(len(states)))
    return (time.process_time() - start) / len(states)


def main() -> None:
    parser = common.bench_arguments(__doc__.splitlines()[0], quick="fewer pushes and repetitions")
    bench_reference.add_reference_argument(parser)
    args = parser.parse_args()
    load_before = bench_reference.load_average()
    push_count, repeats = (3, 2) if args.quick else (9, 5)
    configs = configurations()
    rows = []
    for scene in scenes():
        states, controls = pushes(scene, push_count)
        layout = scene.layout
        durations = np.full(len(states), PUSH_DURATION)
        reference = FineModel(scene, REFERENCE).propagate(states, controls, durations)
        models = {name: FineModel(scene, settings) for name, settings in configs}
        costs = {name: math.inf for name in models}
        for _ in range(repeats):  # interleaved, so that load changes hit every configuration alike
            for name, model in models.items():
                costs[name] = min(costs[name], time_per_second(model, states, controls))
        for name, settings in configs:
            ends = models[name].propagate(states, controls, durations)
            difference = np.linalg.norm(layout.poses(ends)[..., :2] - layout.poses(reference)[..., :2], axis=-1)
            worst_per_push = np.max(difference, axis=1)
            rows.append({
                "scene": scene.name, "objects": layout.object_count, "config": name, "settings": asdict(settings),
                "cost_per_1s_control_ms": 1e3 * costs[name],
                "median_end_difference_mm": 1e3 * float(np.median(worst_per_push)),
                "max_end_difference_mm": 1e3 * float(np.max(worst_per_push)),
                "unstable_pushes": int(np.sum(~np.all(np.isfinite(ends), axis=1))),
            })
    isotropy = friction_isotropy()
    print_table(rows, isotropy)
    write_results(rows, isotropy, args.quick)
    bench_reference.write_figures(
        "fine_model_defaults", readme_figures(rows, isotropy), reference=args.reference, load_before=load_before,
        quick=args.quick,
    )


def readme_figures(rows: list[dict], isotropy: list[dict]) -> dict[str, float | list[float]]:
    """The figures the README's "Choices" quote: over the scenes, the median of a cost ratio, the worst of a
    difference; capsule colliders with the default (Euler) integrator."""
    by_config = {(row["scene"], row["config"]): row for row in rows}
    scenes = list(dict.fromkeys(row["scene"] for row in rows))

    def cost(scene: str, config: str) -> float:
        return by_config[scene, config]["cost_per_1s_control_ms"]

    pyramidal_disc = next(row for row in isotropy if (row["shape"], row["cone"]) == ("cylinder", "pyramidal"))
    return {
        "rk4_over_euler_cost_median": float(np.median([cost(s, "rk4+cylinder") / cost(s, "euler+cylinder")
                                                       for s in scenes])),
        "euler_median_end_difference_mm_max": max(by_config[s, "euler+cylinder"]["median_end_difference_mm"]
                                                  for s in scenes),
        "euler_capsule_cost_saving_percent_median": float(np.median(
            [100.0 * (1.0 - cost(s, "euler+capsule") / cost(s, "euler+cylinder")) for s in scenes])),
        "euler_capsule_max_end_difference_mm": max(by_config[s, "euler+capsule"]["max_end_difference_mm"]
                                                   for s in scenes),
        "pyramidal_disc_stopping_mm": list(pyramidal_disc["stopping_distance_mm"].values()),
        "tilt_cost_increase_percent_median": float(np.median(
            [100.0 * (cost(s, "euler+cylinder+tilt") / cost(s, "euler+cylinder") - 1.0) for s in scenes])),
        "tilt_box_median_end_difference_mm": by_config["one_box", "euler+cylinder+tilt"]["median_end_difference_mm"],
        "tilt_cylinder_median_end_difference_mm":
            by_config["one_cylinder", "euler+cylinder+tilt"]["median_end_difference_mm"],
    }


def print_table(rows: list[dict], isotropy: list[dict]) -> None:
    print("friction isotropy: stopping distance (mm) from 0.5 m/s, Coulomb 12.74 mm")
    for row in isotropy:
        cells = "  ".join(f"{key}: {value:6.2f}" for key, value in row["stopping_distance_mm"].items())
        print(f"  {row['shape']:<9}{row['cone']:<10}{cells}")
    header = f"{'scene':<14}{'config':<26}{'ms / 1 s ctrl':>14}{'cost vs ref':>12}{'median mm':>11}{'max mm':>9}"
    print(f"end-position difference vs {REFERENCE.integrator}+{REFERENCE.pusher_collider} ({REFERENCE.cone}) "
          f"after {PUSH_DURATION:.0f} s pushes at {PUSH_SPEED} m/s (max over objects per push)")
    print(header)
    print("-" * len(header))
    for scene in dict.fromkeys(row["scene"] for row in rows):
        group = [row for row in rows if row["scene"] == scene]
        reference_cost = next(row["cost_per_1s_control_ms"] for row in group if row["config"] == "rk4+cylinder")
        for row in group:
            ratio = row["cost_per_1s_control_ms"] / reference_cost
            unstable = f"  ({row['unstable_pushes']} unstable)" if row["unstable_pushes"] else ""
            print(f"{row['scene']:<14}{row['config']:<26}{row['cost_per_1s_control_ms']:>14.2f}{ratio:>12.2f}"
                  f"{row['median_end_difference_mm']:>11.3f}{row['max_end_difference_mm']:>9.3f}{unstable}")


def write_results(rows: list[dict], isotropy: list[dict], quick: bool) -> None:
    scene_names = list(dict.fromkeys(row["scene"] for row in rows))
    figure = Figure(figsize=(5 * len(scene_names), 4), layout="tight")
    axes = figure.subplots(1, len(scene_names), squeeze=False)
    for axis, scene in zip(axes[0], scene_names, strict=True):
        for row in (row for row in rows if row["scene"] == scene):
            error = max(row["median_end_difference_mm"], 1e-4)
            axis.scatter(row["cost_per_1s_control_ms"], error)
            axis.annotate(row["config"], (row["cost_per_1s_control_ms"], error), fontsize=7)
        axis.set_yscale("log")
        axis.set_xlabel("CPU cost of a 1 s control (ms, one thread)")
        axis.set_ylabel("median end difference vs rk4+cylinder (mm)")
        axis.set_title(scene)
    payload = {"quick": quick, "rows": rows, "friction_isotropy": isotropy}
    json_path, png_path = common.write_results("fine_model_defaults", payload, figure)
    print(f"wrote {json_path} and {png_path}")


if __name__ == "__main__":
    main()
