"""Shared set-up of the Parareal benchmarks: the papers' scenes, model construction, output;
and every benchmark's ``--quick`` option (:func:`bench_arguments`).

Not a benchmark itself; imported by ``bench/parareal_*.py`` and the other benches.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from parapush.scene import Scene, scene_from_dict
from reference import available_cores, machine

RESULTS = Path(__file__).resolve().parent / "results"
PUSHER_RADIUS = 0.0145
"""m, the papers' pusher (journal: 1.45 cm)."""
BOX_HALF_EXTENTS = (0.0545, 0.077)
"""m, the box slider of the authors' code (half sizes along x, y)."""
CYLINDER_RADIUS = 0.0512
"""m, the cylinder slider of the journal (5.12 cm)."""
CONTACT_GAP = 0.001
"""m, free distance between pusher and slider at the start of every push."""


def paper_scene(shape: str) -> Scene:
    """Table 0.8 m x 1.0 m, pusher r = 1.45 cm, one slider (box or cylinder) at the origin."""
    if shape not in ("box", "cylinder"):
        raise ValueError(f"shape: expected 'box' or 'cylinder', got {shape!r}")
    return scene_from_dict(
        {
            "name": f"paper_{shape}",
            "pusher": {"radius": PUSHER_RADIUS, "position": [-0.2, 0.0]},
            "objects": [
                {
                    "name": "slider",
                    "shape": shape,
                    "radius": CYLINDER_RADIUS,
                    "half_extents": list(BOX_HALF_EXTENTS),
                    "pose": [0.0, 0.0, 0.0],
                }
            ],
        }
    )


def slider_half_width(scene: Scene) -> float:
    """Half the slider's extent perpendicular to a push along +x, m."""
    spec = scene.objects[0]
    return spec.radius if spec.shape == "cylinder" else spec.half_extents[1]


def push_start_states(scene: Scene, offsets: np.ndarray) -> np.ndarray:
    """States (S, D): slider at the origin at rest, pusher behind it (-x side) at ``offsets``
    (S,) m perpendicular to the push, ``CONTACT_GAP`` from touching it."""
    spec = scene.objects[0]
    offsets = np.asarray(offsets, dtype=float)
    if spec.shape == "box":
        behind = spec.half_extents[0] + scene.pusher.radius + CONTACT_GAP
        x = np.full(offsets.shape, -behind)
    else:
        reach = spec.radius + scene.pusher.radius + CONTACT_GAP
        x = -np.sqrt(np.maximum(reach**2 - offsets**2, 0.0))
    pusher = np.stack([x, offsets], axis=-1)
    poses = np.zeros((len(offsets), 1, 3))
    return scene.layout.compose(pusher, poses)


def constant_pushes(angles_deg: Sequence[float], speed: float, slices: int) -> np.ndarray:
    """Controls (len(angles), N, 2) m/s: speed * [cos a, sin a] held for every slice."""
    angles = np.deg2rad(np.asarray(angles_deg, dtype=float))
    direction = np.stack([np.cos(angles), np.sin(angles)], axis=-1) * speed
    return np.repeat(direction[:, None, :], slices, axis=1)


def load_coarse(name: str, scene: Scene, *, learned_weights: str | None = None, fine_settings: Any = None,
                resolve_overlaps: bool = False) -> Any:
    """The coarse model named ``name`` (``analytical``: the ISRR paper's rotation, or ``learned``)
    from the project's one factory (:func:`parapush.prediction.coarse_models.build_coarse_model`);
    exits with a clear message when it is unavailable. ``fine_settings``: the ``FineSettings`` of
    the fine model it is paired with (None: defaults), checked by the learned model against its
    training. ``resolve_overlaps`` (default off): the solver projects every corrected state, so,
    as in the prediction engine, the coarse model need not resolve overlaps a second time."""
    from parapush.physics.fine_settings import FineSettings
    from parapush.prediction import ModelConfig
    from parapush.prediction.coarse_models import BUILT_MODELS, build_coarse_model

    if name not in BUILT_MODELS:
        sys.exit(f"--coarse: expected one of {BUILT_MODELS}, got {name!r}")
    config = ModelConfig(coarse_model=name, learned_weights=learned_weights, general_weights=learned_weights,
                         analytical_rotation="isrr", fine=FineSettings() if fine_settings is None else fine_settings)
    try:
        return build_coarse_model(scene, config, resolve_overlaps=resolve_overlaps, ignore_obstacles=False).model
    except (ValueError, OSError) as error:
        sys.exit(f"--coarse {name}: cannot load the {name} coarse model ({error})")


def load_projector(scene: Scene, enabled: bool) -> Any:
    """The feasibility projection (ISRR Eq 9), or None when disabled."""
    if not enabled:
        return None
    from parapush.physics.projection import FeasibilityProjector

    try:
        return FeasibilityProjector(scene)
    except NotImplementedError:
        sys.exit("projection: parapush.physics.projection is not implemented yet (use --no-projection)")


