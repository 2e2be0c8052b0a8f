"""Real-time planning benchmark: the ISRR 2019 planner vs the real-time preset in the noisy simulated world.

Planners (``parapush.planning.presets``), run side by side, interleaved per scene and seed:

- ``isrr2019-fine``: the ISRR planner (S = 20, variance 1e-4, N = 4 x 1 s, every sample
  rolled out with the fine model), planned then executed (:class:`MpcLoop`);
- ``isrr2019-parareal1``: the same with Parareal K = 1 (analytical coarse model, schedule
  forced to ``parareal``);
- ``realtime``: the default preset: multi-fidelity planning (coarse search, elites
  corrected with the fine model) in the pipelined loop (:class:`PipelinedMpcLoop`);
- ``realtime-first-control`` / ``realtime-whole-horizon`` (only when named): the same with the
  elites corrected over their first control / the whole horizon whatever the fine workers
  (:data:`HORIZON_PLANNERS`); every run and summary row records ``corrector_workers`` and
  ``corrected_controls``.

The world is :class:`parapush.sim.world.SimWorld` with ``config/sim_world.yaml``'s
defaults (push noise calibrated to ~8 mm / 4 deg per 15 cm push; arm acceleration limit;
objects fall off the table), seeded per run, behind a
:class:`parapush.planning.async_world.VirtualClockWorld`: execution costs SIMULATED time
(the controls' durations), planning costs its MEASURED wall time, and the world's own
physics is not counted. Task time = world clock from the first observation to the end;
``task_over_execution`` = sum of task times / sum of times the pusher moved.
``waiting`` is the time the pusher stood still (sequential: every re-plan; pipelined: the
first plan, late plans and re-plans after a disagreeing observation).

Scenes: every ``config/scenes/*.yaml`` plus 4 obstacle and 4 clutter scenes drawn by
``bench/make_benchmark_scenes.py``'s generators with the NEW seed ``SCENE_SEED`` (never
used for tuning), written to ``bench/scenes/new_{obstacle,clutter}_<k>.yaml``.
Seeds 0, 1, 2 per scene (world noise and optimizer). ``--quick``: scenes
``QUICK_SCENES`` only (or ``--families``' scenes), and the ISRR planners limited to
``QUICK_ISRR_ITERATIONS`` optimizer iterations per re-plan and ``QUICK_MAX_CONTROLS``
controls (as ``bench/mpc_benchmark.py --quick``); the real-time planner is never limited.

Scene families (``--families``, ``all``: the five; instead of the scenes above): each
``FAMILY_SCENE_COUNT`` scenes drawn with the NEW seed ``FAMILY_SCENE_SEED`` (never used for
tuning), written to ``bench/scenes/new_<family>_<k>.yaml`` and checked by
``make_benchmark_scenes.validate``; a run's ``scene_kind`` is its family:

- ``box_clutter``: the clutter generator with the scene format's default box (10.9 x 15.4 cm)
  as the target among three cylinders (goal radius 6 cm, as the clutter scenes);
- ``box_obstacle``: the ISRR obstacle generator with that box as the target (goal 5 cm, as the
  obstacle scenes);
- ``crowded_8`` / ``crowded_16``: ``bench/make_crowded_scenes.py``'s generator (a cylinder
  target among 7 / 15 cylinders and boxes, goal 6 cm), every other object's bounding disc
  clear of the goal;
- ``heavy``: the clutter generator with every object 1-2 kg on support friction 0.2-0.6, the
  target a cylinder or the default box (even odds), one clutter object the box (goal 6 cm).

Every run and summary row records the planner's coarse model (``coarse_model``:
``BuiltPlanner.coarse_model_name``, ``learned``/``analytical``/``none``, with
``coarse_model_note`` saying why the learned model was not used); a summary row whose runs
used different ones counts them (``analytical x8, learned x4``).

Construction: every planner is built as the MPC node builds its own
(:func:`parapush.planning.stack_planner.build_planner` from ``config/planner.yaml``,
``config/model.yaml`` and ``config/mpc.yaml``); what a planner changes in those files is its
``overrides`` (:func:`planner_overrides`), printed at the start and stored in the JSON
(``settings.overrides`` and every run's ``overrides``): the ISRR planners choose the
``isrr2019`` preset and their model (fine; Parareal K = 1 with the schedule forced to
``parareal``), and ``--quick`` limits their iterations; ``realtime`` is the files' planner
(its corrector the model file's predictor, as in the stack), unchanged.

Timing: run under ``flock /tmp/parapush-timing.lock``; the load average (``uptime``) is
printed and stored; re-plan CPU time (all threads) is reported next to wall time because
the machine is shared.

    python bench/realtime_mpc.py --quick          # bench/results/realtime_mpc_quick.json
    python bench/realtime_mpc.py                  # bench/results/realtime_mpc.json
    python bench/realtime_mpc.py --planners realtime --scenes clutter_1 --seeds 0
    python bench/realtime_mpc.py --quick --reference   # bench/reference/realtime_mpc_quick.json
    python bench/realtime_mpc.py --families all --planners realtime isrr2019-fine --output realtime_mpc_families

``--reference`` stores the figures the README quotes (:func:`readme_figures`) in
``bench/reference/realtime_mpc[_quick].json`` (``bench/reference.py``), and with ``--families all``
in ``realtime_mpc_families[_<planners>][_scenes<seeds>].json`` (:func:`reference_variant`); it needs
the default scenes, planners and seeds.

Held-out families (``--family-scene-seeds``): the families drawn with other generator seeds, each
seed's scenes named ``new_<family>_<k>_s<seed>``; the summary's rows per ``scene_kind`` then pool
every seed's scenes (4 scenes x 3 seeds = 12 runs per family and generator seed). This is how the
figures are checked on scenes no one tuned on::

    python bench/realtime_mpc.py --families all --planners realtime --family-scene-seeds 5101 5102 5103 --reference
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from parapush.planning import MpcStep
from parapush.planning.async_world import BlockingWorld, VirtualClockWorld
from parapush.planning.presets import DEFAULT_PRESET, BuiltPlanner
from parapush.planning.stack_planner import PlannerSources, build_planner, corrector_workers
from parapush.scene import Scene, load_scene
from parapush.sim.driver_settings import load_driver_settings
from parapush.sim.world import SimWorld, WorldSettings
from parapush.sim.world_physics import SimWorldPhysics

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference as bench_reference  # noqa: E402
from make_benchmark_scenes import clutter_scene, obstacle_scene, scene_yaml, validate  # noqa: E402
from make_crowded_scenes import crowded_scene  # noqa: E402
from make_crowded_scenes import scene_yaml as crowded_scene_yaml  # noqa: E402
from parareal_common import RESULTS, bench_arguments, environment, format_table, wilson_interval  # noqa: E402
from parareal_common import _jsonable as jsonable  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIG_SCENES = ROOT / "config" / "scenes"
NEW_SCENES = Path(__file__).resolve().parent / "scenes"
HELD_OUT_SCENES = RESULTS / "held_out_scenes"
"""Where ``--family-scene-seeds`` writes the families drawn with other generator seeds."""
CONFIG = ROOT / "config"
PLANNER_CONFIG = CONFIG / "planner.yaml"
SIM_CONFIG = ROOT / "config" / "sim_world.yaml"
SCENE_SEED = 2026
"""Generator seed of the new scenes (the committed config/scenes use 2019)."""
NEW_SCENE_COUNT = 4
PLANNERS = ("isrr2019-fine", "isrr2019-parareal1", DEFAULT_PRESET)
HORIZON_PLANNERS = {f"{DEFAULT_PRESET}-first-control": None, f"{DEFAULT_PRESET}-whole-horizon": 1}
"""Not run by default: the default preset with its elites corrected over their first control
only, or over the whole horizon, whatever the corrector's fine workers
(``multifidelity.full_horizon_workers`` None / 1; the default picks the whole horizon from 8
workers on), to show what a wide machine's whole-horizon correction buys side by side."""
SEEDS = (0, 1, 2)
QUICK_SCENES = ("isrr_obstacle_1", "new_obstacle_1", "clutter_1", "new_clutter_1")
QUICK_ISRR_ITERATIONS = 2
QUICK_MAX_CONTROLS = 12
FAMILY_SCENE_SEED = 2611
"""Generator seed of the scene families (the committed scenes use 2019, 2026, 2027, 2029, 2030, 3030)."""
FAMILY_SCENE_COUNT = 4
FAMILIES = ("box_clutter", "box_obstacle", "crowded_8", "crowded_16", "heavy")


