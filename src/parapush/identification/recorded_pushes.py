"""Recorded pushes: a file of observed pushes of one object and the scene they were made in.

The file is what ``identify_recording --pushes FILE`` and ``bench/real_pushes.py`` read: pushes
recorded anywhere (a motion-capture log, a public data set such as the MIT pushing data set,
converted by ``bench/mit_pushes.py``) in the project's own state layout, so that the fine model,
the coarse models and the identification replay them as they replay the stack's own runs.

Format: JSON (UTF-8), one object::

    {
      "format": "parareal_pushing.recorded_pushes",
      "version": 1,
      "source": "free text: where the pushes come from, licence, citation",
      "scene": { ... },          # a scene as in config/scenes/*.yaml (parapush.scene.scene_from_dict)
      "object": "<name>",        # the pushed object, one of the scene's objects
      "pushes": [
        {
          "name": "<unique push name>",
          "states": [[...], ...],      # (T + 1, D) states at the control boundaries, the scene's
                                       # state layout (parapush.scene.StateLayout), SI, table frame
          "controls": [[vx, vy], ...], # (T, 2) pusher velocity held over each segment, m/s
          "durations": [...]           # (T,) s, each a whole number of milliseconds
        }, ...
      ]
    }

``states[0]`` is the state the push starts from (pusher at contact, objects at rest), the
other rows are what was observed after each control. Every number is finite.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parapush.identification.identifier import PushRecord
from parapush.scene import Scene, scene_from_dict
from parapush.validation import duplicate_names

FORMAT = "parareal_pushing.recorded_pushes"
"""The ``format`` field of a recorded-pushes file."""

VERSION = 1
"""The file format version this module reads and writes."""


class RecordedPushesError(ValueError):
    """A recorded-pushes file is malformed; the message names the file and the field."""


@dataclass(frozen=True)
class RecordedPush:
    """One recorded push.

    Attributes:
        name: unique name of the push within its file.
        record: the observed states at the control boundaries, controls and durations.
    """

    name: str
    record: PushRecord

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name: expected a non-empty string, got {self.name!r}")
        if not isinstance(self.record, PushRecord):
            raise TypeError(f"record: expected a PushRecord, got {type(self.record).__name__}")

    @property
    def pusher_travel(self) -> np.ndarray:
        """(T + 1,) m, the commanded pusher path length at each control boundary."""
        steps = np.linalg.norm(self.record.controls, axis=1) * self.record.durations
        return np.concatenate([[0.0], np.cumsum(steps)])


@dataclass(frozen=True)
class RecordedPushes:
    """Recorded pushes of one object.

    Attributes:
        scene_data: the scene as plain data (a scene file's mapping), kept for saving.
        object_name: the pushed object.
        pushes: the pushes, in file order; names unique.
        source: where the pushes come from (free text).
        scene: the validated scene built from ``scene_data`` (derived).
    """

    scene_data: Mapping[str, Any]
    object_name: str
    pushes: tuple[RecordedPush, ...]
    source: str = ""
    scene: Scene = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        scene = scene_from_dict(self.scene_data)
        object.__setattr__(self, "scene", scene)
        scene.object_index(self.object_name)  # KeyError naming the object
        pushes = tuple(self.pushes)
        if not pushes:
            raise ValueError("pushes: at least one push is needed")
        duplicates = duplicate_names(push.name for push in pushes)
        if duplicates:
            raise ValueError(f"pushes: duplicate names {duplicates}")
        dimension = scene.layout.dimension
        for push in pushes:
            if push.record.states.shape[1] != dimension:
                raise ValueError(f"pushes[{push.name}].states: rows of {push.record.states.shape[1]} values, "
                                 f"the scene's state has {dimension}")
        object.__setattr__(self, "pushes", pushes)

    @property
    def records(self) -> list[PushRecord]:
        """The pushes' records, in file order."""
        return [push.record for push in self.pushes]


def _array(value: Any, shape: tuple[int | None, ...], where: str) -> np.ndarray:
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise RecordedPushesError(f"{where}: expected numbers, got {value!r:.80}") from None
    if array.ndim != len(shape) or any(
            want is not None and got != want for got, want in zip(array.shape, shape, strict=True)):
        raise RecordedPushesError(f"{where}: expected shape {shape} (None: any), got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise RecordedPushesError(f"{where}: every number must be finite")
    return array


def recorded_pushes_from_dict(data: Mapping[str, Any]) -> RecordedPushes:
    """Validate plain data (a parsed file) into :class:`RecordedPushes`; errors name the field."""
    if not isinstance(data, Mapping):
        raise RecordedPushesError(f"expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise RecordedPushesError(f"format: expected {FORMAT!r}, got {data.get('format')!r}")
    if data.get("version") != VERSION:
        raise RecordedPushesError(f"version: this reader knows version {VERSION}, got {data.get('version')!r}")
    unknown = sorted(set(data) - {"format", "version", "source", "scene", "object", "pushes"})
    if unknown:
        raise RecordedPushesError(f"unknown field(s) {unknown}")
    pushes_data = data.get("pushes")
    if not isinstance(pushes_data, Sequence) or isinstance(pushes_data, (str, bytes)):
        raise RecordedPushesError("pushes: expected a list of pushes")
    pushes = []
    for index, item in enumerate(pushes_data):
        where = f"pushes[{index}]"
        if not isinstance(item, Mapping) or set(item) != {"name", "states", "controls", "durations"}:
            raise RecordedPushesError(f"{where}: expected an object with exactly name, states, controls, durations")
        controls = _array(item["controls"], (None, 2), f"{where}.controls")
        durations = _array(item["durations"], (controls.shape[0],), f"{where}.durations")
        states = _array(item["states"], (controls.shape[0] + 1, None), f"{where}.states")
        milliseconds = durations * 1000.0
        if np.any(durations <= 0.0) or np.any(np.abs(milliseconds - np.round(milliseconds)) > 1e-6):
            raise RecordedPushesError(f"{where}.durations: each must be a positive whole number of milliseconds")
        try:
            pushes.append(RecordedPush(str(item["name"]), PushRecord(states, controls, durations)))
        except ValueError as error:
            raise RecordedPushesError(f"{where}: {error}") from None
    try:
        return RecordedPushes(scene_data=data.get("scene"), object_name=data.get("object"), pushes=tuple(pushes),
                              source=str(data.get("source", "")))
    except (ValueError, KeyError, TypeError) as error:
        raise RecordedPushesError(str(error).strip("'\"")) from None


def load_recorded_pushes(path: str | Path) -> RecordedPushes:
    """Read a recorded-pushes file; errors name the file and the field."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise RecordedPushesError(f"recorded pushes {path}: cannot read ({error.strerror})") from None
    except json.JSONDecodeError as error:
        raise RecordedPushesError(f"recorded pushes {path}: not JSON ({error})") from None
    try:
        return recorded_pushes_from_dict(data)
    except RecordedPushesError as error:
        raise RecordedPushesError(f"recorded pushes {path}: {error}") from None


def _rounded(values: np.ndarray) -> list:
    """Nested lists of floats, rounded to 1e-9 (nm, ns: far below any measurement)."""
    return np.round(np.asarray(values, dtype=float), 9).tolist()


def recorded_pushes_to_dict(recorded: RecordedPushes) -> dict[str, Any]:
    """Plain data of ``recorded`` in the file format (see the module docstring)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "source": recorded.source,
        "scene": dict(recorded.scene_data),
        "object": recorded.object_name,
        "pushes": [
            {"name": push.name, "states": _rounded(push.record.states), "controls": _rounded(push.record.controls),
             "durations": [round(float(value), 6) for value in push.record.durations]}
            for push in recorded.pushes
        ],
    }


def save_recorded_pushes(path: str | Path, recorded: RecordedPushes) -> None:
    """Write ``recorded`` as a recorded-pushes file (compact JSON, one push per line)."""
    data = recorded_pushes_to_dict(recorded)
    pushes = data.pop("pushes")
    head = json.dumps(data, indent=1)[:-2]
    lines = ",\n  ".join(json.dumps(push, allow_nan=False) for push in pushes)
    Path(path).write_text(f"{head},\n \"pushes\": [\n  {lines}\n ]\n}}\n", encoding="utf-8")

