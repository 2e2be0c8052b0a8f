"""Training data for the learned coarse model: random pushes labelled by the fine model.

Each sample is one push: an initial state (pusher + 1..S cylinder sliders), a commanded
pusher velocity and a control duration (:mod:`parapush.learning.sampling`), and the state
the fine MuJoCo model reaches after holding that control. Samples are grouped by slider
count; each group is simulated with the fine model of a scene with exactly that many
sliders, in batches on a parallel fine backend.

How a model for S sliders serves scenes with fewer: the authors simulate unused sliders
parked far outside the workspace and feed their fixed positions to the network. Parked
sliders interact with nothing, so here a k-slider push is simulated in a k-slider scene
(cheaper, same physics) and the unused slots are parked only in the network's input
(:mod:`parapush.learning.encoding`), exactly as at prediction time.

File format (``.npz``): arrays padded to S sliders (padding is zeros; ``slider_counts``
says how many are present)::

    pusher_positions (M, 2) m            next_pusher_positions (M, 2)
    pusher_velocities (M, 2) m/s         next_pusher_velocities (M, 2)
    slider_poses (M, S, 3) m, m, rad     next_slider_poses (M, S, 3)
    slider_twists (M, S, 3) m/s, rad/s   next_slider_twists (M, S, 3)
    slider_counts (M,) int               controls (M, 2) m/s       durations (M,) s
    planned_contact (M,) bool            metadata: a JSON string (geometry, scene
                                         template, fine settings, sampling, seed, counts,
                                         contact ratios, timings)

Command line::

    python -m parapush.learning.dataset --objects 4 --samples 60000 --seed 1 --out data.npz
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from tqdm import tqdm

from parapush.learning.encoding import EncodingSpec, PusherFrameEncoder
from parapush.learning.geometry import ModelMismatchError, TrainedGeometry
from parapush.learning.sampling import PushSampler, PushSamples, PushSamplingConfig
from parapush.physics.backends import BACKEND_NAMES, make_backend
from parapush.physics.fine import FineModel
from parapush.physics.fine_settings import FineSettings
from parapush.scene import Scene, scene_from_dict
from parapush.settings import check_settings, setting
from parapush.validation import check_integer

DATASET_FORMAT = "parapush.learning.dataset/1"

MOVED_THRESHOLD = 1.0e-3
"""A slider moved (the fine model saw a contact) if its centre travelled more than this, m.
Larger than the ~0.5 mm a slider with the largest sampled initial speed slides freely."""

_ARRAYS = (
    "pusher_positions", "pusher_velocities", "slider_poses", "slider_twists", "slider_counts", "controls",
    "durations", "planned_contact", "next_pusher_positions", "next_pusher_velocities", "next_slider_poses",
    "next_slider_twists",
)


def default_geometry(max_sliders: int = 4) -> TrainedGeometry:
    """The papers' bodies as the shared scene contract defines them (pusher r = 1.45 cm,
    slider r = 5.12 cm, 0.5 kg, table friction 1.0, pusher/slider 0.2, slider/slider 0.2)."""
    template = scene_from_dict({"name": "defaults", "objects": [{"name": f"slider{i}"} for i in range(max_sliders)]})
    return TrainedGeometry.from_scene(template, max_sliders)


@dataclass(frozen=True)
class DatasetConfig:
    """What to generate and how.

    Attributes:
        samples: number of pushes, >= 1.
        seed: seed of the sampling RNG.
        geometry: the bodies; ``geometry.max_sliders`` is S.
        sampling: the push distribution (its slider_count_weights has S entries).
        fine_settings: the fine model's settings (labels come from this model).

    The backend fields are declared with :func:`setting` (meaning and range there).
    """

    # Not settings: samples and seed have no default (every run names its own; a setting has one), and
    # geometry is a TrainedGeometry object; they are checked below.
    samples: int
    seed: int
    geometry: TrainedGeometry = field(default_factory=default_geometry)
    sampling: PushSamplingConfig = field(default_factory=PushSamplingConfig)
    fine_settings: FineSettings = field(default_factory=FineSettings)
    backend: str = setting("threads", "fine backend name", choices=BACKEND_NAMES)
    workers: int | None = setting(None, "backend workers", kind=int, minimum=1, none="one per CPU core", ros_none=0)
    batch_size: int = setting(256, "pushes per backend call (and per progress-bar update)", minimum=1)

    def __post_init__(self) -> None:
        check_integer("samples", self.samples, minimum=1)
        check_integer("seed", self.seed, minimum=0)
        if self.sampling.max_sliders != self.geometry.max_sliders:
            raise ValueError(
                f"sampling.slider_count_weights: {self.sampling.max_sliders} weights but geometry.max_sliders is "
                f"{self.geometry.max_sliders}"
            )
        check_settings(self)


@dataclass(frozen=True)
class PushDataset:
    """Pushes and their fine-model outcomes (see the module docstring for the arrays).

    Attributes:
        pushes: the initial states and actions.
        next_pusher_positions: (M, 2) m.
        next_pusher_velocities: (M, 2) m/s.
        next_slider_poses: (M, S, 3).
        next_slider_twists: (M, S, 3).
        metadata: JSON-serialisable description (geometry, settings, seed, counts, timings).
    """

    pushes: PushSamples
    next_pusher_positions: np.ndarray
    next_pusher_velocities: np.ndarray
    next_slider_poses: np.ndarray
    next_slider_twists: np.ndarray
    metadata: dict[str, Any]

    def __len__(self) -> int:
        return len(self.pushes)

    @property
    def geometry(self) -> TrainedGeometry:
        return TrainedGeometry.from_dict(self.metadata["geometry"])

    def subset(self, rows: np.ndarray) -> PushDataset:
        """The samples ``rows`` (an index array or a boolean mask), same metadata."""
        rows = np.asarray(rows)
        pushes = PushSamples(**{name: getattr(self.pushes, name)[rows] for name in PushSamples.__dataclass_fields__})
        return PushDataset(
            pushes=pushes,
            next_pusher_positions=self.next_pusher_positions[rows],
            next_pusher_velocities=self.next_pusher_velocities[rows],
            next_slider_poses=self.next_slider_poses[rows],
            next_slider_twists=self.next_slider_twists[rows],
            metadata=dict(self.metadata),
        )

    def slider_moved(self) -> np.ndarray:
        """(M, S) bool: sliders whose centre moved more than :data:`MOVED_THRESHOLD`."""
        travel = np.linalg.norm(self.next_slider_poses[..., :2] - self.pushes.slider_poses[..., :2], axis=-1)
        return (travel > MOVED_THRESHOLD) & self.pushes.slider_active

    def scene_rows(self, slider_count: int) -> np.ndarray:
        """Indices of the samples with exactly ``slider_count`` sliders."""
        return np.flatnonzero(self.pushes.slider_counts == slider_count)

    def scene_problem(self, slider_count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The samples with ``slider_count`` sliders in the papers' state layout.

        Returns:
            (states (M, D), controls (M, 2), durations (M,), next_states (M, D)) with
            D = 4 + 6 * slider_count.
        """
        rows = self.scene_rows(slider_count)
        pushes = self.pushes
        states = _compose(pushes.pusher_positions[rows], pushes.slider_poses[rows, :slider_count],
                          pushes.pusher_velocities[rows], pushes.slider_twists[rows, :slider_count])
        next_states = _compose(self.next_pusher_positions[rows], self.next_slider_poses[rows, :slider_count],
                               self.next_pusher_velocities[rows], self.next_slider_twists[rows, :slider_count])
        return states, pushes.controls[rows], pushes.durations[rows], next_states

    def save(self, path: str | Path) -> Path:
        """Write the dataset to ``path`` (.npz, compressed); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {name: getattr(self.pushes, name) for name in PushSamples.__dataclass_fields__}
        arrays.update(
            next_pusher_positions=self.next_pusher_positions,
            next_pusher_velocities=self.next_pusher_velocities,
            next_slider_poses=self.next_slider_poses,
            next_slider_twists=self.next_slider_twists,
        )
        with path.open("wb") as handle:
            np.savez_compressed(handle, metadata=np.array(json.dumps(self.metadata, sort_keys=True)), **arrays)
        return path


def load_dataset(path: str | Path) -> PushDataset:
    """Read a dataset written by :meth:`PushDataset.save`; refuses other formats by name."""
    path = Path(path)
    with np.load(path, allow_pickle=False) as archive:
        if "metadata" not in archive:
            raise ModelMismatchError(f"{path}: not a parapush push dataset (no metadata)")
        metadata = json.loads(str(archive["metadata"]))
        if metadata.get("format") != DATASET_FORMAT:
            raise ModelMismatchError(f"{path}: format {metadata.get('format')!r}, expected {DATASET_FORMAT!r}")
        missing = [name for name in _ARRAYS if name not in archive]
        if missing:
            raise ModelMismatchError(f"{path}: missing array(s) {missing}")
        arrays = {name: archive[name] for name in _ARRAYS}
    pushes = PushSamples(**{name: arrays[name] for name in PushSamples.__dataclass_fields__})
    return PushDataset(
        pushes=pushes,
        next_pusher_positions=arrays["next_pusher_positions"],
        next_pusher_velocities=arrays["next_pusher_velocities"],
        next_slider_poses=arrays["next_slider_poses"],
        next_slider_twists=arrays["next_slider_twists"],
        metadata=metadata,
    )


def _compose(pusher_positions: np.ndarray, slider_poses: np.ndarray, pusher_velocities: np.ndarray,
             slider_twists: np.ndarray) -> np.ndarray:
    """Papers' states (M, 4 + 6 k) from padded parts with k sliders."""
    count = pusher_positions.shape[0]
    return np.concatenate(
        [pusher_positions, slider_poses.reshape(count, -1), pusher_velocities, slider_twists.reshape(count, -1)],
        axis=1,
    )


