"""Throughput of the fine-model backends on one batch, side by side.

The same batch (default 80 segments of 1 s on the 4-object clutter scene) through: the
serial reference, the thread backend with the rollout and the batch engines, the process
backend, and a raw ``mujoco.rollout`` call on prepared arrays (the floor: no state
conversion, no checks). Repetitions are interleaved and the best time kept, so that load
from other processes hits every variant alike. Every backend's result is checked to be
bit-identical to the serial reference.

    python bench/fine_backends.py [--quick] [--segments 80] [--workers N]

Writes bench/results/fine_backends.{json,png}.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import mujoco
import mujoco.rollout
import numpy as np
from matplotlib.figure import Figure

import parareal_common as common
from parapush.physics.backends import ProcessBackend, ThreadBackend
from parapush.physics.backends.threads import default_workers
from parapush.physics.fine import FineModel
from parapush.scene import load_scene

ROOT = Path(__file__).resolve().parent.parent


def batch_inputs(model: FineModel, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pushes from around the scene's start: (count, D), (count, 2), (count,) of 1 s."""
    rng = np.random.default_rng(seed)
    layout = model.layout
    scene = model.scene
    poses = np.array([spec.pose for spec in scene.objects])
    pusher = np.array(scene.pusher.position) + rng.normal(0.0, 0.01, (count, 2))
    states = layout.compose(pusher, np.broadcast_to(poses, (count, *poses.shape)))
    angles = rng.uniform(-0.6, 0.6, count)
    controls = rng.uniform(0.03, 0.1, count)[:, None] * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return states, controls, np.ones(count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 segments, 2 repetitions")
    parser.add_argument("--segments", type=int, default=80)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    segments, repeats = (20, 2) if args.quick else (args.segments, args.repeats)
    workers = args.workers

    scene = load_scene(ROOT / "config" / "scenes" / "clutter_fig1.yaml")
    model = FineModel(scene)
    states, controls, durations = batch_inputs(model, segments)
    steps = model.steps_for(1.0)

    # raw rollout on prepared arrays: what the thread backend wraps
    raw_runner = mujoco.rollout.Rollout(nthread=workers)
    raw_datas = [model.new_data() for _ in range(workers)]
    raw_initial = model.to_physics_state(states)
    raw_control = np.ascontiguousarray(np.broadcast_to(controls[:, None, :], (segments, steps, 2)))
    raw_state = np.empty((segments, steps, model.physics_state_size))

    def raw_rollout() -> np.ndarray:
        raw_runner.rollout(model.mj_model, raw_datas, raw_initial, raw_control, nstep=steps,
                           initial_warmstart=np.zeros((segments, model.mj_model.nv)), state=raw_state)
        return model.from_physics_state(raw_state[:, -1, :])

    threads_rollout = ThreadBackend(model, threads=workers, engine="rollout")
    threads_batch = ThreadBackend(model, threads=workers, engine="batch")
    spawn_start = time.perf_counter()
    processes = ProcessBackend(scene, model.settings, workers=workers)
    spawn_time = time.perf_counter() - spawn_start

    variants: dict[str, Callable[[], np.ndarray]] = {
        "serial (FineModel.propagate)": lambda: model.propagate(states, controls, durations),
        f"threads rollout x{workers}": lambda: threads_rollout.propagate(states, controls, durations),
        f"threads batch x{workers}": lambda: threads_batch.propagate(states, controls, durations),
        f"processes x{workers}": lambda: processes.propagate(states, controls, durations),
        f"raw mujoco.rollout x{workers}": raw_rollout,
    }
    try:
        reference = model.propagate(states, controls, durations)
        best = {name: math.inf for name in variants}
        best_cpu = {name: math.inf for name in variants}
        identical = {}
        for name, run in variants.items():  # warm-up: allocations, pools, first-touch pages
            identical[name] = bool(np.array_equal(run(), reference, equal_nan=True))
        for _ in range(repeats):
            for name, run in variants.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                run()
                best[name] = min(best[name], time.perf_counter() - start)
                best_cpu[name] = min(best_cpu[name], time.process_time() - start_cpu)
    finally:
        threads_rollout.close()
        threads_batch.close()
        processes.close()
        raw_runner.close()

    serial_time = best["serial (FineModel.propagate)"]
    raw_name = f"raw mujoco.rollout x{workers}"
    rows = []
    for name, seconds in best.items():
        in_process = not name.startswith("processes")  # the pool's work is CPU time of its children
        rows.append({
            "backend": name, "seconds": seconds, "segments_per_s": segments / seconds,
            "speedup_vs_serial": serial_time / seconds,
            "overhead_vs_raw_rollout_pct": 100 * (seconds / best[raw_name] - 1),
            "cpu_seconds": best_cpu[name] if in_process else None,
            "cpu_overhead_vs_raw_rollout_pct": 100 * (best_cpu[name] / best_cpu[raw_name] - 1) if in_process else None,
            "bit_identical_to_serial": identical[name],
        })
    load = os.getloadavg()[0]
    print(f"{segments} segments of 1 s ({steps} steps, {model.settings.integrator}, "
          f"{scene.layout.object_count} objects), {workers} workers, best of {repeats}; "
          f"process pool start-up {spawn_time:.2f} s; load average {load:.1f} on {default_workers()} cores")
    header = (f"{'backend':<32}{'wall s':>8}{'segments/s':>11}{'vs serial':>10}{'wall vs raw':>12}"
              f"{'CPU s':>8}{'CPU vs raw':>11}{'identical':>10}")
    print(header)
    print("-" * len(header))
    for row in rows:
        cpu = "n/a" if row["cpu_seconds"] is None else f"{row['cpu_seconds']:.3f}"
        cpu_overhead = "n/a" if row["cpu_seconds"] is None else f"{row['cpu_overhead_vs_raw_rollout_pct']:+.1f}%"
        print(f"{row['backend']:<32}{row['seconds']:>8.3f}{row['segments_per_s']:>11.1f}"
              f"{row['speedup_vs_serial']:>9.2f}x{row['overhead_vs_raw_rollout_pct']:>+11.1f}%"
              f"{cpu:>8}{cpu_overhead:>11}{'yes' if row['bit_identical_to_serial'] else 'NO':>10}")
    print("wall times need idle cores; CPU time (this process, all its threads) measures the wrappers'")
    print("overhead over raw rollout regardless of other load")
    write_results(rows, {"segments": segments, "workers": workers, "repeats": repeats, "quick": args.quick,
                         "objects": scene.layout.object_count, "process_pool_startup_s": spawn_time,
                         "load_average": load})


def write_results(rows: list[dict], meta: dict) -> None:
    figure = Figure(figsize=(8, 3.5), layout="tight")
    axis = figure.subplots()
    names = [row["backend"] for row in rows]
    axis.barh(names, [row["segments_per_s"] for row in rows])
    axis.set_xlabel("throughput (1 s segments per wall-clock second)")
    axis.invert_yaxis()
    json_path, png_path = common.write_results("fine_backends", {"meta": meta, "rows": rows}, figure)
    print(f"wrote {json_path} and {png_path}")


if __name__ == "__main__":
    main()
