"""Every figure the README quotes matches the committed reference file of the bench that measured it.

A reference file is ``bench/reference/<bench>.json``, written by ``python bench/<bench>.py
--reference`` (see ``bench/reference.py``): the figures with the date, machine, command and
load average of the run. Each row of :data:`FIGURES` is one README phrase with ``{}``
placeholders, the bench, and the figure names that fill them (``name[i]`` picks an item of a
list); the phrase, formatted with the reference's values, must stand in the README
(whitespace and line breaks collapsed). A missing reference file fails the test: re-run its
bench with ``--reference`` and commit the file.

Figures measured by a program or a test rather than a bench (the demo's ``isrr2019`` run, the
fault tests) come in a reference file that names its ``source`` and keeps the run's raw results
(``run``/``runs``, the metrics.json entries); its ``figures`` must be what
:data:`DERIVED_FIGURES` computes from those, so a changed raw result, a changed figure and a
changed README phrase each fail.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
REFERENCE = ROOT / "bench" / "reference"


def up_to_tens(value: float) -> str:
    """An upper bound as the README writes it: the next multiple of 10 above ``value``."""
    return f"{10 * (math.floor(value / 10) + 1):.0f}"


OBJECTS = ("cylinder", "box", "hetero_hammer", "hetero_patch")
"""bench/identification.py's objects, in the README's order."""

REAL_PUSH_KEYS = ("position_error_median_mm", "position_error_p90_mm", "yaw_error_median_deg", "yaw_error_p90_deg")
"""bench/real_pushes.py's statistics in the README's pooled table's order: median (p90) mm, median (p90) deg."""
REAL_PUSH_ORDER = ("position_error_median_mm", "yaw_error_median_deg", "position_error_p90_mm", "yaw_error_p90_deg")
"""The same in the per-object table's order: medians, then p90s."""
"""bench/identification.py's objects, in the README's order."""


FAMILY_KINDS = ("box_clutter", "box_obstacle", "crowded_8", "crowded_16", "heavy")
"""bench/realtime_mpc.py's scene families, in the README's order."""


@dataclass(frozen=True)
class Figure:
    """README ``phrase`` (``{}`` per figure), the ``bench`` that measured it, the figure ``names``,
    and how each is printed (``formats``: a format spec or a function, one per name)."""

    phrase: str
    bench: str
    names: tuple[str, ...]
    formats: tuple[str | Callable[[float], str], ...]


