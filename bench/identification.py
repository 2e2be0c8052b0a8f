"""Identification of unknown objects from pushes in the simulated world (paper 3's and the
differentiable-physics paper's task): scene-file parameters vs the cross-entropy search vs the
differentiable cell grid.

"Reality" is :class:`parapush.sim.world.SimWorld` (its own MuJoCo world, the simulated arm
with its acceleration limit, and the push noise calibrated to the real robot's scatter)
holding an object that differs from the scene file's: a uniform ``cylinder`` (mass 0.8 kg,
file: 0.5; support friction 0.6, file 1.0; pusher friction 0.45, file 0.2), a uniform ``box``
(the same values) and two heterogeneous objects made of patches (``ObjectSpec.patches``, one
MuJoCo body of several geoms): ``hetero_hammer``, a long bar with a heavy, high-friction head,
and ``hetero_patch``, a box with a light rubber strip along one side.

The world's physics (``--world``): ``exact`` (the default) gives its objects roll and pitch
(``FineSettings.object_tilt``: the table contacts share the weight as a rigid body's do; without
them MuJoCo's solver shares it to resist the motion, and an off-centre push turns a box 2.7x less
than Coulomb friction on its corners says) and collides the pusher as a capsule (MuJoCo's
cylinder/box collider takes a face's normal at a box's corner, the capsule the true one).
``configured``: ``config/sim_world.yaml``'s physics, the fine model's own, as the demo's world.

The robot makes pushes (3 controls of 0.5 s at 4-6 cm/s, each with a random sideways component
of up to 1 cm/s): the cylinder at yaw 0 within 0.3 rad of +x through a random point of its middle
half; a box-shaped object at a random yaw against one of its faces, within 0.3 rad of the face's
inward normal, through a point in the middle 60 % of the face (the paper's pushes: a push that
meets a corner sticks or slides on a hair's difference, in any model). The states at the control
boundaries, plus mocap-like noise (``--observation-noise``), are the records. With the first 2, 4
and 8 training pushes:

* ``cem``: :class:`parapush.identification.ObjectIdentifier` fits the prediction service's fine
  model (``config/model.yaml``, built from the scene *file*) to them (mass, support and pusher
  friction, centre of mass);
* ``grid``: :class:`parapush.identification.grid_identifier.GridIdentifier` fits per-cell mass
  and friction maps (1 cm cells) of the differentiable sliding model, which then predicts;
  ``objects.<name>.fits.<pushes>.grid_on_fine_mm_deg`` is the service's fine model with the
  map applied (its regions as patches: what the identification node publishes);
* ``scene``: the fine model with the scene file's parameters (no identification).

Eight held-out pushes, never seen by a fit, measure the open-loop error: the object's final
position and yaw error when the whole push is predicted from its first state (what a planner
relies on). A fine model of the true object with the world's physics (``floor``) shows what no
fit can remove (the push noise); for uniform objects, ``searched_model_true_values_mm_deg`` is
the searched model with the true values. ``cem_world_physics_mm_deg``: the search with the
world's own physics in its fine model (all training pushes), which separates what the service
model's physics costs the search from what a distribution it cannot express does.

    python bench/identification.py [--quick] [--train 8] [--test 8] [--seed 0] [--world exact] [--reference]

``bench/results/identification.json`` has a ``summary`` list of rows {object, method, pushes,
heldout_mm, heldout_deg, seconds}. The README quotes the figures of 8 pushes (every object's
cross-entropy and grid errors, the cylinder's scene-file error and floor, its identified pusher
friction); ``--reference`` writes them to ``bench/reference/identification.json`` (see
``bench/reference.py``), or, for other inputs, beside it: ``identification_seed1.json`` for
``--seed 1``, ``identification_world_configured.json`` for ``--world configured``.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
from matplotlib.figure import Figure

import reference as bench_reference
from parapush.execution.commands import TwistCommand
from parapush.graph import config_dir, resolve_scene_path
from parapush.identification import (
    IdentificationSettings,
    ObjectIdentifier,
    ObjectParameters,
    PushRecord,
    scene_with_object,
)
from parapush.identification.cell_grid import CellGrid
from parapush.identification.grid_identifier import GridIdentificationSettings, GridIdentifier
from parapush.identification.map_rendering import render_map
from parapush.physics.fine import FineModel
from parapush.physics.fine_settings import FineSettings
from parapush.prediction import PredictionEngine, load_model_config
from parapush.scene import ObjectPatch, ObjectSpec, Scene, load_scene, wrap_angle
from parapush.sim.driver_settings import load_driver_settings
from parapush.sim.world import SimWorld, WorldSettings
from parareal_common import bench_arguments, format_table, write_results

CONTROLS, DURATION, COMMAND_PERIOD = 3, 0.5, 0.05  # -, s, s
CONTACT_MARGIN = 0.002  # m, the pusher starts this far back along its path from touching the object
PUSH_COUNTS = (2, 4, 8)
HEADING_SPREAD = 0.3  # rad, pushes head within this of +x (cylinder) or of the pushed face's inward normal
FACE_SPAN = 0.6  # box-shaped objects are pushed at most this fraction of a face's half-length from its middle


@dataclasses.dataclass(frozen=True)
class TrueObject:
    """One unknown object: its true spec (at the origin) and the true table and pusher friction."""

    spec: ObjectSpec
    table_friction: float
    pusher_friction: float


TRUE_OBJECTS = {
    "cylinder": TrueObject(ObjectSpec(name="cylinder", mass=0.8, friction=0.6), 0.6, 0.45),
    "box": TrueObject(ObjectSpec(name="box", shape="box", mass=0.8, friction=0.6), 0.6, 0.45),
    "hetero_hammer": TrueObject(ObjectSpec(
        name="hetero_hammer", shape="box", half_extents=(0.09, 0.03), mass=0.8, friction=0.4,
        patches=(ObjectPatch(center=(0.06, 0.0), half_extents=(0.03, 0.03), mass=0.55, friction=1.0),)), 0.4, 0.45),
    "hetero_patch": TrueObject(ObjectSpec(
        name="hetero_patch", shape="box", mass=0.6, friction=0.4,
        patches=(ObjectPatch(center=(0.0, 0.05), half_extents=(0.05, 0.025), mass=0.05, friction=1.2),)), 0.4, 0.45),
}
"""The unknown objects; the scene file gives each the shape of its true spec and the clutter_fig1
target's mass and friction, uniform."""


