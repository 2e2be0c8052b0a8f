"""Which Motive rigid body is which scene body: the mocap body mapping and its validation.

A mapping file lists one entry per scene body (the ``pusher`` and every object)::

    bodies:
      - body: pusher              # "pusher" or an object name of the scene
        id: 1                     # Motive streaming id, and/or
        motive_name: pusher_tip   # the rigid body's name in Motive (resolved to an id
                                  #   from the model definitions, see BodyMap.resolve_ids)
        centre_offset: [0, 0, 0]  # m, pivot -> centre in the object frame (optional)
        yaw_offset: 0.0           # rad, object yaw at the body's reference orientation (optional)

See :mod:`parapush.estimation.table_frame` for the meaning of the offsets. Every error
names the entry, ``bodies[2] (clutter_b)``, and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from parapush.scene import Scene
from parapush.validation import check_real
from parapush.yaml_file import config_file, load_yaml

#: The scene body name of the pusher.
PUSHER_BODY = "pusher"

_ENTRY_KEYS = ("body", "id", "motive_name", "centre_offset", "yaw_offset")


class BodyMapError(ValueError):
    """A body mapping is invalid, or does not fit a scene; the message names the entry."""


@dataclass(frozen=True)
class BodyMapEntry:
    """One mocap rigid body and the scene body it tracks.

    Attributes:
        body: scene body: ``"pusher"`` or an object name.
        rigid_body_id: Motive streaming id, or None when only the Motive name is known yet.
        motive_name: the rigid body's name in Motive, or None.
        centre_offset: (3,) pivot -> object centre in the object frame, m.
        yaw_offset: object's table yaw when the body is at its reference orientation, rad.
    """

    body: str
    rigid_body_id: int | None = None
    motive_name: str | None = None
    centre_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    yaw_offset: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.body, str) or not self.body.strip():
            raise BodyMapError(f"body: expected a non-empty scene body name, got {self.body!r}")
        where = self.label
        if self.rigid_body_id is not None and (
            isinstance(self.rigid_body_id, bool) or not isinstance(self.rigid_body_id, int)
        ):
            raise BodyMapError(f"{where}.id: expected an integer, got {self.rigid_body_id!r}")
        if self.motive_name is not None and (
            not isinstance(self.motive_name, str) or not self.motive_name.strip()
        ):
            raise BodyMapError(f"{where}.motive_name: expected a non-empty string, got {self.motive_name!r}")
        if self.rigid_body_id is None and self.motive_name is None:
            raise BodyMapError(f"{where}: give an id, a motive_name, or both")
        offset = self.centre_offset
        if isinstance(offset, (str, bytes)) or not isinstance(offset, Sequence) or len(offset) != 3:
            raise BodyMapError(f"{where}.centre_offset: expected 3 numbers (m), got {offset!r}")
        object.__setattr__(
            self,
            "centre_offset",
            tuple(_finite(f"{where}.centre_offset[{index}]", value) for index, value in enumerate(offset)),
        )
        object.__setattr__(self, "yaw_offset", _finite(f"{where}.yaw_offset", self.yaw_offset))

    @property
    def label(self) -> str:
        """How errors refer to this entry."""
        return f"body {self.body!r}"

    @property
    def is_pusher(self) -> bool:
        return self.body == PUSHER_BODY


def _finite(name: str, value: Any) -> float:
    """:func:`~parapush.validation.check_real` raising :class:`BodyMapError`."""
    try:
        return check_real(name, value)
    except ValueError as error:
        raise BodyMapError(str(error)) from None


def _duplicates(values: list[tuple[Any, int]], what: str, entries) -> None:
    seen: dict[Any, int] = {}
    for value, index in values:
        if value in seen:
            first = seen[value]
            raise BodyMapError(
                f"bodies[{index}] ({entries[index].body}): duplicate {what} {value!r}, "
                f"already used by bodies[{first}] ({entries[first].body})"
            )
        seen[value] = index


@dataclass(frozen=True)
class BodyMap:
    """The mapping of Motive rigid bodies to scene bodies (entries in file order).

    Raises BodyMapError on duplicate scene bodies, duplicate ids or duplicate Motive names.
    """

    entries: tuple[BodyMapEntry, ...]

    def __post_init__(self) -> None:
        entries = tuple(self.entries)
        object.__setattr__(self, "entries", entries)
        if not entries:
            raise BodyMapError("bodies: the mapping is empty; map at least the pusher and every object")
        for index, entry in enumerate(entries):
            if not isinstance(entry, BodyMapEntry):
                raise BodyMapError(f"bodies[{index}]: expected a BodyMapEntry, got {type(entry).__name__}")
        _duplicates([(entry.body, index) for index, entry in enumerate(entries)], "scene body", entries)
        _duplicates(
            [(entry.rigid_body_id, i) for i, entry in enumerate(entries) if entry.rigid_body_id is not None],
            "id",
            entries,
        )
        _duplicates(
            [(entry.motive_name, i) for i, entry in enumerate(entries) if entry.motive_name is not None],
            "motive_name",
            entries,
        )

    @property
    def bodies(self) -> tuple[str, ...]:
        return tuple(entry.body for entry in self.entries)

    @property
    def is_resolved(self) -> bool:
        """Whether every entry has a streaming id (required by the tracker)."""
        return all(entry.rigid_body_id is not None for entry in self.entries)

    def entry(self, body: str) -> BodyMapEntry:
        """The entry of scene body ``body``; KeyError naming it if unmapped."""
        for entry in self.entries:
            if entry.body == body:
                return entry
        raise KeyError(f"scene body {body!r} is not mapped; mapped: {list(self.bodies)}")

    def entries_by_id(self) -> dict[int, BodyMapEntry]:
        """Entries keyed by streaming id; BodyMapError naming the entries without an id."""
        unresolved = [
            f"bodies[{i}] ({e.body})" for i, e in enumerate(self.entries) if e.rigid_body_id is None
        ]
        if unresolved:
            raise BodyMapError(
                f"{', '.join(unresolved)}: no streaming id; resolve Motive names with "
                "BodyMap.resolve_ids(model names from the NatNet model definitions)"
            )
        return {entry.rigid_body_id: entry for entry in self.entries}

    def validate_for(self, scene: Scene) -> None:
        """Check the mapping against ``scene``: every entry is the pusher or one of its objects,
        and the pusher and every object are mapped. Raises BodyMapError naming the entry."""
        objects = scene.object_names
        if PUSHER_BODY in objects:
            raise BodyMapError(
                f"scene {scene.name!r} has an object named {PUSHER_BODY!r}, which the mapping reserves "
                "for the pusher; rename the object"
            )
        obstacles = {obstacle.name for obstacle in scene.obstacles}
        for index, entry in enumerate(self.entries):
            if entry.body == PUSHER_BODY or entry.body in objects:
                continue
            kind = "a static obstacle (not estimated)" if entry.body in obstacles else "not a body"
            raise BodyMapError(
                f"bodies[{index}] ({entry.body}): {entry.body!r} is {kind} of scene {scene.name!r}; "
                f"expected {PUSHER_BODY!r} or one of {list(objects)}"
            )
        missing = [body for body in (PUSHER_BODY, *objects) if body not in self.bodies]
        if missing:
            raise BodyMapError(
                f"bodies: scene {scene.name!r} needs a mocap body for {missing}; "
                "an unmapped body could never be tracked"
            )

    def resolve_ids(self, rigid_body_names: Mapping[int, str]) -> BodyMap:
        """Fill in the streaming ids of entries given by Motive name.

        Args:
            rigid_body_names: streaming id -> Motive name, from the NatNet model definitions.
        Returns:
            a new BodyMap whose entries all have an id.
        Raises:
            BodyMapError: naming the entry, if its Motive name is not streamed, is streamed
                under several ids, or names a body whose id differs from the entry's id.
        """
        resolved = []
        for index, entry in enumerate(self.entries):
            where = f"bodies[{index}] ({entry.body})"
            if entry.motive_name is None:
                resolved.append(entry)
                continue
            ids = sorted(body_id for body_id, name in rigid_body_names.items() if name == entry.motive_name)
            if not ids:
                raise BodyMapError(
                    f"{where}.motive_name: Motive streams no rigid body named {entry.motive_name!r}; "
                    f"streamed: {sorted(set(rigid_body_names.values()))}"
                )
            if len(ids) > 1:
                raise BodyMapError(
                    f"{where}.motive_name: several rigid bodies are named {entry.motive_name!r} (ids {ids})"
                )
            if entry.rigid_body_id is not None and entry.rigid_body_id != ids[0]:
                raise BodyMapError(
                    f"{where}.id: the mapping says {entry.rigid_body_id} but Motive streams "
                    f"{entry.motive_name!r} with id {ids[0]}"
                )
            resolved.append(replace(entry, rigid_body_id=ids[0]))
        return BodyMap(tuple(resolved))


def body_map_from_dict(data: Any) -> BodyMap:
    """Build a BodyMap from parsed YAML ``{bodies: [{body, id, motive_name, ...}, ...]}``."""
    if not isinstance(data, Mapping):
        raise BodyMapError("expected a mapping with a 'bodies' list")
    unknown = sorted(set(data) - {"bodies"})
    if unknown:
        raise BodyMapError(f"unknown field(s) {unknown}; known: ['bodies']")
    items = data.get("bodies")
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise BodyMapError("bodies: expected a list of entries")
    entries = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise BodyMapError(f"bodies[{index}]: expected a mapping, got {item!r}")
        name = item.get("body")
        where = f"bodies[{index}] ({name})" if name is not None else f"bodies[{index}]"
        unknown = sorted(set(item) - set(_ENTRY_KEYS))
        if unknown:
            raise BodyMapError(f"{where}: unknown field(s) {unknown}; known: {list(_ENTRY_KEYS)}")
        if name is None:
            raise BodyMapError(f"{where}.body: missing")
        try:
            entries.append(
                BodyMapEntry(
                    body=name,
                    rigid_body_id=item.get("id"),
                    motive_name=item.get("motive_name"),
                    centre_offset=item.get("centre_offset", (0.0, 0.0, 0.0)),
                    yaw_offset=item.get("yaw_offset", 0.0),
                )
            )
        except BodyMapError as error:
            message, label = str(error), f"body {name!r}"
            if message.startswith(label):
                raise BodyMapError(f"{where}{message[len(label) :]}") from None
            raise BodyMapError(f"{where}: {message}") from None
    return BodyMap(tuple(entries))


def load_body_map(path: str | Path, scene: Scene | None = None) -> BodyMap:
    """Read a mapping file, validated against ``scene`` when given; errors name file and entry."""

    def checked_body_map(data: Any) -> BodyMap:
        body_map = body_map_from_dict(data)
        if scene is not None:
            body_map.validate_for(scene)
        return body_map

    return load_yaml(path, checked_body_map, BodyMapError, "body mapping")


AUTO_BODY_MAP = "auto"
"""Body-map setting: ``config/mocap/<scene name>.yaml`` when it exists, else :func:`default_body_map`."""

BODY_MAP_DIRECTORY = "mocap"
"""Folder of the config directory holding one body map per scene, named after the scene."""


def default_body_map(scene: Scene) -> BodyMap:
    """The generated mapping: pusher id 1, objects 2, 3, ... in scene order; Motive names =
    scene names; pivots at the bodies' centres (no offsets)."""
    entries = [BodyMapEntry(body=PUSHER_BODY, rigid_body_id=1, motive_name=PUSHER_BODY)]
    entries += [
        BodyMapEntry(body=name, rigid_body_id=index + 2, motive_name=name)
        for index, name in enumerate(scene.object_names)
    ]
    return BodyMap(tuple(entries))