FIGURES = (
    Figure(
        "The `isrr2019` planner with the fine model on the same scenes and seeds (`python "
        "bench/realtime_mpc.py --families all --planners isrr2019-fine --reference`, {} min, load {}-{}; "
        "`bench/reference/realtime_mpc_families_isrr2019_fine.json`) succeeded {}/{}, {}/{}, {}/{}, {}/{} and "
        "{}/{}, re-planning in p50 {}, {}, {}, {} and {} s.",
        "realtime_mpc_families_isrr2019_fine",
        (
            "benchmark_minutes",
            "load_min",
            "load_max",
            "isrr2019_fine_box_clutter_successes",
            "isrr2019_fine_box_clutter_runs",
            "isrr2019_fine_box_obstacle_successes",
            "isrr2019_fine_box_obstacle_runs",
            "isrr2019_fine_crowded_8_successes",
            "isrr2019_fine_crowded_8_runs",
            "isrr2019_fine_crowded_16_successes",
            "isrr2019_fine_crowded_16_runs",
            "isrr2019_fine_heavy_successes",
            "isrr2019_fine_heavy_runs",
            "isrr2019_fine_box_clutter_replan_p50_s",
            "isrr2019_fine_box_obstacle_replan_p50_s",
            "isrr2019_fine_crowded_8_replan_p50_s",
            "isrr2019_fine_crowded_16_replan_p50_s",
            "isrr2019_fine_heavy_replan_p50_s",
        ),
        (".1f", ".1f", ".1f", *(".0f",) * 10, *(".1f",) * 5),
    ),
    Figure(
        "Measured on a lent 16-core machine (Intel Xeon, 16 fine workers, the families and seeds below, the two "
        "variants interleaved; `python bench/realtime_mpc.py --families all --planners realtime-first-control "
        "realtime-whole-horizon --reference`, {} min, load {}-{}; "
        "`bench/reference/realtime_mpc_families_realtime_first_control_realtime_whole_horizon.json`): corrected "
        "over the first control only, the planner succeeded {}/{} box clutter, {}/{} box obstacle, {}/{} 8-object, "
        "{}/{} 16-object and {}/{} heavy runs, re-planning in p50 {}, {}, {}, {} and {} s; corrected over the whole "
        "horizon (what the default picks there) {}/{}, {}/{}, {}/{}, {}/{} and {}/{}, in p50 {}, {}, {}, {} and {} s.",
        "realtime_mpc_families_realtime_first_control_realtime_whole_horizon",
        (
            "benchmark_minutes",
            "load_min",
            "load_max",
            "realtime_first_control_box_clutter_successes",
            "realtime_first_control_box_clutter_runs",
            "realtime_first_control_box_obstacle_successes",
            "realtime_first_control_box_obstacle_runs",
            "realtime_first_control_crowded_8_successes",
            "realtime_first_control_crowded_8_runs",
            "realtime_first_control_crowded_16_successes",
            "realtime_first_control_crowded_16_runs",
            "realtime_first_control_heavy_successes",
            "realtime_first_control_heavy_runs",
            "realtime_first_control_box_clutter_replan_p50_s",
            "realtime_first_control_box_obstacle_replan_p50_s",
            "realtime_first_control_crowded_8_replan_p50_s",
            "realtime_first_control_crowded_16_replan_p50_s",
            "realtime_first_control_heavy_replan_p50_s",
            "realtime_whole_horizon_box_clutter_successes",
            "realtime_whole_horizon_box_clutter_runs",
            "realtime_whole_horizon_box_obstacle_successes",
            "realtime_whole_horizon_box_obstacle_runs",
            "realtime_whole_horizon_crowded_8_successes",
            "realtime_whole_horizon_crowded_8_runs",
            "realtime_whole_horizon_crowded_16_successes",
            "realtime_whole_horizon_crowded_16_runs",
            "realtime_whole_horizon_heavy_successes",
            "realtime_whole_horizon_heavy_runs",
            "realtime_whole_horizon_box_clutter_replan_p50_s",
            "realtime_whole_horizon_box_obstacle_replan_p50_s",
            "realtime_whole_horizon_crowded_8_replan_p50_s",
            "realtime_whole_horizon_crowded_16_replan_p50_s",
            "realtime_whole_horizon_heavy_replan_p50_s",
        ),
        (".1f", ".1f", ".1f", *((*(".0f",) * 10, *(".2f",) * 5) * 2)),
    ),
    Figure(
        "Measured on the benchmark's families, drawn with the new seed 2611 (4 scenes each, seeds 0-2, on a 2-core "
        "Intel Xeon with the Huber-loss weights, `python bench/realtime_mpc.py --families all --planners realtime "
        "--reference`, {} min, load {}-{}; "
        "`bench/reference/realtime_mpc_families_realtime.json`): `realtime` succeeded {}/{} box clutter, "
        "{}/{} box obstacle, {}/{} 8-object, {}/{} 16-object and {}/{} heavy runs, re-planning in p50/p95 "
        "{}/{}, {}/{}, {}/{}, {}/{} and {}/{} s.",
        "realtime_mpc_families_realtime",
        (
            "benchmark_minutes",
            "load_min",
            "load_max",
            "realtime_box_clutter_successes",
            "realtime_box_clutter_runs",
            "realtime_box_obstacle_successes",
            "realtime_box_obstacle_runs",
            "realtime_crowded_8_successes",
            "realtime_crowded_8_runs",
            "realtime_crowded_16_successes",
            "realtime_crowded_16_runs",
            "realtime_heavy_successes",
            "realtime_heavy_runs",
            "realtime_box_clutter_replan_p50_s",
            "realtime_box_clutter_replan_p95_s",
            "realtime_box_obstacle_replan_p50_s",
            "realtime_box_obstacle_replan_p95_s",
            "realtime_crowded_8_replan_p50_s",
            "realtime_crowded_8_replan_p95_s",
            "realtime_crowded_16_replan_p50_s",
            "realtime_crowded_16_replan_p95_s",
            "realtime_heavy_replan_p50_s",
            "realtime_heavy_replan_p95_s",
        ),
        (".1f", ".1f", ".1f", *(".0f",) * 10, *(".2f",) * 10),
    ),
    Figure(
        "seeds 0-2: 36 runs per family; `python bench/realtime_mpc.py --families all --planners realtime "
        "--family-scene-seeds 5101 5102 5103 --reference`, {} min, load {}-{}; "
        "`bench/reference/realtime_mpc_families_realtime_scenes5101_5102_5103.json`): `realtime` succeeded {}/{} box "
        "clutter, {}/{} box obstacle, {}/{} 8-object, {}/{} 16-object and {}/{} heavy runs, re-planning in p50/p95 "
        "{}/{}, {}/{}, {}/{}, {}/{} and {}/{} s.",
        "realtime_mpc_families_realtime_scenes5101_5102_5103",
        (
            "benchmark_minutes",
            "load_min",
            "load_max",
            *(f"realtime_{kind}_{what}" for kind in FAMILY_KINDS for what in ("successes", "runs")),
            *(f"realtime_{kind}_replan_{p}_s" for kind in FAMILY_KINDS for p in ("p50", "p95")),
        ),
        (".1f", ".1f", ".1f", *(".0f",) * 10, *(".2f",) * 10),
    ),
    Figure(
        "ran {}x (N = 4) and {}x (N = 8) faster than serial fine, {} % and {} % of the cost model's ideal bound",
        "parareal_speedup",
        ("k1_speedup_n4", "k1_speedup_n8", "k1_percent_of_ideal_bound_n4", "k1_percent_of_ideal_bound_n8"),
        (".2f", ".2f", ".0f", ".0f"),
    ),
    Figure(
        "added {}-{} ms (1 x 4) and {}-{} ms (20 x 4) to the engine's time, of which all but {}-{} ms",
        "prediction_latency",
        (
            "ros_overhead_ms_1x4_min",
            "ros_overhead_ms_1x4_max",
            "ros_overhead_ms_20x4_min",
            "ros_overhead_ms_20x4_max",
            "rest_ms_min",
            "rest_ms_max",
        ),
        (".1f", ".1f", ".0f", ".0f", ".1f", ".1f"),
    ),
    Figure(
        "position error was {} mm with the scene file's parameters and {} mm after the search (the true object "
        "in the world's own physics: {} mm); the pusher friction came out at {} (true {})",
        "identification",
        (
            "held_out_error_mm_scene_parameters",
            "held_out_error_mm_identified",
            "held_out_error_mm_true_parameters",
            "pusher_friction_identified",
            "pusher_friction_true",
        ),
        (".1f", ".1f", ".1f", ".2f", ".2f"),
    ),
    Figure(
        "the grid's held-out error was {} / {} / {} / {} mm against the cross-entropy search's {} / {} / {} / {} mm "
        "(cylinder / box / hammer / patched box), {}x and {}x on the heterogeneous objects and {}x on the box, in {} s "
        "at most; the service's fine model with the rendered map: {} / {} / {} / {} mm",
        "identification",
        tuple(f"{name}_{method}_mm" for method in ("grid", "cem") for name in OBJECTS)
        + ("hetero_hammer_grid_to_cem", "hetero_patch_grid_to_cem", "box_grid_to_cem", "grid_seconds_max")
        + tuple(f"{name}_grid_on_fine_mm" for name in OBJECTS),
        (".1f",) * 8 + (".2f",) * 3 + (".0f",) + (".1f",) * 4,
    ),
    Figure(
        "Other pushes and other noise (`--seed 1`, `bench/reference/identification_seed1.json`): the grid's {} / {} / "
        "{} / {} mm against the search's {} / {} / {} / {} mm, {}x / {}x / {}x / {}x, in {} s at most",
        "identification_seed1",
        tuple(f"{name}_{method}_mm" for method in ("grid", "cem") for name in OBJECTS)
        + tuple(f"{name}_grid_to_cem" for name in OBJECTS) + ("grid_seconds_max",),
        (".1f",) * 8 + (".2f",) * 4 + (".0f",),
    ),
    Figure(
        "the search with the world's own physics in its fine model reached {} / {} / {} / {} mm, against which the "
        "grid is {}x / {}x / {}x / {}x",
        "identification",
        tuple(f"{name}_cem_world_physics_mm" for name in OBJECTS)
        + tuple(f"{name}_grid_to_cem_world_physics" for name in OBJECTS),
        (".1f",) * 4 + (".2f",) * 4,
    ),
    Figure(
        "tilt costs {} % more per 1 s control, median of three scenes, and moves the end of 4 s pushes by {} mm on a "
        "box and {} mm on a cylinder",
        "fine_model_defaults",
        ("tilt_cost_increase_percent_median", "tilt_box_median_end_difference_mm",
         "tilt_cylinder_median_end_difference_mm"),
        (".0f", ".1f", ".1f"),
    ),
    Figure(
        "(simulated: {} mm, {} deg; real: {} mm, {} deg)",
        "sim_push_noise",
        (
            "simulated_translation_std_mm",
            "simulated_rotation_std_deg",
            "real_translation_std_mm",
            "real_rotation_std_deg",
        ),
        (".2f", ".2f", ".2f", ".2f"),
    ),
    Figure(
        "Euler is ~{}x cheaper than RK4 and within ~{} mm of it after 4 s pushes; "
        "capsule colliders save <{}% but moved one box push by {} mm",
        "fine_model_defaults",
        (
            "rk4_over_euler_cost_median",
            "euler_median_end_difference_mm_max",
            "euler_capsule_cost_saving_percent_median",
            "euler_capsule_max_end_difference_mm",
        ),
        (".0f", ".1f", up_to_tens, ".0f"),
    ),
    Figure(
        "2 ms halves the CPU cost ({}x) but moves Table 1 sliders by {} mm p95 ({} mm max)",
        "fine_model_cost",
        ("euler_2ms_table1_cost_ratio", "euler_2ms_table1_position_p95_mm", "euler_2ms_table1_position_max_mm"),
        (".2f", ".1f", ".1f"),
    ),
    Figure(
        "it moves objects by {} mm p95, against {} mm for the reference itself started 1 um off",
        "fine_model_cost",
        ("euler_2ms_planner_position_p95_mm", "chaos_floor_planner_position_p95_mm"),
        (".1f", ".1f"),
    ),
    Figure(
        "5 ms and 10 ms cost {}x and {}x but miss by {} and {} mm p95 on Table 1",
        "fine_model_cost",
        (
            "euler_5ms_table1_cost_ratio",
            "euler_10ms_table1_cost_ratio",
            "euler_5ms_table1_position_p95_mm",
            "euler_10ms_table1_position_p95_mm",
        ),
        (".2f", ".2f", ".1f", ".0f"),
    ),
    Figure(
        "the fine model cost the same at 1 and 4 objects ({}x, {}x) and {}x / {}x / {}x less at 8 / 16 / 32 objects",
        "fidelity_management",
        ("speedup_1", "speedup_4", "speedup_8", "speedup_16", "speedup_32"),
        (".2f", ".2f", ".2f", ".2f", ".2f"),
    ),
    Figure(
        "mean {} mm at 16 objects, max {} mm at 32 objects where the floor's max is {} mm; "
        "{} segment(s) needed a re-run",
        "fidelity_management",
        ("mean_error_mm_16", "max_error_mm_32", "chaos_max_mm_32", "reruns"),
        (".2f", ".1f", ".1f", ".0f"),
    ),
    Figure(
        "(mean {} vs {} mm, {} vs {} pushes beyond 2 mm)",
        "fidelity_management",
        ("mean_error_mm_32", "chaos_mean_mm_32", "pushes_over_2mm_32", "chaos_pushes_over_2mm_32"),
        (".2f", ".2f", ".0f", ".0f"),
    ),
    Figure(
        "re-plan p50 {} s -> {} s, CPU {} s -> {} s per re-plan, success {}/{} -> {}/{}",
        "fidelity_management_mpc",
        ("replan_p50_s_full", "replan_p50_s_task_informed", "replan_cpu_s_full", "replan_cpu_s_task_informed",
         "successes_full", "runs_full", "successes_task_informed", "runs_task_informed"),
        (".2f", ".2f", ".2f", ".2f", ".0f", ".0f", ".0f", ".0f"),
    ),
    Figure(
        "Parareal K = 1 on `crowded_16` (21 sequences): {} s -> {} s",
        "fidelity_management",
        ("parareal_k1_full_s", "parareal_k1_managed_s"),
        (".2f", ".2f"),
    ),
    Figure(
        "the Ray backend took {}x the thread backend's wall time on the MPC batch of 84 one-second segments, "
        "with a per-call overhead of {} ms (threads: {} ms); c_f = {} ms, c_c = {} us",
        "fine_backends",
        ("ray_vs_threads_wall", "ray_call_overhead_ms", "threads_call_overhead_ms", "fine_control_ms",
         "coarse_step_us"),
        (".2f", ".2f", ".2f", ".2f", ".0f"),
    ),
    Figure(
        "| 2 | {} s | {} s | {}x | {}x | | 16 | {} s | {} s | {}x | {}x | | 64 | {} s | {} s | {}x | {}x | "
        "| 256 | {} s | {} s | {}x | {}x |",
        "fine_backends",
        tuple(f"{name}_{workers}" for workers in (2, 16, 64, 256)
              for name in ("parareal_s", "sample_parallel_s", "parareal_vs_sample_parallel", "speedup_vs_serial")),
        (".3f", ".3f", ".2f", ".1f") * 4,
    ),
    Figure(
        "Its `--quick` run on the 2 cores ({} min, load {}-{}; `bench/reference/stack_realtime_quick.json`): the "
        "default scene succeeded {}/{}, re-planned in p50/p95 {}/{} s, the pusher waited for plans {} % of the task "
        "(the first plan), {} late plans per run; the drawn scenes {}/{} and {}/{} (obstacle) and {}/{} and {}/{} "
        "(clutter), {}/{} in all with p50/p95 {}/{} s; the stack's nodes took {} CPU-s per task-s",
        "stack_realtime_quick",
        ("benchmark_minutes", "load_min", "load_max", "clutter_fig1_successes", "clutter_fig1_runs",
         "clutter_fig1_replan_p50_s", "clutter_fig1_replan_p95_s", "clutter_fig1_waiting_share",
         "clutter_fig1_late_plans_per_run",
         *(f"stack_{kind}_{index}_{count}" for kind, index in (("obstacle", 1), ("obstacle", 2), ("clutter", 1),
                                                                ("clutter", 2)) for count in ("successes", "runs")),
         "all_successes", "all_runs", "all_replan_p50_s", "all_replan_p95_s", "clutter_fig1_cpu_total"),
        (".1f", ".1f", ".1f", ".0f", ".0f", ".3f", ".3f", lambda value: f"{100 * value:.1f}", ".2f",
         *(".0f",) * 8, ".0f", ".0f", ".3f", ".3f", ".2f"),
    ),
    Figure(
        "The full run (10 goals per drawn scene; {} min, load {}-{}; `bench/reference/stack_realtime.json`): "
        "default {}/{}, p50/p95 {}/{} s, waiting {} %; obstacle {}/{} and {}/{}, clutter {}/{} and {}/{}",
        "stack_realtime",
        ("benchmark_minutes", "load_min", "load_max", "clutter_fig1_successes", "clutter_fig1_runs",
         "clutter_fig1_replan_p50_s", "clutter_fig1_replan_p95_s", "clutter_fig1_waiting_share",
         *(f"stack_{kind}_{count}" for kind in ("obstacle_1", "obstacle_2", "clutter_1", "clutter_2")
           for count in ("successes", "runs"))),
        (".1f", ".1f", ".1f", ".0f", ".0f", ".3f", ".3f", lambda value: f"{100 * value:.1f}", *(".0f",) * 8),
    ),
    Figure(
        "(`--cpu-hogs 2`, load {}-{}; `bench/reference/stack_realtime_overload.json`): {}/{} goals succeeded with no "
        "stale-state or lost-service failure, task {} s on average, re-plan p50/p95 {}/{} s, waiting {} %",
        "stack_realtime_overload",
        ("load_min", "load_max", "clutter_fig1_successes", "clutter_fig1_runs", "clutter_fig1_task_time_mean_s",
         "clutter_fig1_replan_p50_s", "clutter_fig1_replan_p95_s", "clutter_fig1_waiting_share"),
        (".1f", ".1f", ".0f", ".0f", ".1f", ".3f", ".3f", lambda value: f"{100 * value:.1f}"),
    ),
    Figure(
        "Measured (`python bench/robust_mpc.py --reference`, {} min, load {}-{}; `bench/reference/robust_mpc.json`; "
        "obstacle, clutter and box scenes of the generator seed 3030, seeds 0-4, every object's mass, support "
        "friction and centre of mass drawn per run): in the randomized world the nominal planner succeeded {}/{}, "
        "robust `mean` {}/{} and robust `cvar` {}/{} (in the nominal world {}/{}, {}/{}, {}/{}), re-planning in "
        "p50/p95 {}/{} s nominal and {}/{} s with `cvar` (M = 4; clutter alone {} s p50)",
        "robust_mpc",
        ("benchmark_minutes", "load_min", "load_max",
         *(f"{planner}_{world}_{count}" for world in ("randomized", "nominal")
           for planner in ("nominal", "robust_mean", "robust_cvar") for count in ("successes", "runs")),
         "nominal_randomized_replan_p50_s", "nominal_randomized_replan_p95_s", "robust_cvar_randomized_replan_p50_s",
         "robust_cvar_randomized_replan_p95_s", "robust_cvar_randomized_clutter_replan_p50_s"),
        (".1f", ".1f", ".1f", *(".0f",) * 12, ".3f", ".3f", ".3f", ".3f", ".3f"),
    ),
    Figure(
        "On scenes drawn with another seed, never looked at while this was built (`--scene-seed 5151 --reference`, "
        "{} min, load {}-{}; `bench/reference/robust_mpc_scenes5151.json`): nominal {}/{}, robust `mean` {}/{} and "
        "robust `cvar` {}/{} in the randomized world ({}/{}, {}/{}, {}/{} in the nominal world), `cvar` re-planning "
        "in p50/p95 {}/{} s (clutter alone {} s p50)",
        "robust_mpc_scenes5151",
        ("benchmark_minutes", "load_min", "load_max",
         *(f"{planner}_{world}_{count}" for world in ("randomized", "nominal")
           for planner in ("nominal", "robust_mean", "robust_cvar") for count in ("successes", "runs")),
         "robust_cvar_randomized_replan_p50_s", "robust_cvar_randomized_replan_p95_s",
         "robust_cvar_randomized_clutter_replan_p50_s"),
        (".1f", ".1f", ".1f", *(".0f",) * 12, ".3f", ".3f", ".3f"),
    ),
    Figure(
        "After 3 updates the centre of mass's spread was {} (x) and {} (y) of the prior's (target: at most half, "
        "met); its estimate moved towards the true one in {} % of the runs, {}x as far as needed",
        "robust_mpc",
        ("robust_cvar_randomized_spread_ratio_com_x", "robust_cvar_randomized_spread_ratio_com_y",
         "robust_cvar_randomized_com_direction_towards_share", "robust_cvar_randomized_com_moved_over_needed_median"),
        (".2f", ".2f", lambda value: f"{100 * value:.0f}", ".1f"),
    ),
    Figure(
        "`--quick` ({} min, load {}-{}; `bench/reference/realtime_mpc_quick.json`): `realtime` re-planned in "
        "p50/p95 {}/{} s (obstacle) and {}/{} s (clutter), task time / execution time {} and {}, and succeeded "
        "{}/{} obstacle and {}/{} clutter runs; `isrr2019` with the fine model {}/{} and {}/{}",
        "realtime_mpc_quick",
        (
            "benchmark_minutes",
            "load_min",
            "load_max",
            "realtime_obstacle_replan_p50_s",
            "realtime_obstacle_replan_p95_s",
            "realtime_clutter_replan_p50_s",
            "realtime_clutter_replan_p95_s",
            "realtime_obstacle_task_over_execution",
            "realtime_clutter_task_over_execution",
            "realtime_obstacle_successes",
            "realtime_obstacle_runs",
            "realtime_clutter_successes",
            "realtime_clutter_runs",
            "isrr2019_fine_obstacle_successes",
            "isrr2019_fine_obstacle_runs",
            "isrr2019_fine_clutter_successes",
            "isrr2019_fine_clutter_runs",
        ),
        (".1f", ".1f", ".1f", ".3f", ".3f", ".3f", ".3f", ".3f", ".3f", ".0f", ".0f", ".0f", ".0f", ".0f", ".0f",
         ".0f", ".0f"),
    ),
    Figure(
        "(a disc slid {} / {} / {} mm at 0 / 22.5 / 45 deg)",
        "fine_model_defaults",
        ("pyramidal_disc_stopping_mm[0]", "pyramidal_disc_stopping_mm[1]", "pyramidal_disc_stopping_mm[2]"),
        (".1f", ".1f", ".1f"),
    ),
    *(
        Figure(
            f"{label} | {{}} ({{}}) | {{}} ({{}}) |",
            "real_pushes",
            tuple(f"{model}_all_{key}" for key in REAL_PUSH_KEYS),
            (".2f",) * 4,
        )
        for model, label in (
            ("fine_default_before", "the fine model as it was (MuJoCo's own support contacts)"),
            ("fine", "the planner's fine model now (`support: torsion`)"),
            ("fine_world", "the simulated world (`support: points`, 8, with tilt and libccd)"),
            ("analytical", "the analytical coarse model (`analytical_rotation: limit_surface`)"),
            ("identified_k5", "the fine model identified from 5 pushes of the object, on its others"),
            ("no_motion", "the object does not move"),
        )
    ),
    *(
        Figure(
            f"| {label} | {pushes} | {{}} mm {{}} deg; {{}} mm {{}} deg | {{}} mm {{}} deg; {{}} mm {{}} deg | "
            "{} mm {} deg |",
            "real_pushes",
            (*(f"fine_{name}_{key}" for key in REAL_PUSH_ORDER),
             *(f"fine_world_{name}_{key}" for key in REAL_PUSH_ORDER),
             f"identified_k5_{name}_position_error_median_mm", f"identified_k5_{name}_yaw_error_median_deg"),
            (".2f",) * 10,
        )
        for name, label, pushes in (("rect1", "square `rect1`", 9), ("ellip1", "disc `ellip1`", 9),
                                    ("ellip3", "ellipse `ellip3`", 7), ("hex", "hexagon `hex`", 10),
                                    ("butter", "`butter` (non-convex)", 27))
    ),
    Figure(
        "the grid method (cell maps rendered into the fine model) was worse here, {} ({}) mm / {} ({}) deg pooled",
        "real_pushes",
        tuple(f"identified_grid_k5_all_{key}" for key in REAL_PUSH_KEYS),
        (".2f",) * 4,
    ),
    Figure(
        "`isrr2019` (`python -m parapush.programs.demo --planner isrr2019`, one run, load {}-{}; "
        "`bench/reference/demo_isrr2019.json`): {} s task, waited {} s ({} %), re-plan p50/p95 {}/{} s",
        "demo_isrr2019",
        ("load_min", "load_max", "task_time_s", "waiting_time_s", "waiting_percent", "replan_p50_s", "replan_p95_s"),
        (".1f", ".1f", ".1f", ".1f", ".0f", ".2f", ".2f"),
    ),
    Figure(
        "(`test/system/test_demo_faults.py`, its short scene, one run each; {} min, load {}-{}; "
        "`bench/reference/demo_faults.json`)",
        "demo_faults",
        ("benchmark_minutes", "load_min", "load_max"),
        (".1f", ".1f", ".1f"),
    ),
    Figure(
        "`prediction_service_killed` the MPC re-plans with a local engine, {};",
        "demo_faults",
        ("prediction_service_killed_outcome",),
        ("s",),
    ),
    Figure(
        "`pusher_untracked` (0.5 s) zero command {} ms after the estimator's last valid state, {};",
        "demo_faults",
        ("pusher_untracked_zero_after_last_valid_ms", "pusher_untracked_outcome"),
        (".0f", "s"),
    ),
    Figure(
        "`target_untracked` (3 s) the MPC pauses with the pusher stopped (zero command {} s after the loss: the sim "
        "profile's 0.3 s estimator timeout) and resumes, {};",
        "demo_faults",
        ("target_untracked_zero_after_loss_s", "target_untracked_outcome"),
        (".2f", "s"),
    ),
    Figure(
        "`natnet_loss` ({} %) {};",
        "demo_faults",
        ("natnet_loss_percent", "natnet_loss_outcome"),
        (".0f", "s"),
    ),
    Figure(
        "`gripper_fault` and `arm_fault` the executor latches a stop (gripper fault 0x08 / pusher does not follow) "
        "and the goal ends {} / {} with that reason, zero command {} ms / {} ms after the injection",
        "demo_faults",
        ("gripper_fault_outcome", "arm_fault_outcome", "gripper_fault_stop_ms", "arm_fault_stop_ms"),
        ("s", "s", ".0f", ".0f"),
    ),
)