def training_scene(geometry: TrainedGeometry, slider_count: int) -> Scene:
    """The scene with ``slider_count`` sliders of ``geometry`` that labels the data."""
    return scene_from_dict(geometry.scene_dict(slider_count))


def generate_dataset(config: DatasetConfig, *, progress: bool = True) -> PushDataset:
    """Sample ``config.samples`` pushes and label them with the fine model.

    Unstable fine rows (NaN) are dropped and counted in the metadata.
    """
    started = time.perf_counter()
    rng = np.random.default_rng(config.seed)
    pushes = PushSampler(config.sampling, config.geometry).sample(config.samples, rng)
    sampling_seconds = time.perf_counter() - started
    slots = config.geometry.max_sliders
    count = len(pushes)
    next_pusher_positions = np.full((count, 2), np.nan)
    next_pusher_velocities = np.full((count, 2), np.nan)
    next_slider_poses = np.zeros((count, slots, 3))
    next_slider_twists = np.zeros((count, slots, 3))
    workers_used = 1
    simulation_started = time.perf_counter()
    with tqdm(total=count, unit="push", desc="fine labels", disable=not progress, mininterval=2.0) as bar:
        for sliders in range(1, slots + 1):
            rows = np.flatnonzero(pushes.slider_counts == sliders)
            if rows.size == 0:
                continue
            fine_model = FineModel(training_scene(config.geometry, sliders), config.fine_settings)
            states = _compose(pushes.pusher_positions[rows], pushes.slider_poses[rows, :sliders],
                              pushes.pusher_velocities[rows], pushes.slider_twists[rows, :sliders])
            with make_backend(config.backend, fine_model, workers=config.workers) as backend:
                workers_used = max(workers_used, int(backend.workers))
                for start in range(0, rows.size, config.batch_size):
                    chunk = slice(start, start + config.batch_size)
                    batch_rows = rows[chunk]
                    results = backend.propagate(states[chunk], pushes.controls[batch_rows],
                                                pushes.durations[batch_rows])
                    layout = fine_model.layout
                    next_pusher_positions[batch_rows] = results[:, layout.pusher_position]
                    next_pusher_velocities[batch_rows] = results[:, layout.pusher_velocity]
                    next_slider_poses[batch_rows, :sliders] = layout.poses(results)
                    next_slider_twists[batch_rows, :sliders] = layout.twists(results)
                    bar.update(batch_rows.size)
    simulation_seconds = time.perf_counter() - simulation_started

    stable = np.all(np.isfinite(next_pusher_positions), axis=1) & np.all(
        np.isfinite(next_slider_poses.reshape(count, -1)), axis=1
    )
    dataset = PushDataset(
        pushes=PushSamples(**{name: getattr(pushes, name)[stable] for name in PushSamples.__dataclass_fields__}),
        next_pusher_positions=next_pusher_positions[stable],
        next_pusher_velocities=next_pusher_velocities[stable],
        next_slider_poses=next_slider_poses[stable],
        next_slider_twists=next_slider_twists[stable],
        metadata={},
    )
    metadata = dict(
        format=DATASET_FORMAT,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        mujoco_version=mujoco.__version__,
        geometry=config.geometry.to_dict(),
        scene_template=config.geometry.scene_dict(slots),
        state_arrays="padded to max_sliders; see parapush.learning.dataset",
        fine_settings=asdict(config.fine_settings),
        sampling=asdict(config.sampling),
        seed=config.seed,
        samples_requested=config.samples,
        samples=int(stable.sum()),
        unstable_dropped=int(count - stable.sum()),
        backend=config.backend,
        workers=workers_used,
        sampling_seconds=round(sampling_seconds, 2),
        simulation_seconds=round(simulation_seconds, 2),
        **_statistics(dataset, config.geometry),
    )
    return replace(dataset, metadata=metadata)


