"""Robust MPC benchmark: the nominal real-time planner vs robust scoring over the target's physics.

Planners (all built as the MPC node builds its own: ``config/planner.yaml``, ``model.yaml``,
``mpc.yaml``, :func:`parapush.planning.stack_planner.build_planner`; the real-time preset):

- ``nominal``: the files' planner unchanged (M = 1);
- ``robust-mean`` and ``robust-cvar``: the same planner whose elites are also rolled out under
  M - 1 = 3 models of the target drawn from its belief and ranked by the mean, or by CVaR_0.5
  (the mean of the worst 2 of 4) (:mod:`parapush.planning.robust_scoring`), built by
  ``build_planner`` with the override ``robust: {samples: 4, risk: ..., belief: {seed: <run seed>}}``
  (the file's spread and measurement noise); the belief starts at the file's uniform prior around
  the scene's parameters (mass +-50 %, support friction +-30 %, centre of mass within 2 cm) and is
  narrowed after every executed control (:meth:`parapush.planning.robust_planning.RobustPlanning.attach`,
  inside the re-plan, so its time counts as re-plan time), and the planner's corrector (its local
  engine) then predicts with the belief's estimate (``robust.adapt``);
- ``robust-cvar-fixed`` (an ablation, only with ``--planners``): ``robust-cvar`` whose corrector
  keeps the scene's parameters (``robust.adapt: false``).

Worlds (:class:`parapush.sim.world.SimWorld`, ``config/sim_world.yaml``'s physics and push noise,
on a virtual clock as in ``bench/realtime_mpc.py``):

- ``randomized``: every object's true mass, support friction and centre of mass are drawn per
  run from the same ranges (uniform; :meth:`ParameterSpread.sample`), seeded by the run's seed;
- ``nominal``: the scene file's parameters.

Scenes: drawn by ``bench/make_benchmark_scenes.py``'s generators with the NEW seed
``SCENE_SEED`` (never used for tuning): obstacle scenes, clutter scenes and box scenes (the
obstacle generator's scene whose target is the scene format's default box, 10.9 x 15.4 cm), each
checked by ``make_benchmark_scenes.validate``, written to
``bench/scenes/robust_<kind>_<k>.yaml``. Seeds 0-4 (world noise, drawn physics, optimizer).
``--quick``: one scene per kind, seeds 0-2. ``--scene-seed S``: the same kinds drawn with another
generator seed (``robust<S>_<kind>_<k>.yaml``; results ``robust_mpc_scenes<S>.json``), to check
on scenes never seen that a gain is real.

Summary rows ``{planner, risk, samples_M, world, scene_kind, runs, successes, success_ci95,
replan_p50_s, replan_p95_s, objects_disturbed}`` (``objects_disturbed``: mean number of
non-target objects moved more than 1 cm per run), and ``narrowing`` rows for the robust
planners: the belief's spread of each parameter after 3 updates over its initial spread
(median over runs), the share of runs whose centre-of-mass estimate got closer to the world's
true value, the share whose estimate moved in its direction (cosine > 0) and how far it moved
over how far it needed to (the planner's fine model rests each object on one contact under its
centre of mass, the world on eight tilting support points: a centre-of-mass offset turns an
object about 0.7x as much in the model as in the world).

    flock /tmp/parapush-timing.lock python bench/robust_mpc.py --quick   # bench/results/robust_mpc_quick.json
    flock /tmp/parapush-timing.lock python bench/robust_mpc.py           # bench/results/robust_mpc.json
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from parapush.identification.parameter_belief import ParameterSpread
from parapush.identification.parameters import PARAMETER_NAMES, ObjectParameters
from parapush.planning.async_world import VirtualClockWorld
from parapush.planning.risk import RiskMeasure
from parapush.planning.stack_planner import PlannerSources, build_planner
from parapush.scene import Scene, load_scene
from parapush.sim.world import SimWorld
from parapush.sim.world_physics import SimWorldPhysics

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference as bench_reference  # noqa: E402
from make_benchmark_scenes import clutter_scene, obstacle_scene, scene_yaml, validate  # noqa: E402
from parareal_common import RESULTS, bench_arguments, environment, format_table, wilson_interval  # noqa: E402
from parareal_common import _jsonable as jsonable  # noqa: E402
from realtime_mpc import CONFIG, CpuTimed, uptime, world_settings  # noqa: E402

SCENES = Path(__file__).resolve().parent / "scenes"
SCENE_SEED = 3030
"""Generator seed of this bench's scenes (never used for tuning)."""
KINDS = ("obstacle", "clutter", "box")
SCENES_PER_KIND = 2
PLANNERS = {  # name -> (M, risk)
    "nominal": (1, RiskMeasure("mean")),
    "robust-mean": (4, RiskMeasure("mean")),
    "robust-cvar": (4, RiskMeasure("cvar", alpha=0.5)),
    "robust-cvar-fixed": (4, RiskMeasure("cvar", alpha=0.5)),
}
DEFAULT_PLANNERS = ("nominal", "robust-mean", "robust-cvar")
FIXED_CORRECTOR = ("robust-cvar-fixed",)
"""Ablation (``--planners``): robust scoring whose corrector keeps the scene's parameters (``robust.adapt: false``)."""
WORLDS = ("randomized", "nominal")
SEEDS = (0, 1, 2, 3, 4)
QUICK_SEEDS = (0, 1, 2)
DISTURBED = 0.01
"""m: a non-target object that ends farther than this from its start was disturbed."""
NARROWING_UPDATES = 3
MIN_COM_TO_FIND = 0.003
"""m: runs whose true centre of mass is closer than this to the prior's say nothing about its direction."""