def nominal_scene(scene: Scene, true: TrueObject) -> Scene:
    """The scene file's view of the object: its true shape with the file's target mass and friction, uniform."""
    target = scene.objects[scene.object_index(scene.target)]
    spec = dataclasses.replace(true.spec, mass=target.mass, friction=target.friction, patches=())
    return Scene(name="identification", table=scene.table, pusher=scene.pusher, objects=(spec,),
                 object_friction=scene.object_friction)


def true_scene(scene: Scene, true: TrueObject) -> Scene:
    """The same scene holding the true object, table and pusher friction."""
    return dataclasses.replace(scene, table=dataclasses.replace(scene.table, friction=true.table_friction),
                               pusher=dataclasses.replace(scene.pusher, friction=true.pusher_friction),
                               objects=(true.spec,))


def placed(scene: Scene, offset: float, heading: float, yaw: float) -> Scene:
    """The scene's object at the origin with ``yaw`` (rad), the pusher ``CONTACT_MARGIN`` behind touching it
    along ``heading`` (rad), its path ``offset`` (m) sideways of the object's centre."""
    spec = dataclasses.replace(scene.objects[0], pose=(0.0, 0.0, yaw))
    direction = np.array([math.cos(heading), math.sin(heading)])
    side = np.array([-direction[1], direction[0]])
    outline = CellGrid.from_spec(spec, 1.0e3).parts  # the outline only (no cell centre needed)
    rotation = np.array([[math.cos(yaw), math.sin(yaw)], [-math.sin(yaw), math.cos(yaw)]])  # table -> body

    def gap(back: float) -> float:
        local = rotation @ (-back * direction + offset * side)
        return min(float(part.signed_distance(local)) for part in outline) - scene.pusher.radius

    inside, outside = 0.0, 0.5  # bisection for the distance back along the path at which the pusher touches
    for _ in range(60):
        middle = 0.5 * (inside + outside)
        inside, outside = (middle, outside) if gap(middle) < 0.0 else (inside, middle)
    start = -(outside + CONTACT_MARGIN) * direction + offset * side
    pusher = dataclasses.replace(scene.pusher, position=tuple(start))
    return dataclasses.replace(scene, pusher=pusher, objects=(spec,))


