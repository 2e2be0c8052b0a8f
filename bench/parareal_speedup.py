"""ISRR 2019 Fig 6: measured wall time of Parareal K = 1..N and of serial fine, beside the
cost model, for one trajectory and for a planner batch of 20 sequences.

Part 1 (one trajectory, box side push, 25 mm/s, N x 1 s controls, N = 4 and 8): serial
fine on one worker, the coarse model alone, and Parareal K = 1..N on the fine backend
with P workers (default: the cores present), timed side by side (round robin, after a
warm-up). The cost model (:mod:`parapush.parareal.schedule`) predicts each time twice:

* *ideal*: c_f = serial fine time / N (one control on one core) and c_c = coarse-only
  time / N (projection included): P workers each as fast as one core. Its speedup is the
  bound the target is judged against (K = 1 speedup >= 90 % of it). It depends only on
  c_c / c_f and P, so it does not fall when the machine is loaded (a loaded machine
  misses the target instead of lowering the bar).
* *machine*: c_f = the wall time of P separate processes each running one control of
  serial fine at once (no threads, no backend: what this CPU gives when P cores are busy;
  its cores run slower all busy than one alone, and other work shares them). Printed
  for diagnosis only: it moves with the load of the same run.
* *effective*: c_f = the time of one fine backend call with P rows (one control per
  worker, all workers busy): the machine's figure plus the backend's own overhead.

Part 2 (planner batch: 20 noisy copies of the push, exploration std 0.01 m/s, N = 4):
serial fine, sample-parallel fine, Parareal K = 1, 2 and ``auto`` K = 1, 2 (the solver's
cost model picks Parareal or sample-parallel from its running estimates). ``auto``
must be at most 10 % slower than the better of the two (a fixed tolerance).

Every variant runs once per round, rounds repeated (round robin, so load changes hit all
variants alike); the verdicts use the median over rounds of the per-round ratios
(serial / Parareal in the same round, auto / best in the same round).

    python bench/parareal_speedup.py [--quick] [--repeats R] [--reference]

Writes bench/results/parareal_speedup.{json,png}; the load average before and after is
stored with the numbers. The README quotes, per N, the K = 1 speedup (median of the paired
rounds) and its percentage of the ideal bound; ``--reference`` writes them to
``bench/reference/parareal_speedup.json`` (see ``bench/reference.py``; run it on an idle machine).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, wait
from typing import Any

import numpy as np
from matplotlib.figure import Figure

import reference as bench_reference
from parapush.parareal import (
    PararealOptions,
    PararealSolver,
    ProblemSize,
    StepCosts,
    parareal_wall_time,
    sample_parallel_wall_time,
    serial_fine_wall_time,
)
from parapush.physics.backends import SerialBackend
from parapush.physics.fine import FineModel
from parareal_common import (
    common_arguments,
    constant_pushes,
    format_table,
    load_coarse,
    load_projector,
    make_fine_backend,
    paper_scene,
    push_start_states,
    slider_half_width,
    write_results,
)

SPEED = 0.025  # m/s
DURATION = 1.0  # s
SIDE_FRACTION = 0.75
BATCH = 20
BATCH_SLICES = 4
EXPLORATION_STD = 0.01  # m/s (ISRR Sec 4.3: exploration variance 1e-4)
TARGET_OF_BOUND = 0.9
AUTO_TOLERANCE = 0.10  # auto may be this much slower than the better schedule (fixed, not the run's noise)


_PROCESS_FINE: Any = None


def _start_process_fine() -> None:
    global _PROCESS_FINE  # noqa: PLW0603 - one fine model per pool process
    _PROCESS_FINE = SerialBackend(FineModel(paper_scene("box")))


def _process_fine_control(start: np.ndarray, control: np.ndarray) -> None:
    _PROCESS_FINE.propagate(start[None], control[None], np.array([DURATION]))


class MachineCeiling:
    """P processes, each with its own serial fine model, to time one control on 1 and on P busy cores."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self._pool = ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn"), initializer=_start_process_fine
        )
        wait([self._pool.submit(time.sleep, 0.5) for _ in range(processes)])  # all started

    def run(self, start: np.ndarray, control: np.ndarray, copies: int) -> None:
        """``copies`` controls of serial fine at once, one per process; returns when all are done."""
        for future in [self._pool.submit(_process_fine_control, start, control) for _ in range(copies)]:
            future.result()

    def close(self) -> None:
        self._pool.shutdown()


def time_round_robin(variants: dict[str, Callable[[], object]], repeats: int) -> dict[str, np.ndarray]:
    """Run every variant once to warm up, then ``repeats`` rounds in turn; wall times (s)."""
    for run in variants.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, run in variants.items():
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
    return {name: np.array(values) for name, values in times.items()}