# -- scenes -------------------------------------------------------------------------------------
def scene_paths(count: int, scene_seed: int = SCENE_SEED) -> dict[str, tuple[str, Path]]:
    """``count`` scenes per kind drawn with ``scene_seed``, written to bench/scenes as
    ``robust_<kind>_<k>.yaml`` (``robust<scene_seed>_<kind>_<k>.yaml`` for another seed than
    ``SCENE_SEED``); name -> (kind, path)."""
    SCENES.mkdir(exist_ok=True)
    prefix = "robust" if scene_seed == SCENE_SEED else f"robust{scene_seed}"
    paths = {}
    for kind in KINDS:
        for index in range(1, count + 1):
            if kind == "clutter":
                scene = clutter_scene(scene_seed, index)
            else:  # box: the obstacle generator's scene with the scene format's default box as the target
                scene = obstacle_scene(scene_seed, index, box_target=kind == "box")
            scene["name"] = f"{prefix}_{kind}_{index}"
            text = scene_yaml(scene, scene_seed, f"(generators, --seed {scene_seed}) via bench/robust_mpc.py")
            path = SCENES / f"{scene['name']}.yaml"
            if not path.is_file() or path.read_text() != text:
                path.write_text(text)
            validate(path)
            paths[scene["name"]] = (kind, path)
    return paths


def target_index(scene: Scene) -> int:
    return [spec.name for spec in scene.objects].index(scene.target)


def drawn_physics(scene: Scene, seed: int) -> list[ObjectParameters]:
    """Every object's true parameters for a randomized-world run (``ParameterSpread()``'s ranges)."""
    rng = np.random.default_rng([seed, 30])
    spread = ParameterSpread()
    return [ObjectParameters.from_vector(spread.sample(ObjectParameters.from_scene(scene, index), 1, rng)[0])
            for index in range(len(scene.objects))]


# -- one run --------------------------------------------------------------------------------------
def planner_overrides(planner: str, seed: int) -> dict[str, Any]:
    """What ``planner`` changes in the configuration files: the ``robust`` section (M, the risk,
    the belief's seed); nothing for ``nominal`` when the file's M is 1 (checked in :func:`main`)."""
    samples, risk = PLANNERS[planner]
    if samples == 1:
        return {"robust": {"samples": 1}}
    return {"robust": {"samples": samples, "risk": dataclasses.asdict(risk), "belief": {"seed": seed},
                       "adapt": planner not in FIXED_CORRECTOR}}


