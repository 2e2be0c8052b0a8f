"""Conversions between the ``parareal_pushing`` messages and the core's arrays/dataclasses.

Every function that reads a message validates it and raises :class:`MessageError` with a
message naming the offending field, so services can answer ``success = false`` instead
of failing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from parareal_pushing.msg import ControlSequence, ObjectState, PredictedTrajectory, PusherControl, SceneState

from parapush.reporting.diagnostic_report import DiagnosticReport
from parapush.scene import Scene, SceneSnapshot, wrap_angle


class MessageError(ValueError):
    """A message is malformed; the text names the field."""


PUSHER_NAME = "pusher"


def time_to_seconds(stamp: Time) -> float:
    return float(stamp.sec) + 1e-9 * float(stamp.nanosec)


def seconds_to_time(seconds: float) -> Time:
    if not math.isfinite(seconds) or seconds < 0.0:
        seconds = 0.0
    whole = int(seconds)
    return Time(sec=whole, nanosec=min(int(round((seconds - whole) * 1e9)), 999_999_999))


SHAPES = {
    "cylinder": ObjectState.SHAPE_CYLINDER,
    "box": ObjectState.SHAPE_BOX,
    "ellipse": ObjectState.SHAPE_ELLIPSE,
    "polygon": ObjectState.SHAPE_POLYGON,
}
"""The scene format's shape names and their ObjectState constants."""
SHAPE_NAMES = {value: name for name, value in SHAPES.items()}
GEOMETRY_TOLERANCE = 1e-6
"""m, how far a message's sizes or vertices may lie from the scene's (both are the scene file's numbers)."""


def _geometry(spec) -> dict:
    """The ObjectState shape fields of a scene object spec (or obstacle)."""
    if spec.shape == "cylinder":
        return {"shape": ObjectState.SHAPE_CYLINDER, "radius": float(spec.radius)}
    if spec.shape == "polygon":
        vertices = np.asarray(spec.vertices, dtype=float).reshape(-1, 2)
        return {"shape": ObjectState.SHAPE_POLYGON, "vertices_x": vertices[:, 0].tolist(),
                "vertices_y": vertices[:, 1].tolist()}
    if spec.shape not in SHAPES:
        raise ValueError(f"shape: {spec.shape!r} has no ObjectState constant; expected one of {list(SHAPES)}")
    half_x, half_y = (float(v) for v in spec.half_extents)
    return {"shape": SHAPES[spec.shape], "half_extent_x": half_x, "half_extent_y": half_y}


def geometry_from_msg(body: ObjectState, where: str = "object") -> dict | None:
    """The outline a body's message carries, in the scene format's fields (``shape`` and ``radius``,
    ``half_extents`` or ``vertices``), or None when it carries none (every size 0, no vertices: a
    client that leaves the outline to the scene).

    Raises:
        MessageError: naming the field (unknown shape, non-finite or non-positive size, vertex
            arrays of unequal length or fewer than three vertices).
    """
    vertices_x, vertices_y = list(body.vertices_x), list(body.vertices_y)
    if body.radius == 0.0 and body.half_extent_x == 0.0 and body.half_extent_y == 0.0 and not vertices_x \
            and not vertices_y:
        return None
    if body.shape not in SHAPE_NAMES:
        raise MessageError(f"{where}.shape: unknown shape {body.shape}; expected one of "
                           + ", ".join(f"{value} ({name})" for name, value in SHAPES.items()))
    shape = SHAPE_NAMES[body.shape]
    if shape == "polygon":
        if len(vertices_x) != len(vertices_y):
            raise MessageError(f"{where}.vertices_y: {len(vertices_y)} values for {len(vertices_x)} vertices_x")
        if len(vertices_x) < 3:
            raise MessageError(f"{where}.vertices_x: a polygon needs at least 3 vertices, got {len(vertices_x)}")
        vertices = np.column_stack([np.asarray(vertices_x, dtype=float), np.asarray(vertices_y, dtype=float)])
        bad = ~np.isfinite(vertices)
        if bad.any():
            row, column = np.argwhere(bad)[0]
            raise MessageError(f"{where}.vertices_{'xy'[column]}[{row}]: must be finite, got {vertices[row, column]!r}")
        return {"shape": shape, "vertices": tuple((float(x), float(y)) for x, y in vertices)}
    names = ("radius",) if shape == "cylinder" else ("half_extent_x", "half_extent_y")
    sizes = _finite_fields(body, where, names)
    for name, value in zip(names, sizes, strict=True):
        if value <= 0.0:
            raise MessageError(f"{where}.{name}: must be > 0 for shape {shape}, got {value!r}")
    if shape == "cylinder":
        return {"shape": shape, "radius": sizes[0]}
    return {"shape": shape, "half_extents": tuple(sizes)}