# -- scenes -------------------------------------------------------------------------------------
def write_new_scenes() -> list[Path]:
    """Generate the new scenes (seed ``SCENE_SEED``) into bench/scenes/; returns their paths."""
    NEW_SCENES.mkdir(exist_ok=True)
    paths = []
    for kind, generate in (("obstacle", obstacle_scene), ("clutter", clutter_scene)):
        for index in range(1, NEW_SCENE_COUNT + 1):
            scene = generate(SCENE_SEED, index)
            scene["name"] = f"new_{kind}_{index}"
            path = NEW_SCENES / f"{scene['name']}.yaml"
            text = scene_yaml(scene, SCENE_SEED, f"(generators, --seed {SCENE_SEED}) via bench/realtime_mpc.py")
            if not path.is_file() or path.read_text() != text:
                path.write_text(text)
            paths.append(path)
    return paths


def family_scene_name(family: str, index: int, scene_seed: int = FAMILY_SCENE_SEED) -> str:
    """``new_<family>_<index>``, with ``_s<scene_seed>`` appended for a generator seed other than
    ``FAMILY_SCENE_SEED``."""
    suffix = "" if scene_seed == FAMILY_SCENE_SEED else f"_s{scene_seed}"
    return f"new_{family}_{index}{suffix}"


def family_scene_text(family: str, index: int, scene_seed: int = FAMILY_SCENE_SEED) -> str:
    """The YAML text of scene ``index`` (1, 2, ...) of ``family`` (one of ``FAMILIES``), drawn
    with generator seed ``scene_seed`` and named :func:`family_scene_name`."""
    name = family_scene_name(family, index, scene_seed)
    arguments = f"(generators, --seed {scene_seed}) via bench/realtime_mpc.py --families"
    if family in ("crowded_8", "crowded_16"):
        count = int(family.removeprefix("crowded_"))
        return crowded_scene_yaml(crowded_scene(scene_seed, count, index), arguments, name=name,
                                  purpose="bench/realtime_mpc.py --families")
    if family == "box_clutter":
        scene = clutter_scene(scene_seed, index, box_target=True)
    elif family == "box_obstacle":
        scene = obstacle_scene(scene_seed, index, box_target=True)
    elif family == "heavy":
        scene = clutter_scene(scene_seed, index, heavy=True)
    else:
        raise ValueError(f"family: expected one of {FAMILIES}, got {family!r}")
    scene["name"] = name
    return scene_yaml(scene, scene_seed, arguments)