def resolve_body_map(scene: Scene, setting: str, config_directory: str | Path) -> tuple[BodyMap, str]:
    """The body map a setting names, and a description of where it came from.

    Args:
        scene: the scene it must map (validated).
        setting: ``"auto"`` (the scene's own file ``<config>/mocap/<scene name>.yaml`` if it
            exists, else the generated mapping), ``""`` (the generated mapping), or a file by the
            stack's one config-file rule (:func:`parapush.yaml_file.config_file`): a path, or a
            bare file name in ``config_directory``.
        config_directory: the package's config directory (or the settings file's).
    Raises:
        BodyMapError: naming the file and the entry, or the file that is not there.
    """
    config_directory = Path(config_directory)
    if setting == "":
        return default_body_map(scene), "generated (pusher id 1, objects 2, 3, ... in scene order)"
    if setting == AUTO_BODY_MAP:
        candidate = config_directory / BODY_MAP_DIRECTORY / f"{scene.name}.yaml"
        if not candidate.is_file():
            return default_body_map(scene), f"generated (no {candidate})"
        return load_body_map(candidate, scene), str(candidate)
    try:
        path = config_file(setting, config_directory)
    except FileNotFoundError as error:
        raise BodyMapError(f"cannot read body mapping ({error})") from None
    return load_body_map(path, scene), str(path)
