"""ISRR 2019 Fig 6: measured wall time of Parareal K = 1..N and of serial fine, beside the
cost model, for one trajectory and for a planner batch of 20 sequences.

Part 1 (one trajectory, box side push, 25 mm/s, N x 1 s controls, N = 4 and 8): serial
fine on one worker, the coarse model alone, and Parareal K = 1..N on the fine backend
with P workers (default: the cores present), timed side by side (round robin, after a
warm-up). The cost model (parapush.parareal.schedule) predicts each time from c_f
(serial fine time / N) and c_c (coarse-only time / N, projection included); the
measured speedup is compared with the model's bound (target: >= 90 % of it).

Part 2 (planner batch: 20 noisy copies of the push, exploration std 0.01 m/s, N = 4):
serial fine, sample-parallel fine, Parareal K = 1, 2 and ``auto`` K = 1, 2 (the cost
model picks Parareal or sample-parallel from its running estimates). ``auto`` should
never be slower than the better of the two, within noise.

    python bench/parareal_speedup.py [--quick] [--repeats R]

Writes bench/results/parareal_speedup.{json,png}.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np
from matplotlib.figure import Figure

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


def mean_ci(values: np.ndarray) -> tuple[float, float]:
    """Mean and 95 % confidence half-width of the mean, s."""
    half = 1.96 * values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else float("nan")
    return float(values.mean()), float(half)


def main(argv: list[str] | None = None) -> int:
    parser = common_arguments(__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds (default 20, quick 3)")
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 20)
    slice_counts = (4,) if args.quick else (4, 8)

    scene = paper_scene("box")
    fine_model = FineModel(scene)
    coarse = load_coarse(args.coarse, scene, learned_weights=args.learned_weights)
    projector = load_projector(scene, not args.no_projection)
    start = push_start_states(scene, np.array([SIDE_FRACTION * slider_half_width(scene)]))
    serial = PararealSolver(coarse=coarse, fine=SerialBackend(fine_model), projector=projector)
    payload: dict[str, object] = {
        "protocol": {
            "speed_m_s": SPEED,
            "duration_s": DURATION,
            "repeats": repeats,
            "backend": args.backend,
            "workers": args.workers,
            "coarse": args.coarse,
            "projection": projector is not None,
            "batch": BATCH,
            "batch_slices": BATCH_SLICES,
            "exploration_std_m_s": EXPLORATION_STD,
        },
    }
    figure = Figure(figsize=(13, 4.5))
    axes = figure.subplots(1, len(slice_counts) + 1)

    with make_fine_backend(args.backend, fine_model, args.workers) as backend:
        workers = backend.workers
        parallel = PararealSolver(coarse=coarse, fine=backend, projector=projector)
        print(
            f"cores present: {args.workers}; fine backend {args.backend} with {workers} workers; "
            f"coarse = {args.coarse}; {repeats} timed rounds per variant (mean +- 95% CI)"
        )

        # -- part 1: one trajectory -----------------------------------------------------------------
        single: dict[str, object] = {}
        for plot_index, slices in enumerate(slice_counts):
            controls = constant_pushes([0.0], SPEED, slices)
            durations = np.full(slices, DURATION)
            variants: dict[str, Callable[[], object]] = {
                "serial fine": lambda c=controls, d=durations: serial.predict_fine(start, c, d),
                "coarse": lambda c=controls, d=durations: parallel.predict_coarse(start, c, d),
            }
            for k in range(1, slices + 1):
                variants[f"parareal K={k}"] = lambda c=controls, d=durations, k=k: parallel.solve(
                    start, c, d, PararealOptions(iterations=k)
                )
            variants["auto K=1"] = lambda c=controls, d=durations: parallel.solve(
                start, c, d, PararealOptions(iterations=1), schedule="auto"
            )
            times = time_round_robin(variants, repeats)
            serial_time = times["serial fine"].mean()
            costs = StepCosts(coarse_step=times["coarse"].mean() / slices, fine_control=serial_time / slices)
            size = ProblemSize(sequences=1, slices=slices, workers=workers)
            rows, table = [], {}
            for name, values in times.items():
                mean, half = mean_ci(values)
                if name.startswith("parareal"):
                    k = int(name.split("=")[1])
                    predicted = parareal_wall_time(size, k, costs)
                elif name == "coarse":
                    predicted = parareal_wall_time(size, 0, costs)
                elif name == "auto K=1":
                    predicted = min(
                        parareal_wall_time(size, 1, costs), sample_parallel_wall_time(size, costs)
                    )
                else:
                    predicted = serial_fine_wall_time(size, costs)
                speedup = serial_time / mean
                bound = serial_fine_wall_time(size, costs) / predicted
                table[name] = {
                    "mean_s": mean,
                    "ci95_s": half,
                    "predicted_s": predicted,
                    "speedup": speedup,
                    "model_speedup": bound,
                    "of_bound": speedup / bound,
                }
                rows.append(
                    [
                        name,
                        f"{1000 * mean:.2f} +- {1000 * half:.2f}",
                        f"{1000 * predicted:.2f}",
                        f"{speedup:.2f}x",
                        f"{bound:.2f}x",
                        f"{100 * speedup / bound:.0f}%",
                    ]
                )
            print(
                f"\none trajectory, box side push, N = {slices} x {DURATION} s; "
                f"c_f = {1000 * costs.fine_control:.2f} ms, c_c = {1e6 * costs.coarse_step:.1f} us "
                f"(c_c/c_f = 1/{1 / costs.ratio:.0f}; paper 1/228)"
            )
            print(
                format_table(
                    ["variant", "measured ms", "model ms", "speedup", "model bound", "of bound"], rows
                )
            )
            single[f"N={slices}"] = {
                "costs": {"coarse_step_s": costs.coarse_step, "fine_control_s": costs.fine_control},
                "variants": table,
            }
            axis = axes[plot_index]
            names = [name for name in times if name.startswith("parareal")]
            ks = np.arange(1, len(names) + 1)
            axis.errorbar(
                ks,
                [1000 * table[n]["mean_s"] for n in names],
                yerr=[1000 * table[n]["ci95_s"] for n in names],
                fmt="o",
                capsize=3,
                label="measured",
            )
            axis.plot(ks, [1000 * table[n]["predicted_s"] for n in names], "x--", label="cost model")
            axis.axhline(1000 * serial_time, color="k", linestyle=":", label="serial fine")
            axis.set_xlabel("Parareal iterations K")
            axis.set_ylabel("wall time, ms")
            axis.set_title(f"one trajectory, N = {slices}, P = {workers}")
            axis.legend(fontsize=8)
        payload["single_trajectory"] = single

        # -- part 2: planner batch ------------------------------------------------------------------
        rng = np.random.default_rng(args.seed)
        controls = constant_pushes([0.0], SPEED, BATCH_SLICES) + rng.normal(
            scale=EXPLORATION_STD, size=(BATCH, BATCH_SLICES, 2)
        )
        durations = np.full(BATCH_SLICES, DURATION)
        choices: dict[str, list[str]] = {"auto K=1": [], "auto K=2": []}

        def auto(k: int) -> None:
            result = parallel.solve(
                start, controls, durations, PararealOptions(iterations=k), schedule="auto"
            )
            choices[f"auto K={k}"].append(result.schedule)

        variants = {
            "serial fine": lambda: serial.predict_fine(start, controls, durations),
            "sample-parallel": lambda: parallel.predict_fine(start, controls, durations),
            "coarse": lambda: parallel.predict_coarse(start, controls, durations),
            "parareal K=1": lambda: parallel.solve(start, controls, durations, PararealOptions(iterations=1)),
            "parareal K=2": lambda: parallel.solve(start, controls, durations, PararealOptions(iterations=2)),
            "auto K=1": lambda: auto(1),
            "auto K=2": lambda: auto(2),
        }
        times = time_round_robin(variants, repeats)
        serial_time = times["serial fine"].mean()
        costs = StepCosts(
            coarse_step=times["coarse"].mean() / BATCH_SLICES,
            fine_control=serial_time / (BATCH * BATCH_SLICES),
        )
        size = ProblemSize(sequences=BATCH, slices=BATCH_SLICES, workers=workers)
        predicted = {
            "serial fine": serial_fine_wall_time(size, costs),
            "sample-parallel": sample_parallel_wall_time(size, costs),
            "coarse": parareal_wall_time(size, 0, costs),
            "parareal K=1": parareal_wall_time(size, 1, costs),
            "parareal K=2": parareal_wall_time(size, 2, costs),
        }
        predicted["auto K=1"] = min(predicted["parareal K=1"], predicted["sample-parallel"])
        predicted["auto K=2"] = min(predicted["parareal K=2"], predicted["sample-parallel"])
        rows, table = [], {}
        for name, values in times.items():
            mean, half = mean_ci(values)
            table[name] = {
                "mean_s": mean,
                "ci95_s": half,
                "predicted_s": predicted[name],
                "speedup_vs_serial": serial_time / mean,
            }
            chosen = ""
            if name in choices:
                picks = choices[name]
                chosen = ", ".join(f"{s} x{picks.count(s)}" for s in sorted(set(picks)))
                table[name]["chosen"] = {s: picks.count(s) for s in set(picks)}
            rows.append(
                [
                    name,
                    f"{1000 * mean:.1f} +- {1000 * half:.1f}",
                    f"{1000 * predicted[name]:.1f}",
                    f"{serial_time / mean:.2f}x",
                    chosen,
                ]
            )
        verdicts = {}
        for k in (1, 2):
            auto_mean, auto_half = mean_ci(times[f"auto K={k}"])
            best_name = min(("sample-parallel", f"parareal K={k}"), key=lambda n: times[n].mean())
            best_mean, best_half = mean_ci(times[best_name])
            ratio = auto_mean / best_mean
            noise = (auto_half + best_half) / best_mean
            verdicts[f"K={k}"] = {
                "auto_over_best": ratio,
                "best": best_name,
                "noise": noise,
                "within_noise": bool(ratio <= 1.0 + max(noise, 0.05)),
            }
        print(
            f"\nplanner batch: {BATCH} sequences x {BATCH_SLICES} x {DURATION} s, P = {workers}; "
            f"c_f = {1000 * costs.fine_control:.2f} ms, c_c = {1e6 * costs.coarse_step:.1f} us per batch step"
        )
        print(format_table(["variant", "measured ms", "model ms", "speedup vs serial", "auto chose"], rows))
        for key, verdict in verdicts.items():
            print(
                f"auto {key}: {verdict['auto_over_best']:.3f} x the better of the two ({verdict['best']}); "
                f"noise {100 * verdict['noise']:.1f}% -> {'OK' if verdict['within_noise'] else 'SLOWER'}"
            )
        payload["batch"] = {
            "costs": {"coarse_step_s": costs.coarse_step, "fine_control_s": costs.fine_control},
            "variants": table,
            "auto_verdicts": verdicts,
        }
        axis = axes[-1]
        names = list(times)
        x = np.arange(len(names))
        axis.bar(
            x - 0.2,
            [1000 * table[n]["mean_s"] for n in names],
            0.4,
            yerr=[1000 * table[n]["ci95_s"] for n in names],
            capsize=3,
            label="measured",
        )
        axis.bar(x + 0.2, [1000 * predicted[n] for n in names], 0.4, label="cost model")
        axis.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
        axis.set_ylabel("wall time, ms")
        axis.set_title(f"batch of {BATCH}, N = {BATCH_SLICES}, P = {workers}")
        axis.legend(fontsize=8)

    figure.suptitle("Parareal wall time vs serial fine and the cost model (ISRR Eq 4 generalised)")
    json_path, png_path = write_results("parareal_speedup", payload, figure)
    print(f"wrote {json_path} and {png_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