def write_family_scenes(families: tuple[str, ...] = FAMILIES,
                        scene_seeds: tuple[int, ...] = (FAMILY_SCENE_SEED,)) -> dict[str, tuple[str, Path]]:
    """Write ``FAMILY_SCENE_COUNT`` scenes of each of ``families`` per generator seed of
    ``scene_seeds`` (when missing or different) and validate them; name -> (family, path). The
    ``FAMILY_SCENE_SEED`` scenes go to bench/scenes/ (committed), the others to
    ``HELD_OUT_SCENES`` (written by each run, not committed)."""
    scenes = {}
    for scene_seed in scene_seeds:
        folder = NEW_SCENES if scene_seed == FAMILY_SCENE_SEED else HELD_OUT_SCENES
        folder.mkdir(parents=True, exist_ok=True)
        for family in families:
            for index in range(1, FAMILY_SCENE_COUNT + 1):
                text = family_scene_text(family, index, scene_seed)
                path = folder / f"{family_scene_name(family, index, scene_seed)}.yaml"
                if not path.is_file() or path.read_text() != text:
                    path.write_text(text)
                validate(path)
                scenes[path.stem] = (family, path)
    return scenes


def all_scene_paths() -> dict[str, Path]:
    paths = {path.stem: path for path in sorted(CONFIG_SCENES.glob("*.yaml"))}
    paths.update({path.stem: path for path in write_new_scenes()})
    return paths