def check_geometry(body: ObjectState, spec, where: str = "object") -> None:
    """Raise :class:`MessageError` when the outline a body's message carries is not ``spec``'s
    (the scene's object of that name); a message that carries none is accepted."""
    given = geometry_from_msg(body, where)
    if given is None:
        return
    if given["shape"] != spec.shape:
        raise MessageError(f"{where}.shape: {given['shape']} for object {body.name!r}, "
                           f"the scene's shape is {spec.shape}")
    if spec.shape == "polygon":
        wanted = np.asarray(spec.vertices, dtype=float).reshape(-1, 2)
        got = np.asarray(given["vertices"], dtype=float)
        if got.shape != wanted.shape:
            raise MessageError(f"{where}.vertices_x: {len(got)} vertices for object {body.name!r}, "
                               f"the scene's polygon has {len(wanted)}")
        gap = np.abs(got - wanted).max(axis=1)
        if gap.max() > GEOMETRY_TOLERANCE:
            row = int(np.argmax(gap))
            raise MessageError(f"{where}.vertices_x/_y[{row}]: ({got[row, 0]:.6g}, {got[row, 1]:.6g}) m for "
                               f"object {body.name!r}, the scene's vertex is ({wanted[row, 0]:.6g}, "
                               f"{wanted[row, 1]:.6g}) m")
        return
    if spec.shape == "cylinder":
        pairs = (("radius", given["radius"], float(spec.radius)),)
    else:
        pairs = tuple(zip(("half_extent_x", "half_extent_y"), given["half_extents"],
                          (float(v) for v in spec.half_extents), strict=True))
    for name, got_value, wanted_value in pairs:
        if abs(got_value - wanted_value) > GEOMETRY_TOLERANCE:
            raise MessageError(f"{where}.{name}: {got_value:.6g} m for object {body.name!r}, "
                               f"the scene's {spec.shape} has {wanted_value:.6g} m")


def _scene_states(
    states: np.ndarray,
    scene: Scene,
    stamps: Sequence[float],
    frame_id: str,
    pusher_valid: bool = True,
    object_valid: Sequence[bool] | None = None,
    pusher_age: float = 0.0,
    object_age: Sequence[float] | None = None,
) -> list[SceneState]:
    """SceneState messages of states (M, 4 + 6 n), one stamp (s) each.

    Converts the array to Python floats once (``tolist``) and fills every message through its
    constructor: a 20 x 4 prediction response is 100 of these, built per service call.
    """
    layout = scene.layout
    count = layout.object_count
    poses_start, twists_start = layout.object_poses.start, layout.object_twists.start
    velocity = layout.pusher_velocity.start
    states = np.array(states, dtype=float)  # a copy: yaw is wrapped in place
    states[:, layout.yaw_indices] = wrap_angle(states[:, layout.yaw_indices])
    geometry = [(spec.name, _geometry(spec)) for spec in scene.objects]
    valid = [True] * count if object_valid is None else [bool(v) for v in object_valid]
    age = [0.0] * count if object_age is None else [float(v) for v in object_age]
    pusher_radius = float(scene.pusher.radius)
    pusher_valid, pusher_age = bool(pusher_valid), float(pusher_age)
    messages = []
    for values, stamp in zip(states.tolist(), stamps, strict=True):
        objects = []
        for index, (name, shape) in enumerate(geometry):
            x, y, yaw = values[poses_start + 3 * index: poses_start + 3 * index + 3]
            vx, vy, yaw_rate = values[twists_start + 3 * index: twists_start + 3 * index + 3]
            objects.append(ObjectState(name=name, x=x, y=y, yaw=yaw, vx=vx, vy=vy, yaw_rate=yaw_rate,
                                       valid=valid[index], age=age[index], **shape))
        # SceneState's constructor builds a default header and pusher even when given ones: fill those.
        message = SceneState(objects=objects)
        message.header.stamp = seconds_to_time(stamp)
        message.header.frame_id = frame_id
        pusher = message.pusher
        pusher.name = PUSHER_NAME
        pusher.radius = pusher_radius  # shape: SHAPE_CYLINDER, the default
        pusher.x, pusher.y, pusher.vx, pusher.vy = values[0], values[1], values[velocity], values[velocity + 1]
        pusher.valid, pusher.age = pusher_valid, pusher_age
        messages.append(message)
    return messages