def one_minute_loads(reference: dict) -> tuple[float, float]:
    """The 1-minute load average before and after the run."""
    return reference["load_average"]["before"][0], reference["load_average"]["after"][0]


def demo_run_figures(reference: dict) -> dict:
    """The README's figures of one demo run (``run``: its metrics.json)."""
    run = reference["run"]
    loads = one_minute_loads(reference)
    return {"load_min": min(loads), "load_max": max(loads), "task_time_s": run["task_time_s"],
            "waiting_time_s": run["waiting_time_s"], "waiting_percent": 100 * run["waiting_share"],
            "replan_p50_s": run["replan_p50_s"], "replan_p95_s": run["replan_p95_s"], "planner": run["planner"],
            "outcome": run["outcome"]}


def demo_fault_figures(reference: dict) -> dict:
    """The README's fault figures from test_demo_faults' runs (``runs``: each fault's metrics.json
    entries) and its printed measurement of the pusher-untracked stop (``printed``)."""
    runs = reference["runs"]
    loads = one_minute_loads(reference)
    lost = next(line for line in reference["printed"] if line.startswith("pusher lost:"))
    zero = re.search(r"zero arm command ([\d.]+) s after the last valid state", lost)
    loss = re.fullmatch(r"faults\.natnet_loss = ([\d.]+)", runs["natnet_loss"]["fault"]["detail"])
    figures = {
        "benchmark_minutes": reference["wall_seconds"] / 60.0, "load_min": min(loads), "load_max": max(loads),
        "pusher_untracked_zero_after_last_valid_ms": 1e3 * float(zero.group(1)),
        "target_untracked_zero_after_loss_s": runs["target_untracked"]["fault"]["first_zero_twist_after_s"],
        "natnet_loss_percent": 100 * float(loss.group(1)),
        "gripper_fault_stop_ms": 1e3 * runs["gripper_fault"]["fault"]["stop_twist_after_s"],
        "arm_fault_stop_ms": 1e3 * runs["arm_fault"]["fault"]["stop_twist_after_s"],
    }
    figures.update({f"{name}_outcome": run["outcome"] for name, run in runs.items()})
    return figures