def scene_kind(scene: Scene) -> str:
    return "obstacle" if scene.obstacles else "clutter"


def world_settings(seed: int) -> WorldSettings:
    """``config/sim_world.yaml``'s world section (its noise defaults) with the run's seed."""
    return dataclasses.replace(load_driver_settings(SIM_CONFIG).world, seed=seed)


# -- timing proxies -------------------------------------------------------------------------------
class CpuTimed:
    """Passes everything to ``target``; accumulates the CPU time (all threads) of ``method``."""

    def __init__(self, target: Any, method: str) -> None:
        self._target = target
        self._method = method
        self.cpu = 0.0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if name != self._method:
            return attribute

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return attribute(*args, **kwargs)
            finally:
                self.cpu += time.process_time() - started

        return timed


# -- one run --------------------------------------------------------------------------------------
def planner_overrides(planner: str, sources: PlannerSources, *, quick: bool = False,
                      fidelity: str | None = None) -> dict[str, Any]:
    """What ``planner`` changes in the configuration files (``sources``; empty for the files'
    own planner): the ISRR planners' preset and model, ``--quick``'s iteration limit of the
    sequential planners, and the fine model's ``fidelity`` (None: the model file's)."""
    overrides: dict[str, Any] = {}
    if planner == "isrr2019-fine":
        overrides.update(preset="isrr2019", model={"name": "fine"})
    elif planner == "isrr2019-parareal1":
        # forced "parareal": "auto" would pick sample-parallel fine on 2 cores (mpc_benchmark)
        overrides.update(preset="isrr2019", model={"name": "parareal", "iterations": 1, "schedule": "parareal"})
    elif planner in HORIZON_PLANNERS:
        overrides["multifidelity"] = {"full_horizon_workers": HORIZON_PLANNERS[planner]}
    elif planner != sources.preset.name:
        overrides["preset"] = planner
    if quick and sources.with_overrides(overrides).preset.loop == "sequential":
        overrides["optimizer"] = {"max_iterations": QUICK_ISRR_ITERATIONS}
    if fidelity is not None:
        overrides["model"] = {**overrides.get("model", {}), "fidelity": fidelity}
    return overrides


def build(planner: str, scene: Scene, seed: int, sources: PlannerSources, *, quick: bool = False,
          fidelity: str | None = None) -> BuiltPlanner:
    """``planner`` for ``scene`` as the MPC node builds it, with :func:`planner_overrides`."""
    overrides = planner_overrides(planner, sources, quick=quick, fidelity=fidelity)
    return build_planner(scene, sources.with_overrides(overrides), seed=seed)