def _statistics(dataset: PushDataset, geometry: TrainedGeometry) -> dict[str, Any]:
    """Counts and contact ratios for the metadata and the model card."""
    pushes = dataset.pushes
    moved = dataset.slider_moved()
    encoder = PusherFrameEncoder(EncodingSpec(geometry.max_sliders), geometry)
    encoded = encoder.encode(pushes.pusher_positions, pushes.slider_poses, pushes.slider_active, pushes.controls,
                             pushes.durations)
    reach_violations = moved & ~encoded.involved
    pusher_error = np.linalg.norm(
        dataset.next_pusher_positions - (pushes.pusher_positions + pushes.controls * pushes.durations[:, None]),
        axis=1,
    )
    slider_counts = {str(k): int(np.sum(pushes.slider_counts == k)) for k in range(1, geometry.max_sliders + 1)}
    return {
        "slider_counts": slider_counts,
        "planned_contact_fraction": float(np.mean(pushes.planned_contact)) if len(pushes) else math.nan,
        "fine_contact_fraction": float(np.mean(np.any(moved, axis=1))) if len(pushes) else math.nan,
        "planned_contact_without_motion": int(np.sum(pushes.planned_contact & ~np.any(moved, axis=1))),
        "motion_without_planned_contact": int(np.sum(~pushes.planned_contact & np.any(moved, axis=1))),
        "uninvolved_sliders_moved": int(reach_violations.sum()),
        "pusher_tracking_error_max_m": float(pusher_error.max()) if len(pushes) else math.nan,
        "pusher_tracking_error_mean_m": float(pusher_error.mean()) if len(pushes) else math.nan,
    }


