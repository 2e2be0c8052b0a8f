"""Model definitions (NatNet MODELDEF): which rigid bodies the server streams, by name and id."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["DescriptionType", "ModelDefinitions", "RigidBodyDescription", "RigidBodyMarkerDescription"]


class DescriptionType:
    """Data-description type codes of MODELDEF entries (NatNet SDK ``DataDescriptors``)."""

    MARKER_SET = 0
    RIGID_BODY = 1
    SKELETON = 2
    FORCE_PLATE = 3
    DEVICE = 4
    CAMERA = 5
    ASSET = 6

    NAMES: Mapping[int, str] = MappingProxyType(
        {
            0: "marker set",
            1: "rigid body",
            2: "skeleton",
            3: "force plate",
            4: "device",
            5: "camera",
            6: "asset",
        }
    )


@dataclass(frozen=True)
class RigidBodyMarkerDescription:
    """One marker of a rigid-body definition.

    Attributes:
        position: (x, y, z) in m, marker offset in the rigid-body frame.
        active_label: expected active-marker label, 0 if not specified.
        name: marker name (NatNet 4.0+; empty for older versions).
    """

    position: tuple[float, float, float]
    active_label: int = 0
    name: str = ""


@dataclass(frozen=True)
class RigidBodyDescription:
    """Definition of one streamed rigid body.

    Attributes:
        name: rigid-body (asset) name as set in Motive.
        id: streaming id; frames carry this id.
        parent_id: id of the parent body, -1 if none.
        offset: (x, y, z) in m, position offset relative to the parent.
        orientation: unit quaternion (qx, qy, qz, qw) of the offset (on the wire in NatNet 4.2+ only).
        markers: the markers of the body (NatNet 3.0+).
    """

    name: str
    id: int
    parent_id: int = -1
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    markers: tuple[RigidBodyMarkerDescription, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ValueError(f"RigidBodyDescription.name must be a str, got {type(self.name).__name__}")
        if len(self.offset) != 3:
            raise ValueError(f"RigidBodyDescription.offset must have 3 components, got {len(self.offset)}")
        if len(self.orientation) != 4:
            raise ValueError(
                f"RigidBodyDescription.orientation must have 4 components, got {len(self.orientation)}"
            )


@dataclass(frozen=True)
class ModelDefinitions:
    """Decoded MODELDEF: the rigid-body definitions, plus which other entry types were skipped.

    Attributes:
        rigid_bodies: rigid-body definitions in server order.
        skipped_description_types: type codes (see :class:`DescriptionType`) of the non-rigid-body
            entries that were present and skipped (marker sets, skeletons, force plates, ...).
    """

    rigid_bodies: tuple[RigidBodyDescription, ...] = ()
    skipped_description_types: tuple[int, ...] = field(default=())

    @property
    def ids_by_name(self) -> Mapping[str, int]:
        """Rigid-body streaming id by name."""
        return MappingProxyType({body.name: body.id for body in self.rigid_bodies})

    @property
    def names_by_id(self) -> Mapping[int, str]:
        """Rigid-body name by streaming id."""
        return MappingProxyType({body.id: body.name for body in self.rigid_bodies})