def run_one(planner: str, scene_name: str, scene: Scene, seed: int, sources: PlannerSources,
            args: argparse.Namespace, fidelity: str | None = None, kind: str | None = None) -> dict:
    """One task run of ``planner`` (``fidelity``: the fine model's fidelity management; None: the
    file's) on a scene of ``kind`` (its family; None: obstacle or clutter, :func:`scene_kind`)."""
    world = VirtualClockWorld(SimWorldPhysics(SimWorld(scene, world_settings(seed))))
    load_before = os.getloadavg()[0]
    wall_started, cpu_started = time.perf_counter(), time.process_time()
    built = build(planner, scene, seed, sources, quick=args.quick, fidelity=fidelity)
    sequential = built.preset.loop == "sequential"
    limited = args.quick and sequential
    max_controls = QUICK_MAX_CONTROLS if limited else sources.planner.mpc.max_controls
    with built:
        timed = CpuTimed(built.loop.optimizer, "optimize")
        built.loop.optimizer = timed
        started = world.time()
        if sequential:
            replans: list[float] = []

            def on_step(step: MpcStep) -> None:
                replans.append(step.planning_time)

            result = built.loop.run(BlockingWorld(world), max_controls=max_controls, callback=on_step)
            task = world.time() - started
            execution = world.motion_time
            waiting = max(0.0, task - execution)
            controls = result.controls_executed
            applied = result.executed_controls.tolist()
            extra = {"blocker_clearings": result.blocker_clearings}
        else:
            result = built.loop.run(world, max_controls=max_controls)
            replans = result.replan_times.tolist()
            task, execution, waiting = result.task_time, result.execution_time, result.waiting_time
            controls = result.controls_executed
            applied = [step.control.tolist() for step in result.steps]
            extra = {
                "replans_from_observation": result.replans_from_observation,
                "fallbacks": result.fallbacks,
                "budget_cuts": result.budget_cuts,
                "diverged_predictions": result.diverged_predictions,
                "blocker_clearings": result.blocker_clearings,
                "back_offs": result.back_offs,
                "prediction_error_mm": [1e3 * step.prediction_error for step in result.steps],
            }
        engine = getattr(built.model, "engine", None)
        fidelity_reruns = None if engine is None else engine.fidelity_reruns
    return {
        "planner": planner,
        "fidelity": built.model_config.fidelity,
        "fidelity_reruns": fidelity_reruns,
        "scene": scene_name,
        "kind": scene_kind(scene) if kind is None else kind,
        "seed": seed,
        "coarse_model": built.coarse_model_name,
        "coarse_model_note": built.coarse_model_note,
        "corrector_workers": corrector_workers(built.model, built.model_config),
        "corrected_controls": corrected_controls(built.planner),
        "outcome": result.outcome.name,
        "success": result.success,
        "failure_reason": result.failure_reason,
        "controls": controls,
        "max_controls": max_controls,
        "optimizer_iterations": built.planner.settings.max_iterations,
        "time_budget": built.planner.settings.time_budget,
        "overrides": dict(built.overrides),
        "replan_times": replans,
        "replan_cpu_total": timed.cpu,
        "planning_time": float(sum(replans)),
        "waiting_time": waiting,
        "execution_time": execution,
        "task_time": task,
        "final_distance": result.final_distance,
        **observed_paths(scene, result.states),
        "controls_applied": applied,
        "run_wall_time": time.perf_counter() - wall_started,
        "run_cpu_time": time.process_time() - cpu_started,
        "load_average_before": load_before,
        **extra,
    }


def corrected_controls(planner: Any) -> int | str | None:
    """How many leading controls of an elite a multi-fidelity ``planner`` corrects with the fine
    model (``"all"``: the whole horizon); None for a single-fidelity planner."""
    settings = getattr(planner, "multifidelity", None)
    if settings is None:
        return None
    return "all" if settings.corrected_controls is None else settings.corrected_controls


