"""Identify an object from a recorded run: ``python -m parapush.programs.identify_recording RUN``.

RUN is a run folder of ``scripts/run demo`` (its ``recording.mcap`` and ``metrics.json``,
which names the scene), an MCAP file with ``--scene``, or a recorded-pushes file (``.json``,
:mod:`parapush.identification.recorded_pushes`: pushes recorded elsewhere, with their scene and
object; ``bench/mit_pushes.py`` converts the MIT pushing data set into such files). From a
recording, every control sequence on ``/controls`` becomes one observed push, its states the
``/scene_state`` messages nearest to the control boundaries (by header stamp).
:class:`parapush.identification.ObjectIdentifier` (``--method cem``) or the grid identifier
(``--method grid``) then fits the object's parameters with the fine model as
``config/model.yaml`` configures it, and the result is printed (and written as JSON with
``--json``). To use the result in a running stack, send the same pushes to the
identification node's ``identify_object`` service with ``publish: true``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
from mcap.reader import make_reader
from parareal_pushing.msg import ControlSequence, SceneState
from rclpy.serialization import deserialize_message

from parapush.graph import config_dir, resolve_scene_path
from parapush.identification import (
    PARAMETER_NAMES,
    IdentificationSettings,
    ObjectIdentifier,
    ParameterBounds,
    push_records_from_timeline,
)
from parapush.identification.recorded_pushes import RecordedPushesError, load_recorded_pushes
from parapush.nodes.conversions import MessageError, msg_to_snapshot, time_to_seconds
from parapush.physics.fine import FineModel
from parapush.prediction import load_model_config
from parapush.scene import Scene, load_scene


def read_recording(path: Path, scene: Scene, *, state_topic: str, controls_topic: str):
    """(state times (S,), states (S, D) with NaN rows where a body was stale, sequences)."""
    times, states, sequences = [], [], []
    with path.open("rb") as stream:
        for _, channel, message in make_reader(stream).iter_messages(topics=[state_topic, controls_topic]):
            if channel.topic == state_topic:
                scene_state = deserialize_message(message.data, SceneState)
                try:
                    state = msg_to_snapshot(scene_state, scene, require_valid=True).state
                except MessageError:
                    state = np.full(scene.layout.dimension, np.nan)
                times.append(time_to_seconds(scene_state.header.stamp))
                states.append(state)
            else:
                sequence = deserialize_message(message.data, ControlSequence)
                controls = np.array([[c.vx, c.vy] for c in sequence.controls]).reshape(-1, 2)
                durations = np.array([c.duration for c in sequence.controls])
                sequences.append((time_to_seconds(sequence.header.stamp), controls, durations))
    order = np.argsort(times, kind="stable")
    dimension = scene.layout.dimension
    return np.asarray(times)[order], np.asarray(states).reshape(-1, dimension)[order], sequences


def identify_grid(args: argparse.Namespace, scene: Scene, name: str, records: list, recording: Path) -> int:
    """``--method grid``: the cell maps and what a fine model takes from them (regions as patches)."""
    from parapush.identification.grid_identifier import GridIdentificationSettings, GridIdentifier
    from parapush.identification.map_rendering import render_map

    identifier = GridIdentifier.for_scene(scene, scene.object_index(name))
    result = identifier.identify(records, GridIdentificationSettings(iterations=args.iterations or 40))
    rendering = render_map(identifier, result, records, scene)
    summary = rendering.parameters
    print(f"'{name}' (grid, {result.grid.count} cells): ADD error {result.initial_error * 1e3:.2f} mm (scene file) -> "
          f"{result.error * 1e3:.2f} mm (identified) in {result.seconds:.1f} s; in the fine model: "
          + (f"{len(summary.patches)} patch(es) read at contrast {rendering.contrast}" if rendering.contrast
             else "the uniform summary")
          + f" ({rendering.errors[rendering.contrast] * 1e3:.2f} mm on these pushes)")
    for index, parameter in enumerate(PARAMETER_NAMES):
        print(f"  {parameter:>16}: {identifier.nominal.as_vector()[index]:8.4f} -> {summary.as_vector()[index]:8.4f}")
    for number, patch in enumerate(summary.patches):
        print(f"  patch {number}: centre {patch.center} m, half extents {patch.half_extents} m, "
              f"mass {patch.mass:.3f} kg, friction {patch.friction:.3f}")
    if args.json:
        args.json.write_text(json.dumps({
            "recording": str(recording), "object": name, "pushes": len(records), "method": "grid",
            "parameters": dict(zip(PARAMETER_NAMES, summary.as_vector().tolist(), strict=True)),
            "patches": [dataclasses.asdict(patch) for patch in summary.patches],
            "cells": {"x_m": result.grid.centers[:, 0].tolist(), "y_m": result.grid.centers[:, 1].tolist(),
                      "mass_kg": result.cell_mass.tolist(), "support_friction": result.cell_friction.tolist(),
                      "sensitivity_m": result.sensitivity.tolist()},
            "pusher_friction": result.pusher_friction,
            "error_m": result.error, "initial_error_m": result.initial_error,
        }, indent=2) + "\n")
    return 0


def records_from_recording(args: argparse.Namespace, parser: argparse.ArgumentParser
                           ) -> tuple[Scene, str, list, Path]:
    """(scene, object name, push records, source) of a run folder or MCAP file."""
    recording = args.run / "recording.mcap" if args.run.is_dir() else args.run
    if not recording.is_file():
        parser.error(f"run: no recording at {recording}")
    scene_file = args.scene
    metrics = recording.parent / "metrics.json"
    if scene_file is None and metrics.is_file():
        scene_file = json.loads(metrics.read_text()).get("scene_file")
    if scene_file is None:
        parser.error("--scene: the run has no metrics.json naming its scene; give the scene")
    scene = load_scene(resolve_scene_path(scene_file))
    name = args.object or scene.target
    if name not in scene.object_names:
        parser.error(f"--object: unknown object {name!r}; the scene has {list(scene.object_names)}")
    times, states, sequences = read_recording(recording, scene, state_topic=args.state_topic,
                                              controls_topic=args.controls_topic)
    records, skipped = push_records_from_timeline(times, states, sequences, tolerance=args.tolerance)
    print(f"{recording}: {len(times)} states, {len(sequences)} control messages -> {len(records)} pushes"
          + "".join(f"\n  skipped the sequence sent at {s.start:.3f} s: {s.reason}" for s in skipped))
    return scene, name, records, recording


def records_from_pushes_file(args: argparse.Namespace, parser: argparse.ArgumentParser
                             ) -> tuple[Scene, str, list, Path]:
    """(scene, object name, push records, source) of a recorded-pushes file."""
    if args.scene is not None:
        parser.error("--scene: a recorded-pushes file carries its own scene")
    try:
        recorded = load_recorded_pushes(args.run)
    except RecordedPushesError as error:
        parser.error(str(error))
    if args.object is not None and args.object != recorded.object_name:
        parser.error(f"--object: the file holds pushes of {recorded.object_name!r}, not {args.object!r}")
    print(f"{args.run}: {len(recorded.pushes)} recorded pushes of '{recorded.object_name}'"
          + (f" ({recorded.source})" if recorded.source else ""))
    return recorded.scene, recorded.object_name, recorded.records, args.run


def search_bounds(args: argparse.Namespace, parser: argparse.ArgumentParser, scene: Scene, name: str
                  ) -> ParameterBounds:
    """The search box of ``--support-friction`` and ``--pusher-friction``; the scene's values must lie in it."""
    bounds = ParameterBounds(support_friction=tuple(args.support_friction), pusher_friction=tuple(args.pusher_friction))
    spec = scene.objects[scene.object_index(name)]
    support = max(scene.table.friction, spec.friction)
    for option, value, (low, high) in (("--support-friction", support, bounds.support_friction),
                                       ("--pusher-friction", scene.pusher.friction, bounds.pusher_friction)):
        if not low <= value <= high:
            parser.error(f"{option}: the scene's value {value} is outside ({low}, {high}); widen the range")
    return bounds