DERIVED_FIGURES: dict[str, Callable[[dict], dict]] = {"demo_isrr2019": demo_run_figures,
                                                     "demo_faults": demo_fault_figures}
"""Reference files whose figures are computed from the raw results they keep, and how."""


def collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def figure_value(figures: dict, name: str) -> float:
    """``figures[name]``, or an item of a list figure for ``name[i]``."""
    match = re.fullmatch(r"(\w+)\[(\d+)\]", name)
    if match is None:
        return figures[name]
    return figures[match.group(1)][int(match.group(2))]


def expected_phrase(figure: Figure) -> str:
    path = REFERENCE / f"{figure.bench}.json"
    if not path.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing: run its bench with --reference (and --quick for a "
                    f"_quick file, the variant's inputs for a variant's: bench/reference.py names the files)")
    reference = json.loads(path.read_text())
    cells = []
    for name, form in zip(figure.names, figure.formats, strict=True):
        assert name.split("[")[0] in reference["figures"], f"{path.name}: no figure {name!r}"
        value = figure_value(reference["figures"], name)
        cells.append(form(value) if callable(form) else format(value, form))
    return collapse(figure.phrase.format(*cells))


@pytest.mark.parametrize("figure", FIGURES, ids=[f"{figure.bench}:{figure.names[0]}" for figure in FIGURES])
def test_readme_figure_matches_its_reference(figure: Figure) -> None:
    phrase = expected_phrase(figure)
    assert phrase in collapse(README.read_text()), f"README should say {phrase!r} (bench/reference/{figure.bench}.json)"