def observed_paths(scene: Scene, states: np.ndarray) -> dict[str, Any]:
    """What a failure analysis needs from the observed states (k+1, D): the target's poses
    (x, y, yaw; m, rad) and the pusher's positions (m) after every control, the target's
    start distance to the goal centre (m) and how far each other object ended from its start (m)."""
    layout = scene.layout
    if not len(states):
        return {"target_path": [], "pusher_path": [], "start_distance": math.nan, "others_moved_m": []}
    target = scene.target_index
    others = [index for index in range(len(scene.objects)) if index != target]
    first, last = states[0], states[-1]
    return {
        "target_path": states[:, layout.object_pose(target)].tolist(),
        "pusher_path": states[:, layout.pusher_position].tolist(),
        "start_distance": float(np.hypot(*(first[layout.object_pose(target)][:2] - np.asarray(scene.goal.center)))),
        "others_moved_m": [float(np.hypot(*(last[layout.object_pose(i)][:2] - first[layout.object_pose(i)][:2])))
                           for i in others],
    }


# -- statistics -----------------------------------------------------------------------------------
def counted(runs: list[dict], field: str) -> str:
    """What the ``runs`` recorded in ``field``: the value when all recorded one, else each with
    its run count (coarse models: ``"analytical x8, learned x4"``, by value)."""
    counts = collections.Counter(str(run.get(field)) for run in runs)
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{name} x{count}" for name, count in sorted(counts.items()))


def summarize(runs: list[dict]) -> list[dict]:
    """Rows per planner and scene kind (in the order the runs met them, then ``all``)."""
    rows = []
    planners = [p for p in (*PLANNERS, *HORIZON_PLANNERS) if any(r["planner"] == p for r in runs)]
    kinds = list(dict.fromkeys(r["kind"] for r in runs))
    for planner in planners:
        for kind in (*kinds, "all"):
            chosen = [r for r in runs if r["planner"] == planner and (kind == "all" or r["kind"] == kind)]
            if not chosen:
                continue
            successes = sum(r["success"] for r in chosen)
            replans = np.concatenate([np.asarray(r["replan_times"], dtype=float) for r in chosen])
            plans = max(1, len(replans))
            execution = sum(r["execution_time"] for r in chosen)
            rows.append(
                {
                    "planner": planner,
                    "scene_kind": kind,
                    "coarse_model": counted(chosen, "coarse_model"),
                    "corrector_workers": counted(chosen, "corrector_workers"),
                    "corrected_controls": counted(chosen, "corrected_controls"),
                    "runs": len(chosen),
                    "successes": int(successes),
                    "success_ci95": list(wilson_interval(int(successes), len(chosen))),
                    "replan_p50_s": float(np.percentile(replans, 50)) if replans.size else math.nan,
                    "replan_p95_s": float(np.percentile(replans, 95)) if replans.size else math.nan,
                    "replan_cpu_mean_s": sum(r["replan_cpu_total"] for r in chosen) / plans,
                    "task_over_execution": sum(r["task_time"] for r in chosen) / execution if execution else math.nan,
                    "waiting_s_per_run": sum(r["waiting_time"] for r in chosen) / len(chosen),
                    "controls_mean": float(np.mean([r["controls"] for r in chosen])),
                    "blocker_clearings": sum(int(r.get("blocker_clearings", 0)) for r in chosen),
                    "task_time_success_mean_s": float(np.mean([r["task_time"] for r in chosen if r["success"]]))
                    if successes
                    else math.nan,
                }
            )
    return rows


def table(rows: list[dict]) -> str:
    headers = ["planner", "kind", "coarse", "workers", "corrected", "success", "95% CI", "replan p50 s", "p95 s",
               "CPU s/plan", "task/exec", "wait s/run", "controls", "task s (succ.)"]
    body = [
        [
            r["planner"],
            r["scene_kind"],
            r["coarse_model"],
            r["corrector_workers"],
            r["corrected_controls"],
            f"{r['successes']}/{r['runs']}",
            f"{100 * r['success_ci95'][0]:.0f}-{100 * r['success_ci95'][1]:.0f}%",
            f"{r['replan_p50_s']:.3f}",
            f"{r['replan_p95_s']:.3f}",
            f"{r['replan_cpu_mean_s']:.3f}",
            f"{r['task_over_execution']:.3f}",
            f"{r['waiting_s_per_run']:.2f}",
            f"{r['controls_mean']:.1f}",
            f"{r['task_time_success_mean_s']:.1f}",
        ]
        for r in rows
    ]
    return format_table(headers, body)