def paired_ratio(times: dict[str, np.ndarray], numerator: str, denominator: str) -> dict[str, float]:
    """Median and range over rounds of ``numerator / denominator`` timed in the same round."""
    ratios = times[numerator] / times[denominator]
    return {"median": float(np.median(ratios)), "min": float(ratios.min()), "max": float(ratios.max()),
            "rounds": len(ratios)}


def mean_ci(values: np.ndarray) -> tuple[float, float]:
    """Mean and 95 % confidence half-width of the mean, s."""
    half = 1.96 * values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else float("nan")
    return float(values.mean()), float(half)


def predicted_time(name: str, size: ProblemSize, costs: StepCosts) -> float:
    """The cost model's wall time for a variant name of this benchmark, s."""
    if name.startswith("parareal K="):
        return parareal_wall_time(size, int(name.split("=")[1]), costs)
    if name.startswith("auto K="):
        k = int(name.split("=")[1])
        return min(parareal_wall_time(size, k, costs), sample_parallel_wall_time(size, costs))
    if name == "coarse":
        return parareal_wall_time(size, 0, costs)
    if name == "sample-parallel":
        return sample_parallel_wall_time(size, costs)
    if name == "serial fine":
        return serial_fine_wall_time(size, costs)
    raise KeyError(name)