def state_to_msg(
    state: np.ndarray,
    scene: Scene,
    *,
    stamp: float = 0.0,
    frame_id: str = "table",
    pusher_valid: bool = True,
    object_valid: Sequence[bool] | None = None,
    pusher_age: float = 0.0,
    object_age: Sequence[float] | None = None,
) -> SceneState:
    """A state vector (4 + 6 n,) of ``scene`` as a SceneState message."""
    state = scene.layout.check(state, "state")
    if state.ndim != 1:
        raise ValueError(f"state: expected one state of shape ({scene.layout.dimension},), got {state.shape}")
    return _scene_states(state[None], scene, [stamp], frame_id, pusher_valid, object_valid, pusher_age,
                         object_age)[0]


def snapshot_to_msg(snapshot: SceneSnapshot, scene: Scene, *, frame_id: str = "table") -> SceneState:
    """A :class:`SceneSnapshot` as a SceneState message (object order and names of ``scene``)."""
    if tuple(snapshot.object_names) != scene.object_names:
        raise MessageError(
            f"snapshot objects {list(snapshot.object_names)} do not match the scene {list(scene.object_names)}"
        )
    return state_to_msg(
        snapshot.state,
        scene,
        stamp=snapshot.stamp,
        frame_id=frame_id,
        pusher_valid=snapshot.pusher_valid,
        object_valid=snapshot.object_valid,
        pusher_age=snapshot.pusher_age,
        object_age=snapshot.object_age,
    )


def _finite_fields(body: ObjectState, where: str, names: Sequence[str]) -> list[float]:
    values = []
    for name in names:
        value = getattr(body, name)
        if not math.isfinite(value):
            raise MessageError(f"{where}.{name}: must be finite, got {value!r}")
        values.append(float(value))
    return values


def msg_to_snapshot(message: SceneState, scene: Scene, *, require_valid: bool = False) -> SceneSnapshot:
    """A SceneState message as a :class:`SceneSnapshot` in the object order of ``scene``.

    Objects are matched by name; every object of the scene must be present exactly once, with
    the scene's outline or none (:func:`check_geometry`).
    Raises:
        MessageError: naming the field (unknown/missing/duplicate object, an outline other than
            the scene's, non-finite value, or an invalid body when ``require_valid``).
    """
    layout = scene.layout
    state = np.zeros(layout.dimension)
    px, py, pvx, pvy = _finite_fields(message.pusher, "pusher", ("x", "y", "vx", "vy"))
    state[layout.pusher_position] = (px, py)
    state[layout.pusher_velocity] = (pvx, pvy)
    if require_valid and not message.pusher.valid:
        raise MessageError("pusher.valid: the pusher is not tracked (stale)")
    seen: dict[str, int] = {}
    valid = np.ones(len(scene.objects), bool)
    age = np.zeros(len(scene.objects))
    for position, body in enumerate(message.objects):
        where = f"objects[{position}]"
        if body.name in seen:
            raise MessageError(f"{where}.name: duplicate object {body.name!r}")
        try:
            index = scene.object_index(body.name)
        except KeyError:
            raise MessageError(
                f"{where}.name: unknown object {body.name!r}; the scene has {list(scene.object_names)}"
            ) from None
        seen[body.name] = index
        check_geometry(body, scene.objects[index], where)
        values = _finite_fields(body, where, ("x", "y", "yaw", "vx", "vy", "yaw_rate"))
        state[layout.object_pose(index)] = values[:3]
        state[layout.object_twist(index)] = values[3:]
        valid[index] = bool(body.valid)
        age[index] = float(body.age) if math.isfinite(body.age) else math.inf
        if require_valid and not body.valid:
            raise MessageError(f"{where}.valid: object {body.name!r} is not tracked (stale)")
    missing = [name for name in scene.object_names if name not in seen]
    if missing:
        raise MessageError(f"objects: missing {missing}; every object of the scene is needed")
    return SceneSnapshot(
        stamp=time_to_seconds(message.header.stamp),
        object_names=scene.object_names,
        state=state,
        pusher_valid=bool(message.pusher.valid),
        object_valid=valid,
        pusher_age=float(message.pusher.age) if math.isfinite(message.pusher.age) else math.inf,
        object_age=age,
    )


