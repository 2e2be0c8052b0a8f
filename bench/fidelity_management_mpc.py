"""Task-informed fidelity management in the MPC loop: 16-object runs with and without it.

The default planner (``realtime`` preset: multi-fidelity planning in the pipelined loop), in
the noisy :class:`parapush.sim.world.SimWorld` behind a virtual clock, as
``bench/realtime_mpc.py`` runs it (:func:`realtime_mpc.run_one`), on ``crowded_16`` and
``new_crowded_16`` (``bench/make_crowded_scenes.py``'s generator with a new seed: the first
from ``MPC_SCENE_SEED`` on whose goal region is clear, written to ``bench/scenes/``), seeds
0, 1, 2 (world noise and optimizer), with the fine model at ``fidelity`` full and
task_informed, run one after the other per scene and seed (load changes hit both alike).
Reported per scene and fidelity: successes, re-plan wall time (p50, p95), CPU time per
re-plan (all threads) and the fine segments re-run at full fidelity. The world always runs
at full fidelity.

    python bench/fidelity_management_mpc.py [--seeds 0 1 2] [--reference]

Writes bench/results/fidelity_management_mpc.{json,png}.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import yaml
from matplotlib.figure import Figure

import reference as bench_reference
from fine_model_cost import machine
from make_crowded_scenes import crowded_scene, scene_yaml
from parapush.planning.stack_planner import PlannerSources
from parapush.scene import Scene, load_scene, scene_from_dict
from parareal_common import format_table, write_results
from realtime_mpc import CONFIG, NEW_SCENES, planner_overrides, run_one

SCENES = Path(__file__).resolve().parent.parent / "config" / "scenes"

MPC_SCENE_SEED = 2027
"""First generator seed tried for ``new_crowded_16`` (the committed crowded scenes use 2026)."""
MPC_GOAL_CLEARANCE = 0.06
"""``new_crowded_16`` is the first scene from ``MPC_SCENE_SEED`` on with no other object's centre
within the goal radius plus this (m) of the goal centre (the task must not start failed)."""
MPC_SEEDS = (0, 1, 2)
MPC_FIDELITIES = ("full", "task_informed")


def mpc_scenes() -> dict[str, Scene]:
    """``crowded_16`` and ``new_crowded_16`` (written to bench/scenes/ when missing or different)."""
    for seed in itertools.count(MPC_SCENE_SEED):
        text = scene_yaml(crowded_scene(seed, 16), f"--seed {seed} (via bench/fidelity_management_mpc.py)",
                          name="new_crowded_16")
        scene = scene_from_dict(yaml.safe_load(text))
        centre, reach = np.array(scene.goal.center), scene.goal.radius + MPC_GOAL_CLEARANCE
        if all(np.hypot(*(np.array(spec.pose[:2]) - centre)) > reach for spec in scene.objects[1:]):
            break
    path = NEW_SCENES / "new_crowded_16.yaml"
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return {"crowded_16": load_scene(SCENES / "crowded_16.yaml"), "new_crowded_16": scene}


def mpc_summary(runs: list[dict]) -> list[dict]:
    """Per scene (and all) and fidelity: successes, re-plan times, fine segments re-run."""
    rows = []
    for scene in sorted({run["scene"] for run in runs}) + ["all"]:
        for fidelity in MPC_FIDELITIES:
            chosen = [run for run in runs if run["fidelity"] == fidelity and scene in ("all", run["scene"])]
            replans = np.concatenate([np.asarray(run["replan_times"], dtype=float) for run in chosen])
            plans = max(1, replans.size)
            rows.append({
                "scene": scene, "fidelity": fidelity, "runs": len(chosen),
                "successes": int(sum(run["success"] for run in chosen)),
                "replans": int(replans.size),
                "replan_p50_s": float(np.percentile(replans, 50)) if replans.size else math.nan,
                "replan_p95_s": float(np.percentile(replans, 95)) if replans.size else math.nan,
                "replan_cpu_mean_s": sum(run["replan_cpu_total"] for run in chosen) / plans,
                "controls_mean": float(np.mean([run["controls"] for run in chosen])),
                "final_distance_mean_m": float(np.mean([run["final_distance"] for run in chosen])),
                "fidelity_reruns": int(sum(run["fidelity_reruns"] or 0 for run in chosen)),
            })
    return rows


def mpc_figure(summary: list[dict]) -> Figure:
    drawing = Figure(figsize=(6, 4))
    axis = drawing.subplots()
    scenes = [row["scene"] for row in summary if row["fidelity"] == MPC_FIDELITIES[0]]
    positions = np.arange(len(scenes))
    for offset, fidelity in zip((-0.2, 0.2), MPC_FIDELITIES, strict=True):
        values = [row["replan_p50_s"] for row in summary if row["fidelity"] == fidelity]
        axis.bar(positions + offset, values, width=0.4, label=fidelity)
    axis.set_xticks(positions, scenes)
    axis.set_ylabel("re-plan wall time p50, s")
    axis.legend()
    return drawing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=list(MPC_SEEDS), help="world and optimizer seeds")
    bench_reference.add_reference_argument(parser)
    args = parser.parse_args(argv)
    seeds = args.seeds
    load_before = bench_reference.load_average()
    sources = PlannerSources.load(CONFIG)  # the MPC node's planner (config/mpc.yaml's preset)
    planner = sources.preset.name
    for fidelity in MPC_FIDELITIES:  # the only override: the fine model's fidelity
        print(f"fidelity {fidelity}: overrides {planner_overrides(planner, sources, fidelity=fidelity)}")
    options = argparse.Namespace(quick=False)
    started = machine()
    print(started["uptime_at_start"], flush=True)
    runs = []
    for name, scene in mpc_scenes().items():
        for seed in seeds:
            for fidelity in MPC_FIDELITIES:
                run = run_one(planner, name, scene, seed, sources, options, fidelity=fidelity)
                runs.append(run)
                print(f"{name} seed {seed} {fidelity:>13}: {run['outcome']} after {run['controls']} controls, "
                      f"re-plan p50 {np.median(run['replan_times']):.3f} s, reruns {run['fidelity_reruns']}",
                      flush=True)
    summary = mpc_summary(runs)
    headers = ["scene", "fidelity", "success", "re-plans", "p50 s", "p95 s", "CPU s/plan", "controls", "reruns"]
    table = format_table(headers, [[row["scene"], row["fidelity"], f"{row['successes']}/{row['runs']}",
                                    row["replans"], f"{row['replan_p50_s']:.3f}", f"{row['replan_p95_s']:.3f}",
                                    f"{row['replan_cpu_mean_s']:.3f}", f"{row['controls_mean']:.1f}",
                                    row["fidelity_reruns"]] for row in summary])
    print(table)
    ended = machine()
    overrides = {fidelity: planner_overrides(planner, sources, fidelity=fidelity) for fidelity in MPC_FIDELITIES}
    payload = {"planner": planner, "overrides": overrides, "seeds": seeds, "scene_seed": MPC_SCENE_SEED,
               "machine": {**started, "uptime_at_end": ended["uptime_at_start"]},
               "summary": summary, "runs": runs, "table": table}
    json_path, _ = write_results("fidelity_management_mpc", payload, mpc_figure(summary))
    overall = {row["fidelity"]: row for row in summary if row["scene"] == "all"}
    bench_reference.write_figures(
        "fidelity_management_mpc",
        {
            **{f"runs_{name}": overall[name]["runs"] for name in MPC_FIDELITIES},
            **{f"successes_{name}": overall[name]["successes"] for name in MPC_FIDELITIES},
            **{f"replan_p50_s_{name}": overall[name]["replan_p50_s"] for name in MPC_FIDELITIES},
            **{f"replan_p95_s_{name}": overall[name]["replan_p95_s"] for name in MPC_FIDELITIES},
            **{f"replan_cpu_s_{name}": overall[name]["replan_cpu_mean_s"] for name in MPC_FIDELITIES},
            "reruns": overall["task_informed"]["fidelity_reruns"],
        },
        reference=args.reference, load_before=load_before,
    )
    print(f"wrote {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