def readme_figures(rows: list[dict], runs: list[dict], minutes: float, load_after: list[float]) -> dict:
    """The README's figures: per planner and scene kind (``<planner>_<kind>_<figure>``, the
    planner's ``-`` as ``_``) successes, runs, replan_p50_s, replan_p95_s, task_over_execution;
    the run's length in minutes and the 1-minute load average's range over the runs."""
    figures: dict[str, float] = {}
    for row in rows:
        if row["scene_kind"] == "all":
            continue
        prefix = f"{row['planner'].replace('-', '_')}_{row['scene_kind']}"
        for name in ("successes", "runs", "replan_p50_s", "replan_p95_s", "task_over_execution"):
            figures[f"{prefix}_{name}"] = row[name]
    loads = [run["load_average_before"] for run in runs] + [load_after[0]]
    figures.update(benchmark_minutes=minutes, load_min=min(loads), load_max=max(loads))
    return figures


def reference_variant(args: argparse.Namespace) -> str:
    """The reference file's variant: ``""`` for the default scenes; ``families`` for ``--families
    all``, followed by the planners' names when ``--planners`` chose some
    (``families_realtime``: bench/reference/realtime_mpc_families_realtime.json), followed by
    ``scenes<seed>_<seed>...`` for ``--family-scene-seeds`` other than the default."""
    if not args.families:
        return ""
    scene_seeds = args.family_scene_seeds
    held_out = [] if scene_seeds == [FAMILY_SCENE_SEED] else ["scenes" + "_".join(map(str, scene_seeds))]
    if args.planners == list(PLANNERS):
        return "_".join(["families", *held_out])
    return "_".join(["families", *(planner.replace("-", "_") for planner in args.planners), *held_out])


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return f"load average {os.getloadavg()}"


