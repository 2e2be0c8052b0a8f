"""Task-informed fidelity management of the fine model: cost and error against full fidelity.

For scenes with 1, 4, 8, 16 and 32 objects (``isrr_obstacle``, ``clutter_fig1``,
``crowded_8|16|32``) the pushes the MPC's optimizer rolls out (``fine_model_cost.planner_set``:
the straight-line push towards the goal and noisy copies, 4 controls of 1 s, from the
scene's start and from the state after two straight-line controls) are rolled out serially,
one control after the other, by the full fine model (``FineModel.propagate``) and by the
managed one (:class:`parapush.physics.fidelity.ManagedFineBackend` around the serial
backend). The rollouts are timed in interleaved chunks (full, managed, full, ...: load
changes hit both alike) as CPU time of this process per 1 s control; ``speedup`` is full /
managed. The error is the managed end state against the full one after 4 s: the largest
object position error (mm) and yaw error (deg) per push, beside the chaos floor (the full
model from starts 1 um apart, against itself); ``reruns`` counts the managed
segments that were run again at full fidelity. ``crossover_objects``: the smallest object
count from which on management pays (speedup >= ``PAYS``). ``parareal_k1_latency``: the
prediction engine's Parareal K = 1 (threads backend, analytical coarse model) on the planner's
21 pushes of 4 s in ``crowded_16``, wall time per prediction (median), ``fidelity`` full and
task_informed alternating.

    python bench/fidelity_management.py [--quick] [--seed 0]

Writes bench/results/fidelity_management.{json,png} (a ``summary`` list of rows
``{objects, speedup, mean_error_mm, max_error_mm, mean_error_deg, reruns, ...}``).

The 16-object MPC runs with and without management: ``bench/fidelity_management_mpc.py``.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

import reference as bench_reference
from fine_model_cost import machine, planner_set, push_errors
from parapush.physics.backends import SerialBackend
from parapush.physics.fidelity import ManagedFineBackend
from parapush.physics.fine import FineModel
from parapush.prediction import ModelConfig, PredictionEngine, PredictionRequest
from parapush.scene import Scene, load_scene
from parareal_common import bench_arguments, format_table, write_results

ROOT = Path(__file__).resolve().parent.parent
SCENES = ROOT / "config" / "scenes"
CHAOS_SHIFT = 1.0e-6
"""m: the full model is also run from starts with the pusher moved by this; its error against
the full model is the chaos floor any model that is not bit-identical must expect."""
CHUNK = 10
"""Pushes per timed chunk (full and managed alternate chunk by chunk)."""
PAYS = 1.1
"""Management "pays" where it makes the fine model at least this much faster."""
MAX_TARGET_MM = 2.0
"""The issue's target for the largest error, mm; pushes beyond it are counted, managed and chaos floor."""
LATENCY_SCENE = "crowded_16"


def benchmark_scenes() -> list[Scene]:
    """Scenes with 1, 4, 8, 16 and 32 objects."""
    names = ["isrr_obstacle", "clutter_fig1"] + [f"crowded_{count}" for count in (8, 16, 32)]
    return [load_scene(SCENES / f"{name}.yaml") for name in names]


