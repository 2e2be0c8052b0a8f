"""Training data for the general learned model: random scenes and pushes labelled by the fine model.

Each *scene* (:mod:`parapush.learning.general_sampling`: its bodies, coefficients and
obstacles drawn over :class:`~parapush.learning.scene_ranges.SceneRanges`) gets its own
fine MuJoCo model (:class:`~parapush.physics.fine.FineModel`, ``FineSettings()`` unless
given) and ``pushes_per_scene`` pushes: a first push from the sampled state, then each
further push from the fine model's result of the previous one (a state in contact and
moving, as inside a control sequence), as long as the objects stay on the table. Scenes
are independent: scene ``i`` draws from ``numpy.random.default_rng([seed, i])``, so the
data are the same for a seed whatever the number of worker processes.

File format (``.npz``, compressed; per push, objects padded to the ranges' largest count)::

    pusher_positions (M, 2) m          next_pusher_positions (M, 2)
    pusher_velocities (M, 2) m/s       next_pusher_velocities (M, 2)
    object_poses (M, n, 3) m, m, rad   next_object_poses (M, n, 3)
    object_twists (M, n, 3)            next_object_twists (M, n, 3)
    object_counts (M,) int             controls (M, 2) m/s      durations (M,) s
    scene_index (M,) int               planned_contact (M,) bool  continuation (M,) bool
    scenes: JSON list of scene descriptions     metadata: JSON (settings, seed, counts, timings)

Command line::

    python -m parapush.learning.general_dataset --samples 40000 --seed 1 --out general.npz
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from tqdm import tqdm

from parapush.learning.body_descriptors import BodyDescriptors
from parapush.learning.general_sampling import GeneralPushSampler, GeneralSamplingConfig
from parapush.learning.geometry import ModelMismatchError
from parapush.physics.fine import FineModel
from parapush.physics.fine_settings import FineSettings
from parapush.physics.table_support import objects_off_table
from parapush.scene import Scene, scene_from_dict
from parapush.settings import check_settings, setting
from parapush.validation import check_integer

GENERAL_DATASET_FORMAT = "parapush.learning.general_dataset/1"

MOVED_THRESHOLD = 1.0e-3
"""An object moved (the fine model saw a contact) if its centre travelled more than this, m."""

SCENES_PER_ROUND = 256
"""Scenes handed to the workers at once (the wall-time limit is checked between rounds)."""

_ARRAYS = (
    "pusher_positions", "pusher_velocities", "object_poses", "object_twists", "object_counts", "controls",
    "durations", "scene_index", "planned_contact", "continuation", "next_pusher_positions",
    "next_pusher_velocities", "next_object_poses", "next_object_twists",
)


@dataclass(frozen=True)
class GeneralDatasetConfig:
    """What to generate and how (``samples`` and ``seed`` have no default: every run names its own)."""

    samples: int
    seed: int
    sampling: GeneralSamplingConfig = field(default_factory=GeneralSamplingConfig)
    fine_settings: FineSettings = field(default_factory=FineSettings)
    pushes_per_scene: int = setting(2, "pushes per sampled scene (the first, then continuations)", minimum=1)
    workers: int | None = setting(None, "worker processes", kind=int, minimum=1, none="one per CPU core",
                                  ros_none=0)

    def __post_init__(self) -> None:
        check_integer("samples", self.samples, minimum=1)
        check_integer("seed", self.seed, minimum=0)
        check_settings(self)


@dataclass(frozen=True)
class GeneralPushDataset:
    """Pushes of many scenes and their fine-model outcomes (arrays: the module docstring).

    Attributes:
        arrays: name -> array, every name of the module's format.
        scenes: the scene descriptions (``scene_index`` points into it).
        metadata: JSON-serialisable description.
    """

    arrays: dict[str, np.ndarray]
    scenes: list[dict[str, Any]]
    metadata: dict[str, Any]

    def __len__(self) -> int:
        return int(self.arrays["durations"].shape[0])

    def __getattr__(self, name: str) -> np.ndarray:
        if name in _ARRAYS:
            return self.arrays[name]
        raise AttributeError(name)

    @cached_property
    def built_scenes(self) -> list[Scene]:
        """The scenes as :class:`Scene` objects (built once)."""
        return [scene_from_dict(scene) for scene in self.scenes]

    @property
    def max_objects(self) -> int:
        return int(self.arrays["object_poses"].shape[1])

    def subset(self, rows: np.ndarray) -> GeneralPushDataset:
        """The pushes ``rows`` (indices or mask); the scene list is shared."""
        return GeneralPushDataset({name: value[rows] for name, value in self.arrays.items()}, self.scenes,
                                  dict(self.metadata))

    def object_present(self) -> np.ndarray:
        """(M, n) bool: padding is False."""
        return np.arange(self.max_objects)[None, :] < self.arrays["object_counts"][:, None]

    def moved(self) -> np.ndarray:
        """(M, n) bool: objects whose pose origin moved more than :data:`MOVED_THRESHOLD`."""
        travel = np.linalg.norm(self.arrays["next_object_poses"][..., :2] - self.arrays["object_poses"][..., :2],
                                axis=-1)
        return (travel > MOVED_THRESHOLD) & self.object_present()

    def scene_problem(self, row: int) -> tuple[Scene, np.ndarray, np.ndarray, float, np.ndarray]:
        """(scene, state (D,), control (2,), duration, fine next state (D,)) of push ``row``."""
        scene = self.built_scenes[int(self.arrays["scene_index"][row])]
        count = len(scene.objects)
        layout = scene.layout
        arrays = self.arrays
        state = layout.compose(arrays["pusher_positions"][row], arrays["object_poses"][row, :count],
                               arrays["pusher_velocities"][row], arrays["object_twists"][row, :count])
        following = layout.compose(arrays["next_pusher_positions"][row], arrays["next_object_poses"][row, :count],
                                   arrays["next_pusher_velocities"][row], arrays["next_object_twists"][row, :count])
        return scene, state, arrays["controls"][row], float(arrays["durations"][row]), following

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            np.savez_compressed(handle, metadata=np.array(json.dumps(self.metadata, sort_keys=True)),
                                scenes=np.array(json.dumps(self.scenes)), **self.arrays)
        return path


def load_general_dataset(path: str | Path) -> GeneralPushDataset:
    """Read a dataset written by :meth:`GeneralPushDataset.save`; refuses other formats by name."""
    path = Path(path)
    with np.load(path, allow_pickle=False) as archive:
        if "metadata" not in archive or "scenes" not in archive:
            raise ModelMismatchError(f"{path}: not a general push dataset (no metadata or scenes)")
        metadata = json.loads(str(archive["metadata"]))
        if metadata.get("format") != GENERAL_DATASET_FORMAT:
            raise ModelMismatchError(f"{path}: format {metadata.get('format')!r}, expected {GENERAL_DATASET_FORMAT!r}")
        missing = [name for name in _ARRAYS if name not in archive]
        if missing:
            raise ModelMismatchError(f"{path}: missing array(s) {missing}")
        arrays = {name: archive[name] for name in _ARRAYS}
        scenes = json.loads(str(archive["scenes"]))
    return GeneralPushDataset(arrays, scenes, metadata)


def padded_descriptors(scene: Scene, max_objects: int, max_obstacles: int) -> BodyDescriptors:
    """The scene's bodies with objects in slots 0..max_objects-1 and obstacles after them."""
    own = BodyDescriptors.from_scene(scene)
    objects, obstacles = len(scene.objects), len(scene.obstacles)
    slots = np.concatenate([np.arange(objects), max_objects + np.arange(obstacles)])
    padded = BodyDescriptors.from_scene(scene_from_dict({"name": "padding", "objects": [{"name": "x"}]}),
                                        max_objects + max_obstacles)
    values = {}
    for name in BodyDescriptors.__dataclass_fields__:
        array = np.zeros_like(getattr(padded, name))
        array[slots] = getattr(own, name)
        values[name] = array
    return BodyDescriptors(**values)


