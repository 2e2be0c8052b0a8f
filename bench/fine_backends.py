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
import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import mujoco
import mujoco.rollout
import numpy as np

from parapush.physics.backends import ProcessBackend, ThreadBackend
from parapush.physics.backends.threads import default_workers
from parapush.physics.fine import FineModel
from parapush.scene import load_scene

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


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
    parser.add_argument("--repeats", type=int, default=5)
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
        identical = {}
        for name, run in variants.items():  # warm-up: allocations, pools, first-touch pages
            identical[name] = bool(np.array_equal(run(), reference, equal_nan=True))
        for _ in range(repeats):
            for name, run in variants.items():
                start = time.perf_counter()
                run()
                best[name] = min(best[name], time.perf_counter() - start)
    finally:
        threads_rollout.close()
        threads_batch.close()
        processes.close()
        raw_runner.close()

    serial_time = best["serial (FineModel.propagate)"]
    raw_time = best[f"raw mujoco.rollout x{workers}"]
    rows = []
    for name, seconds in best.items():
        rows.append({
            "backend": name, "seconds": seconds, "segments_per_s": segments / seconds,
            "speedup_vs_serial": serial_time / seconds, "overhead_vs_raw_rollout_pct": 100 * (seconds / raw_time - 1),
            "bit_identical_to_serial": identical[name],
        })
    print(f"{segments} segments of 1 s ({steps} steps, {model.settings.integrator}, "
          f"{scene.layout.object_count} objects), {workers} workers, best of {repeats}; "
          f"process pool start-up {spawn_time:.2f} s")
    header = f"{'backend':<32}{'wall s':>9}{'segments/s':>12}{'vs serial':>11}{'vs raw rollout':>16}{'identical':>11}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(f"{row['backend']:<32}{row['seconds']:>9.3f}{row['segments_per_s']:>12.1f}"
              f"{row['speedup_vs_serial']:>10.2f}x{row['overhead_vs_raw_rollout_pct']:>+15.1f}%"
              f"{'yes' if row['bit_identical_to_serial'] else 'NO':>11}")
    write_results(rows, {"segments": segments, "workers": workers, "repeats": repeats, "quick": args.quick,
                         "objects": scene.layout.object_count, "process_pool_startup_s": spawn_time})


def write_results(rows: list[dict], meta: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "fine_backends.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    figure, axis = plt.subplots(figsize=(8, 3.5))
    names = [row["backend"] for row in rows]
    axis.barh(names, [row["segments_per_s"] for row in rows])
    axis.set_xlabel("throughput (1 s segments per wall-clock second)")
    axis.invert_yaxis()
    figure.tight_layout()
    figure.savefig(RESULTS / "fine_backends.png", dpi=120)
    print(f"wrote {RESULTS / 'fine_backends.json'} and .png")


if __name__ == "__main__":
    main()