def rollout_end(propagator: object, initial: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
    """States (B, D) after holding controls (B, N, 2) for durations (N,) in turn."""
    states = initial
    for index, duration in enumerate(durations):
        states = propagator.propagate(states, controls[:, index], np.full(len(states), duration))
    return states


def timed(propagator: object, initial: np.ndarray, controls: np.ndarray, durations: np.ndarray
          ) -> tuple[np.ndarray, float]:
    start = time.process_time()
    ends = rollout_end(propagator, initial, controls, durations)
    return ends, time.process_time() - start


def measure(scene: Scene, samples: int, seed: int) -> dict:
    rng = np.random.default_rng([seed, len(scene.objects)])
    pushes = planner_set(scene, samples, rng)
    fine = FineModel(scene)
    managed = ManagedFineBackend(SerialBackend(fine), fine)
    full_ends, managed_ends = [], []
    full_time = managed_time = 0.0
    for start in range(0, len(pushes.initial), CHUNK):
        rows = slice(start, start + CHUNK)
        ends, seconds = timed(fine, pushes.initial[rows], pushes.controls[rows], pushes.durations)
        full_ends.append(ends)
        full_time += seconds
        ends, seconds = timed(managed, pushes.initial[rows], pushes.controls[rows], pushes.durations)
        managed_ends.append(ends)
        managed_time += seconds
    full_ends, managed_ends = np.concatenate(full_ends), np.concatenate(managed_ends)
    position, yaw = push_errors(scene, managed_ends, full_ends)
    shifted = pushes.initial.copy()
    shifted[:, 0] += CHAOS_SHIFT
    chaos, _ = push_errors(scene, rollout_end(fine, shifted, pushes.controls, pushes.durations), full_ends)
    controls_run = len(pushes.initial) * float(np.sum(pushes.durations))
    counts = managed.counts
    unstable = int(np.sum(~np.all(np.isfinite(full_ends), axis=1)))
    return {
        "objects": len(scene.objects),
        "scene": scene.name,
        "pushes": len(pushes.initial),
        "speedup": full_time / managed_time,
        "cost_full_ms": 1e3 * full_time / controls_run,
        "cost_managed_ms": 1e3 * managed_time / controls_run,
        "mean_error_mm": float(np.nanmean(position)),
        "max_error_mm": float(np.nanmax(position)),
        "p95_error_mm": float(np.nanpercentile(position, 95)),
        "mean_error_deg": float(np.nanmean(yaw)),
        "max_error_deg": float(np.nanmax(yaw)),
        "reruns": counts.reruns,
        "chaos_floor_mm": {"mean": float(np.nanmean(chaos)), "p95": float(np.nanpercentile(chaos, 95)),
                           "max": float(np.nanmax(chaos))},
        # the error's distribution against the floor's: pushes beyond the target, and the floor of the worst push
        "pushes_over_max_target": int(np.sum(position > MAX_TARGET_MM)),
        "chaos_pushes_over_max_target": int(np.sum(chaos > MAX_TARGET_MM)),
        "worst_push_chaos_mm": float(chaos[int(np.nanargmax(position))]),
        "segments": counts.segments,
        "static_fraction": counts.static_objects / max(1, counts.segments * len(scene.objects)),
        "unstable_full": unstable,
    }


def parareal_latency(samples: int, repeats: int, seed: int) -> dict:
    """Wall time of the prediction engine's Parareal K = 1 (threads backend) on the planner's
    batch of pushes in ``LATENCY_SCENE``, ``fidelity`` full and task_informed, interleaved."""
    scene = load_scene(SCENES / f"{LATENCY_SCENE}.yaml")
    pushes = planner_set(scene, samples, np.random.default_rng([seed, 99]))
    count = samples + 1  # the pushes from the scene's start
    request = PredictionRequest(initial_state=pushes.initial[0], controls=pushes.controls[:count],
                                durations=np.repeat(pushes.durations[None], count, axis=0),
                                model="parareal", iterations=1)
    times: dict[str, list[float]] = {"full": [], "task_informed": []}
    engines = {name: PredictionEngine(scene, ModelConfig(fidelity=name, coarse_model="analytical"))
               for name in times}
    try:
        for _ in range(repeats):
            for name, engine in engines.items():
                times[name].append(engine.predict(request).time_total)
    finally:
        for engine in engines.values():
            engine.close()
    medians = {name: float(np.median(values)) for name, values in times.items()}
    return {"scene": LATENCY_SCENE, "sequences": count, "controls": len(pushes.durations),
            "median_s": medians, "speedup": medians["full"] / medians["task_informed"], "repeats": repeats}


def crossover(summary: list[dict]) -> int | None:
    """The smallest object count from which on management pays (speedup >= PAYS there and above)."""
    paying = None
    for row in sorted(summary, key=lambda row: -row["objects"]):
        if row["speedup"] < PAYS:
            break
        paying = row["objects"]
    return paying


def figure(summary: list[dict]) -> Figure:
    drawing = Figure(figsize=(6, 4))
    axis = drawing.subplots()
    objects = [row["objects"] for row in summary]
    axis.plot(objects, [row["cost_full_ms"] for row in summary], "o-", label="full")
    axis.plot(objects, [row["cost_managed_ms"] for row in summary], "s-", label="task-informed")
    axis.set_xscale("log", base=2)
    axis.set_xlabel("objects")
    axis.set_ylabel("CPU ms per 1 s control (serial)")
    axis.legend()
    return drawing


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__.splitlines()[0], quick="22 pushes per scene instead of 200",
                             seed="seed of the planner's noise")
    bench_reference.add_reference_argument(parser)
    args = parser.parse_args(argv)
    load_before = bench_reference.load_average()
    samples = 10 if args.quick else 99  # pushes per scene: 2 (samples + 1)
    started = machine()
    summary = []
    for scene in benchmark_scenes():
        row = measure(scene, samples, args.seed)
        summary.append(row)
        print(f"{row['objects']:>3} objects: speedup {row['speedup']:.2f}, error mean {row['mean_error_mm']:.3f} "
              f"max {row['max_error_mm']:.3f} mm, reruns {row['reruns']}/{row['segments']}", flush=True)
    headers = ["objects", "pushes", "full ms", "managed ms", "speedup", "mean mm", "p95 mm", "max mm", "mean deg",
               "reruns", "static", "chaos mean/p95/max mm", "> 2 mm (chaos)"]
    table = format_table(headers, [[row["objects"], row["pushes"], f"{row['cost_full_ms']:.1f}",
                                    f"{row['cost_managed_ms']:.1f}", f"{row['speedup']:.2f}",
                                    f"{row['mean_error_mm']:.3f}", f"{row['p95_error_mm']:.3f}",
                                    f"{row['max_error_mm']:.3f}", f"{row['mean_error_deg']:.3f}",
                                    f"{row['reruns']}/{row['segments']}", f"{row['static_fraction']:.2f}",
                                    "/".join(f"{row['chaos_floor_mm'][key]:.2f}" for key in ("mean", "p95", "max")),
                                    f"{row['pushes_over_max_target']} ({row['chaos_pushes_over_max_target']})"]
                                   for row in summary])
    print(table)
    latency = parareal_latency(samples=20, repeats=3 if args.quick else 9, seed=args.seed)
    print(f"Parareal K=1 on {latency['scene']} ({latency['sequences']} sequences): median "
          f"{latency['median_s']['full']:.3f} s full, {latency['median_s']['task_informed']:.3f} s managed")
    ended = machine()
    payload = {
        "quick": args.quick,
        "seed": args.seed,
        "machine": {**started, "uptime_at_end": ended["uptime_at_start"]},
        "summary": summary,
        "crossover_objects": crossover(summary),
        "crossover_rule": f"smallest object count from which on speedup >= {PAYS}",
        "parareal_k1_latency": latency,
        "table": table,
    }
    json_path, _ = write_results("fidelity_management", payload, figure(summary))
    by_objects = {row["objects"]: row for row in summary}
    bench_reference.write_figures(
        "fidelity_management",
        {
            **{f"speedup_{count}": row["speedup"] for count, row in by_objects.items()},
            **{f"max_error_mm_{count}": row["max_error_mm"] for count, row in by_objects.items()},
            **{f"mean_error_mm_{count}": row["mean_error_mm"] for count, row in by_objects.items()},
            **{f"chaos_max_mm_{count}": row["chaos_floor_mm"]["max"] for count, row in by_objects.items()},
            **{f"chaos_mean_mm_{count}": row["chaos_floor_mm"]["mean"] for count, row in by_objects.items()},
            **{f"pushes_over_2mm_{count}": row["pushes_over_max_target"] for count, row in by_objects.items()},
            **{f"chaos_pushes_over_2mm_{count}": row["chaos_pushes_over_max_target"]
               for count, row in by_objects.items()},
            **{f"worst_push_chaos_mm_{count}": row["worst_push_chaos_mm"] for count, row in by_objects.items()},
            "reruns": sum(row["reruns"] for row in summary),
            "parareal_k1_full_s": latency["median_s"]["full"],
            "parareal_k1_managed_s": latency["median_s"]["task_informed"],
        },
        reference=args.reference, load_before=load_before, quick=args.quick,
    )
    print(f"crossover: management pays from {payload['crossover_objects']} object(s); wrote {json_path}")
    worst = [row for row in summary if not math.isfinite(row["max_error_mm"])]
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main())