def scene_obstacle_poses(scene: Scene, max_obstacles: int) -> np.ndarray:
    """(max_obstacles, 3) obstacle poses, zero padding."""
    poses = np.zeros((max_obstacles, 3))
    for index, obstacle in enumerate(scene.obstacles):
        poses[index] = obstacle.pose
    return poses


_WORKER_CONFIG: GeneralDatasetConfig | None = None


def _initialise(config: GeneralDatasetConfig) -> None:
    global _WORKER_CONFIG
    _WORKER_CONFIG = config
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _label_scene(index: int) -> tuple[dict[str, Any], list[dict[str, Any]], float]:
    """Sample scene ``index`` and label its pushes: (scene, push records, simulation seconds)."""
    config = _WORKER_CONFIG
    assert config is not None, "worker not initialised"
    rng = np.random.default_rng([config.seed, index])
    sampler = GeneralPushSampler(config.sampling)
    description, push = sampler.sample_scene(rng, name=f"general_{config.seed}_{index}")
    scene = scene_from_dict(description)
    started = time.perf_counter()
    fine = FineModel(scene, config.fine_settings)
    descriptors = BodyDescriptors.from_scene(scene)
    records = []
    for number in range(config.pushes_per_scene):
        result = fine.propagate(push.state[None], push.control[None], np.array([push.duration]))[0]
        records.append({"state": push.state, "control": push.control, "duration": push.duration,
                        "planned_contact": push.planned_contact, "continuation": number > 0, "next": result})
        if not np.all(np.isfinite(result)) or np.any(objects_off_table(scene, result[None])):
            break
        if np.any(np.abs(result[scene.layout.pusher_position]) > 0.3):
            break  # the pusher nears the table's edge
        push = sampler.sample_push(rng, scene, result, descriptors)
    return description, records, time.perf_counter() - started