def run_one(planner: str, world_kind: str, name: str, kind: str, scene: Scene, seed: int,
            sources: PlannerSources) -> dict[str, Any]:
    samples, risk = PLANNERS[planner]
    sim = SimWorld(scene, world_settings(seed))
    truth = drawn_physics(scene, seed) if world_kind == "randomized" else [
        ObjectParameters.from_scene(scene, index) for index in range(len(scene.objects))]
    if world_kind == "randomized":
        for index, parameters in enumerate(truth):
            sim.set_object_physics(index, mass=parameters.mass, support_friction=parameters.support_friction,
                                   pusher_friction=parameters.pusher_friction, com_offset=parameters.com_offset)
    world: Any = VirtualClockWorld(SimWorldPhysics(sim))
    target = target_index(scene)
    built = build_planner(scene, sources.with_overrides(planner_overrides(planner, seed)), seed=seed)
    with built:
        if built.robust is not None:
            world = built.robust.attach(built.loop, world)
        timed = CpuTimed(built.loop.optimizer, "optimize")
        built.loop.optimizer = timed
        result = built.loop.run(world, max_controls=sources.planner.mpc.max_controls)
    history = [] if built.robust is None else built.robust.history  # the prior, then each update's belief
    spreads = [spread.tolist() for _, spread in history]
    estimates = [estimate.tolist() for estimate, _ in history]
    others = [index for index in range(len(scene.objects)) if index != target]
    disturbed = 0
    if result.states.shape[0] and others:
        layout = scene.layout
        first, last = result.states[0], result.states[-1]
        disturbed = sum(np.hypot(*(last[layout.object_pose(i)][:2] - first[layout.object_pose(i)][:2])) > DISTURBED
                        for i in others)
    return {
        "planner": planner, "risk": risk.kind if samples > 1 else "none", "samples_M": samples,
        "world": world_kind, "scene": name, "scene_kind": kind, "seed": seed,
        "outcome": result.outcome.name, "success": result.success, "failure_reason": result.failure_reason,
        "controls": len(result.steps), "replan_times": result.replan_times.tolist(),
        "replan_cpu_total": timed.cpu, "objects_disturbed": int(disturbed),
        "blocker_clearings": result.blocker_clearings, "final_distance": result.final_distance,
        "true_target": truth[target].as_vector().tolist(),
        "belief_spreads": spreads, "belief_estimates": estimates,
    }


# -- statistics -----------------------------------------------------------------------------------
def summarize(runs: list[dict]) -> list[dict]:
    rows = []
    for planner, (samples, risk) in PLANNERS.items():
        for world in WORLDS:
            for kind in (*KINDS, "all"):
                chosen = [r for r in runs if r["planner"] == planner and r["world"] == world
                          and (kind == "all" or r["scene_kind"] == kind)]
                if not chosen:
                    continue
                successes = sum(r["success"] for r in chosen)
                replans = np.concatenate([np.asarray(r["replan_times"], dtype=float) for r in chosen])
                rows.append({
                    "planner": planner, "risk": risk.kind if samples > 1 else "none", "samples_M": samples,
                    "world": world, "scene_kind": kind, "runs": len(chosen), "successes": int(successes),
                    "success_ci95": list(wilson_interval(int(successes), len(chosen))),
                    "replan_p50_s": float(np.percentile(replans, 50)) if replans.size else math.nan,
                    "replan_p95_s": float(np.percentile(replans, 95)) if replans.size else math.nan,
                    "objects_disturbed": float(np.mean([r["objects_disturbed"] for r in chosen])),
                })
    return rows


