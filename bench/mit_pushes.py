"""Convert the MIT pushing data set's recorded pushes (``../shared/real_pushes``) into
recorded-pushes files (:mod:`parapush.identification.recorded_pushes`).

Usage::

    python bench/mit_pushes.py [--data ../shared/real_pushes] [--output-dir bench/results/real_pushes]

writes ``<object>.json`` per object (rect1, ellip1, ellip3, hex, butter): the files that
``python -m parapush.programs.identify_recording --pushes FILE`` and ``bench/real_pushes.py`` read.

The data: Yu, Bauza, Fazeli, Rodriguez, "More than a Million Ways to Be Pushed" (IROS 2016),
stainless-steel plates 13 mm thick pushed about 50 mm in a straight line on ABS by a steel
probe of radius 4.745 mm; the pusher tip and the object pose (Vicon) at about 250 Hz, not
synchronised (``../shared/real_pushes/README.md``). Each push becomes one record:

- **Time base**: the object's samples; the tip is interpolated onto them. The object's yaw is
  unwrapped, and jumps of a multiple of pi/2 between two samples (the tracker's occasional
  flips) are removed.
- **Frame**: the robot's world frame translated so that the object starts at the origin (its
  yaw is kept), so every push fits the scene's table.
- **Outline frame**: the distributed outline may be turned by 90 deg against the Vicon frame
  (hexagon, ellipse): of 0 and 90 deg, the turn for which the first tip sample lies closest to
  one pusher radius outside the outline, over all of the object's pushes, is used (printed).
- **Pusher at contact**: the first tip sample is often 1-1.5 mm off the outline (a pose
  calibration offset). The whole tip path is moved along the push direction so that its first
  point touches the outline (distance = pusher radius), instead of replaying the gap.
- **Controls**: the path is cut where the tip has travelled each further ``SEGMENT_TRAVEL``
  (10 mm; a last piece shorter than half of it joins the one before), the cut times rounded
  to whole multiples of ``TIME_GRID`` (25 ms: the grid identification's step; at 10-150 mm/s
  a piece is then 10 mm +- 0.25-3.75 mm); each control is the tip's mean velocity over its piece. The states
  at the cuts are the recorded object poses (twists by central differences over 20 ms; the
  pusher's velocity is its piece's control; zero at the start).

The physical parameters in the scene are the measured ones (README of the data): mass and
outline per object, thickness 13 mm, pusher radius 4.745 mm; frictions are ``ABS_FRICTION``
and ``PUSHER_FRICTION`` (Yu et al. measured ABS 0.13-0.15 and pusher/object about 0.25).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from parapush.identification.identifier import PushRecord
from parapush.identification.recorded_pushes import RecordedPush, RecordedPushes, save_recorded_pushes
from parapush.physics.planar_geometry import rotate
from parapush.scene import ObjectSpec, StateLayout

DATA = Path(__file__).resolve().parents[2] / "shared" / "real_pushes"
"""The data's folder beside the repository (``../shared/real_pushes``)."""

OBJECTS = ("rect1", "ellip1", "ellip3", "hex", "butter")
"""The recorded objects, in the data's README order."""

MASSES = {"rect1": 0.8374, "ellip1": 0.8937, "ellip3": 1.3338, "hex": 0.9827, "butter": 1.1974}
"""Object masses, kg (README of the data)."""

THICKNESS = 0.013
"""Plate thickness, m."""

PUSHER_RADIUS = 0.004745
"""The probe's radius, m."""

ABS_FRICTION = 0.14
"""Object/ABS sliding friction (Yu et al.: 0.13-0.15)."""

PUSHER_FRICTION = 0.25
"""Pusher/object friction (Yu et al.: about 0.25; the data set's estimation code assumes 0.21)."""

SEGMENT_TRAVEL = 0.01
"""m of tip travel per control."""

TIME_GRID = 0.025
"""s: the cut times are whole multiples of this, so that both the fine model (1 ms steps) and the
grid identification's differentiable model (25 ms steps) can replay the controls."""

_YAW_FLIP = 0.5 * np.pi
_NAME = re.compile(r"shape=(?P<object>[a-z0-9]+)_a=.*_v=(?P<speed>[0-9.]+)_i=(?P<side>[0-9.]+)"
                   r"_s=(?P<along>[0-9.]+)_t=(?P<angle>-?[0-9.]+)")