def single_trajectory(
    serial: PararealSolver,
    parallel: PararealSolver,
    backend: Any,
    start: np.ndarray,
    slices: int,
    repeats: int,
    ceiling: MachineCeiling,
) -> dict[str, Any]:
    """Part 1 for N = ``slices``: timings, the three cost models, speedups."""
    workers = backend.workers
    controls = constant_pushes([0.0], SPEED, slices)
    durations = np.full(slices, DURATION)
    busy_states = np.repeat(start[None], workers, axis=0)
    busy_controls = np.repeat(controls[0, :1], workers, axis=0)
    busy_durations = np.full(workers, DURATION)
    variants: dict[str, Callable[[], object]] = {
        "serial fine": lambda: serial.predict_fine(start, controls, durations),
        "coarse": lambda: parallel.predict_coarse(start, controls, durations),
        f"fine call, {workers} rows": lambda: backend.propagate(busy_states, busy_controls, busy_durations),
        "1 process x 1 control": lambda: ceiling.run(start, controls[0, 0], 1),
        f"{workers} processes x 1 control": lambda: ceiling.run(start, controls[0, 0], workers),
    }
    for k in range(1, slices + 1):
        variants[f"parareal K={k}"] = lambda k=k: parallel.solve(
            start, controls, durations, PararealOptions(iterations=k)
        )
    auto_choices: list[str] = []

    def auto() -> None:
        result = parallel.solve(start, controls, durations, PararealOptions(iterations=1), schedule="auto")
        auto_choices.append(result.schedule)

    variants["auto K=1"] = auto
    times = time_round_robin(variants, repeats)
    serial_time = float(times["serial fine"].mean())
    coarse_step = float(times["coarse"].mean()) / slices
    ideal = StepCosts(coarse_step=coarse_step, fine_control=serial_time / slices)
    busy = float(times[f"fine call, {workers} rows"].mean())
    effective = StepCosts(coarse_step=coarse_step, fine_control=busy)
    one_process = float(times["1 process x 1 control"].mean())
    all_processes = float(times[f"{workers} processes x 1 control"].mean())
    # The machine's c_f: the single-core c_f scaled by how much slower a control runs with every core busy.
    machine = StepCosts(coarse_step=coarse_step, fine_control=ideal.fine_control * all_processes / one_process)
    machine_speedup = workers * one_process / all_processes
    size = ProblemSize(sequences=1, slices=slices, workers=workers)
    table: dict[str, dict[str, Any]] = {}
    rows = []
    for name, values in times.items():
        mean, half = mean_ci(values)
        if name.startswith("fine call") or "x 1 control" in name:
            rows.append([name, f"{1000 * mean:.2f} +- {1000 * half:.2f}", "", "", "", "", "", "", ""])
            table[name] = {"mean_s": mean, "ci95_s": half}
            continue
        ideal_time = predicted_time(name, size, ideal)
        effective_time = predicted_time(name, size, effective)
        speedup = serial_time / mean
        bound = serial_fine_wall_time(size, ideal) / ideal_time
        effective_bound = serial_time / effective_time
        machine_bound = serial_time / predicted_time(name, size, machine)
        table[name] = {
            "mean_s": mean,
            "ci95_s": half,
            "model_ideal_s": ideal_time,
            "model_effective_s": effective_time,
            "speedup": speedup,
            "bound": bound,
            "of_bound": speedup / bound,
            "effective_bound": effective_bound,
            "of_effective_bound": speedup / effective_bound,
            "machine_bound": machine_bound,
            "of_machine_bound": speedup / machine_bound,
        }
        rows.append(
            [
                name,
                f"{1000 * mean:.2f} +- {1000 * half:.2f}",
                f"{1000 * ideal_time:.2f}",
                f"{1000 * effective_time:.2f}",
                f"{speedup:.2f}x",
                f"{bound:.2f}x",
                f"{100 * speedup / bound:.0f}%",
                f"{100 * speedup / machine_bound:.0f}%",
                f"{100 * speedup / effective_bound:.0f}%",
            ]
        )
    parallel_efficiency = workers * ideal.fine_control / busy
    print(
        f"\none trajectory, box side push, N = {slices} x {DURATION} s, P = {workers}: "
        f"c_f = {1000 * ideal.fine_control:.2f} ms idle / {1000 * busy:.2f} ms with {workers} busy workers "
        f"(backend parallel speedup {parallel_efficiency:.2f} of {workers}; {workers} processes: "
        f"{machine_speedup:.2f} of {workers}); "
        f"c_c = {1e6 * coarse_step:.0f} us "
        f"(c_c/c_f = 1/{1 / ideal.ratio:.0f}; ISRR 1/228)"
    )
    print(
        format_table(
            [
                "variant",
                "measured ms",
                "model ms",
                "eff. model ms",
                "speedup",
                "bound",
                "of bound",
                "of machine bound",
                "of eff. bound",
            ],
            rows,
        )
    )
    chosen = {schedule: auto_choices.count(schedule) for schedule in sorted(set(auto_choices))}
    table["auto K=1"]["chosen"] = chosen
    print(f"auto K=1 chose: {chosen} (warm-up included)")
    k1 = table["parareal K=1"]
    k1["paired_speedup"] = paired = paired_ratio(times, "serial fine", "parareal K=1")
    k1["of_bound_paired"] = paired["median"] / k1["bound"]
    k1["meets_target"] = bool(k1["of_bound_paired"] >= TARGET_OF_BOUND)
    print(
        f"VERDICT N={slices}: K=1 speedup {paired['median']:.2f}x (median of {paired['rounds']} interleaved rounds, "
        f"range {paired['min']:.2f}-{paired['max']:.2f}) = {100 * k1['of_bound_paired']:.0f}% of the ideal bound "
        f"{k1['bound']:.2f}x (cost model, P = {workers} workers at one core's measured speed) -> "
        f"{'meets' if k1['meets_target'] else 'MISSES'} the {100 * TARGET_OF_BOUND:.0f}% target "
        f"(bound needed: {TARGET_OF_BOUND * k1['bound']:.2f}x)"
    )
    print(
        f"  for diagnosis: {100 * k1['of_machine_bound']:.0f}% of this run's machine bound "
        f"{k1['machine_bound']:.2f}x, {100 * k1['of_effective_bound']:.0f}% of the effective bound "
        f"{k1['effective_bound']:.2f}x"
    )
    return {
        "costs": {
            "coarse_step_s": coarse_step,
            "fine_control_idle_s": ideal.fine_control,
            "fine_control_busy_s": busy,
            "backend_parallel_speedup": parallel_efficiency,
            "fine_control_machine_s": machine.fine_control,
            "machine_parallel_speedup": machine_speedup,
        },
        "variants": table,
    }