def narrowing(runs: list[dict]) -> list[dict]:
    """Per robust planner and world: spread after ``NARROWING_UPDATES`` updates / initial, per
    parameter (median over the runs that had that many), and the share of those runs whose
    centre-of-mass estimate got closer to the true one."""
    rows = []
    for planner, (samples, _) in PLANNERS.items():
        if samples == 1:
            continue
        for world in WORLDS:
            chosen = [r for r in runs if r["planner"] == planner and r["world"] == world
                      and len(r["belief_spreads"]) > NARROWING_UPDATES]
            if not chosen:
                continue
            ratios = np.array([np.divide(r["belief_spreads"][NARROWING_UPDATES], r["belief_spreads"][0],
                                         out=np.ones(len(PARAMETER_NAMES)), where=np.array(r["belief_spreads"][0]) > 0)
                               for r in chosen])
            moved = np.array([np.subtract(r["belief_estimates"][NARROWING_UPDATES][3:], r["belief_estimates"][0][3:])
                              for r in chosen])
            needed = np.array([np.subtract(r["true_target"][3:], r["belief_estimates"][0][3:]) for r in chosen])
            rows.append({
                "planner": planner, "world": world, "runs": len(chosen), "updates": NARROWING_UPDATES,
                **{f"spread_ratio_{name}": float(np.median(ratios[:, i])) for i, name in enumerate(PARAMETER_NAMES)},
                **com_movement(moved, needed),
            })
    return rows


def com_movement(moved: np.ndarray, needed: np.ndarray) -> dict[str, float]:
    """How the centre-of-mass estimates moved (``moved`` (R, 2) m) against how they needed to move
    to reach the true ones (``needed`` (R, 2) m), over the runs whose true centre of mass lies at
    least ``MIN_COM_TO_FIND`` from the prior's (NaN when none: the nominal world's lies on it)."""
    far = np.linalg.norm(needed, axis=1) >= MIN_COM_TO_FIND
    if not np.any(far):
        return {"com_runs": 0, "com_estimate_closer_share": math.nan, "com_direction_cosine_median": math.nan,
                "com_direction_towards_share": math.nan, "com_moved_over_needed_median": math.nan}
    moved, needed = moved[far], needed[far]
    lengths = np.linalg.norm(needed, axis=1)
    cosine = np.sum(moved * needed, axis=1) / np.maximum(np.linalg.norm(moved, axis=1) * lengths, 1e-12)
    return {
        "com_runs": int(far.sum()),
        "com_estimate_closer_share": float(np.mean(np.linalg.norm(needed - moved, axis=1) < lengths)),
        "com_direction_cosine_median": float(np.median(cosine)),
        "com_direction_towards_share": float(np.mean(cosine > 0.0)),
        "com_moved_over_needed_median": float(np.median(np.linalg.norm(moved, axis=1) / lengths)),
    }


def table(rows: list[dict]) -> str:
    headers = ["planner", "world", "kind", "success", "95% CI", "replan p50 s", "p95 s", "disturbed"]
    body = [[r["planner"], r["world"], r["scene_kind"], f"{r['successes']}/{r['runs']}",
             f"{100 * r['success_ci95'][0]:.0f}-{100 * r['success_ci95'][1]:.0f}%", f"{r['replan_p50_s']:.3f}",
             f"{r['replan_p95_s']:.3f}", f"{r['objects_disturbed']:.2f}"] for r in rows]
    return format_table(headers, body)


