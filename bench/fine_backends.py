"""Throughput of the fine-model backends on one batch, side by side.

The same batch (default 84 segments of 1 s on the 4-object clutter scene: an MPC batch of
21 sequences x 4 slices) through: the serial reference, the thread backend with the rollout
and the batch engines, the process backend, the Ray backend (actors on a Ray cluster local
to this run, or ``--ray-address``; left out when Ray is not installed) and a raw
``mujoco.rollout`` call on prepared arrays (the floor: no state conversion, no checks).
Repetitions are interleaved and the best time kept, so that load from other processes hits
every variant alike. Every backend's result is checked to be bit-identical to the serial
reference. Per-call overhead: the best wall time of a call of one row of one time step.

The cost model (:mod:`parapush.parareal.schedule`) then predicts, from the measured c_f
(serial time per segment), c_c (a coarse sweep of the MPC batch with projection, per slice)
and the Ray backend's per-call overhead c_o, the wall times of Parareal (K = 1) and of
sample-parallel fine on the MPC batch for 2, 16, 64 and 256 workers, and the schedule
``auto`` picks.

    python bench/fine_backends.py [--quick] [--segments 84] [--workers N] [--ray-address HOST:PORT] [--reference]

Writes bench/results/fine_backends.{json,png}.
"""

from __future__ import annotations

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
import reference as bench_reference
from parapush.parareal import PararealOptions, PararealSolver
from parapush.parareal.schedule import ProblemSize, StepCosts, choose_schedule, serial_fine_wall_time
from parapush.physics.backends import ProcessBackend, RayBackend, ThreadBackend
from parapush.physics.backends.threads import default_workers
from parapush.physics.fine import FineModel
from parapush.scene import load_scene