def main(argv: list[str] | None = None) -> int:
    defaults = ParameterBounds()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path,
                        help="run folder (recording.mcap + metrics.json), .mcap file, or recorded-pushes .json file")
    parser.add_argument("--object", help="object to identify (default: the scene's target)")
    parser.add_argument("--scene", help="scene file or name (default: the run's metrics.json)")
    parser.add_argument("--state-topic", default="/scene_state")
    parser.add_argument("--controls-topic", default="/controls")
    parser.add_argument("--tolerance", type=float, default=0.02, help="s between a control boundary and its state")
    parser.add_argument("--method", choices=("cem", "grid"), default="cem",
                        help="cem: cross-entropy search of the fine model's parameters; grid: per-cell mass and "
                             "friction maps by gradient descent through the differentiable sliding model")
    parser.add_argument("--iterations", type=int, default=None, help="default: 12 (cem), 40 (grid)")
    parser.add_argument("--population", type=int, default=32)
    parser.add_argument("--support-friction", type=float, nargs=2, metavar=("LOW", "HIGH"),
                        default=defaults.support_friction, help="cem: the support friction's search range")
    parser.add_argument("--pusher-friction", type=float, nargs=2, metavar=("LOW", "HIGH"),
                        default=defaults.pusher_friction, help="cem: the pusher friction's search range")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    if args.run.suffix == ".json":
        scene, name, records, recording = records_from_pushes_file(args, parser)
    else:
        scene, name, records, recording = records_from_recording(args, parser)
    if not records:
        print("nothing to identify from", file=sys.stderr)
        return 1
    if args.method == "grid":
        return identify_grid(args, scene, name, records, recording)
    settings = IdentificationSettings(population=args.population, elite=max(1, args.population // 4),
                                      iterations=args.iterations or 12, seed=args.seed)
    bounds = search_bounds(args, parser, scene, name)
    fine_model = FineModel(scene, load_model_config(config_dir() / "model.yaml").fine)
    with ObjectIdentifier(fine_model, scene.object_index(name), bounds=bounds) as identifier:
        result = identifier.identify(records, settings=settings)
        nominal = identifier.variants.nominal
    print(f"'{name}': one-step error {result.initial_error * 1e3:.2f} mm (scene file) -> {result.error * 1e3:.2f} mm "
          f"(identified), {result.iterations} iterations, {result.evaluations} hypotheses")
    for index, parameter in enumerate(PARAMETER_NAMES):
        print(f"  {parameter:>16}: {nominal.as_vector()[index]:8.4f} -> {result.parameters.as_vector()[index]:8.4f}"
              f"   (sensitivity {result.sensitivity[index] * 1e3:.3f} mm)")
    if args.json:
        args.json.write_text(json.dumps({
            "recording": str(recording), "object": name, "pushes": len(records),
            "parameters": dict(zip(PARAMETER_NAMES, result.parameters.as_vector().tolist(), strict=True)),
            "scene_file_parameters": dict(zip(PARAMETER_NAMES, nominal.as_vector().tolist(), strict=True)),
            "sensitivity_m": dict(zip(PARAMETER_NAMES, result.sensitivity.tolist(), strict=True)),
            "error_m": result.error, "initial_error_m": result.initial_error,
        }, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