def make_fine_backend(name: str, fine_model: Any, workers: int, fidelity: str = "full") -> Any:
    """A fine backend by name, with task-informed fidelity management when ``fidelity`` is
    ``"task_informed"``; exits with a clear message when it is unavailable."""
    from parapush.physics.backends import make_backend
    from parapush.physics.fidelity import ManagedFineBackend

    try:
        backend = make_backend(name, fine_model, workers=workers)
    except NotImplementedError:
        sys.exit(f"--backend {name}: this fine backend is not implemented yet (try --backend serial)")
    return ManagedFineBackend(backend, fine_model) if fidelity == "task_informed" else backend


@contextmanager
def solver_from_arguments(args: argparse.Namespace, scene: Scene) -> Iterator[Any]:
    """The :class:`PararealSolver` for ``scene`` that :func:`common_arguments` describe: the fine
    model (default settings) on ``--backend`` x ``--workers`` with ``--fidelity``, ``--coarse``
    and the projection unless ``--no-projection``. The fine backend is closed on exit."""
    from parapush.parareal import PararealSolver
    from parapush.physics.fine import FineModel

    fine_model = FineModel(scene)
    coarse = load_coarse(args.coarse, scene, learned_weights=args.learned_weights, fine_settings=fine_model.settings)
    projector = load_projector(scene, not args.no_projection)
    with make_fine_backend(args.backend, fine_model, args.workers, args.fidelity) as backend:
        yield PararealSolver(coarse=coarse, fine=backend, projector=projector)


def bench_arguments(description: str, *, quick: str, seed: str | None = None) -> argparse.ArgumentParser:
    """A benchmark's argument parser with ``--quick`` (``quick``: what the shorter run does) and,
    where ``seed`` (its help) is given, ``--seed`` (an int, default 0); the bench adds its own
    options after them (and ``reference.add_reference_argument`` last)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=quick)
    if seed is not None:
        parser.add_argument("--seed", type=int, default=0, help=seed)
    return parser


def common_arguments(description: str) -> argparse.ArgumentParser:
    parser = bench_arguments(description, quick="small sizes for a smoke run")
    parser.add_argument(
        "--backend",
        default="threads",
        choices=("serial", "threads", "processes"),
        help="fine backend (default: threads)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=available_cores(),
        help="fine backend workers (default: the cores present)",
    )
    parser.add_argument(
        "--coarse",
        default="analytical",
        choices=("analytical", "learned", "general"),
        help="coarse model (default: analytical; general: the general learned model)",
    )
    parser.add_argument("--learned-weights", default=None, help="weights of the learned (or general) coarse model")
    parser.add_argument("--fidelity", default="full", choices=("full", "task_informed"),
                        help="fine-model fidelity management (default: full)")
    parser.add_argument("--no-projection", action="store_true", help="disable the feasibility projection")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    return parser


def environment() -> dict[str, Any]:
    """Machine facts stored with every result (:func:`reference.machine` and the library versions)."""
    import mujoco

    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        **machine(),
        "cores": available_cores(),
        "numpy": np.__version__,
        "mujoco": mujoco.__version__,
        "command": " ".join(sys.argv),
    }


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain text table; floats get 4 significant digits unless already strings."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    text = [[cell(value) for value in row] for row in rows]
    widths = [max(len(h), *(len(row[i]) for row in text)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in text]
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.floating, float)):
        number = float(value)
        return number if np.isfinite(number) else str(number)
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_results(name: str, payload: dict[str, Any], figure: Any) -> tuple[Path, Path]:
    """Write ``bench/results/<name>.json`` and ``.png``; returns their paths."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    json_path = RESULTS / f"{name}.json"
    png_path = RESULTS / f"{name}.png"
    payload = {"environment": environment(), **payload}
    json_path.write_text(json.dumps(_jsonable(payload), indent=2) + "\n")
    figure.savefig(png_path, dpi=120, bbox_inches="tight")
    return json_path, png_path


def wilson_interval(successes: int, runs: int, z: float = 1.959964) -> tuple[float, float]:
    """95 % Wilson score interval of a success rate (NaN, NaN without runs); exactly 0 or 1 at
    the ends when no run or every run succeeded."""
    if runs < 0 or not 0 <= successes <= runs:
        raise ValueError(f"successes, runs: expected 0 <= successes <= runs, got {successes}, {runs}")
    if runs == 0:
        return math.nan, math.nan
    rate = successes / runs
    denominator = 1 + z * z / runs
    centre = (rate + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / runs + z * z / (4 * runs * runs)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == runs else min(1.0, centre + half)
    return low, high