ROOT = Path(__file__).resolve().parent.parent
MPC_SEQUENCES, MPC_SLICES = 21, 4
"""The MPC's batch: 21 sequences (the mean and 20 noisy samples) of 4 one-second controls."""
PREDICTED_WORKERS = (2, 16, 64, 256)


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
    parser = common.bench_arguments(__doc__.splitlines()[0], quick="20 segments, 2 repetitions")
    parser.add_argument("--segments", type=int, default=MPC_SEQUENCES * MPC_SLICES)
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--ray-address", default=None, help="Ray cluster head (default: a local Ray)")
    bench_reference.add_reference_argument(parser)
    args = parser.parse_args()
    load_before = bench_reference.load_average()
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
    ray_backend = make_ray_backend(scene, model, workers, args.ray_address)

    variants: dict[str, Callable[[], np.ndarray]] = {
        "serial (FineModel.propagate)": lambda: model.propagate(states, controls, durations),
        f"threads rollout x{workers}": lambda: threads_rollout.propagate(states, controls, durations),
        f"threads batch x{workers}": lambda: threads_batch.propagate(states, controls, durations),
        f"processes x{workers}": lambda: processes.propagate(states, controls, durations),
        f"raw mujoco.rollout x{workers}": raw_rollout,
    }
    backends = {f"threads rollout x{workers}": threads_rollout, f"processes x{workers}": processes}
    if ray_backend is not None:
        variants[f"ray x{ray_backend.workers}"] = lambda: ray_backend.propagate(states, controls, durations)
        backends[f"ray x{ray_backend.workers}"] = ray_backend
    try:
        overheads = call_overheads(backends, model, states, controls, repeats)
        coarse_step = coarse_step_cost(scene, threads_rollout, states[0], controls, repeats)
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
        if ray_backend is not None:
            ray_backend.close()

    serial_time = best["serial (FineModel.propagate)"]
    raw_name = f"raw mujoco.rollout x{workers}"
    rows = []
    for name, seconds in best.items():
        in_process = not name.startswith(("processes", "ray"))  # their work is CPU time of other processes
        rows.append({
            "backend": name, "seconds": seconds, "segments_per_s": segments / seconds,
            "speedup_vs_serial": serial_time / seconds,
            "overhead_vs_raw_rollout_pct": 100 * (seconds / best[raw_name] - 1),
            "cpu_seconds": best_cpu[name] if in_process else None,
            "cpu_overhead_vs_raw_rollout_pct": 100 * (best_cpu[name] / best_cpu[raw_name] - 1) if in_process else None,
            "bit_identical_to_serial": identical[name],
            "call_overhead_s": overheads.get(name),
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
    print("per-call overhead (one row of one step): " + ", ".join(
        f"{name} {1000 * seconds:.2f} ms" for name, seconds in overheads.items()))
    threads_name = f"threads rollout x{workers}"
    ray_name = None if ray_backend is None else f"ray x{ray_backend.workers}"
    ray_vs_threads = None if ray_name is None else best[ray_name] / best[threads_name]
    if ray_vs_threads is not None:
        print(f"Ray / threads wall time on this batch: {ray_vs_threads:.2f}x (target <= 1.2x)")
    fine_control = serial_time / segments  # c_f of a 1 s control on one worker
    overhead = overheads[ray_name] if ray_name is not None else 0.0
    predictions = predict_speedups(StepCosts(coarse_step=coarse_step, fine_control=fine_control,
                                             call_overhead=overhead))
    print(f"cost model on the MPC batch ({MPC_SEQUENCES} x {MPC_SLICES} one-second controls, K = 1): "
          f"c_f = {1000 * fine_control:.2f} ms, c_c = {1e6 * coarse_step:.0f} us, "
          f"c_o = {1000 * overhead:.2f} ms ({'Ray' if ray_name else 'no Ray: 0'})")
    print(common.format_table(
        ["workers", "Parareal s", "sample-parallel s", "auto picks", "speedup vs serial", "Parareal vs s-p"],
        [[row["workers"], f"{row['parareal_s']:.4f}", f"{row['sample_parallel_s']:.4f}", row["auto_schedule"],
          f"{row['speedup_vs_serial']:.1f}x", f"{row['parareal_vs_sample_parallel']:.2f}x"] for row in predictions]))
    write_results(rows, {"segments": segments, "workers": workers, "repeats": repeats, "quick": args.quick,
                         "objects": scene.layout.object_count, "process_pool_startup_s": spawn_time,
                         "load_average": load, "ray_vs_threads_wall": ray_vs_threads,
                         "ray_address": args.ray_address or ("local" if ray_name else None)},
                  {"sequences": MPC_SEQUENCES, "slices": MPC_SLICES, "iterations": 1, "fine_control_s": fine_control,
                   "coarse_step_s": coarse_step, "call_overhead_s": overhead, "rows": predictions})
    if ray_vs_threads is not None:  # the README's figures: only a run with Ray has them all
        bench_reference.write_figures("fine_backends", {
            "ray_vs_threads_wall": ray_vs_threads, "ray_call_overhead_ms": 1000 * overhead,
            "threads_call_overhead_ms": 1000 * overheads[threads_name], "fine_control_ms": 1000 * fine_control,
            "coarse_step_us": 1e6 * coarse_step,
            **{f"parareal_s_{row['workers']}": row["parareal_s"] for row in predictions},
            **{f"sample_parallel_s_{row['workers']}": row["sample_parallel_s"] for row in predictions},
            **{f"speedup_vs_serial_{row['workers']}": row["speedup_vs_serial"] for row in predictions},
            **{f"parareal_vs_sample_parallel_{row['workers']}": row["parareal_vs_sample_parallel"]
               for row in predictions},
        }, reference=args.reference, load_before=load_before, quick=args.quick)


def make_ray_backend(scene, model: FineModel, workers: int, address: str | None) -> RayBackend | None:
    """The Ray backend with ``workers`` actors, or None (with a note) when Ray is not installed."""
    try:
        return RayBackend(scene, model.settings, workers=workers, address=address)
    except ImportError as error:
        print(f"Ray rows left out: {error}")
        return None


def call_overheads(backends: dict, model: FineModel, states: np.ndarray, controls: np.ndarray,
                   repeats: int) -> dict[str, float]:
    """Best wall time of a call of one row of one time step per backend, s."""
    step = np.array([model.settings.timestep])
    best = {name: math.inf for name in backends}
    for _ in range(max(repeats, 5)):
        for name, backend in backends.items():
            start = time.perf_counter()
            backend.propagate(states[:1], controls[:1], step)
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def coarse_step_cost(scene, fine: ThreadBackend, initial: np.ndarray, controls: np.ndarray, repeats: int) -> float:
    """c_c: a Parareal coarse sweep (K = 0, with projection) of the MPC batch, per slice, s."""
    solver = PararealSolver(coarse=common.load_coarse("analytical", scene), fine=fine,
                            projector=common.load_projector(scene, True))
    batch_controls = np.resize(controls, (MPC_SEQUENCES, MPC_SLICES, 2))
    durations = np.ones((MPC_SEQUENCES, MPC_SLICES))
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        solver.solve(initial, batch_controls, durations, PararealOptions(iterations=0), schedule="parareal")
        best = min(best, time.perf_counter() - start)
    return best / MPC_SLICES


def predict_speedups(costs: StepCosts) -> list[dict]:
    """Parareal (K = 1) and sample-parallel wall times of the MPC batch for PREDICTED_WORKERS."""
    rows = []
    for workers in PREDICTED_WORKERS:
        size = ProblemSize(sequences=MPC_SEQUENCES, slices=MPC_SLICES, workers=workers)
        choice = choose_schedule(size, 1, costs)
        fastest = min(choice.predicted_parareal, choice.predicted_sample_parallel)
        rows.append({"workers": workers, "parareal_s": choice.predicted_parareal,
                     "sample_parallel_s": choice.predicted_sample_parallel, "auto_schedule": choice.schedule,
                     "speedup_vs_serial": serial_fine_wall_time(size, costs) / fastest,
                     "parareal_vs_sample_parallel": choice.predicted_sample_parallel / choice.predicted_parareal})
    return rows


def write_results(rows: list[dict], meta: dict, cost_model: dict) -> None:
    figure = Figure(figsize=(8, 3.5), layout="tight")
    axis = figure.subplots()
    names = [row["backend"] for row in rows]
    axis.barh(names, [row["segments_per_s"] for row in rows])
    axis.set_xlabel("throughput (1 s segments per wall-clock second)")
    axis.invert_yaxis()
    json_path, png_path = common.write_results("fine_backends", {"meta": meta, "rows": rows,
                                                                        "cost_model": cost_model}, figure)
    print(f"wrote {json_path} and {png_path}")


if __name__ == "__main__":
    main()