def half_width(spec: ObjectSpec, heading: float, yaw: float) -> float:
    """m, half the object's width seen along ``heading`` (its extent across the pusher's path)."""
    if spec.shape == "cylinder":
        return spec.radius
    across = heading - yaw + math.pi / 2
    return abs(math.cos(across)) * spec.half_extents[0] + abs(math.sin(across)) * spec.half_extents[1]


def face_push_line(spec: ObjectSpec, rng: np.random.Generator) -> tuple[float, float, float]:
    """(yaw, heading, offset) of a push on a box-shaped object: a random yaw, one of its four faces, a point
    within ``FACE_SPAN`` of the face's half-length from its middle, and a heading within ``HEADING_SPREAD``
    of the face's inward normal (the paper's pushes: against the face, so the contact neither slips off
    nor meets a corner, where sticking or sliding is decided by a hair)."""
    yaw = rng.uniform(-math.pi, math.pi)
    face = int(rng.integers(4))
    axis, sign = face // 2, 1.0 - 2.0 * (face % 2)
    half = np.array(spec.half_extents)
    point = np.zeros(2)
    point[axis] = sign * half[axis]
    point[1 - axis] = rng.uniform(-FACE_SPAN, FACE_SPAN) * half[1 - axis]
    rotation = np.array([[math.cos(yaw), -math.sin(yaw)], [math.sin(yaw), math.cos(yaw)]])
    inward = rotation @ (-sign * np.eye(2)[axis])
    heading = math.atan2(inward[1], inward[0]) + rng.uniform(-HEADING_SPREAD, HEADING_SPREAD)
    side = np.array([-math.sin(heading), math.cos(heading)])
    return yaw, heading, float((rotation @ point) @ side)


def push(scene: Scene, true: TrueObject, rng: np.random.Generator, noise: float, seed: int,
         physics: FineSettings) -> PushRecord:
    """One push in the world (MuJoCo ``physics``) holding the true object; states observed at the control
    boundaries. A uniform cylinder at yaw 0 is pushed within ``HEADING_SPREAD`` of +x through a random
    point of its middle half; a box-shaped object as :func:`face_push_line` says."""
    spec = true.spec
    if spec.shape == "cylinder" and not spec.patches:
        yaw, heading = 0.0, rng.uniform(-HEADING_SPREAD, HEADING_SPREAD)
        offset = rng.uniform(-0.5, 0.5) * half_width(spec, heading, yaw)
    else:
        yaw, heading, offset = face_push_line(spec, rng)
    world = SimWorld(placed(true_scene(scene, true), offset, heading, yaw),
                     WorldSettings(seed=seed, physics=physics))
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
    layout = scene.layout
    observed[:, : layout.position_dimension] += rng.normal(0.0, noise, (len(states), layout.position_dimension))
    return PushRecord(observed, controls, np.full(CONTROLS, DURATION))


def final_errors(predicted_finals: list[np.ndarray], records: list[PushRecord]) -> tuple[float, float]:
    """(mm, deg): mean final position and yaw error of predicted final object poses (3,)."""
    positions, angles = [], []
    for final, record in zip(predicted_finals, records, strict=True):
        error = np.asarray(final) - record.states[-1][2:5]
        positions.append(1000 * math.hypot(error[0], error[1]))
        angles.append(math.degrees(abs(float(wrap_angle(error[2])))))
    return float(np.mean(positions)), float(np.mean(angles))


