"""Push planning benchmark: ISRR 2019 Fig 7 and journal Sec 6.3.2 in simulation, the fine model as the world.

Every scene is planned and executed (MPC: optimize, execute the first control, observe,
re-plan; :class:`parapush.planning.MpcLoop`) with each predictive model:

- ``coarse``: the analytical coarse model alone;
- ``parareal-1``, ``parareal-2``, ``parareal-3``: Parareal with K = 1, 2, 3 iterations
  (analytical coarse model, feasibility projection). The solver's schedule is FORCED to
  ``"parareal"``: with ``"auto"`` it would pick sample-parallel fine prediction on this
  2-core machine (where it is as fast; design notes), and "Parareal" would be the fine
  model under another name;
- ``fine``: the fine MuJoCo model (serial in time, parallel over the sampled sequences);
- ``parareal-learned-1``: Parareal K = 1 with the learned coarse model (journal), for the
  clutter scenes only (the network was trained without obstacles), if its weights
  (``parapush/data/learned_coarse_model.npz``) exist; otherwise a note is printed.

The world is :class:`parapush.sim.model_world.ModelWorld`: each executed control is run by
the fine model, so a fine plan is executed exactly as predicted, and coarse or Parareal
plans meet the fine physics. Execution time is SIMULATED (the sum of the control
durations, 1 s each, as a robot would take); planning time is MEASURED wall time of the
optimizer. Total task time = planning + execution (ISRR Fig 7). A run ends on success
(target centre in the goal), failure (target or pusher touches the obstacle, an object
leaves the table, another object enters the goal; termination rules of
:mod:`parapush.planning.termination`) or after ``--max-controls`` controls (ISRR: 20).

Construction: each run's planner is built as the MPC node builds its own
(:func:`parapush.planning.stack_planner.build_planner` from ``config/planner.yaml``,
``config/model.yaml`` and ``config/mpc.yaml``) with the overrides of :func:`model_overrides`
(stored in every run's record as ``overrides``): the ``isrr2019`` preset with the run's model.

Settings: ``config/planner.yaml`` (ISRR: S = 20 samples, variance 1e-4, N = 4 controls of
1 s; cost weights) except the optimizer iterations per re-plan. The default is
``--max-iterations 3`` for EVERY model (the planner's own default is 10). Why: measured
here (2 cores shared with other engineers' jobs), one optimizer iteration costs ~0.5-1 s
of fine prediction for one object and ~1.5-3 s for four objects (CPU, more wall time
when the machine is loaded); Parareal K costs about 1, 1.75, 2.25 times the fine work for
K = 1, 2, 3 (N = 4: iteration k recomputes the slices k..N-1), and on 2 cores Parareal
cannot beat sample-parallel fine (the sampled sequences already fill both cores). With
10 iterations 8 scenes x 5-6 models would take several hours; with 3 the full benchmark
took 40 min here (two chunks of ~20 min, load average 4-10 on 2 cores); with 2 the fine
planner already failed isrr_obstacle_1 (20 controls, 14 cm short). Fewer iterations
make every planner weaker, the same way for every model, so the comparison is fair, but
absolute success rates are those of a lightly optimized planner (fine: 3/5 obstacle
scenes at seed 0, 2/5 at seed 1; 13 controls with 10 iterations on isrr_obstacle).
The optimizer is seeded (``--seed``) identically for every run; with a fixed iteration
count and the deterministic fine world a run depends only on the model's predictions
(one run per scene and model: a success difference of one or two scenes is within the
chaos of contact and sampling, compare seeds). ``--time-budget`` instead caps each
re-plan's wall time (then runs depend on the machine's load).

Timing caveat: planning time is wall time on a shared machine; the table also gives the
prediction CPU time per step (all threads), which the load distorts much less. Two
diagnostics (not timed) explain failures: ``1-step err``, the target's predicted position
after the executed control vs the world's (0 for fine and Parareal: x_1 is exact), and
``x_N err``, the target at the end of the chosen plan's horizon as the model predicted it
vs the fine rollout of the same plan (0 for fine).

Results: one table printed, ``bench/results/<name>.json`` (settings, environment, every
run with its per-step times and trajectory) and ``.png`` (bars like ISRR Fig 7: mean
total time of the successful runs, split into planning and execution, with 95 %
confidence intervals; success rates). ``<name>`` is ``mpc_benchmark`` or, with
``--quick``, ``mpc_benchmark_quick``. Long runs can be done in chunks: ``--append`` merges
the new runs into the existing JSON (the settings must be equal) and redraws the table
and figure from all runs.

    python bench/mpc_benchmark.py --quick
    python bench/mpc_benchmark.py                                   # everything
    python bench/mpc_benchmark.py --scenes isrr_obstacle_1 isrr_obstacle_2
    python bench/mpc_benchmark.py --scenes clutter_1 --append       # add to the same results
    python bench/mpc_benchmark.py --report                          # table + figure from the JSON
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from parapush.physics.backends import BACKEND_NAMES
from parapush.planning import MpcOutcome, MpcStep
from parapush.planning.stack_planner import PlannerSources, build_planner
from parapush.scene import Scene, load_scene
from parapush.sim.model_world import ModelWorld
from parareal_common import RESULTS, available_cores, bench_arguments, environment, format_table

ROOT = Path(__file__).resolve().parents[1]
SCENE_DIR = ROOT / "config" / "scenes"
CONFIG = ROOT / "config"
MODELS = ("coarse", "parareal-1", "parareal-2", "parareal-3", "fine", "parareal-learned-1")
"""Model names, in table order."""
LEARNED = "parareal-learned-1"
QUICK_SCENES = ("isrr_obstacle_1", "isrr_obstacle_2", "clutter_1")
QUICK_MODELS = ("coarse", "parareal-1", "fine", LEARNED)
DEFAULT_MAX_ITERATIONS = 3
QUICK_MAX_ITERATIONS = 2
QUICK_MAX_CONTROLS = 12
SCHEDULE = "parareal"


# -- scenes and models -----------------------------------------------------------------------
def benchmark_scene_names() -> list[str]:
    """The generated scenes: isrr_obstacle_<k> then clutter_<k>, by k."""

    def numbered(prefix: str) -> list[str]:
        pattern = re.compile(rf"^{prefix}_(\d+)\.yaml$")
        found = [(int(m.group(1)), path.stem) for path in SCENE_DIR.iterdir() if (m := pattern.match(path.name))]
        return [name for _, name in sorted(found)]

    return numbered("isrr_obstacle") + numbered("clutter")


def resolve_scene(name: str) -> tuple[str, Scene]:
    """A scene by name (config/scenes/<name>.yaml) or path."""
    path = Path(name)
    if not path.suffix:
        path = SCENE_DIR / f"{name}.yaml"
    return path.stem, load_scene(path)


def scene_kind(scene: Scene) -> str:
    return "obstacle" if scene.obstacles else "clutter"


def learned_weights() -> Path | None:
    """Path of the shipped learned coarse model weights, or None if absent."""
    try:
        from parapush.learning.coarse_learned import shipped_weights_path
    except ImportError:
        return None
    path = shipped_weights_path()
    return path if path.is_file() else None


class TimedModel:
    """Wraps a predictive model; accumulates wall and CPU (all threads) time of ``predict``."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.calls = 0
        self.wall = 0.0
        self.cpu = 0.0
        self.schedules: set[str] = set()

    def predict(self, initial_state: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        wall, cpu = time.perf_counter(), time.process_time()
        result = self.model.predict(initial_state, controls, durations)
        self.wall += time.perf_counter() - wall
        self.cpu += time.process_time() - cpu
        self.calls += 1
        last = getattr(self.model, "last_outcome", None)
        if last is not None:
            self.schedules.add(str(last.schedule))
        return result

    def close(self) -> None:
        close = getattr(self.model, "close", None)
        if callable(close):
            close()


def model_overrides(model: str, scene: Scene, sources: PlannerSources, args: argparse.Namespace) -> dict[str, Any]:
    """What the benchmark changes in the configuration files (``sources``) for a benchmark model
    name: the sequential ``isrr2019`` preset with the model and K, the analytical (or learned)
    coarse model, the schedule forced to ``parareal``, the backend, and the optimizer's
    iterations, budget and seed; for the learned coarse model the speed limit of its trained
    range (optimizer ``max_speed`` and MPC ``initial_speed``)."""
    if model not in MODELS:
        raise ValueError(f"model: unknown {model!r}; known: {MODELS}")
    learned = model.startswith("parareal-learned-")
    name = model.split("-", 1)[0]
    overrides: dict[str, Any] = {
        "preset": "isrr2019",
        "optimizer": {"max_iterations": args.max_iterations, "time_budget": args.time_budget, "seed": args.seed},
        "model": {"name": name, "iterations": int(model.rsplit("-", 1)[1]) if name == "parareal" else 1,
                  "coarse_model": "learned" if learned else "analytical", "schedule": SCHEDULE,
                  "backend": args.backend, "workers": args.workers},
    }
    if learned:
        from parapush.prediction.coarse_models import build_coarse_model

        learned_model = build_coarse_model(scene, sources.model, choice="learned", resolve_overlaps=False).model
        speed_limit = learned_model.max_speed
        if speed_limit < sources.planner.optimizer.max_speed:
            overrides["optimizer"]["max_speed"] = speed_limit
            if sources.planner.mpc.initial_speed > speed_limit:
                overrides["mpc"] = {"initial_speed": speed_limit}
    return overrides


def horizon_target_errors(fine: Any, steps: list[dict], target_pose: slice, durations: np.ndarray) -> list[float]:
    """Per step: distance between the planned x_N target position and the fine rollout of the plan, m."""
    errors = []
    for step in steps:
        state = np.asarray(step["state"], dtype=float)[None]
        for control, duration in zip(step["planned_controls"], durations, strict=True):
            state = fine.propagate(state, np.asarray(control)[None], np.array([duration]))
        errors.append(float(np.linalg.norm(state[0, target_pose][:2] - step["predicted_target_N"])))
    return errors


# -- one run ----------------------------------------------------------------------------------
def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not Unix
        return math.nan


def run_one(scene_name: str, scene: Scene, model_name: str, sources: PlannerSources,
            args: argparse.Namespace) -> dict:
    """Plan and execute ``scene`` with ``model_name``; returns the run's record. The planner is
    built as the MPC node builds its own (``build_planner``) with :func:`model_overrides`."""
    overrides = model_overrides(model_name, scene, sources, args)
    notes = []
    if "max_speed" in overrides["optimizer"]:
        notes.append(f"max_speed lowered to the learned model's trained {overrides['optimizer']['max_speed']:.4f} m/s")
    built = build_planner(scene, sources.with_overrides(overrides))
    predictive = built.model
    optimizer_settings = built.planner.settings
    timed = TimedModel(predictive)
    world = ModelWorld(scene)
    loop = built.loop
    loop.model = timed
    layout = scene.layout
    target_pose = layout.object_pose(scene.target_index)
    steps: list[dict] = []

    def on_step(step: MpcStep) -> None:
        steps.append(
            {
                "planning_time": step.planning_time,
                "iterations": step.optimizer_iterations,
                "cost": step.cost,
                "unstable_samples": step.unstable_samples,
                "predicted_target_1": step.predicted_trajectory[1, target_pose][:2],
                "predicted_target_N": step.predicted_trajectory[-1, target_pose][:2],
                "state": step.state,
                "planned_controls": step.planned_controls,
            }
        )

    load_before = load_average()
    try:
        result = loop.run(world, max_controls=args.max_controls, callback=on_step)
    finally:
        timed.close()
    states = result.states
    targets = states[:, target_pose][:, :2] if len(states) else np.empty((0, 2))
    # one-control prediction error of the target position: 0 for fine and Parareal (x_1 is exact)
    one_step = [
        float(np.linalg.norm(step["predicted_target_1"] - targets[index + 1]))
        for index, step in enumerate(steps)
        if index + 1 < len(targets)
    ]
    # horizon prediction error (after the run, not timed): the target at x_N as the model predicted it
    # for the chosen plan vs the fine model's rollout of the same plan from the same state
    horizon = horizon_target_errors(world.propagator, steps, target_pose, optimizer_settings.durations)
    plans = len(result.planned_costs)
    execution = world.simulated_time
    record = {
        "scene": scene_name,
        "kind": scene_kind(scene),
        "model": model_name,
        "overrides": overrides,
        "outcome": result.outcome.name,
        "success": result.success,
        "failure_reason": result.failure_reason,
        "controls": result.controls_executed,
        "plans": plans,
        "optimizer_iterations": result.optimizer_iterations,
        "planning_time": result.planning_time,
        "planning_time_per_step": result.planning_time / plans if plans else math.nan,
        "prediction_wall_time": timed.wall,
        "prediction_cpu_time": timed.cpu,
        "predictions": timed.calls,
        "execution_time": execution,
        "total_time": result.planning_time + execution,
        "world_wall_time": world.wall_time,
        "final_distance": result.final_distance,
        "one_step_target_error_mean": float(np.mean(one_step)) if one_step else math.nan,
        "one_step_target_error_max": float(np.max(one_step)) if one_step else math.nan,
        "horizon_target_error_mean": float(np.mean(horizon)) if horizon else math.nan,
        "horizon_target_error_max": float(np.max(horizon)) if horizon else math.nan,
        "states": states,
        "schedules": sorted(timed.schedules),
        "diverged_sequences": int(getattr(predictive, "diverged_sequences", 0)),
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "notes": notes,
        "pusher_path": states[:, layout.pusher_position] if len(states) else np.empty((0, 2)),
        "target_path": targets,
        "executed_controls": result.executed_controls,
        "steps": steps,
    }
    # The fine model is always the exact sample-parallel schedule; Parareal must run the one asked for.
    if not model_name.startswith("fine") and record["schedules"] and record["schedules"] != [SCHEDULE]:
        raise RuntimeError(f"{model_name}: the solver used schedules {record['schedules']}, not {SCHEDULE!r}")
    return record


# -- statistics and output --------------------------------------------------------------------
T_95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def mean_ci(values: list[float]) -> tuple[float, float]:
    """(mean, half width of the 95 % confidence interval of the mean; NaN for < 2 values)."""
    values = [v for v in values if math.isfinite(v)]
    if not values:
        return math.nan, math.nan
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, math.nan
    t = T_95.get(len(values) - 1, 1.96 + 2.5 / (len(values) - 1))
    return mean, t * float(np.std(values, ddof=1)) / math.sqrt(len(values))


def summarize(runs: list[dict], models: list[str]) -> dict[str, dict[str, dict]]:
    """{group: {model: statistics}} for groups all / obstacle / clutter."""
    summary: dict[str, dict[str, dict]] = {}
    for group in ("all", "obstacle", "clutter"):
        per_model = {}
        for model in models:
            chosen = [r for r in runs if r["model"] == model and group in ("all", r["kind"])]
            if not chosen:
                continue
            successes = [r for r in chosen if r["success"]]
            total_success, total_success_ci = mean_ci([r["total_time"] for r in successes])
            planning_success, _ = mean_ci([r["planning_time"] for r in successes])
            execution_success, _ = mean_ci([r["execution_time"] for r in successes])
            per_model[model] = {
                "runs": len(chosen),
                "successes": len(successes),
                "success_rate": len(successes) / len(chosen),
                "total_time_all": mean_ci([r["total_time"] for r in chosen])[0],
                "total_time_success": total_success,
                "total_time_success_ci95": total_success_ci,
                "planning_time_success": planning_success,
                "execution_time_success": execution_success,
                "planning_time_per_step": mean_ci([r["planning_time_per_step"] for r in chosen])[0],
                "prediction_cpu_per_step": mean_ci([r["prediction_cpu_time"] / max(r["plans"], 1) for r in chosen])[0],
                "controls": mean_ci([float(r["controls"]) for r in chosen])[0],
                "controls_success": mean_ci([float(r["controls"]) for r in successes])[0],
                "one_step_target_error_mm": 1e3 * mean_ci([r["one_step_target_error_mean"] for r in chosen])[0],
                "horizon_target_error_mm": 1e3
                * mean_ci([r.get("horizon_target_error_mean", math.nan) for r in chosen])[0],
                "outcomes": {o: sum(r["outcome"] == o for r in chosen) for o in sorted({r["outcome"] for r in chosen})},
            }
        if per_model:
            summary[group] = per_model
    return summary


def settings_header(settings: dict) -> str:
    o = settings
    budget = "none" if o["time_budget"] is None else f"{o['time_budget']} s"
    return (
        f"S={o['samples']} samples, variance {o['exploration_variance']:g}, N={o['horizon']} x "
        f"{o['control_duration']:g} s controls, max {o['max_speed']:g} m/s | optimizer iterations per "
        f"re-plan {o['max_iterations']}, time budget {budget} | max {o['max_controls']} controls | "
        f"Parareal schedule forced '{o['schedule']}' | fine backend {o['backend']} x "
        f"{o['workers'] or o['cores']} workers on {o['cores']} cores | seed {o['seed']}\n"
        "World: the fine model; execution time simulated (1 s per control), planning time measured wall time."
    )


def table_text(summary: dict, settings: dict) -> str:
    headers = [
        "group",
        "model",
        "success",
        "total s (succ.)",
        "+-95%",
        "total s (all)",
        "plan s/step",
        "pred CPU s/step",
        "controls",
        "1-step err mm",
        "x_N err mm",
        "outcomes",
    ]
    rows = []
    for group, per_model in summary.items():
        for model, s in per_model.items():
            outcomes = " ".join(f"{name.lower()}:{count}" for name, count in s["outcomes"].items())
            rows.append(
                [
                    group,
                    model,
                    f"{s['successes']}/{s['runs']} ({100 * s['success_rate']:.0f}%)",
                    f"{s['total_time_success']:.1f}",
                    f"{s['total_time_success_ci95']:.1f}",
                    f"{s['total_time_all']:.1f}",
                    f"{s['planning_time_per_step']:.2f}",
                    f"{s['prediction_cpu_per_step']:.2f}",
                    f"{s['controls']:.1f}",
                    f"{s['one_step_target_error_mm']:.1f}",
                    f"{s['horizon_target_error_mm']:.1f}",
                    outcomes,
                ]
            )
    return settings_header(settings) + "\n" + format_table(headers, rows)


def runs_text(runs: list[dict]) -> str:
    headers = ["scene", "model", "outcome", "controls", "plan s", "plan s/step", "total s", "final d m", "load"]
    rows = [
        [
            r["scene"],
            r["model"],
            r["outcome"],
            r["controls"],
            f"{r['planning_time']:.1f}",
            f"{r['planning_time_per_step']:.2f}",
            f"{r['total_time']:.1f}",
            f"{r['final_distance']:.3f}",
            f"{r['load_average_before']:.1f}",
        ]
        for r in runs
    ]
    return format_table(headers, rows)


def figure(summary: dict, settings: dict) -> Figure:
    groups = [g for g in ("obstacle", "clutter") if g in summary] or list(summary)
    fig = Figure(figsize=(6.0 * len(groups), 8.0), layout="constrained")
    axes = fig.subplots(2, len(groups), squeeze=False)
    titles = {"obstacle": "ISRR obstacle scenes (1 object)", "clutter": "clutter scenes (4 objects)", "all": "all"}
    for column, group in enumerate(groups):
        per_model = summary[group]
        names = list(per_model)
        x = np.arange(len(names))
        planning = np.array([per_model[m]["planning_time_success"] for m in names])
        execution = np.array([per_model[m]["execution_time_success"] for m in names])
        total = planning + execution
        ci = np.array([per_model[m]["total_time_success_ci95"] for m in names])
        top = axes[0, column]
        top.bar(x, np.nan_to_num(execution), color="0.75", label="execution (simulated)")
        top.bar(x, np.nan_to_num(planning), bottom=np.nan_to_num(execution), color="tab:blue", label="planning (wall)")
        top.errorbar(x, total, yerr=np.nan_to_num(ci), fmt="none", ecolor="k", capsize=4)
        ceiling = float(np.nanmax(np.concatenate([total + np.nan_to_num(ci), [1.0]])))
        for i, m in enumerate(names):
            s = per_model[m]
            if math.isfinite(total[i]):
                label, height = f"{total[i]:.0f} s\n{s['successes']}/{s['runs']} ok", total[i] + np.nan_to_num(ci[i])
            else:
                label, height = f"no success\n0/{s['runs']}", 0.0
            top.text(i, height + 0.01 * ceiling, label, ha="center", va="bottom", fontsize=8)
        top.set_ylim(0, 1.2 * ceiling)
        top.set_xticks(x, names, rotation=25, ha="right", fontsize=8)
        top.set_ylabel("mean total task time of successful runs, s")
        top.set_title(titles.get(group, group))
        top.legend(fontsize=8, loc="upper left")
        bottom = axes[1, column]
        rates = [100 * per_model[m]["success_rate"] for m in names]
        bottom.bar(x, rates, color="tab:green")
        for i, m in enumerate(names):
            bottom.text(i, rates[i] + 1, f"{per_model[m]['successes']}/{per_model[m]['runs']}", ha="center", fontsize=8)
        bottom.set_xticks(x, names, rotation=25, ha="right", fontsize=8)
        bottom.set_ylim(0, 112)
        bottom.set_ylabel("success rate, %")
    fig.suptitle(
        f"MPC pushing, fine-model world: {settings['max_iterations']} optimizer iterations/re-plan, "
        f"S={settings['samples']}, N={settings['horizon']}, {settings['cores']} cores, Parareal schedule forced "
        f"'{settings['schedule']}'",
        fontsize=9,
    )
    return fig


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (np.floating, float)):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    return value