@pytest.mark.parametrize("path", sorted(REFERENCE.glob("*.json")), ids=lambda path: path.name)
def test_reference_files_say_where_they_came_from(path: Path) -> None:
    reference = json.loads(path.read_text())
    quick = reference.get("quick", False)
    variant = reference.get("variant", "")
    assert reference["bench"] + ("_quick" if quick else "") + (f"_{variant}" if variant else "") == path.stem
    if "source" in reference:  # measured by a program or a test, not a bench: see DERIVED_FIGURES
        source = reference["source"]
        assert (ROOT / source).is_file(), source
        program = source.removeprefix("src/").removesuffix(".py").replace("/", ".")
        assert reference["command"].startswith(
            f"python -m pytest {source}" if source.startswith("test/") else f"python -m {program}")
        assert re.fullmatch(r"[0-9a-f]{40}", reference["commit"]) and reference["wall_seconds"] > 0
        assert path.stem in DERIVED_FIGURES, f"{path.name}: no derivation of its figures"
    else:
        assert reference["command"].startswith(f"python bench/{reference['bench']}.py")
        assert "--reference" in reference["command"].split()
        assert ("--quick" in reference["command"].split()) == quick
        assert (ROOT / "bench" / f"{reference['bench']}.py").exists()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", reference["date"])
    assert reference["machine"]["nproc"] >= 1 and reference["machine"]["cpu_model"]
    assert len(reference["load_average"]["before"]) == 3 and len(reference["load_average"]["after"]) == 3


