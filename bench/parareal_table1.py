"""ISRR 2019 Table 1: open-loop pushing, coarse and Parareal K = 1..4 against the fine model.

Protocol (ISRR Sec 4.2): 100 random initial states (the pusher's offset perpendicular to
the push sampled uniformly within the slider's edges) x 3 fixed control sequences
(alpha in {0, 15, -15} deg, 25 mm/s, 4 controls of 1.5 s: 150 mm of pusher travel).
For each model, the mean over the 300 trajectories of the final slider translation and
rotation difference from the fine model (MuJoCo) is printed beside the paper's numbers
and the real-world pushing noise of the push dataset (Yu et al. 2016).

    python bench/parareal_table1.py [--quick] [--shape box|cylinder] [--coarse analytical|learned|general]

Writes bench/results/parareal_table1[_<shape>_<coarse>].{json,png}.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from matplotlib.figure import Figure

import parareal_common as common
from parapush.parareal import PararealOptions
from parapush.scene import Scene, wrap_angle

ANGLES_DEG = (0.0, 15.0, -15.0)
SPEED = 0.025  # m/s
SLICES = 4
DURATION = 1.5  # s
PAPER_TABLE1 = {  # ISRR 2019 Table 1: mean translation (mm) and rotation (deg) difference from fine
    "coarse": (62.67, 17.63),
    "parareal-1": (28.43, 6.30),
    "parareal-2": (6.39, 3.82),
    "parareal-3": (2.47, 0.79),
    "parareal-4": (0.00, 0.00),
}
PUSH_DATASET_STD = (8.10, 4.20)  # Yu et al. 2016 via ISRR Table 1: translation mm, rotation deg


def table1_pushes(scene: Scene, states_count: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The protocol's trajectories on ``scene`` (a :func:`paper_scene`), state-major.

    Args:
        scene: one slider at the origin.
        states_count: S, initial states (pusher offsets drawn uniformly within the slider's edges).
        seed: seed of the offsets' generator.
    Returns:
        initial states (3S, D), controls (3S, N, 2) m/s, durations (N,) s, and the push
        angle of each row (3S,) deg.
    """
    rng = np.random.default_rng(seed)
    edge = common.slider_half_width(scene)
    offsets = rng.uniform(-edge, edge, size=states_count)
    starts = common.push_start_states(scene, offsets)  # (S, D)
    sequences = common.constant_pushes(ANGLES_DEG, SPEED, SLICES)  # (3, N, 2)
    initial = np.repeat(starts, len(ANGLES_DEG), axis=0)  # (3S, D): state-major
    controls = np.tile(sequences, (states_count, 1, 1))
    durations = np.full(SLICES, DURATION)
    angle_of_row = np.tile(np.asarray(ANGLES_DEG), states_count)
    return initial, controls, durations, angle_of_row