def planner_batch(
    serial: PararealSolver, parallel: PararealSolver, workers: int, start: np.ndarray, repeats: int, seed: int
) -> dict[str, Any]:
    """Part 2: a batch of noisy sequences, Parareal vs sample-parallel vs auto."""
    rng = np.random.default_rng(seed)
    controls = constant_pushes([0.0], SPEED, BATCH_SLICES) + rng.normal(
        scale=EXPLORATION_STD, size=(BATCH, BATCH_SLICES, 2)
    )
    durations = np.full(BATCH_SLICES, DURATION)
    choices: dict[str, list[str]] = {"auto K=1": [], "auto K=2": []}

    def auto(k: int) -> None:
        result = parallel.solve(start, controls, durations, PararealOptions(iterations=k), schedule="auto")
        choices[f"auto K={k}"].append(result.schedule)

    variants: dict[str, Callable[[], object]] = {
        "serial fine": lambda: serial.predict_fine(start, controls, durations),
        "sample-parallel": lambda: parallel.predict_fine(start, controls, durations),
        "coarse": lambda: parallel.predict_coarse(start, controls, durations),
        "parareal K=1": lambda: parallel.solve(start, controls, durations, PararealOptions(iterations=1)),
        "parareal K=2": lambda: parallel.solve(start, controls, durations, PararealOptions(iterations=2)),
        "auto K=1": lambda: auto(1),
        "auto K=2": lambda: auto(2),
    }
    times = time_round_robin(variants, repeats)
    serial_time = float(times["serial fine"].mean())
    coarse_step = float(times["coarse"].mean()) / BATCH_SLICES
    size = ProblemSize(sequences=BATCH, slices=BATCH_SLICES, workers=workers)
    ideal = StepCosts(coarse_step=coarse_step, fine_control=serial_time / (BATCH * BATCH_SLICES))
    busy = float(times["sample-parallel"].mean()) / (BATCH_SLICES * -(-BATCH // workers))
    effective = StepCosts(coarse_step=coarse_step, fine_control=busy)
    rows, table = [], {}
    for name, values in times.items():
        mean, half = mean_ci(values)
        entry: dict[str, Any] = {
            "mean_s": mean,
            "ci95_s": half,
            "model_ideal_s": predicted_time(name, size, ideal),
            "model_effective_s": predicted_time(name, size, effective),
            "speedup_vs_serial": serial_time / mean,
        }
        chosen = ""
        if name in choices:
            picks = choices[name]
            entry["chosen"] = {schedule: picks.count(schedule) for schedule in sorted(set(picks))}
            chosen = ", ".join(f"{schedule} x{count}" for schedule, count in entry["chosen"].items())
        table[name] = entry
        rows.append(
            [
                name,
                f"{1000 * mean:.1f} +- {1000 * half:.1f}",
                f"{1000 * entry['model_ideal_s']:.1f}",
                f"{1000 * entry['model_effective_s']:.1f}",
                f"{serial_time / mean:.2f}x",
                chosen,
            ]
        )
    print(
        f"\nplanner batch: {BATCH} sequences x {BATCH_SLICES} x {DURATION} s, P = {workers}: "
        f"c_f = {1000 * ideal.fine_control:.2f} ms idle / {1000 * busy:.2f} ms busy, "
        f"c_c = {1e6 * coarse_step:.0f} us per batch step"
    )
    print(
        format_table(
            ["variant", "measured ms", "model ms", "eff. model ms", "speedup vs serial", "auto chose"], rows
        )
    )
    verdicts = {}
    for k in (1, 2):
        best_name = min(("sample-parallel", f"parareal K={k}"), key=lambda n: np.median(times[n]))
        paired = paired_ratio(times, f"auto K={k}", best_name)
        verdicts[f"K={k}"] = {
            "auto_over_best": paired,
            "best": best_name,
            "tolerance": AUTO_TOLERANCE,
            "within_tolerance": bool(paired["median"] <= 1.0 + AUTO_TOLERANCE),
        }
        print(
            f"VERDICT auto K={k}: {paired['median']:.3f} x the better of the two ({best_name}; median of "
            f"{paired['rounds']} interleaved rounds, range {paired['min']:.2f}-{paired['max']:.2f}); bound "
            f"{1 + AUTO_TOLERANCE:.2f} (fixed) -> {'OK' if verdicts[f'K={k}']['within_tolerance'] else 'SLOWER'}"
        )
    return {
        "costs": {
            "coarse_step_s": coarse_step,
            "fine_control_idle_s": ideal.fine_control,
            "fine_control_busy_s": busy,
        },
        "variants": table,
        "auto_verdicts": verdicts,
    }


def readme_figures(single: dict[str, dict]) -> dict[str, float]:
    """The README's figures per N of ``single`` (``{"N=4": single_trajectory(...), ...}``):
    ``k1_speedup_n<N>``, the K = 1 speedup (median over the rounds of serial / Parareal in the
    same round), ``k1_percent_of_ideal_bound_n<N>``, that median as % of the ideal bound (the
    verdict's figure), and ``k1_ideal_bound_n<N>``, the bound itself."""
    figures = {}
    for label, part in single.items():
        slices = label.removeprefix("N=")
        k1 = part["variants"]["parareal K=1"]
        figures[f"k1_speedup_n{slices}"] = k1["paired_speedup"]["median"]
        figures[f"k1_percent_of_ideal_bound_n{slices}"] = 100 * k1["of_bound_paired"]
        figures[f"k1_ideal_bound_n{slices}"] = k1["bound"]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = common_arguments(__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds (default 20, quick 5)")
    bench_reference.add_reference_argument(parser)
    args = parser.parse_args(argv)
    repeats = args.repeats or (5 if args.quick else 20)
    slice_counts = (4,) if args.quick else (4, 8)
    load_before = os.getloadavg()

    scene = paper_scene("box")
    fine_model = FineModel(scene)
    coarse = load_coarse(
        args.coarse, scene, learned_weights=args.learned_weights, fine_settings=fine_model.settings
    )
    projector = load_projector(scene, not args.no_projection)
    start = push_start_states(scene, np.array([SIDE_FRACTION * slider_half_width(scene)]))[0]
    serial = PararealSolver(coarse=coarse, fine=SerialBackend(fine_model), projector=projector)
    figure = Figure(figsize=(6 * (len(slice_counts) + 1), 4.5), layout="constrained")
    axes = figure.subplots(1, len(slice_counts) + 1)
    with make_fine_backend(args.backend, fine_model, args.workers) as backend:
        workers = backend.workers
        ceiling = MachineCeiling(workers)
        parallel = PararealSolver(coarse=coarse, fine=backend, projector=projector)
        print(
            f"cores present: {args.workers}; fine backend {args.backend} with {workers} workers; coarse = "
            f"{args.coarse}; {repeats} timed rounds per variant (mean +- 95% CI); load average "
            f"{load_before[0]:.2f}"
        )
        single = {}
        for axis, slices in zip(axes[:-1], slice_counts, strict=True):
            single[f"N={slices}"] = part = single_trajectory(
                serial, parallel, backend, start, slices, repeats, ceiling
            )
            names = [name for name in part["variants"] if name.startswith("parareal")]
            ks = np.arange(1, len(names) + 1)
            table = part["variants"]
            axis.errorbar(
                ks,
                [1000 * table[n]["mean_s"] for n in names],
                yerr=[1000 * table[n]["ci95_s"] for n in names],
                fmt="o",
                capsize=3,
                label="measured",
            )
            axis.plot(
                ks, [1000 * table[n]["model_ideal_s"] for n in names], "x--", label="cost model (idle c_f)"
            )
            axis.plot(
                ks, [1000 * table[n]["model_effective_s"] for n in names], "+:", label="cost model (busy c_f)"
            )
            axis.plot(
                ks,
                [1000 * table["serial fine"]["mean_s"] / table[n]["machine_bound"] for n in names],
                "s:",
                markerfacecolor="none",
                label="cost model (machine c_f)",
            )
            axis.axhline(1000 * table["serial fine"]["mean_s"], color="k", linestyle=":", label="serial fine")
            axis.set_xlabel("Parareal iterations K")
            axis.set_ylabel("wall time, ms")
            axis.set_title(f"one trajectory, N = {slices}, P = {workers}")
            axis.legend(fontsize=8)
        ceiling.close()
        batch = planner_batch(serial, parallel, workers, start, repeats, args.seed)
    axis = axes[-1]
    names = list(batch["variants"])
    x = np.arange(len(names))
    table = batch["variants"]
    axis.bar(
        x - 0.27,
        [1000 * table[n]["mean_s"] for n in names],
        0.27,
        yerr=[1000 * table[n]["ci95_s"] for n in names],
        capsize=3,
        label="measured",
    )
    axis.bar(x, [1000 * table[n]["model_ideal_s"] for n in names], 0.27, label="cost model (idle c_f)")
    axis.bar(
        x + 0.27, [1000 * table[n]["model_effective_s"] for n in names], 0.27, label="cost model (busy c_f)"
    )
    axis.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    axis.set_ylabel("wall time, ms")
    axis.set_title(f"batch of {BATCH}, N = {BATCH_SLICES}, P = {workers}")
    axis.legend(fontsize=8)
    load_after = os.getloadavg()
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (cores: {args.workers})")
    figure.suptitle("Parareal wall time vs serial fine and the cost model (ISRR Eq 4 generalised)")
    json_path, png_path = write_results(
        "parareal_speedup",
        {
            "protocol": {
                "speed_m_s": SPEED,
                "duration_s": DURATION,
                "repeats": repeats,
                "backend": args.backend,
                "workers": workers,
                "coarse": args.coarse,
                "projection": projector is not None,
                "batch": BATCH,
                "batch_slices": BATCH_SLICES,
                "exploration_std_m_s": EXPLORATION_STD,
                "quick": args.quick,
            },
            "load_average": {"before": load_before, "after": load_after},
            "single_trajectory": single,
            "batch": batch,
        },
        figure,
    )
    print(f"wrote {json_path} and {png_path}")
    bench_reference.write_figures(
        "parareal_speedup",
        readme_figures(single),
        reference=args.reference,
        load_before=[round(value, 2) for value in load_before],
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