@pytest.mark.parametrize("stem", sorted(DERIVED_FIGURES))
def test_derived_figures_are_computed_from_the_kept_results(stem: str) -> None:
    """A program's or a test's reference: its figures are what its raw results give, so editing
    either alone fails (and the README phrases above are compared with the figures)."""
    reference = json.loads((REFERENCE / f"{stem}.json").read_text())
    assert reference["figures"] == DERIVED_FIGURES[stem](reference)


FAULTS = ("prediction_service_killed", "pusher_untracked", "target_untracked", "natnet_loss", "gripper_fault",
          "arm_fault")
"""Every ``demo --fault`` (parapush.programs.demo_faults.FAULTS, which needs ROS to import)."""


def test_the_fault_runs_are_complete_and_stopped_for_the_stated_reasons() -> None:
    """demo_faults.json holds one injected run of every fault; the latched stops name the README's
    reasons (gripper fault 0x08 / pusher does not follow), and the goal's reason is the executor's."""
    runs = json.loads((REFERENCE / "demo_faults.json").read_text())["runs"]
    assert tuple(runs) == FAULTS
    assert all(run["fault"]["name"] == name and run["fault"]["injected"] for name, run in runs.items())
    for name, named in (("gripper_fault", "gFLT=0x08"), ("arm_fault", "does not follow")):
        run = runs[name]
        assert named in run["failure_reason"], (name, run["failure_reason"])
        assert run["failure_reason"] == run["fault"]["executor_stop_reason"]