def figures(rows: list[dict], narrowed: list[dict], minutes: float, loads: list[float]) -> dict[str, float]:
    """The README's figures: per planner and world successes, runs, re-plan p50/p95 (``all`` kinds,
    and each kind with the kind in the name); the narrowing ratios of the centre of mass; the
    run's minutes and load range."""
    result: dict[str, float] = {}
    for row in rows:
        kind = "" if row["scene_kind"] == "all" else f"_{row['scene_kind']}"
        prefix = f"{row['planner'].replace('-', '_')}_{row['world']}{kind}"
        for name in ("successes", "runs", "replan_p50_s", "replan_p95_s"):
            result[f"{prefix}_{name}"] = row[name]
    for row in narrowed:
        if row["world"] != "randomized":  # the nominal world's centre of mass is the prior's: nothing to find
            continue
        prefix = f"{row['planner'].replace('-', '_')}_{row['world']}"
        for name in ("spread_ratio_com_x", "spread_ratio_com_y", "com_estimate_closer_share",
                     "com_direction_towards_share", "com_moved_over_needed_median"):
            result[f"{prefix}_{name}"] = row[name]
    result.update(benchmark_minutes=minutes, load_min=min(loads), load_max=max(loads))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__.splitlines()[0], quick="one scene per kind, seeds 0-2")
    parser.add_argument("--planners", nargs="+", choices=list(PLANNERS), default=list(DEFAULT_PLANNERS))
    parser.add_argument("--worlds", nargs="+", choices=WORLDS, default=list(WORLDS))
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--seeds", nargs="+", type=int)
    parser.add_argument("--scene-seed", type=int, default=SCENE_SEED,
                        help=f"generator seed of the scenes (default {SCENE_SEED}; another one checks a gain on "
                             "scenes never seen: results and figures get the variant scenes<seed>)")
    bench_reference.add_reference_argument(parser)
    args = parser.parse_args(argv)
    seeds = args.seeds or list(QUICK_SEEDS if args.quick else SEEDS)
    if args.reference and (args.seeds or args.planners != list(DEFAULT_PLANNERS) or args.worlds != list(WORLDS)
                           or args.kinds != list(KINDS)):
        parser.error("--reference: run the default planners, worlds, kinds and seeds")
    load_before = bench_reference.load_average()
    sources = PlannerSources.load(CONFIG)
    scenes = {name: value for name, value in scene_paths(1 if args.quick else SCENES_PER_KIND, args.scene_seed).items()
              if value[0] in args.kinds}
    variant = "" if args.scene_seed == SCENE_SEED else f"scenes{args.scene_seed}"
    print(f"load before: {uptime()}", flush=True)
    runs, loads = [], [load_before[0]]
    started = time.perf_counter()
    for name, (kind, path) in scenes.items():
        scene = load_scene(path)
        for seed in seeds:
            for world in args.worlds:
                for planner in args.planners:  # interleaved: the planners see the same load
                    record = run_one(planner, world, name, kind, scene, seed, sources)
                    loads.append(bench_reference.load_average()[0])
                    runs.append(record)
                    replans = np.asarray(record["replan_times"])
                    print(f"[{time.perf_counter() - started:6.0f} s] {name:18s} seed {seed} {world:10s} {planner:12s} "
                          f"{record['outcome']:14s} controls {record['controls']:2d} replan p50 "
                          f"{np.median(replans) if replans.size else math.nan:.3f} s  disturbed "
                          f"{record['objects_disturbed']}  load {loads[-1]:.1f}", flush=True)
    rows, narrowed = summarize(runs), narrowing(runs)
    load_after = uptime()
    print()
    print(table(rows))
    for row in narrowed:
        print("narrowing: " + json.dumps(row))
    print(f"load after: {load_after}")
    name = "_".join(part for part in ("robust_mpc", "quick" if args.quick else "", variant) if part)
    RESULTS.mkdir(parents=True, exist_ok=True)
    minutes = (time.perf_counter() - started) / 60.0
    payload = {
        "environment": environment(),
        "settings": {"planners": {p: {"samples_M": PLANNERS[p][0], "risk": dataclasses.asdict(PLANNERS[p][1])}
                                  for p in args.planners},
                     "worlds": args.worlds, "scenes": list(scenes), "seeds": seeds, "scene_seed": args.scene_seed,
                     "overrides": {p: planner_overrides(p, 0) for p in args.planners},
                     "robust_file": dataclasses.asdict(sources.planner.robust),
                     "world": "SimWorld, config/sim_world.yaml defaults (push noise on), virtual clock"},
        "load_after": load_after,
        "benchmark_minutes": minutes,
        "summary": rows,
        "narrowing": narrowed,
        "runs": runs,
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(jsonable(payload), indent=1) + "\n")
    print(f"wrote {path}")
    bench_reference.write_figures("robust_mpc", figures(rows, narrowed, minutes, loads), reference=args.reference,
                                  load_before=load_before, quick=args.quick, variant=variant)
    return 0


if __name__ == "__main__":
    sys.exit(main())
