"""Identification of an unknown object from pushes in the simulated world (paper 3's task).

"Reality" is :class:`parapush.sim.world.SimWorld` (its own MuJoCo world, the simulated arm
with its acceleration limit, and the push noise calibrated to the real robot's scatter)
holding a cylinder whose mass, support friction and pusher friction differ from the scene
file's: mass 0.8 kg (file: 0.5), support friction 0.6 (1.0), pusher friction 0.45 (0.2).
The robot makes ``--train`` pushes (3 controls of 0.5 s, +x at 4-6 cm/s with a random
sideways component, through a random point of the object's face); the states at the control
boundaries, plus mocap-like noise (``--observation-noise``), are the records.
:class:`parapush.identification.ObjectIdentifier` then fits the fine model (built from the
scene *file*) to them. ``--test`` more pushes, never seen by the fit, measure:

* one-step error: mean over steps of the object's |xy error| + 0.05 m/rad |yaw error| when
  each 0.5 s step is predicted from the observed state (what the fit minimises);
* open-loop error: the object's final position and yaw error when the whole push is
  predicted from its first state (what a planner relies on);

for the scene file's parameters, the identified ones and the true ones (the last is the
floor: the noise and the world/fine-model differences that no parameter can remove).

    python bench/identification.py [--quick] [--train 8] [--test 8] [--seed 0] [--reference]

The README quotes the held-out open-loop position errors and the identified pusher friction;
``--reference`` writes them to ``bench/reference/identification.json`` (see ``bench/reference.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time

import numpy as np
from matplotlib.figure import Figure

import reference as bench_reference
from parapush.execution.commands import TwistCommand
from parapush.graph import config_dir, resolve_scene_path
from parapush.identification import IdentificationSettings, ObjectIdentifier, ObjectParameters, PushRecord
from parapush.physics.fine import FineModel
from parapush.prediction import PredictionEngine, load_model_config
from parapush.scene import Scene, load_scene, wrap_angle
from parapush.sim.world import SimWorld, WorldSettings
from parareal_common import format_table, write_results

TRUTH = ObjectParameters(mass=0.8, support_friction=0.6, pusher_friction=0.45)
CONTROLS, DURATION, COMMAND_PERIOD = 3, 0.5, 0.05  # -, s, s
ANGLE_WEIGHT = 0.05  # m/rad


def alone(scene: Scene, offset: float, heading: float) -> Scene:
    """The scene's target alone at the origin, the pusher 2 mm behind it along ``heading``
    (rad), its path ``offset`` (m) sideways of the centre."""
    spec = scene.objects[scene.object_index(scene.target)]
    reach = math.sqrt((spec.radius + scene.pusher.radius) ** 2 - offset**2) + 0.002
    direction = np.array([math.cos(heading), math.sin(heading)])
    side = np.array([-direction[1], direction[0]])
    pusher = dataclasses.replace(scene.pusher, position=tuple(-reach * direction + offset * side))
    return Scene(name="identification", table=scene.table, pusher=pusher,
                 objects=(dataclasses.replace(spec, pose=(0.0, 0.0, 0.0)),), object_friction=scene.object_friction)


def true_scene(scene: Scene) -> Scene:
    """The same scene with the object's true parameters (support friction = max(table, object))."""
    spec = dataclasses.replace(scene.objects[0], mass=TRUTH.mass, friction=TRUTH.support_friction)
    table = dataclasses.replace(scene.table, friction=TRUTH.support_friction)
    pusher = dataclasses.replace(scene.pusher, friction=TRUTH.pusher_friction)
    return dataclasses.replace(scene, table=table, pusher=pusher, objects=(spec,))


def push(scene: Scene, rng: np.random.Generator, noise: float, seed: int) -> PushRecord:
    """One push in the world holding the true object; states observed at the control boundaries."""
    radius = scene.objects[0].radius
    heading = rng.uniform(-0.3, 0.3)
    nominal = alone(scene, rng.uniform(-0.5, 0.5) * radius, heading)
    world = SimWorld(true_scene(nominal), WorldSettings(seed=seed))
    speed = rng.uniform(0.04, 0.06)
    controls = np.array([speed * np.array([math.cos(heading), math.sin(heading)]) + rng.uniform(-0.01, 0.01, 2)
                         for _ in range(CONTROLS)])
    states = [world.true_state().copy()]
    for control in controls:
        elapsed = 0.0
        while elapsed < DURATION - 1e-9:
            world.command(TwistCommand(stamp_s=world.time, frame_id="table", linear=(*control, 0.0)))
            world.step(COMMAND_PERIOD)
            elapsed += COMMAND_PERIOD
        states.append(world.true_state().copy())
    observed = np.array(states)
    layout = nominal.layout
    observed[:, : layout.position_dimension] += rng.normal(0.0, noise, (len(states), layout.position_dimension))
    return PushRecord(observed, controls, np.full(CONTROLS, DURATION))