def test_every_reference_file_is_quoted() -> None:
    quoted = {figure.bench for figure in FIGURES}
    stray = [path.name for path in REFERENCE.glob("*.json") if path.stem not in quoted]
    assert not stray, f"reference files the README does not quote: {stray}"


SECTIONS_WITH_FIGURES = (
    ("## Benchmarks", "| command | what |"),
    ("Against it, over", "implicitfast costs as much as Euler"),
    ("**Fine model defaults**", "**Schedule `auto`**"),
    ("`result.sensitivity` says", "From a recorded run"),
    ("### The prediction service on a Ray cluster", "## Running several stacks"),
    ("Pooled over the five objects", "![Recorded and predicted paths"),
    ("| square `rect1` |", "The world meets every target"),
    ("say so. `isrr2019`", "`bash scripts/run demo --fault NAME`"),
    ("`bash scripts/run demo --fault NAME` injects", "A body that is not tracked"),
    ("Measured (`python bench/robust_mpc.py --reference`", "Against the issue's targets"),
)
"""README passages (start, end marker) whose measured figures must all be traced."""
MEASURED = re.compile(r"~?<?\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?(?:x| ?(?:%|ms|mm|deg))(?!\w)")


def test_every_measured_figure_in_those_passages_is_traced() -> None:
    """A number with a unit of measure (x, %, ms, mm, deg) in the passages above lies inside a
    phrase of :data:`FIGURES`, so a figure added to the README without a reference fails."""
    readme = collapse(README.read_text())
    covered = []
    for figure in FIGURES:
        phrase = expected_phrase(figure)
        start = readme.find(phrase)
        assert start >= 0, f"README should say {phrase!r}"
        covered.append((start, start + len(phrase)))
    untraced = []
    for begin_marker, end_marker in SECTIONS_WITH_FIGURES:
        begin = readme.index(begin_marker)
        end = readme.index(end_marker, begin)
        for match in MEASURED.finditer(readme, begin, end):
            if not any(low <= match.start() and match.end() <= high for low, high in covered):
                untraced.append(match.group())
    assert not untraced, f"README figures without a reference file: {untraced}"