@dataclass(frozen=True)
class RawPush:
    """One push as recorded: time base (N,) s from the first sample, tip (N, 2) m, object (N, 3) m, rad."""

    name: str
    object_name: str
    times: np.ndarray
    tip: np.ndarray
    object_pose: np.ndarray


def _unflipped_yaw(yaw: np.ndarray) -> np.ndarray:
    """Yaw with every jump between two samples that is close to a multiple of pi/2 removed."""
    jumps = np.diff(yaw)
    flips = np.round(jumps / _YAW_FLIP)
    flips[np.abs(jumps - flips * _YAW_FLIP) > 0.25 * _YAW_FLIP] = 0.0  # not a flip: keep it
    return yaw - np.concatenate([[0.0], np.cumsum(flips * _YAW_FLIP)])


def read_raw_pushes(folder: Path = DATA) -> dict[str, list[RawPush]]:
    """The data's pushes per object, on the object's time base, in name order."""
    archive = np.load(folder / "mit_push_abs.npz")
    names = sorted({key.split("|")[0] for key in archive.files})
    pushes: dict[str, list[RawPush]] = {name: [] for name in OBJECTS}
    for name in names:
        match = _NAME.search(name)
        if match is None or match["object"] not in pushes:
            raise ValueError(f"{name}: not a push name of the MIT data set's form")
        tip, body = archive[f"{name}|tip_pose"], archive[f"{name}|object_pose"]
        start, end = max(tip[0, 0], body[0, 0]), min(tip[-1, 0], body[-1, 0])
        keep = (body[:, 0] >= start) & (body[:, 0] <= end)
        times = body[keep, 0]
        yaw = _unflipped_yaw(np.unwrap(body[:, 3]))[keep]
        tip_xy = np.stack([np.interp(times, tip[:, 0], tip[:, axis]) for axis in (1, 2)], axis=1)
        pushes[match["object"]].append(RawPush(name, match["object"], times - times[0], tip_xy,
                                               np.column_stack([body[keep, 1:3], yaw])))
    return pushes


def _body_points(points: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """World points (..., 2) in the body frame of ``pose`` (x, y, yaw)."""
    return rotate(points - pose[:2], -pose[2])


def object_spec(name: str, outline: np.ndarray, turn: float) -> ObjectSpec:
    """The recorded object as a scene object at the origin, its outline turned by ``turn`` rad."""
    vertices = rotate(outline, turn)
    common = {"name": name, "height": THICKNESS, "mass": MASSES[name], "friction": ABS_FRICTION}
    extents = np.abs(vertices).max(axis=0)
    if name == "rect1":
        return ObjectSpec(shape="box", half_extents=tuple(float(v) for v in extents), **common)
    if name == "ellip1":
        return ObjectSpec(shape="cylinder", radius=float(extents.mean()), **common)
    if name == "ellip3":
        return ObjectSpec(shape="ellipse", half_extents=tuple(float(v) for v in extents), **common)
    return ObjectSpec(shape="polygon", vertices=tuple((float(x), float(y)) for x, y in vertices), **common)


def contact_shift(spec: ObjectSpec, push: RawPush) -> float:
    """m to move the tip path along the push direction so that its first point touches the outline."""
    direction = push.tip[-1] - push.tip[0]
    direction /= np.linalg.norm(direction)
    start = _body_points(push.tip[0], push.object_pose[0])
    local = _body_points(push.tip[0] + direction, push.object_pose[0]) - start
    shifts = np.linspace(-0.02, 0.02, 4001)
    gaps = spec.outline.signed_distance(start + shifts[:, None] * local) - PUSHER_RADIUS
    # the first shift (from behind) at which the pusher touches the outline
    touching = np.flatnonzero(gaps <= 0.0)
    if touching.size == 0 or touching[0] == 0:
        raise ValueError(f"{push.name}: the tip path does not meet the outline within 20 mm of its start")
    first = touching[0]
    return float(np.interp(0.0, [gaps[first], gaps[first - 1]], [shifts[first], shifts[first - 1]]))


def outline_turn(name: str, outline: np.ndarray, pushes: list[RawPush]) -> float:
    """0 or pi/2: the outline's turn against the Vicon frame that puts the first tip samples closest
    to one pusher radius outside it (median over the pushes)."""
    def misfit(turn: float) -> float:
        spec = object_spec(name, outline, turn)
        gaps = [float(spec.outline.signed_distance(_body_points(p.tip[0], p.object_pose[0]))) - PUSHER_RADIUS
                for p in pushes]
        return float(np.median(np.abs(gaps)))

    return min((0.0, 0.5 * np.pi), key=misfit)


def convert_push(spec: ObjectSpec, push: RawPush) -> RecordedPush:
    """One push as a record in the frame where the object starts at the origin (see the module docstring)."""
    direction = push.tip[-1] - push.tip[0]
    direction /= np.linalg.norm(direction)
    tip = push.tip + contact_shift(spec, push) * direction - push.object_pose[0, :2]
    poses = push.object_pose - np.array([*push.object_pose[0, :2], 0.0])
    travel = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(tip, axis=0), axis=1))])
    marks = np.arange(SEGMENT_TRAVEL, travel[-1], SEGMENT_TRAVEL)
    if marks.size and travel[-1] - marks[-1] < 0.5 * SEGMENT_TRAVEL:
        marks = marks[:-1]
    cuts = np.concatenate([[0.0], np.interp(marks, travel, push.times), [push.times[-1]]])
    cuts = np.unique(np.round(cuts / TIME_GRID) * TIME_GRID)
    cuts = cuts[cuts <= push.times[-1] + 1e-9]
    cuts = np.round(cuts, 6)
    at = lambda values, when: np.stack(  # noqa: E731 - column-wise interpolation
        [np.interp(when, push.times, values[:, axis]) for axis in range(values.shape[1])], axis=-1)
    tips, pose = at(tip, cuts), at(poses, cuts)
    durations = np.diff(cuts)
    controls = np.diff(tips, axis=0) / durations[:, None]
    twist = (at(poses, np.minimum(cuts + 0.01, push.times[-1])) - at(poses, np.maximum(cuts - 0.01, 0.0))) / 0.02
    twist[0] = 0.0
    pusher_velocity = np.vstack([[0.0, 0.0], controls])
    layout = StateLayout(1)
    states = layout.compose(tips, pose[:, None, :], pusher_velocity, twist[:, None, :])
    return RecordedPush(push.name, PushRecord(states, controls, durations))


