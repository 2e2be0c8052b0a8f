"""Journal Fig 2-4: Parareal convergence with the learned vs the analytical coarse model.

Protocol (authors-code-facts.md, "Experiment protocol as coded"): the pusher starts at
the origin; slider 1 lies ahead at x = r_s + r_p + U(0, 0.1) m, y = U(-(r_p + r_s), r_p + r_s);
in the 4-slider scene every further slider is rejection-sampled near an already placed one
(surface gap U(0, 0.1) m, random bearing, no overlaps); identity orientations, zero
velocities. Each control is u_x ~ U(-0.1, 0.1), u_y ~ U(-sqrt(0.01 - u_x^2), +sqrt(...))
m/s held for 1 s; a sequence is redrawn until at least one control's pusher path reaches a
slider. For every sample, Parareal runs to K = N; the K = N iterate (= serial fine) is the
reference. Error of iterate k: per slider, RMS over the N + 1 time points of x and of y,
"xy error" = mean of the two (journal); averaged over samples. The 1-slider scene is run
with both coarse models (Fig 2; Fig 4 right for N = 8), the 4-slider scene with the learned
model only (Fig 3; Fig 4 left), as in the journal. The coarse/fine cost ratio is measured
on the same rows: fine (serial MuJoCo, one row after the other) against each coarse model
called on one row at a time and on the whole batch.

    python bench/learned_convergence.py [--samples 100] [--quick] [--backend threads]

Writes bench/results/learned_convergence.{json,png}.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
from matplotlib.figure import Figure

from parapush.learning.dataset import default_geometry, training_scene
from parapush.learning.gating import path_contacts
from parapush.parareal import PararealOptions, PararealSolver
from parapush.physics.fine import FineModel
from parapush.scene import Scene
from parareal_common import (
    available_cores,
    format_table,
    load_coarse,
    load_projector,
    make_fine_backend,
    write_results,
)

DURATION = 1.0  # s
MAX_SPEED = 0.1  # m/s
FIRST_GAP = 0.1  # m, slider 1 at most this far beyond touching, along x
NEIGHBOUR_GAP = 0.1  # m, surface gap of further sliders to an anchor slider
AXIS_RANGE = (1e-6, 0.04)  # m; the journal draws 1e-4..0.04, extended down so no iterate is cut off
COST_ROWS = 64


def sample_problem(scene: Scene, rng: np.random.Generator, slices: int) -> tuple[np.ndarray, np.ndarray]:
    """One initial state (D,) and control sequence (N, 2) of the protocol."""
    geometry = default_geometry(len(scene.objects))
    touch, slider = geometry.contact_distance, geometry.slider_radius
    count = len(scene.objects)
    positions = [np.array([touch + rng.uniform(0.0, FIRST_GAP), rng.uniform(-touch, touch)])]
    while len(positions) < count:
        anchor = positions[rng.integers(len(positions))]
        bearing = rng.uniform(-np.pi, np.pi)
        candidate = anchor + (2 * slider + rng.uniform(0.0, NEIGHBOUR_GAP)) * np.array([np.cos(bearing),
                                                                                        np.sin(bearing)])
        if np.linalg.norm(candidate) >= touch and all(np.linalg.norm(candidate - p) >= 2 * slider for p in positions):
            positions.append(candidate)
    poses = np.zeros((1, count, 3))
    poses[0, :, :2] = positions
    state = scene.layout.compose(np.zeros((1, 2)), poses)[0]
    while True:
        u_x = rng.uniform(-MAX_SPEED, MAX_SPEED, slices)
        limit = np.sqrt(np.maximum(MAX_SPEED**2 - u_x**2, 0.0))
        controls = np.stack([u_x, rng.uniform(-limit, limit)], axis=1)
        starts = np.vstack([np.zeros(2), np.cumsum(controls * DURATION, axis=0)[:-1]])
        touches = path_contacts(starts, controls * DURATION, np.repeat(poses[..., :2], slices, axis=0),
                                np.ones((slices, count), bool), touch)
        if touches.any():
            return state, controls


def xy_errors(iterates: np.ndarray, scene: Scene) -> np.ndarray:
    """(K+1, B, N+1, D) iterates -> (K+1, B, n) xy errors against the last iterate, m."""
    poses = scene.layout.poses(iterates)  # (K+1, B, N+1, n, 3)
    difference = poses[..., :2] - poses[-1:, ..., :2]
    rms = np.sqrt(np.mean(difference**2, axis=2))  # over time points: (K+1, B, n, 2)
    return rms.mean(axis=-1)


def cost_per_row(model, states: np.ndarray, controls: np.ndarray, durations: np.ndarray, single: bool,
                 repeats: int = 7) -> tuple[float, float]:
    """(best, median) seconds per row of ``model.propagate`` over ``repeats`` timings after
    one warm-up call, on the whole batch or one row per call (the machine is shared)."""
    model.propagate(states[:1], controls[:1], durations[:1])
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        if single:
            for row in range(states.shape[0]):
                model.propagate(states[row : row + 1], controls[row : row + 1], durations[row : row + 1])
        else:
            model.propagate(states, controls, durations)
        timings.append((time.perf_counter() - started) / states.shape[0])
    return min(timings), float(np.median(timings))


def run_case(scene: Scene, coarse_names: list[str], samples: int, slices: int, args: argparse.Namespace,
             rng: np.random.Generator) -> dict:
    problems = [sample_problem(scene, rng, slices) for _ in range(samples)]
    initial = np.stack([state for state, _ in problems])
    controls = np.stack([sequence for _, sequence in problems])
    durations = np.full(slices, DURATION)
    fine_model = FineModel(scene)
    projector = load_projector(scene, not args.no_projection)
    case: dict = {"sliders": len(scene.objects), "slices": slices, "samples": samples, "models": {}}
    with make_fine_backend(args.backend, fine_model, args.workers) as backend:
        for name in coarse_names:
            coarse = load_coarse(name, scene, fine_settings=fine_model.settings, resolve_overlaps=True)
            solver = PararealSolver(coarse=coarse, fine=backend, projector=projector)
            started = time.perf_counter()
            result = solver.solve(initial, controls, durations,
                                  PararealOptions(iterations=slices, keep_iterates=True))
            seconds = time.perf_counter() - started
            errors = xy_errors(result.iterates, scene)  # (K+1, B, n)
            final = scene.layout.poses(result.iterates[-1][:, -1])
            displacement = np.linalg.norm(final[..., :2] - scene.layout.poses(initial)[..., :2], axis=-1)
            case["models"][name] = {
                "xy_error_mean_m": errors.mean(axis=(1, 2)),  # (K+1,)
                "xy_error_per_slider_m": errors.mean(axis=1),  # (K+1, n)
                "xy_error_std_m": errors.mean(axis=2).std(axis=1),
                "object_displacement_mean_m": float(displacement.mean()),
                "object_displacement_std_m": float(displacement.std()),
                "parareal_seconds": seconds,
                "time_coarse_s": result.time_coarse,
                "time_fine_s": result.time_fine,
            }
    # cost ratio on the rows of the first slices (mostly in contact)
    rows = min(COST_ROWS, samples * slices)
    flat_states = np.repeat(initial, slices, axis=0)[:rows]
    flat_controls = controls.reshape(-1, 2)[:rows]
    flat_durations = np.full(rows, DURATION)
    fine_cost, _ = cost_per_row(fine_model, flat_states, flat_controls, flat_durations, single=False, repeats=1)
    case["cost"] = {"fine_s_per_row": fine_cost}
    for name in coarse_names:
        coarse = load_coarse(name, scene, fine_settings=fine_model.settings, resolve_overlaps=True)
        single, single_median = cost_per_row(coarse, flat_states, flat_controls, flat_durations, single=True)
        batched, batched_median = cost_per_row(coarse, flat_states, flat_controls, flat_durations, single=False)
        case["cost"][name] = {"s_per_row_single": single, "s_per_row_batched": batched,
                              "s_per_row_single_median": single_median, "s_per_row_batched_median": batched_median,
                              "fine_over_coarse_single": fine_cost / single,
                              "fine_over_coarse_batched": fine_cost / batched}
    return case


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=None, help="sequences per case (default 100, quick 8)")
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--backend", default="threads", choices=("serial", "threads", "processes"))
    parser.add_argument("--workers", type=int, default=available_cores())
    parser.add_argument("--no-projection", action="store_true", help="disable the feasibility projection")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    samples = args.samples or (8 if args.quick else 100)
    rng = np.random.default_rng(args.seed)
    geometry = default_geometry(4)
    cases = {}
    for slices in (4, 8):
        cases[f"1 slider, N={slices}"] = run_case(training_scene(geometry, 1), ["learned", "analytical"], samples,
                                                  slices, args, rng)
        cases[f"4 sliders, N={slices}"] = run_case(training_scene(geometry, 4), ["learned"], samples, slices, args,
                                                   rng)

    print(f"Parareal convergence (journal Fig 2-4 protocol), {samples} samples per case, 1 s controls, "
          f"projection = {not args.no_projection}")
    print("mean xy error (m) of iterate k against K = N, averaged over samples and sliders:")
    rows = []
    for name, case in cases.items():
        for model, values in case["models"].items():
            rows.append([name, model, *[f"{value:.2e}" for value in values["xy_error_mean_m"][:-1]],
                         f"{1e3 * values['object_displacement_mean_m']:.0f}+-"
                         f"{1e3 * values['object_displacement_std_m']:.0f}"])
    width = max(len(row) for row in rows)
    headers = ["case", "coarse"] + [f"k={k}" for k in range(width - 3)] + ["displ. mm"]
    rows = [row[:-1] + [""] * (width - len(row)) + row[-1:] for row in rows]
    print(format_table(headers, rows))
    print("cost per single-step prediction (one row; coarse: best and median of 7 timings), fine / coarse (best):")
    cost_rows = []
    for name, case in cases.items():
        for model in case["models"]:
            cost = case["cost"][model]
            cost_rows.append([name, model, f"{1e3 * case['cost']['fine_s_per_row']:.2f}",
                              f"{1e6 * cost['s_per_row_single']:.0f} / {1e6 * cost['s_per_row_single_median']:.0f}",
                              f"{1e6 * cost['s_per_row_batched']:.1f} / {1e6 * cost['s_per_row_batched_median']:.1f}",
                              f"{cost['fine_over_coarse_single']:.0f}", f"{cost['fine_over_coarse_batched']:.0f}"])
    print(format_table(["case", "coarse", "fine ms", "coarse us (1 row)", "coarse us (batch)", "ratio 1 row",
                        "ratio batch"], cost_rows))

    figure = Figure(figsize=(13, 8), layout="constrained")
    axes = figure.subplots(2, 2)
    for axis, (name, case) in zip(axes.T.ravel(), cases.items(), strict=True):
        slices = case["slices"]
        iterations = np.arange(slices)  # K = N is exactly 0 and cannot be drawn on a log axis
        for model, values in case["models"].items():
            if case["sliders"] == 1:
                axis.semilogy(iterations, values["xy_error_mean_m"][:-1], marker="o", label=f"{model} coarse")
            else:
                for slider in range(case["sliders"]):
                    axis.semilogy(iterations, values["xy_error_per_slider_m"][:-1, slider], marker="o",
                                  label=f"{model}, slider {slider + 1}")
        axis.set_ylim(*AXIS_RANGE)
        axis.set_xticks(range(slices + 1))
        axis.set_xlabel("Parareal iteration k (k = N: error 0)")
        axis.set_ylabel("xy RMS error, m")
        axis.set_title(name)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle(f"Parareal convergence, learned vs analytical coarse model ({samples} samples per case)")
    json_path, png_path = write_results(
        "learned_convergence",
        {
            "protocol": {"samples": samples, "duration_s": DURATION, "max_speed_m_s": MAX_SPEED,
                         "first_gap_m": FIRST_GAP, "neighbour_gap_m": NEIGHBOUR_GAP,
                         "projection": not args.no_projection, "backend": args.backend, "workers": args.workers,
                         "seed": args.seed, "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")},
            "cases": cases,
        },
        figure,
    )
    print(f"wrote {json_path} and {png_path}")
    return 0 if all(math.isfinite(v) for c in cases.values() for m in c["models"].values()
                    for v in m["xy_error_mean_m"]) else 1


if __name__ == "__main__":
    sys.exit(main())