def test_a_changed_figure_is_caught() -> None:
    """The comparison is not vacuous: a README that says a different number fails it."""
    figure = next(figure for figure in FIGURES if (REFERENCE / f"{figure.bench}.json").exists())
    phrase = expected_phrase(figure)
    changed = re.sub(r"\d", lambda digit: str((int(digit.group()) + 1) % 10), phrase, count=1)
    assert changed != phrase and changed not in collapse(README.read_text())


@pytest.mark.parametrize("fault", FAULTS)
def test_a_changed_fault_outcome_is_caught(fault: str) -> None:
    """Not vacuous for the fault outcomes either: a run that ended otherwise than the README says
    (the other of SUCCESS / ERROR) gives a phrase the README does not hold."""
    figure = next(figure for figure in FIGURES if f"{fault}_outcome" in figure.names)
    reference = json.loads((REFERENCE / "demo_faults.json").read_text())
    run = reference["runs"][fault]
    run["outcome"] = {"SUCCESS": "ERROR", "ERROR": "SUCCESS"}[run["outcome"]]
    figures = demo_fault_figures(reference)
    cells = [form(figures[name]) if callable(form) else format(figures[name], form)
             for name, form in zip(figure.names, figure.formats, strict=True)]
    changed = collapse(figure.phrase.format(*cells))
    assert changed != expected_phrase(figure) and changed not in collapse(README.read_text())