def _parse(arguments: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m parapush.learning.dataset", description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=4, help="largest number of sliders S (default 4)")
    parser.add_argument("--samples", type=int, required=True, help="number of pushes")
    parser.add_argument("--seed", type=int, required=True, help="seed of the sampling RNG")
    parser.add_argument("--out", type=Path, required=True, help="output .npz")
    parser.add_argument("--contact-fraction", type=float, default=PushSamplingConfig.contact_fraction,
                        help="fraction of pushes whose path overlaps a slider (default %(default)s)")
    parser.add_argument("--backend", default="threads", choices=BACKEND_NAMES, help="fine backend (default threads)")
    parser.add_argument("--workers", type=int, default=None, help="backend workers (default: CPU count)")
    parser.add_argument("--batch-size", type=int, default=256, help="pushes per backend call")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser.parse_args(arguments)


def main(arguments: Sequence[str] | None = None) -> int:
    options = _parse(arguments)
    if options.objects < 1:
        raise SystemExit(f"--objects: expected an integer >= 1, got {options.objects}")
    sampling = replace(PushSamplingConfig(), slider_count_weights=(1.0,) * options.objects,
                       contact_fraction=options.contact_fraction)
    config = DatasetConfig(
        samples=options.samples, seed=options.seed, geometry=default_geometry(options.objects), sampling=sampling,
        backend=options.backend, workers=options.workers, batch_size=options.batch_size,
    )
    dataset = generate_dataset(config, progress=not options.no_progress)
    path = dataset.save(options.out)
    meta = dataset.metadata
    print(
        f"wrote {path}: {meta['samples']} pushes ({meta['unstable_dropped']} unstable dropped), "
        f"slider counts {meta['slider_counts']}, planned contact {meta['planned_contact_fraction']:.3f}, "
        f"fine contact {meta['fine_contact_fraction']:.3f}, simulation {meta['simulation_seconds']:.1f} s "
        f"on {meta['workers']} worker(s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