# -- main -----------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__.splitlines()[0], quick=f"scenes {QUICK_SCENES}; ISRR planners limited")
    parser.add_argument("--scenes", nargs="+", help="scene names (config/scenes or bench/scenes)")
    parser.add_argument("--families", nargs="+", choices=(*FAMILIES, "all"),
                        help="run the scene families' drawn scenes instead (all: the five)")
    parser.add_argument("--planners", nargs="+", choices=(*PLANNERS, *HORIZON_PLANNERS), default=list(PLANNERS))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--family-scene-seeds", nargs="+", type=int, default=[FAMILY_SCENE_SEED],
                        help=f"generator seeds of --families' scenes (default {FAMILY_SCENE_SEED}; others: held-out "
                             f"families new_<family>_<k>_s<seed>, written to {HELD_OUT_SCENES.relative_to(ROOT)})")
    parser.add_argument("--output", help="results name (default realtime_mpc[_quick])")
    bench_reference.add_reference_argument(parser)
    args = parser.parse_args(argv)
    args.family_scene_seeds = list(dict.fromkeys(args.family_scene_seeds))  # each seed once, in order
    families_reference = bool(args.families) and "all" in args.families and not args.quick
    if args.reference and (args.scenes or args.output or args.seeds != list(SEEDS)
                           or (args.families and not families_reference)
                           or (not args.families and args.planners != list(PLANNERS))):
        parser.error("--reference: run the default scenes, planners and seeds, or '--families all' with its seeds "
                     "(drop --scenes/--seeds/--output; with --families, --planners may choose)")
    if args.family_scene_seeds != [FAMILY_SCENE_SEED] and not args.families:
        parser.error("--family-scene-seeds: needs --families")
    if args.scenes and args.families:
        parser.error("--scenes, --families: choose one (--scenes takes a family's new_<family>_<k> too)")
    load_before = bench_reference.load_average()
    sources = PlannerSources.load(CONFIG)
    overrides = {planner: planner_overrides(planner, sources, quick=args.quick) for planner in args.planners}
    paths = all_scene_paths()
    default_names = list(QUICK_SCENES) if args.quick else list(paths)
    families = FAMILIES if args.families and "all" in args.families else tuple(dict.fromkeys(args.families or ()))
    family_scenes = write_family_scenes(scene_seeds=tuple(args.family_scene_seeds))
    paths.update({name: path for name, (_family, path) in family_scenes.items()})
    kinds = {name: family for name, (family, _path) in family_scenes.items()}
    names = [name for name, (family, _path) in family_scenes.items() if family in families] if families else (
        args.scenes or default_names)
    unknown = [name for name in names if name not in paths]
    if unknown:
        parser.error(f"unknown scene(s) {unknown}; known: {sorted(paths)}")
    notes = []
    if args.quick:
        notes.append(
            f"--quick: scenes {names}; ISRR planners limited to {QUICK_ISRR_ITERATIONS} optimizer iterations "
            f"per re-plan and {QUICK_MAX_CONTROLS} controls (the real-time planner is not limited)"
        )
    print(f"load before: {uptime()}", flush=True)
    for planner, changed in overrides.items():
        print(f"planner {planner}: config/planner.yaml, model.yaml, mpc.yaml with overrides {json.dumps(changed)}")
    for note in notes:
        print("note: " + note)
    name = args.output or ("realtime_mpc_quick" if args.quick else "realtime_mpc")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    settings = {
        "planners": args.planners,
        "scenes": names,
        "seeds": args.seeds,
        "scene_seed": SCENE_SEED,
        "families": list(families),
        "family_scene_seeds": args.family_scene_seeds,
        "quick": args.quick,
        "overrides": overrides,
        "world": "SimWorld, config/sim_world.yaml defaults (push noise on), virtual clock",
    }
    runs: list[dict] = []
    started = time.perf_counter()
    machine = environment()

    def write(rows: list[dict], load_after: str | None) -> None:
        # rewritten after every run (``complete`` false, no summary) so a run cut short keeps its runs
        payload = {
            "environment": machine,
            "settings": settings,
            "notes": notes,
            "complete": load_after is not None,
            "load_after": load_after,
            "benchmark_wall_time": time.perf_counter() - started,
            "summary": rows,
            "runs": runs,
        }
        path.write_text(json.dumps(jsonable(payload), indent=1) + "\n")

    for name in names:
        scene = load_scene(paths[name])
        for seed in args.seeds:
            for planner in args.planners:
                record = run_one(planner, name, scene, seed, sources, args, kind=kinds.get(name))
                runs.append(record)
                replans = np.asarray(record["replan_times"])
                print(
                    f"[{time.perf_counter() - started:6.0f} s] {name:18s} seed {seed} {planner:19s} "
                    f"{record['outcome']:14s} controls {record['controls']:2d} replan p50 "
                    f"{np.median(replans) if replans.size else math.nan:.3f} s max "
                    f"{replans.max() if replans.size else math.nan:.3f} s  task {record['task_time']:5.1f} s "
                    f"exec {record['execution_time']:5.1f} s  load {record['load_average_before']:.1f}  "
                    f"coarse {record['coarse_model']}"
                    + ("" if record["success"] else f"  ({record['failure_reason'][:80]})"),
                    flush=True,
                )
                write([], None)
    rows = summarize(runs)
    load_after = uptime()
    print()
    print(table(rows))
    print(f"load after: {load_after}")
    write(rows, load_after)
    print(f"wrote {path}")
    minutes = (time.perf_counter() - started) / 60.0
    bench_reference.write_figures(
        "realtime_mpc", readme_figures(rows, runs, minutes, bench_reference.load_average()),
        reference=args.reference, load_before=load_before, quick=args.quick, variant=reference_variant(args),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
