"""Pushing noise of the simulated world: the scatter of repeated identical pushes.

Yu et al. (IROS 2016) repeated the same straight push many times on a real robot; the
ISRR paper quotes the scatter of the final object pose after 150 mm pushes at 20 mm/s:
about 8.10 mm translation and 4.20 deg rotation standard deviation. This bench repeats
such a push in :class:`parapush.sim.world.SimWorld` (seeded) and reports the same two
numbers beside the real-world ones.

The push: the scene's object (default: ``target`` of ``clutter_fig1``, a 5.12 cm cylinder)
alone on the table at the origin, yaw 0; the pusher 2 mm behind it on the -x side, its path
offset sideways by a quarter of the object's radius (``--offsets``: the first value is the
reference push, calibrated against the real-world numbers; the second, 0, pushes through the
centre, an unstable equilibrium reported for information); the arm commanded
(table-frame ``TwistCommand`` at 20 Hz, as the executor sends them) to move +x at
20 mm/s for 150 mm, then halted and the object left to settle 0.5 s. Each repetition is a
world reset, so every push draws new contact noise; the sequence is seeded (``--seed``).
The reference push is our choice: the citation gives the two numbers, not the contact point
and direction of the push, and the scatter depends on them (real pushes too: some are more
repeatable than others, some bimodal).

Statistics over the final object poses (N pushes):

* translation std = sqrt(var(x) + var(y)) (sample variances, ddof 1), i.e. the RMS
  distance of the final positions from their mean, mm; the per-axis stds are reported too;
* rotation std = the sample std of the final yaw about its circular mean, deg.

Usage::

    .venv/bin/python bench/sim_push_noise.py                 # 50 pushes, seed 0
    .venv/bin/python bench/sim_push_noise.py --offsets 0.25 --noise-scale 0.5,1,2   # sensitivity

Writes ``bench/results/sim_push_noise.{json,png}`` (``--output-dir``) and prints a table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

import reference as bench_reference
from parapush.execution.commands import TwistCommand
from parapush.graph import config_dir, resolve_scene_path
from parapush.physics.fine_settings import FineSettings
from parapush.scene import Scene, load_scene
from parapush.sim.driver_settings import load_driver_settings
from parapush.sim.noise import PushNoiseSettings
from parapush.sim.world import SimWorld, WorldSettings

REAL_TRANSLATION_STD_MM = 8.10
REAL_ROTATION_STD_DEG = 4.20
COMMAND_PERIOD = 0.05
"""s between twist commands (20 Hz)."""
START_GAP = 0.002
"""m between the pusher and the object at the start."""
REFERENCE_OFFSET = 0.25
"""Lateral offset of the reference push path, fraction of the object's radius (see the
module docstring: a push through the centre is a bifurcation)."""


def push_scene(scene: Scene, object_name: str, offset_fraction: float) -> Scene:
    """The object alone at the origin (yaw 0) and the pusher 2 mm behind it (-x), its path
    offset sideways (+y) by ``offset_fraction`` of the object's footprint radius."""
    spec = scene.objects[scene.object_index(object_name)]
    if spec.shape == "cylinder":
        lateral = offset_fraction * spec.radius
        contact_x = math.sqrt((spec.radius + scene.pusher.radius) ** 2 - lateral**2)
    else:
        lateral = offset_fraction * min(spec.half_extents)
        contact_x = spec.half_extents[0] + scene.pusher.radius
    return Scene(
        name=f"{scene.name}_push_noise",
        table=scene.table,
        pusher=dataclasses.replace(scene.pusher, position=(-(contact_x + START_GAP), lateral)),
        objects=(dataclasses.replace(spec, pose=(0.0, 0.0, 0.0)),),
        object_friction=scene.object_friction,
    )


def scaled_noise(noise: PushNoiseSettings, scale: float) -> PushNoiseSettings:
    """All magnitudes of ``noise`` multiplied by ``scale``."""
    return dataclasses.replace(
        noise,
        table_friction_spread=noise.table_friction_spread * scale,
        pusher_friction_spread=noise.pusher_friction_spread * scale,
        friction_centre_offset_std=noise.friction_centre_offset_std * scale,
    )


def world_physics() -> FineSettings:
    """The simulated world's physics as ``config/sim_world.yaml`` sets it (the noise is calibrated on it)."""
    return load_driver_settings(config_dir() / "sim_world.yaml").world.physics