def restore_nan(run: dict) -> dict:
    for key, value in run.items():
        if value is None and key not in ("failure_reason",):
            run[key] = math.nan
    return run


def report(runs: list[dict], settings: dict, name: str, payload_extra: dict) -> None:
    order = {model: index for index, model in enumerate(MODELS)}
    models = sorted({r["model"] for r in runs}, key=lambda m: order.get(m, len(order)))
    summary = summarize(runs, models)
    print()
    print(runs_text(runs))
    print()
    print(table_text(summary, settings))
    RESULTS.mkdir(parents=True, exist_ok=True)
    json_path, png_path = RESULTS / f"{name}.json", RESULTS / f"{name}.png"
    payload = {"environment": environment(), "settings": settings, "summary": summary, **payload_extra, "runs": runs}
    json_path.write_text(json.dumps(jsonable(payload), indent=1) + "\n")
    figure(summary, settings).savefig(png_path, dpi=120, bbox_inches="tight")
    print(f"\nwrote {json_path}\nwrote {png_path}")


# -- main -------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(
        __doc__.splitlines()[0],
        quick=f"scenes {QUICK_SCENES}, models {QUICK_MODELS}, "
        f"{QUICK_MAX_ITERATIONS} iterations, {QUICK_MAX_CONTROLS} controls",
    )
    parser.add_argument("--scenes", nargs="+", help="scene names (config/scenes/<name>.yaml) or paths")
    parser.add_argument("--models", nargs="+", choices=MODELS, help="models (default: all)")
    parser.add_argument(
        "--max-iterations",
        type=int,
        help=f"optimizer iterations per re-plan (default {DEFAULT_MAX_ITERATIONS}, quick {QUICK_MAX_ITERATIONS})",
    )
    parser.add_argument("--time-budget", type=float, default=None, help="s of wall time per re-plan (default none)")
    parser.add_argument(
        "--max-controls",
        type=int,
        help=f"controls before failure (default: planner.yaml, 20; quick {QUICK_MAX_CONTROLS})",
    )
    parser.add_argument("--seed", type=int, default=0, help="optimizer seed (default 0)")
    parser.add_argument("--backend", default="threads", choices=BACKEND_NAMES)
    parser.add_argument("--workers", type=int, default=None, help="fine workers (default one per core)")
    parser.add_argument("--output", default=None, help="results name (default mpc_benchmark[_quick])")
    parser.add_argument("--append", action="store_true", help="merge into the existing results (same settings)")
    parser.add_argument("--report", action="store_true", help="only print the table and redraw from the JSON")
    args = parser.parse_args(argv)

    sources = PlannerSources.load(CONFIG)  # planner.yaml, model.yaml, mpc.yaml; a run's overrides: model_overrides
    config = sources.planner
    if args.max_iterations is None:
        args.max_iterations = QUICK_MAX_ITERATIONS if args.quick else DEFAULT_MAX_ITERATIONS
    if args.max_controls is None:
        args.max_controls = QUICK_MAX_CONTROLS if args.quick else config.mpc.max_controls
    name = args.output or ("mpc_benchmark_quick" if args.quick else "mpc_benchmark")
    settings = {
        "samples": config.optimizer.samples,
        "exploration_variance": config.optimizer.exploration_variance,
        "horizon": config.optimizer.horizon,
        "control_duration": config.optimizer.control_duration,
        "max_speed": config.optimizer.max_speed,
        "max_iterations": args.max_iterations,
        "time_budget": args.time_budget,
        "max_controls": args.max_controls,
        "schedule": SCHEDULE,
        "backend": args.backend,
        "workers": args.workers,
        "cores": available_cores(),
        "seed": args.seed,
    }
    json_path = RESULTS / f"{name}.json"
    previous: list[dict] = []
    previous_notes: list[str] = []
    previous_wall = 0.0
    if args.append or args.report:
        if not json_path.is_file():
            if args.report:
                sys.exit(f"--report: no results at {json_path}")
        else:
            stored = json.loads(json_path.read_text())
            if args.report:
                settings = stored["settings"]
            elif stored["settings"] != jsonable(settings):
                sys.exit(f"--append: settings differ from {json_path}:\n{stored['settings']}\nvs\n{jsonable(settings)}")
            previous = [restore_nan(run) for run in stored["runs"]]
            previous_notes = list(stored.get("notes", []))
            previous_wall = float(stored.get("benchmark_wall_time") or 0.0)
    if args.report:
        report(previous, settings, name, {"notes": previous_notes, "benchmark_wall_time": previous_wall})
        return 0

    scene_names = args.scenes or (list(QUICK_SCENES) if args.quick else benchmark_scene_names())
    models = args.models or (list(QUICK_MODELS) if args.quick else list(MODELS))
    weights = learned_weights()
    notes = list(previous_notes)
    if LEARNED in models and weights is None:
        note = f"{LEARNED} skipped: no learned coarse model weights (parapush/data/learned_coarse_model.npz)"
        print("note: " + note)
        if note not in notes:
            notes.append(note)
        models.remove(LEARNED)
    print(settings_header(settings))
    runs: list[dict] = []
    started = time.perf_counter()
    for scene_name in scene_names:
        scene_name, scene = resolve_scene(scene_name)
        for model in models:
            if model == LEARNED and scene.obstacles:
                continue  # the learned model was trained without obstacles
            run_started = time.perf_counter()
            try:
                record = run_one(scene_name, scene, model, sources, args)
            except Exception as error:  # noqa: BLE001 - a model that cannot be built is a reported ERROR
                record = {
                    "scene": scene_name,
                    "kind": scene_kind(scene),
                    "model": model,
                    "outcome": MpcOutcome.ERROR.name,
                    "success": False,
                    "failure_reason": f"{type(error).__name__}: {error}",
                    "controls": 0,
                    "plans": 0,
                    "planning_time": math.nan,
                    "planning_time_per_step": math.nan,
                    "prediction_cpu_time": math.nan,
                    "execution_time": 0.0,
                    "total_time": math.nan,
                    "final_distance": math.nan,
                    "one_step_target_error_mean": math.nan,
                    "load_average_before": load_average(),
                }
            runs.append(record)
            print(
                f"[{time.perf_counter() - started:7.1f} s] {scene_name:16s} {model:18s} {record['outcome']:16s} "
                f"controls {record['controls']:2d}  planning {record['planning_time']:6.1f} s "
                f"({record['planning_time_per_step']:.2f} s/step)  total {record['total_time']:6.1f} s  "
                f"final d {record['final_distance']:.3f} m  [{time.perf_counter() - run_started:.0f} s wall]"
                + (f"  {record['failure_reason']}" if not record["success"] else ""),
                flush=True,
            )
    done = {(run["scene"], run["model"]) for run in runs}
    merged = [run for run in previous if (run["scene"], run["model"]) not in done]
    report(
        merged + runs,
        settings,
        name,
        {"notes": notes, "benchmark_wall_time": previous_wall + time.perf_counter() - started},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