def fine_errors(identifier: ObjectIdentifier, records, parameters: ObjectParameters) -> tuple[float, float]:
    """Open-loop errors of the fine model with ``parameters`` (the identifier's model copies)."""
    return final_errors([identifier.predict_push(record, parameters)[-1][2:5] for record in records], records)


def grid_errors(identifier: GridIdentifier, records, result) -> tuple[float, float]:
    """Open-loop errors of the differentiable model with the identified cells."""
    predictions = identifier.predict(records, result.cell_mass, result.cell_friction, result.pusher_friction)
    return final_errors([prediction[-1].detach().numpy() for prediction in predictions], records)


def built_model_errors(scene: Scene, physics: FineSettings, parameters: ObjectParameters, records
                       ) -> tuple[float, float]:
    """Open-loop errors of a fine model (``physics``) built for ``scene``'s object as ``parameters`` describe
    it (patches are geoms: the prediction service rebuilds for them,
    :meth:`parapush.prediction.PredictionEngine.apply_object_parameters`)."""
    with ObjectIdentifier(FineModel(scene_with_object(scene, 0, parameters), physics), 0) as built:
        return fine_errors(built, records, parameters)


def main() -> int:
    parser = bench_arguments(__doc__.split("\n\n")[0], quick="2 and 4 training + 4 held-out pushes, short searches")
    parser.add_argument("--train", type=int, default=8, help="most training pushes (fits use the first 2, 4, ...)")
    parser.add_argument("--test", type=int, default=8)
    parser.add_argument("--observation-noise", type=float, default=0.0005, help="m, std added to observed poses")
    parser.add_argument("--objects", nargs="+", default=list(TRUE_OBJECTS), choices=list(TRUE_OBJECTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--world", choices=("exact", "configured"), default="exact",
                        help="exact: the world's objects tilt (FineSettings.object_tilt: the table contacts share "
                             "the weight as a rigid body's do) and its pusher collides as a capsule (the true "
                             "normal at a box's corner); configured: config/sim_world.yaml's physics as it is")
    bench_reference.add_reference_argument(parser)
    args = parser.parse_args()
    load_before = bench_reference.load_average()
    train, test = (4, 4) if args.quick else (args.train, args.test)
    counts = [count for count in PUSH_COUNTS if count <= train] or [train]
    scene = load_scene(resolve_scene_path("clutter_fig1.yaml"))
    model_config = load_model_config(config_dir() / "model.yaml")
    cem_settings = IdentificationSettings(population=16 if args.quick else 32, elite=4 if args.quick else 8,
                                          iterations=6 if args.quick else 12, seed=args.seed)
    grid_settings = GridIdentificationSettings(iterations=20 if args.quick else 40)
    world_physics = load_driver_settings(config_dir() / "sim_world.yaml").world.physics
    if args.world == "exact":
        world_physics = dataclasses.replace(world_physics, support="collider", object_tilt=True,
                                            pusher_collider="capsule")
    summary, details, maps = [], {}, {}
    for name in args.objects:
        true = TRUE_OBJECTS[name]
        nominal = nominal_scene(scene, true)
        rng = np.random.default_rng(args.seed)
        started = time.perf_counter()
        records = [push(nominal, true, rng, args.observation_noise, args.seed + index, world_physics)
                   for index in range(train + test)]
        recorded = time.perf_counter() - started
        held_out = records[train:]
        # The fine model the identification node searches with: config/model.yaml's.
        fine = PredictionEngine.build_fine_model(nominal, model_config)
        grid = CellGrid.from_spec(nominal.objects[0], grid_settings.cell_size)
        scene_parameters = ObjectParameters.from_scene(nominal, 0)
        grid_identifier = GridIdentifier(grid, nominal.pusher.radius, scene_parameters)
        details[name] = {"recorded_s": recorded, "cells": grid.count, "fits": {}}
        with ObjectIdentifier(fine, 0) as identifier:
            scene_errors = fine_errors(identifier, held_out, scene_parameters)
            # the floor: the true object in the world's own physics, what the noise leaves
            truth = true_scene(nominal, true)
            floor = details[name]["floor_mm_deg"] = built_model_errors(truth, world_physics,
                                                                       ObjectParameters.from_scene(truth, 0), held_out)
            # the best the search can do: the searched model with the true values (uniform objects)
            details[name]["searched_model_true_values_mm_deg"] = (
                None if true.spec.patches else fine_errors(identifier, held_out, ObjectParameters.from_scene(truth, 0)))
            for count in counts:
                training = records[:count]
                started = time.perf_counter()
                cem = identifier.identify(training, settings=cem_settings)
                cem_seconds = time.perf_counter() - started
                cem_errors = fine_errors(identifier, held_out, cem.parameters)
                fitted = grid_identifier.identify(training, grid_settings)
                fitted_errors = grid_errors(grid_identifier, held_out, fitted)
                for method, (millimetres, degrees), seconds in (("scene", scene_errors, 0.0),
                                                                ("cem", cem_errors, cem_seconds),
                                                                ("grid", fitted_errors, fitted.seconds)):
                    summary.append({"object": name, "method": method, "pushes": count, "heldout_mm": millimetres,
                                    "heldout_deg": degrees, "seconds": seconds})
                # what the identification node publishes: the map as the service's fine model renders it best
                rendering = render_map(grid_identifier, fitted, training, nominal, model_config.fine)
                grid_parameters = rendering.parameters
                details[name]["fits"][count] = {
                    "cem_parameters": dataclasses.asdict(cem.parameters),
                    "grid_parameters": dataclasses.asdict(grid_parameters),
                    "grid_rendering_contrast": rendering.contrast,
                    # what the prediction service's fine model predicts with the grid's map applied (its
                    # regions as patches, the model rebuilt for them)
                    "grid_on_fine_mm_deg": built_model_errors(nominal, model_config.fine, grid_parameters,
                                                              held_out),
                    "grid_add_mm": [fitted.initial_error * 1000, fitted.error * 1000],
                }
                maps[name] = (grid, fitted, true)
            # The search with the world's own physics in its fine model (with all the training pushes): how
            # much of the grid's lead is the service model's planar physics, how much the object's distribution.
            with ObjectIdentifier(FineModel(nominal, world_physics), 0) as matched:
                fit = matched.identify(records[:max(counts)], settings=cem_settings)
                details[name]["cem_world_physics_mm_deg"] = fine_errors(matched, held_out, fit.parameters)
        print(f"{name}: {train} + {test} pushes recorded in {recorded:.1f} s; {grid.count} cells; held-out floor "
              f"(fine model of the true object) {floor[0]:.1f} mm / {floor[1]:.2f} deg; the search with the world's "
              f"physics, {max(counts)} pushes: {details[name]['cem_world_physics_mm_deg'][0]:.1f} mm")
        print(format_table(["method", "pushes", "held-out mm", "held-out deg", "seconds"], [
            [row["method"], row["pushes"], f"{row['heldout_mm']:.1f}", f"{row['heldout_deg']:.2f}",
             f"{row['seconds']:.1f}"] for row in summary if row["object"] == name]))
    figure = Figure(figsize=(4 * max(2, len(maps)), 7), layout="constrained")
    axes = figure.subplots(2, max(2, len(maps)), squeeze=False)
    for column, name in enumerate(args.objects):
        rows = [row for row in summary if row["object"] == name]
        for method in ("scene", "cem", "grid"):
            picked = [row for row in rows if row["method"] == method]
            axes[0, column].plot([row["pushes"] for row in picked], [row["heldout_mm"] for row in picked], "o-",
                                 label=method)
        axes[0, column].axhline(details[name]["floor_mm_deg"][0], color="grey", linestyle=":", label="floor")
        axes[0, column].set_title(name)
        axes[0, column].set_xlabel("training pushes")
        axes[0, column].set_ylabel("held-out open-loop error, mm")
        axes[0, column].legend()
        grid, fitted, true = maps[name]
        true_mass, true_friction = grid.spec_maps(true.spec, true.table_friction)
        shown = axes[1, column].scatter(grid.centers[:, 0], grid.centers[:, 1], c=fitted.friction_weight,
                                        marker="s", s=40)
        figure.colorbar(shown, ax=axes[1, column], label="identified mu_i m_i, kg")
        heavy = true_mass * true_friction > 1.5 * np.median(true_mass * true_friction)
        axes[1, column].scatter(grid.centers[heavy, 0], grid.centers[heavy, 1], marker="x", color="red", s=12)
        axes[1, column].set_aspect("equal")
        axes[1, column].set_title(f"{name}: cells (x: truly heavy/high friction)")
    figure.suptitle("Identifying unknown objects in the simulated world: scene file, cross-entropy, cell grid")
    json_path, png_path = write_results("identification", {
        "protocol": {"train": train, "test": test, "push_counts": counts, "controls": CONTROLS, "duration_s": DURATION,
                     "observation_noise_m": args.observation_noise, "seed": args.seed, "quick": args.quick,
                     "world_physics": dataclasses.asdict(world_physics),
                     "cem": dataclasses.asdict(cem_settings), "grid": dataclasses.asdict(grid_settings)},
        "summary": summary,
        "objects": details,
    }, figure)
    print(f"wrote {json_path} and {png_path}")
    if set(args.objects) == set(TRUE_OBJECTS):
        rows = {(row["object"], row["method"], row["pushes"]): row for row in summary}
        most = max(counts)
        figures = {
            "held_out_error_mm_scene_parameters": rows[("cylinder", "scene", most)]["heldout_mm"],
            "held_out_error_mm_identified": rows[("cylinder", "cem", most)]["heldout_mm"],
            "held_out_error_mm_true_parameters": details["cylinder"]["floor_mm_deg"][0],
            "pusher_friction_identified": details["cylinder"]["fits"][most]["cem_parameters"]["pusher_friction"],
            "pusher_friction_true": TRUE_OBJECTS["cylinder"].pusher_friction,
            "training_pushes": most,
            "push_duration_s": CONTROLS * DURATION,
        }
        for name in TRUE_OBJECTS:
            figures[f"{name}_cem_mm"] = rows[(name, "cem", most)]["heldout_mm"]
            figures[f"{name}_grid_mm"] = rows[(name, "grid", most)]["heldout_mm"]
            figures[f"{name}_grid_to_cem"] = figures[f"{name}_grid_mm"] / figures[f"{name}_cem_mm"]
            figures[f"{name}_grid_on_fine_mm"] = details[name]["fits"][most]["grid_on_fine_mm_deg"][0]
            figures[f"{name}_floor_mm"] = details[name]["floor_mm_deg"][0]
            figures[f"{name}_cem_world_physics_mm"] = details[name]["cem_world_physics_mm_deg"][0]
            figures[f"{name}_grid_to_cem_world_physics"] = (figures[f"{name}_grid_mm"]
                                                            / figures[f"{name}_cem_world_physics_mm"])
            figures[f"{name}_grid_seconds"] = rows[(name, "grid", most)]["seconds"]
        figures["grid_seconds_max"] = max(figures[f"{name}_grid_seconds"] for name in TRUE_OBJECTS)
        # the main run is seed 0 in the exact world; other inputs are stored beside it (bench/reference.py)
        variant = "_".join(([] if args.world == "exact" else [f"world_{args.world}"])
                           + ([f"seed{args.seed}"] if args.seed else []))
        bench_reference.write_figures("identification", figures, reference=args.reference, load_before=load_before,
                                      quick=args.quick, variant=variant)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
