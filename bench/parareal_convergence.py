"""ISRR 2019 Fig 5: Parareal's RMS error along the trajectory, per iteration (log scale).

Four cases (ISRR Sec 4.1.1): cylinder and box, each pushed through its centre and near
its side, u = [25, 0] mm/s for 4 controls of 1 s (100 mm). For every iteration k the
error of the iterate x^k against the fine model (= Parareal K = N) is measured as the
RMS over the slider's full state (x, y, yaw, vx, vy, omega; the paper's mixed-unit
measure) at each time point, and over the whole trajectory; the position-only RMS (m)
is reported too. K = N is exactly 0 and drawn at the floor of the log axis (1e-10).

    python bench/parareal_convergence.py [--quick] [--coarse analytical|learned]

Writes bench/results/parareal_convergence[_<coarse>].{json,png}.
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib.figure import Figure

import parareal_common as common
from parapush.parareal import PararealOptions, PararealSolver
from parapush.physics.fine import FineModel
from parapush.scene import wrap_angle

SPEED = 0.025  # m/s
SLICES = 4
DURATION = 1.0  # s
SIDE_FRACTION = 0.75
"""A side push hits the slider at this fraction of its half width from the centre line."""
FLOOR = 1e-10
"""Log-axis floor: exact (zero) errors and anything below are drawn here."""


def slider_errors(iterates: np.ndarray, reference: np.ndarray, columns: np.ndarray, yaw_column: int) -> dict:
    """RMS errors of iterates (K+1, N+1, D) against reference (N+1, D) on ``columns``."""
    difference = iterates[:, :, columns] - reference[None, :, columns]
    difference[..., yaw_column] = wrap_angle(difference[..., yaw_column])
    return {
        "per_time_point": np.sqrt(np.mean(difference**2, axis=2)),  # (K+1, N+1)
        "trajectory": np.sqrt(np.mean(difference**2, axis=(1, 2))),  # (K+1,)
        "position_m": np.sqrt(np.mean(difference[..., :2] ** 2, axis=(1, 2))),  # (K+1,)
    }


def main(argv: list[str] | None = None) -> int:
    parser = common.common_arguments(__doc__.splitlines()[0])
    args = parser.parse_args(argv)
    cases = {}
    controls = common.constant_pushes([0.0], SPEED, SLICES)  # (1, N, 2)
    durations = np.full(SLICES, DURATION)
    for shape in ("cylinder", "box"):
        scene = common.paper_scene(shape)
        layout = scene.layout
        pose = layout.object_pose(0)
        twist = layout.object_twist(0)
        columns = np.r_[np.arange(pose.start, pose.stop), np.arange(twist.start, twist.stop)]
        fine_model = FineModel(scene)
        coarse = common.load_coarse(
            args.coarse, scene, learned_weights=args.learned_weights, fine_settings=fine_model.settings
        )
        projector = common.load_projector(scene, not args.no_projection)
        with common.make_fine_backend(args.backend, fine_model, args.workers) as backend:
            solver = PararealSolver(coarse=coarse, fine=backend, projector=projector)
            for where, offset in (("centre", 0.0), ("side", SIDE_FRACTION * common.slider_half_width(scene))):
                start = common.push_start_states(scene, np.array([offset]))
                result = solver.solve(
                    start, controls, durations, PararealOptions(iterations=SLICES, keep_iterates=True)
                )
                fine = solver.predict_fine(start, controls, durations).trajectories[0]
                assert result.iterates is not None
                errors = slider_errors(result.iterates[:, 0], fine, columns, yaw_column=2)
                cases[f"{shape} {where}"] = {
                    "offset_m": offset,
                    "per_time_point": errors["per_time_point"],
                    "trajectory_rms": errors["trajectory"],
                    "position_rms_m": errors["position_m"],
                    "update_position_m": result.update_position,
                    "update_angle_rad": result.update_angle,
                    "fine_final_slider_pose": fine[-1, pose],
                }

    headers = ["case"] + [f"k={k}" for k in range(SLICES + 1)]
    print(
        f"Parareal convergence (ISRR Fig 5 protocol): {SPEED * 1000:.0f} mm/s, {SLICES} x {DURATION} s, "
        f"coarse = {args.coarse}, projection = {not args.no_projection}"
    )
    print("RMS over the trajectory of the slider state (x, y, yaw, vx, vy, omega), mixed SI units:")
    print(common.format_table(headers, [[name, *map(float, c["trajectory_rms"])] for name, c in cases.items()]))
    print("RMS over the trajectory of the slider position, mm:")
    print(common.format_table(headers, [[name, *(1000.0 * c["position_rms_m"])] for name, c in cases.items()]))

    figure = Figure(figsize=(12, 7), layout="constrained")
    axes = figure.subplots(2, 3)
    flat = axes.ravel()
    for axis, (name, case) in zip(flat[:4], cases.items(), strict=True):
        for k, errors in enumerate(case["per_time_point"]):
            axis.semilogy(range(SLICES + 1), np.maximum(errors, FLOOR), marker="o", label=f"k = {k}")
        axis.set_title(name)
        axis.set_xlabel("time point n")
        axis.set_ylabel("RMS error, slider state")
        axis.set_ylim(FLOOR / 3, 1.0)
    flat[0].legend(fontsize=8)
    for name, case in cases.items():
        flat[4].semilogy(range(SLICES + 1), np.maximum(case["trajectory_rms"], FLOOR), marker="o", label=name)
        flat[5].semilogy(
            range(SLICES + 1), np.maximum(1000.0 * case["position_rms_m"], FLOOR), marker="o", label=name
        )
    flat[4].set_title("RMS along the whole trajectory")
    flat[5].set_title("position RMS along the trajectory, mm")
    for axis in flat[4:]:
        axis.set_xlabel("Parareal iteration k")
        axis.legend(fontsize=8)
    figure.suptitle(f"Parareal convergence, coarse = {args.coarse} (exact zeros drawn at {FLOOR:g})")
    suffix = "" if args.coarse == "analytical" else f"_{args.coarse}"
    protocol = {
        "speed_m_s": SPEED,
        "slices": SLICES,
        "duration_s": DURATION,
        "side_fraction": SIDE_FRACTION,
        "coarse": args.coarse,
        "projection": not args.no_projection,
        "backend": args.backend,
    }
    json_path, png_path = common.write_results(
        f"parareal_convergence{suffix}", {"protocol": protocol, "cases": cases}, figure
    )
    print(f"wrote {json_path} and {png_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
