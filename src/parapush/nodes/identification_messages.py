"""IdentifyObject / ObjectParameters / ObservedPush messages <-> parapush.identification types.

Every function that reads a message raises :class:`MessageError` naming the field.
"""

from __future__ import annotations

from parareal_pushing.msg import ObjectParameters as ObjectParametersMsg
from parareal_pushing.msg import ObservedPush
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from parapush.identification import ObjectParameters, PushRecord
from parapush.nodes.conversions import (
    MessageError,
    controls_to_msg,
    msg_to_snapshot,
    seconds_to_time,
    sequences_from_msgs,
    state_to_msg,
)
from parapush.scene import ObjectPatch, Scene

OBJECT_PARAMETERS_QOS = QoSProfile(
    depth=64, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
)
"""QoS of ``object_parameters``: a late subscriber (a restarted prediction service) gets them too."""


def push_record_from_msg(
    push: ObservedPush, scene: Scene, where: str, *, max_controls: int, max_speed: float
) -> PushRecord:
    """An observed push as a :class:`PushRecord`; ``where`` prefixes the field names in errors."""
    try:
        controls, durations = sequences_from_msgs(
            [push.controls], max_sequences=1, max_controls=max_controls, max_speed=max_speed
        )
    except MessageError as error:
        text = str(error).replace("sequences[0].", f"{where}.").replace("sequences[*].", f"{where}.")
        raise MessageError(text.replace("sequences:", f"{where}.controls:")) from None
    expected = controls.shape[1] + 1
    if len(push.states) != expected:
        raise MessageError(
            f"{where}.states: {len(push.states)} states for {controls.shape[1]} controls; expected {expected} "
            "(one before each control and one after the last)"
        )
    states = []
    for index, state in enumerate(push.states):
        try:
            states.append(msg_to_snapshot(state, scene, require_valid=True).state)
        except MessageError as error:
            raise MessageError(f"{where}.states[{index}].{error}") from None
    try:
        return PushRecord(states, controls[0], durations[0])
    except ValueError as error:
        raise MessageError(f"{where}: {error}") from None


def push_record_to_msg(record: PushRecord, scene: Scene) -> ObservedPush:
    """A push record (e.g. of a recorded-pushes file, :mod:`parapush.identification.recorded_pushes`)
    as the ObservedPush the identification service takes."""
    return ObservedPush(states=[state_to_msg(state, scene) for state in record.states],
                        controls=controls_to_msg(record.controls, record.durations))


PATCH_FIELDS = ("x", "y", "half_x", "half_y", "mass", "friction")
"""The message's per-patch arrays, ``patch_<field>``."""


def patch_columns(patches) -> list[list[float]]:
    """The patches as the message's six columns (:data:`PATCH_FIELDS`)."""
    rows = [(*patch.center, *patch.half_extents, patch.mass, patch.friction) for patch in patches]
    return [[float(row[column]) for row in rows] for column in range(len(PATCH_FIELDS))]


def parameters_to_msg(object_name: str, parameters: ObjectParameters, *, stamp: float = 0.0) -> ObjectParametersMsg:
    """Parameters of object ``object_name`` as an ObjectParameters message."""
    message = ObjectParametersMsg(
        object=object_name,
        mass=parameters.mass,
        support_friction=parameters.support_friction,
        pusher_friction=parameters.pusher_friction,
        com_x=parameters.com_offset[0],
        com_y=parameters.com_offset[1],
        **{f"patch_{name}": column
           for name, column in zip(PATCH_FIELDS, patch_columns(parameters.patches), strict=True)},
    )
    message.header.stamp = seconds_to_time(stamp)
    message.header.frame_id = "table"
    return message


def parameters_from_msg(message: ObjectParametersMsg) -> tuple[str, ObjectParameters]:
    """(object name, parameters) of an ObjectParameters message."""
    columns = [list(getattr(message, f"patch_{name}")) for name in PATCH_FIELDS]
    if len({len(column) for column in columns}) != 1:
        raise MessageError("patch_*: expected one entry per patch in each of "
                           f"{', '.join(f'patch_{name}' for name in PATCH_FIELDS)}, got lengths "
                           f"{[len(column) for column in columns]}")
    try:
        patches = tuple(ObjectPatch(center=(x, y), half_extents=(half_x, half_y), mass=mass, friction=friction)
                        for x, y, half_x, half_y, mass, friction in zip(*columns, strict=True))
        return message.object, ObjectParameters(
            mass=message.mass,
            support_friction=message.support_friction,
            pusher_friction=message.pusher_friction,
            com_offset=(message.com_x, message.com_y),
            patches=patches,
        )
    except ValueError as error:
        raise MessageError(str(error)) from None