def scene_data(spec: ObjectSpec) -> dict:
    """The scene of one recorded object (plain data of a scene file)."""
    body = {"name": spec.name, "shape": spec.shape, "height": spec.height, "mass": spec.mass,
            "friction": spec.friction, "pose": [0.0, 0.0, 0.0]}
    if spec.shape == "cylinder":
        body["radius"] = spec.radius
    elif spec.shape == "polygon":
        body["vertices"] = [list(vertex) for vertex in spec.vertices]
    else:
        body["half_extents"] = list(spec.half_extents)
    return {"name": f"mit_push_{spec.name}", "table": {"length": 1.0, "width": 1.0, "friction": ABS_FRICTION},
            "pusher": {"radius": PUSHER_RADIUS, "friction": PUSHER_FRICTION, "position": [-0.2, 0.0]},
            "objects": [body], "object_friction": 0.2}


SOURCE = ("MIT pushing data set (Yu, Bauza, Fazeli, Rodriguez, IROS 2016), ABS surface, subset in "
          "../shared/real_pushes; converted by bench/mit_pushes.py")


def convert_object(name: str, folder: Path = DATA, raw: dict[str, list[RawPush]] | None = None) -> RecordedPushes:
    """All recorded pushes of object ``name`` as :class:`RecordedPushes`."""
    raw = read_raw_pushes(folder) if raw is None else raw
    outline = np.load(folder / "outlines.npz")[name]
    turn = outline_turn(name, outline, raw[name])
    spec = object_spec(name, outline, turn)
    pushes = tuple(convert_push(spec, push) for push in raw[name])
    return RecordedPushes(scene_data=scene_data(spec), object_name=name, pushes=pushes, source=SOURCE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of mit_push_abs.npz and outlines.npz")
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).resolve().parent / "results" / "real_pushes")
    args = parser.parse_args(argv)
    raw = read_raw_pushes(args.data)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for name in OBJECTS:
        recorded = convert_object(name, args.data, raw)
        path = args.output_dir / f"{name}.json"
        save_recorded_pushes(path, recorded)
        print(f"{name}: {len(recorded.pushes)} pushes -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