def controls_to_msg(controls: np.ndarray, durations: np.ndarray | float) -> ControlSequence:
    """Controls (N, 2) m/s held for durations (N,) s (or one duration) as a ControlSequence."""
    controls = np.asarray(controls, dtype=float).reshape(-1, 2)
    durations = np.broadcast_to(np.asarray(durations, dtype=float), (len(controls),))
    message = ControlSequence()
    message.header.frame_id = "table"
    message.controls = [
        PusherControl(vx=float(vx), vy=float(vy), duration=float(duration))
        for (vx, vy), duration in zip(controls, durations, strict=True)
    ]
    return message


def sequences_from_msgs(
    sequences: Sequence[ControlSequence],
    *,
    max_sequences: int | None = None,
    max_controls: int | None = None,
    max_speed: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Validate control sequences and return (controls (B, N, 2) m/s, durations (B, N) s).

    A limit left None is not checked here (e.g. the prediction engine checks its own).

    Raises:
        MessageError: no sequences, too many, unequal lengths, empty sequences,
            non-finite values, non-positive durations or speeds above ``max_speed``.
    """
    if len(sequences) == 0:
        raise MessageError("sequences: at least one control sequence is needed")
    if max_sequences is not None and len(sequences) > max_sequences:
        raise MessageError(f"sequences: {len(sequences)} sequences, at most {max_sequences} per request")
    lengths = {len(sequence.controls) for sequence in sequences}
    if len(lengths) != 1:
        raise MessageError(f"sequences: all sequences must have the same length, got lengths {sorted(lengths)}")
    length = lengths.pop()
    if length == 0:
        raise MessageError("sequences[*].controls: sequences are empty")
    if max_controls is not None and length > max_controls:
        raise MessageError(f"sequences[*].controls: {length} controls, at most {max_controls}")
    values = np.array(
        [[(c.vx, c.vy, c.duration) for c in sequence.controls] for sequence in sequences], dtype=float
    )
    bad = ~np.isfinite(values)
    if bad.any():
        b, n, column = np.argwhere(bad)[0]
        field = ("vx", "vy", "duration")[column]
        raise MessageError(f"sequences[{b}].controls[{n}].{field}: must be finite, got {values[b, n, column]!r}")
    nonpositive = values[..., 2] <= 0.0
    if nonpositive.any():
        b, n = np.argwhere(nonpositive)[0]
        raise MessageError(f"sequences[{b}].controls[{n}].duration: must be > 0, got {values[b, n, 2]!r}")
    speeds = np.hypot(values[..., 0], values[..., 1])
    too_fast = speeds > (math.inf if max_speed is None else max_speed * (1.0 + 1e-9))
    if too_fast.any():
        b, n = np.argwhere(too_fast)[0]
        raise MessageError(
            f"sequences[{b}].controls[{n}]: speed {speeds[b, n]:.4g} m/s exceeds the limit {max_speed:.4g} m/s"
        )
    return values[..., :2].copy(), values[..., 2].copy()


def trajectory_to_msg(
    states: np.ndarray,
    scene: Scene,
    *,
    exact_states: int = 0,
    start_stamp: float = 0.0,
    durations: Sequence[float] | None = None,
    cost: float = 0.0,
) -> PredictedTrajectory:
    """Predicted states (N + 1, D) as a PredictedTrajectory; the first ``exact_states`` are exact.

    ``durations`` (N,) s, when given, stamps each state at its predicted time.
    """
    states = scene.layout.check(states, "states")
    if states.ndim != 2:
        raise ValueError(f"states: expected shape (N + 1, {scene.layout.dimension}), got {states.shape}")
    times = np.zeros(len(states))
    if durations is not None:
        times[1:] = np.cumsum(np.asarray(durations, dtype=float))
    return PredictedTrajectory(
        states=_scene_states(states, scene, (start_stamp + times).tolist(), "table"),
        exact=[index < exact_states for index in range(len(states))],
        cost=float(cost),
    )


def trajectory_from_msg(message: PredictedTrajectory, scene: Scene) -> np.ndarray:
    """States (N + 1, D) of a PredictedTrajectory message."""
    return np.stack([msg_to_snapshot(state, scene).state for state in message.states])


def report_to_status(report: DiagnosticReport) -> DiagnosticStatus:
    """The ``diagnostic_msgs/DiagnosticStatus`` of a core diagnostics report."""
    return DiagnosticStatus(
        level=bytes([int(report.level)]),
        name=report.name,
        message=report.message,
        hardware_id=report.hardware_id,
        values=[KeyValue(key=key, value=value) for key, value in report.values],
    )