def run_pushes(
    scene: Scene, *, pushes: int, seed: int, distance: float, speed: float, settle: float,
    noise: PushNoiseSettings,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Repeat the push; returns final poses (pushes, 3) (m, m, rad) and the object paths
    [(samples, 3)] relative to the start."""
    world = SimWorld(scene, WorldSettings(seed=seed, push_noise=noise, physics=world_physics()))
    duration = distance / speed
    finals, paths = [], []
    for _ in range(pushes):
        world.reset()
        path = [world.true_state()[2:5].copy()]
        elapsed = 0.0
        while elapsed < duration - 1e-9:
            world.command(TwistCommand(stamp_s=world.time, frame_id="table", linear=(speed, 0.0, 0.0)))
            step = min(COMMAND_PERIOD, duration - elapsed)
            world.step(step)
            elapsed += step
            path.append(world.true_state()[2:5].copy())
        world.command(TwistCommand(stamp_s=world.time, frame_id="table", linear=(0.0, 0.0, 0.0)))
        world.step(settle)
        final = world.true_state()[2:5].copy()
        path.append(final)
        finals.append(final)
        paths.append(np.array(path))
    return np.array(finals), paths


def scatter(finals: np.ndarray) -> dict[str, float]:
    """Translation (mm) and rotation (deg) scatter of final poses (N, 3)."""
    positions = finals[:, :2]
    variances = np.var(positions, axis=0, ddof=1)
    yaw = finals[:, 2]
    mean_yaw = math.atan2(float(np.mean(np.sin(yaw))), float(np.mean(np.cos(yaw))))
    deviations = (yaw - mean_yaw + np.pi) % (2 * np.pi) - np.pi
    return {
        "translation_std_mm": 1e3 * float(np.sqrt(np.sum(variances))),
        "x_std_mm": 1e3 * float(np.sqrt(variances[0])),
        "y_std_mm": 1e3 * float(np.sqrt(variances[1])),
        "rotation_std_deg": math.degrees(float(np.sqrt(np.sum(deviations**2) / (len(yaw) - 1)))),
        "mean_displacement_mm": 1e3 * float(np.mean(positions[:, 0])),
        "mean_lateral_mm": 1e3 * float(np.mean(positions[:, 1])),
        "mean_yaw_deg": math.degrees(mean_yaw),
    }


def plot(path: Path, finals: np.ndarray, paths: list[np.ndarray], stats: dict[str, float], title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no PNG", file=sys.stderr)
        return False
    figure, (trajectories, yaw_axes) = plt.subplots(1, 2, figsize=(11, 4.5))
    for trajectory in paths:
        trajectories.plot(1e3 * trajectory[:, 0], 1e3 * trajectory[:, 1], color="tab:blue", alpha=0.3, lw=0.8)
    trajectories.scatter(1e3 * finals[:, 0], 1e3 * finals[:, 1], s=12, color="tab:red", zorder=3, label="final")
    centre = 1e3 * finals[:, :2].mean(axis=0)
    for radius, style in ((stats["translation_std_mm"], "-"), (REAL_TRANSLATION_STD_MM, "--")):
        trajectories.add_patch(plt.Circle(centre, radius, fill=False, ls=style, color="k"))
    trajectories.set_aspect("equal")
    trajectories.set_xlabel("x, mm")
    trajectories.set_ylabel("y, mm")
    trajectories.set_title(
        f"object paths; circles: sim {stats['translation_std_mm']:.2f} mm (solid), "
        f"real {REAL_TRANSLATION_STD_MM} mm (dashed)", fontsize=9
    )
    trajectories.legend(loc="upper left", fontsize=8)
    yaw_axes.hist(np.degrees(finals[:, 2]), bins=15, color="tab:blue", alpha=0.7)
    yaw_axes.set_xlabel("final yaw, deg")
    yaw_axes.set_ylabel("pushes")
    yaw_axes.set_title(
        f"rotation std: sim {stats['rotation_std_deg']:.2f} deg, real {REAL_ROTATION_STD_DEG} deg", fontsize=9
    )
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def _fractions(text: str, option: str, parser: argparse.ArgumentParser) -> list[float]:
    try:
        values = [float(item) for item in text.split(",") if item.strip()]
    except ValueError:
        parser.error(f"{option}: expected comma-separated numbers, got {text!r}")
    if not values or any(not math.isfinite(value) or value < 0.0 for value in values):
        parser.error(f"{option}: expected numbers >= 0, got {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scene", default="clutter_fig1.yaml", help="scene file or name in config/scenes")
    parser.add_argument("--object", default=None, help="object to push (default: the scene's target)")
    parser.add_argument("--pushes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--distance", type=float, default=0.15, help="pusher travel, m")
    parser.add_argument("--speed", type=float, default=0.02, help="pusher speed, m/s")
    parser.add_argument("--settle", type=float, default=0.5, help="s after the pusher stops")
    parser.add_argument(
        "--offsets", default=f"{REFERENCE_OFFSET},0",
        help="comma-separated lateral offsets of the push path, fractions of the object's radius; "
        "the first is the reference push (PNG)",
    )
    parser.add_argument(
        "--noise-scale", default="1", help="comma-separated multipliers of the default noise magnitudes"
    )
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).resolve().parent / "results")
    bench_reference.add_reference_argument(parser)
    args = parser.parse_args(argv)
    load_before = bench_reference.load_average()
    if args.pushes < 2:
        parser.error("--pushes: need at least 2 pushes for a standard deviation")
    offsets = _fractions(args.offsets, "--offsets", parser)
    scales = _fractions(args.noise_scale, "--noise-scale", parser)
    if args.reference and (offsets[0] != REFERENCE_OFFSET or scales[0] != 1.0):
        parser.error(f"--reference: the first offset must be {REFERENCE_OFFSET} and the first noise scale 1")
    scene = load_scene(resolve_scene_path(args.scene))
    object_name = args.object or scene.target

    rows = []
    for offset in offsets:
        bench_scene = push_scene(scene, object_name, offset)
        for scale in scales:
            started = time.perf_counter()
            noise = scaled_noise(PushNoiseSettings(), scale)
            finals, paths = run_pushes(
                bench_scene, pushes=args.pushes, seed=args.seed, distance=args.distance, speed=args.speed,
                settle=args.settle, noise=noise,
            )
            rows.append({
                "offset_fraction": offset, "noise_scale": scale, "noise": dataclasses.asdict(noise),
                **scatter(finals), "wall_s": time.perf_counter() - started, "finals": finals.tolist(),
                "paths": paths,
            })

    print(f"\nsim push noise: {args.pushes} pushes of {object_name!r} ({scene.name}), "
          f"{1e3 * args.distance:.0f} mm at {1e3 * args.speed:.0f} mm/s, seed {args.seed}\n")
    print("| push path offset (x radius) | noise scale | translation std, mm | x std, mm | y std, mm "
          "| rotation std, deg | mean final (x, y), mm | mean yaw, deg | wall, s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['offset_fraction']:g} | {row['noise_scale']:g} | {row['translation_std_mm']:.2f} | "
              f"{row['x_std_mm']:.2f} | {row['y_std_mm']:.2f} | {row['rotation_std_deg']:.2f} | "
              f"({row['mean_displacement_mm']:.1f}, {row['mean_lateral_mm']:.1f}) | {row['mean_yaw_deg']:.1f} | "
              f"{row['wall_s']:.1f} |")
    print(f"| real world (Yu et al., via ISRR) | | {REAL_TRANSLATION_STD_MM:.2f} | | | "
          f"{REAL_ROTATION_STD_DEG:.2f} | | | |")

    args.output_dir.mkdir(parents=True, exist_ok=True)
    reference = rows[0]
    title = (f"{args.pushes} pushes of {object_name} ({scene.name}), {1e3 * args.distance:.0f} mm at "
             f"{1e3 * args.speed:.0f} mm/s, path offset {reference['offset_fraction']:g} radius, "
             f"seed {args.seed}, noise scale {reference['noise_scale']:g}")
    png = args.output_dir / "sim_push_noise.png"
    wrote_png = plot(png, np.array(reference["finals"]), reference["paths"], reference, title)
    report = {
        "scene": scene.name,
        "object": object_name,
        "pushes": args.pushes,
        "seed": args.seed,
        "distance_m": args.distance,
        "speed_m_s": args.speed,
        "settle_s": args.settle,
        "physics": dataclasses.asdict(world_physics()),
        "real_world": {"translation_std_mm": REAL_TRANSLATION_STD_MM, "rotation_std_deg": REAL_ROTATION_STD_DEG},
        "results": [{key: value for key, value in row.items() if key != "paths"} for row in rows],
    }
    json_path = args.output_dir / "sim_push_noise.json"
    json_path.write_text(json.dumps(report, indent=1))
    print(f"\nwrote {json_path}" + (f" and {png}" if wrote_png else ""))
    bench_reference.write_figures(
        "sim_push_noise",
        {
            "simulated_translation_std_mm": reference["translation_std_mm"],
            "simulated_rotation_std_deg": reference["rotation_std_deg"],
            "real_translation_std_mm": REAL_TRANSLATION_STD_MM,
            "real_rotation_std_deg": REAL_ROTATION_STD_DEG,
        },
        reference=args.reference,
        load_before=load_before,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