def main(argv: list[str] | None = None) -> int:
    parser = common.common_arguments(__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=None, help="initial states (default 100, quick 10)")
    parser.add_argument(
        "--shape",
        default="box",
        choices=("box", "cylinder"),
        help="slider shape (default box, as in the paper)",
    )
    args = parser.parse_args(argv)
    states_count = args.states or (10 if args.quick else 100)

    scene = common.paper_scene(args.shape)
    layout = scene.layout
    initial, controls, durations, angle_of_row = table1_pushes(scene, states_count, args.seed)

    with common.solver_from_arguments(args, scene) as solver:
        started = time.perf_counter()
        parareal = solver.solve(
            initial, controls, durations, PararealOptions(iterations=SLICES, keep_iterates=True)
        )
        time_parareal = time.perf_counter() - started
        started = time.perf_counter()
        fine = solver.predict_fine(initial, controls, durations)
        time_fine = time.perf_counter() - started
    assert parareal.iterates is not None
    # K = N must be the fine solution: a check of the implementation on real physics
    exactness = float(np.max(np.abs(parareal.iterates[-1] - fine.trajectories)))

    slider = layout.object_pose(0)
    reference = fine.trajectories[:, -1, slider]  # (B, 3) final slider pose
    rows, results = [], {}
    for k in range(SLICES + 1):
        name = "coarse" if k == 0 else f"parareal-{k}"
        final = parareal.iterates[k][:, -1, slider]
        translation = 1000.0 * np.hypot(*(final[:, :2] - reference[:, :2]).T)  # mm
        rotation = np.rad2deg(np.abs(wrap_angle(final[:, 2] - reference[:, 2])))  # deg
        per_angle = {
            f"{angle:+.0f}": {
                "translation_mm": float(translation[angle_of_row == angle].mean()),
                "rotation_deg": float(rotation[angle_of_row == angle].mean()),
            }
            for angle in ANGLES_DEG
        }
        results[name] = {
            "mean_translation_mm": float(translation.mean()),
            "mean_rotation_deg": float(rotation.mean()),
            "rms_translation_mm": float(np.sqrt(np.mean(translation**2))),
            "rms_rotation_deg": float(np.sqrt(np.mean(rotation**2))),
            "median_translation_mm": float(np.median(translation)),
            "per_angle": per_angle,
            "paper_mean_translation_mm": PAPER_TABLE1[name][0],
            "paper_mean_rotation_deg": PAPER_TABLE1[name][1],
        }
        r = results[name]
        rows.append(
            [
                name,
                r["mean_translation_mm"],
                r["mean_rotation_deg"],
                r["rms_translation_mm"],
                r["rms_rotation_deg"],
                f"{PAPER_TABLE1[name][0]:.2f}",
                f"{PAPER_TABLE1[name][1]:.2f}",
            ]
        )
    rows.append(
        ["push dataset std", "-", "-", "-", "-", f"{PUSH_DATASET_STD[0]:.2f}", f"{PUSH_DATASET_STD[1]:.2f}"]
    )
    fine_travel = 1000.0 * np.hypot(*(reference[:, :2] - initial[:, slider][:, :2]).T)

    print(
        f"ISRR Table 1 protocol: {states_count} initial states x {len(ANGLES_DEG)} pushes "
        f"({len(initial)} trajectories), {args.shape} slider, coarse = {args.coarse}, "
        f"projection = {not args.no_projection}, backend = {args.backend} x {solver.workers}"
    )
    print(
        f"pushes: {SPEED * 1000:.0f} mm/s at {ANGLES_DEG} deg, {SLICES} x {DURATION} s; "
        f"fine slider travel mean {fine_travel.mean():.1f} mm (min {fine_travel.min():.1f})"
    )
    print(
        common.format_table(
            [
                "model",
                "ours mean trans mm",
                "ours mean rot deg",
                "ours rms trans mm",
                "ours rms rot deg",
                "paper trans mm",
                "paper rot deg",
            ],
            rows,
        )
    )
    print(
        f"K = N vs fine: max |difference| = {exactness:.3g} (must be ~0); "
        f"wall time: Parareal K=0..4 {time_parareal:.2f} s, fine {time_fine:.2f} s"
    )

    figure = Figure(figsize=(11, 4), layout="constrained")
    axes = figure.subplots(1, 2)
    labels = list(results)
    x = np.arange(len(labels))
    for axis, key, paper_index, unit, noise in (
        (axes[0], "mean_translation_mm", 0, "mm", PUSH_DATASET_STD[0]),
        (axes[1], "mean_rotation_deg", 1, "deg", PUSH_DATASET_STD[1]),
    ):
        ours = [max(results[name][key], 1e-6) for name in labels]
        paper = [max(PAPER_TABLE1[name][paper_index], 1e-6) for name in labels]
        axis.bar(x - 0.2, ours, 0.4, label=f"ours ({args.shape}, {args.coarse})")
        axis.bar(x + 0.2, paper, 0.4, label="ISRR 2019 Table 1")
        axis.axhline(noise, color="k", linestyle="--", label="push dataset std")
        axis.set_yscale("log")
        axis.set_xticks(x, labels, rotation=20)
        axis.set_ylabel(f"mean final difference from fine, {unit}")
        axis.legend(fontsize=8)
    figure.suptitle(f"Open-loop pushing, {len(initial)} trajectories (values <= 1e-6 drawn at 1e-6)")
    suffix = "" if (args.shape, args.coarse) == ("box", "analytical") else f"_{args.shape}_{args.coarse}"
    json_path, png_path = common.write_results(
        f"parareal_table1{suffix}",
        {
            "protocol": {
                "states": states_count,
                "angles_deg": ANGLES_DEG,
                "speed_m_s": SPEED,
                "slices": SLICES,
                "duration_s": DURATION,
                "shape": args.shape,
                "coarse": args.coarse,
                "projection": not args.no_projection,
                "backend": args.backend,
                "workers": solver.workers,
                "seed": args.seed,
                "quick": args.quick,
            },
            "results": results,
            "push_dataset_std": {"translation_mm": PUSH_DATASET_STD[0], "rotation_deg": PUSH_DATASET_STD[1]},
            "k_equals_n_max_abs_difference": exactness,
            "fine_slider_travel_mm": {"mean": float(fine_travel.mean()), "min": float(fine_travel.min())},
            "wall_time_s": {"parareal_k0_to_4": time_parareal, "fine": time_fine},
        },
        figure,
    )
    print(f"wrote {json_path} and {png_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
