"""Helpers of the general learned coarse model's tests (no tests here): tiny random networks and scenes."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from parapush.learning.graph_encoding import EDGE_SIZE, OUTPUT_SIZE, GraphEncodingSpec
from parapush.learning.graph_network_numpy import GraphNetworkWeights, module_names
from parapush.learning.scene_ranges import SceneRanges
from parapush.physics.fine_settings import FineSettings
from parapush.scene import Scene, scene_from_dict


def random_weights(seed: int = 0, hidden: int = 8, rounds: int = 2, ranges: SceneRanges | None = None
                   ) -> GraphNetworkWeights:
    """A random interaction network with the default encoding and ``ranges`` (default: all)."""
    rng = np.random.default_rng(seed)
    spec = GraphEncodingSpec()
    sizes = {"encoder": (spec.node_size, hidden, hidden), "decoder": (hidden, hidden, OUTPUT_SIZE)}
    for index in range(rounds):
        sizes[f"edge{index}"] = (2 * hidden + EDGE_SIZE, hidden, hidden)
        sizes[f"node{index}"] = (2 * hidden, hidden, hidden)
    parameters = {}
    for name in module_names(rounds):
        inputs, middle, outputs = sizes[name]
        parameters[f"{name}.0.weight"] = rng.normal(0.0, 1.0 / np.sqrt(inputs), (inputs, middle)).astype(np.float32)
        parameters[f"{name}.0.bias"] = rng.normal(0.0, 0.1, middle).astype(np.float32)
        parameters[f"{name}.1.weight"] = rng.normal(0.0, 1.0 / np.sqrt(middle), (middle, outputs)).astype(np.float32)
        parameters[f"{name}.1.bias"] = rng.normal(0.0, 0.1, outputs).astype(np.float32)
    statistics = {
        "node_mean": rng.normal(0.0, 0.01, spec.node_size), "node_scale": rng.uniform(0.02, 0.2, spec.node_size),
        "edge_mean": rng.normal(0.0, 0.01, EDGE_SIZE), "edge_scale": rng.uniform(0.02, 0.2, EDGE_SIZE),
        "output_mean": np.zeros(OUTPUT_SIZE), "output_scale": np.array([0.01, 0.01, 0.05, 0.01, 0.01, 0.1]),
    }
    metadata = {"network": {"hidden": hidden, "rounds": rounds}, "encoding": spec.to_dict(),
                "trained_ranges": (ranges or SceneRanges()).to_dict(),
                "dataset": {"fine_settings": asdict(FineSettings())}}
    return GraphNetworkWeights(parameters, statistics, metadata)


def random_weights_file(directory: Path, **options: Any) -> Path:
    return random_weights(**options).save(directory / "random_general.npz")


def mixed_scene(**changes: Any) -> Scene:
    """Five touching-ish objects of every shape ahead of the pusher, and one obstacle."""
    data: dict[str, Any] = {
        "name": "mixed",
        "table": {"friction": 0.6},
        "pusher": {"radius": 0.0145, "friction": 0.25, "position": [-0.12, 0.0]},
        "objects": [
            {"name": "disc", "shape": "cylinder", "radius": 0.04, "mass": 0.5, "pose": [0.0, 0.0, 0.3]},
            {"name": "box", "shape": "box", "half_extents": [0.03, 0.05], "mass": 1.2, "pose": [0.085, 0.01, 0.2]},
            {"name": "ellipse", "shape": "ellipse", "half_extents": [0.05, 0.03], "mass": 0.4,
             "pose": [0.17, -0.02, -0.4]},
            {"name": "hexagon", "shape": "polygon", "mass": 0.8, "pose": [0.06, 0.1, 0.1],
             "vertices": [[0.04, 0.0], [0.02, 0.035], [-0.02, 0.035], [-0.04, 0.0], [-0.02, -0.035],
                          [0.03, -0.03]]},
            {"name": "far", "shape": "cylinder", "radius": 0.03, "pose": [-0.2, 0.3, 0.0]},
        ],
        "obstacles": [{"name": "post", "shape": "box", "half_extents": [0.03, 0.03], "pose": [0.26, 0.0, 0.5]}],
        "object_friction": 0.3,
    }
    data.update(changes)
    return scene_from_dict(data)