def generate_general_dataset(config: GeneralDatasetConfig, *, progress: bool = True,
                             max_minutes: float | None = None) -> GeneralPushDataset:
    """Sample scenes until ``config.samples`` pushes are labelled; unstable (NaN) pushes are dropped.

    ``max_minutes``: stop starting new rounds of :data:`SCENES_PER_ROUND` scenes after this
    wall time; the data are then the first pushes of the full run (scenes are labelled and
    kept in index order), so ``--samples <the count reached>`` reproduces them.
    """
    started = time.perf_counter()
    ranges = config.sampling.ranges
    slots, obstacle_slots = ranges.max_objects, ranges.max_obstacles
    columns: dict[str, list] = {name: [] for name in _ARRAYS}
    scenes: list[dict[str, Any]] = []
    workers = config.workers or os.cpu_count() or 1
    simulated = 0.0
    dropped = 0
    deadline = math.inf if max_minutes is None else started + 60.0 * max_minutes
    stopped_early = False
    with tqdm(total=config.samples, unit="push", desc="fine labels", disable=not progress, mininterval=2.0) as bar, \
            ProcessPoolExecutor(max_workers=workers, initializer=_initialise, initargs=(config,)) as pool:
        next_index = 0
        pushes = 0
        while pushes < config.samples:
            if time.perf_counter() > deadline:
                stopped_early = True
                break
            remaining = -(-(config.samples - pushes) // config.pushes_per_scene)
            batch = range(next_index, next_index + min(max(remaining, 2 * workers), SCENES_PER_ROUND))
            next_index = batch.stop
            for description, records, seconds in pool.map(_label_scene, batch, chunksize=4):
                simulated += seconds
                scene = scene_from_dict(description)
                layout = scene.layout
                count = len(scene.objects)
                for record in records:
                    if pushes >= config.samples:
                        break
                    if not np.all(np.isfinite(record["next"])):
                        dropped += 1
                        continue
                    for prefix, state in (("", record["state"]), ("next_", record["next"])):
                        poses = np.zeros((slots, 3))
                        twists = np.zeros((slots, 3))
                        poses[:count] = layout.poses(state[None])[0]
                        twists[:count] = layout.twists(state[None])[0]
                        columns[f"{prefix}pusher_positions"].append(state[layout.pusher_position])
                        columns[f"{prefix}pusher_velocities"].append(state[layout.pusher_velocity])
                        columns[f"{prefix}object_poses"].append(poses)
                        columns[f"{prefix}object_twists"].append(twists)
                    columns["object_counts"].append(count)
                    columns["controls"].append(record["control"])
                    columns["durations"].append(record["duration"])
                    columns["scene_index"].append(len(scenes))
                    columns["planned_contact"].append(record["planned_contact"])
                    columns["continuation"].append(record["continuation"])
                    pushes += 1
                    bar.update(1)
                scenes.append(description)
    arrays = {name: np.asarray(values) for name, values in columns.items()}
    arrays["object_counts"] = arrays["object_counts"].astype(np.int64)
    arrays["scene_index"] = arrays["scene_index"].astype(np.int64)
    dataset = GeneralPushDataset(arrays, scenes, {})
    moved = dataset.moved()
    counts = arrays["object_counts"]
    metadata = {
        "format": GENERAL_DATASET_FORMAT,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "mujoco_version": mujoco.__version__,
        "fine_settings": asdict(config.fine_settings),
        "sampling": {key: (value.to_dict() if key == "ranges" else value)
                     for key, value in ((item, getattr(config.sampling, item))
                                        for item in config.sampling.__dataclass_fields__)},
        "seed": config.seed,
        "pushes_per_scene": config.pushes_per_scene,
        "samples_requested": config.samples,
        "samples": len(dataset),
        "scenes": len(scenes),
        "unstable_dropped": dropped,
        "stopped_at_max_minutes": stopped_early,
        "workers": workers,
        "max_obstacles": obstacle_slots,
        "simulation_seconds_summed": round(simulated, 1),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "object_count_bands": {band: int(np.sum((counts >= low) & (counts <= high)))
                               for band, (low, high) in (("1", (1, 1)), ("2-4", (2, 4)), ("5-8", (5, 8)),
                                                         ("9-16", (9, 16)))},
        "with_obstacles": int(sum(1 for row in arrays["scene_index"] if scenes[row].get("obstacles"))),
        "planned_contact_fraction": float(np.mean(arrays["planned_contact"])),
        "fine_contact_fraction": float(np.mean(np.any(moved, axis=1))),
        "continuation_fraction": float(np.mean(arrays["continuation"])),
    }
    return GeneralPushDataset(arrays, scenes, metadata)


def _parse(arguments: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m parapush.learning.general_dataset",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, required=True, help="number of pushes")
    parser.add_argument("--seed", type=int, required=True, help="seed of the sampling")
    parser.add_argument("--out", type=Path, required=True, help="output .npz")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: CPU count)")
    parser.add_argument("--pushes-per-scene", type=int, default=2, help="pushes per scene (default 2)")
    parser.add_argument("--max-minutes", type=float, default=None,
                        help="stop after this wall time with the pushes labelled so far (a prefix of the full run)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser.parse_args(arguments)


def main(arguments: Sequence[str] | None = None) -> int:
    options = _parse(arguments)
    config = GeneralDatasetConfig(samples=options.samples, seed=options.seed, workers=options.workers,
                                  pushes_per_scene=options.pushes_per_scene)
    dataset = generate_general_dataset(config, progress=not options.no_progress, max_minutes=options.max_minutes)
    path = dataset.save(options.out)
    meta = dataset.metadata
    print(f"wrote {path}: {meta['samples']} pushes in {meta['scenes']} scenes ({meta['unstable_dropped']} unstable "
          f"dropped), object counts {meta['object_count_bands']}, with obstacles {meta['with_obstacles']}, planned "
          f"contact {meta['planned_contact_fraction']:.3f}, fine contact {meta['fine_contact_fraction']:.3f}, "
          f"wall {meta['wall_seconds']:.1f} s on {meta['workers']} worker(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