def open_loop_errors(fine: FineModel, identifier: ObjectIdentifier, records, parameters: ObjectParameters):
    """(mm, deg): mean final position and yaw error of whole pushes predicted from their first state."""
    pose = fine.layout.object_pose(0)
    positions, angles = [], []
    for record in records:
        error = identifier.predict_push(record, parameters)[-1][pose] - record.states[-1][pose]
        positions.append(1000 * math.hypot(error[0], error[1]))
        angles.append(math.degrees(abs(float(wrap_angle(error[2])))))
    return float(np.mean(positions)), float(np.mean(angles))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 + 4 pushes, a short search")
    parser.add_argument("--train", type=int, default=8)
    parser.add_argument("--test", type=int, default=8)
    parser.add_argument("--observation-noise", type=float, default=0.0005, help="m, std added to observed poses")
    parser.add_argument("--seed", type=int, default=0)
    bench_reference.add_reference_argument(parser)
    args = parser.parse_args()
    load_before = bench_reference.load_average()
    train, test = (4, 4) if args.quick else (args.train, args.test)
    scene = load_scene(resolve_scene_path("clutter_fig1.yaml"))
    nominal_scene = alone(scene, 0.0, 0.0)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    records = [push(scene, rng, args.observation_noise, args.seed + index) for index in range(train + test)]
    recorded = time.perf_counter() - started
    training, held_out = records[:train], records[train:]
    # The fine model the identification node searches with: config/model.yaml's.
    fine = PredictionEngine.build_fine_model(nominal_scene, load_model_config(config_dir() / "model.yaml"))
    settings = IdentificationSettings(population=16 if args.quick else 32, elite=4 if args.quick else 8,
                                      iterations=6 if args.quick else 12, seed=args.seed)
    with ObjectIdentifier(fine, 0) as identifier:
        started = time.perf_counter()
        result = identifier.identify(training, settings=settings)
        searched = time.perf_counter() - started
        candidates = {"scene file": identifier.variants.nominal, "identified": result.parameters, "true": TRUTH}
        vectors = np.stack([parameters.as_vector() for parameters in candidates.values()])
        one_step = {"training": identifier.prediction_errors(training, vectors),
                    "held out": identifier.prediction_errors(held_out, vectors)}
        open_loop = {name: open_loop_errors(fine, identifier, held_out, parameters)
                     for name, parameters in candidates.items()}
    print(f"{train} training + {test} held-out pushes in the simulated world ({recorded:.1f} s); search: "
          f"{result.iterations} iterations, {result.evaluations} hypotheses, {searched:.1f} s ({result.stop_reason})")
    names = ("mass kg", "support friction", "pusher friction", "com x mm", "com y mm")
    scale = np.array([1.0, 1.0, 1.0, 1000.0, 1000.0])
    print(format_table(["parameter", "scene file", "identified", "true", "sensitivity mm"], [
        [name, f"{vectors[0][i] * scale[i]:.3f}", f"{vectors[1][i] * scale[i]:.3f}", f"{vectors[2][i] * scale[i]:.3f}",
         f"{result.sensitivity[i] * 1000:.3f}"] for i, name in enumerate(names)]))
    rows = [[name, f"{one_step['training'][i] * 1000:.2f}", f"{one_step['held out'][i] * 1000:.2f}",
             f"{open_loop[name][0]:.1f}", f"{open_loop[name][1]:.2f}"] for i, name in enumerate(candidates)]
    headers = ["parameters", "one-step train mm", "one-step held-out mm", "open-loop mm", "open-loop deg"]
    print(format_table(headers, rows))
    figure = Figure(figsize=(10, 4), layout="constrained")
    left, right = figure.subplots(1, 2)
    x = np.arange(len(candidates))
    left.bar(x - 0.2, one_step["training"] * 1000, 0.4, label="training pushes")
    left.bar(x + 0.2, one_step["held out"] * 1000, 0.4, label="held-out pushes")
    left.set_xticks(x, list(candidates))
    left.set_ylabel("one-step pose error, mm")
    left.legend()
    right.bar(x, [open_loop[name][0] for name in candidates])
    right.set_xticks(x, list(candidates))
    right.set_ylabel("open-loop final position error (held out), mm")
    figure.suptitle("Identifying an unknown object's parameters in the simulated world")
    json_path, png_path = write_results("identification", {
        "protocol": {"train": train, "test": test, "controls": CONTROLS, "duration_s": DURATION,
                     "observation_noise_m": args.observation_noise, "seed": args.seed, "quick": args.quick},
        "parameters": {name: dict(zip(names, vector.tolist(), strict=True))
                       for name, vector in zip(candidates, vectors, strict=True)},
        "sensitivity_m": dict(zip(names, result.sensitivity.tolist(), strict=True)),
        "one_step_error_m": {split: dict(zip(candidates, values.tolist(), strict=True))
                             for split, values in one_step.items()},
        "open_loop_error_mm_deg": open_loop,
        "search": {"iterations": result.iterations, "evaluations": result.evaluations, "seconds": searched,
                   "history_m": result.history.tolist()},
    }, figure)
    print(f"wrote {json_path} and {png_path}")
    bench_reference.write_figures(
        "identification",
        {
            "held_out_error_mm_scene_parameters": open_loop["scene file"][0],
            "held_out_error_mm_identified": open_loop["identified"][0],
            "held_out_error_mm_true_parameters": open_loop["true"][0],
            "pusher_friction_identified": float(result.parameters.pusher_friction),
            "pusher_friction_true": TRUTH.pusher_friction,
            "training_pushes": train,
            "push_duration_s": CONTROLS * DURATION,
        },
        reference=args.reference,
        load_before=load_before,
        quick=args.quick,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
