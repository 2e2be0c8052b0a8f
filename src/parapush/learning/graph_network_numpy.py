"""The general learned model's interaction network: weights in a ``.npz`` file and a numpy forward pass.

Network (Battaglia et al.'s interaction network with residual node updates; every MLP is
Linear -> ReLU -> Linear):

    h_i   = encoder(x_i)                                   node features x_i (standardised)
    for r in 1..R:                                         R rounds: chains of R + 1 bodies
        m_ij = edge_r([h_i, h_j, e_ij])   for edges i -> j (e_ij standardised edge features)
        h_j  = h_j + node_r([h_j, sum_i m_ij])
    y_j   = decoder(h_j) * output_scale + output_mean

The first layer of ``edge_r`` is evaluated split by its three inputs
(h_i W_s + h_j W_r + e_ij W_e + b), which is the same affine map at a fraction of the cost,
and only for the nodes and edges that exist (the masks'), not for the padding or all N x N pairs of a
padded graph.
Sum aggregation and the shared per-body and per-edge maps make the outputs equivariant to
the order of the bodies and let one network serve any number of them.

File format (``np.savez``; float32)::

    <module>.<layer>.weight (in, out), <module>.<layer>.bias (out,)   module: encoder,
        edge<r>, node<r>, decoder; layer: 0, 1
    node_mean (F,), node_scale (F,), edge_mean (E,), edge_scale (E,),
    output_mean (O,), output_scale (O,)
    metadata: JSON ("format", "network" {hidden, rounds}, "encoding", "trained_ranges",
              "dataset", "training", "validation")

Inference is float32 after the float64 standardisation, as the torch model was trained.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parapush.learning.geometry import ModelMismatchError

GRAPH_NETWORK_FORMAT = "parapush.learning.graph_network/1"

_STATISTICS = ("node_mean", "node_scale", "edge_mean", "edge_scale", "output_mean", "output_scale")


def module_names(rounds: int) -> list[str]:
    """The network's MLPs in order: encoder, edge0, node0, ..., decoder."""
    names = ["encoder"]
    for index in range(rounds):
        names += [f"edge{index}", f"node{index}"]
    return names + ["decoder"]


@dataclass(frozen=True)
class GraphNetworkWeights:
    """An exported interaction network.

    Attributes:
        parameters: "<module>.<layer>.weight" (in, out) and ".bias" (out,) float32 arrays.
        statistics: the standardisation vectors (see the module docstring).
        metadata: JSON-serialisable; ``metadata["network"]`` has "hidden" and "rounds".
    """

    parameters: dict[str, np.ndarray]
    statistics: dict[str, np.ndarray]
    metadata: dict[str, Any]

    def __post_init__(self) -> None:
        network = self.metadata.get("network")
        if not isinstance(network, Mapping) or "rounds" not in network or "hidden" not in network:
            raise ModelMismatchError("metadata.network: expected a mapping with 'hidden' and 'rounds'")
        for name in module_names(self.rounds):
            for layer in (0, 1):
                for kind in ("weight", "bias"):
                    if f"{name}.{layer}.{kind}" not in self.parameters:
                        raise ModelMismatchError(f"parameters: missing {name}.{layer}.{kind}")
        missing = [name for name in _STATISTICS if name not in self.statistics]
        if missing:
            raise ModelMismatchError(f"statistics: missing {missing}")
        hidden = self.hidden
        if self.parameters["encoder.0.weight"].shape[0] != self.node_size:
            raise ModelMismatchError(f"encoder.0.weight: {self.parameters['encoder.0.weight'].shape[0]} inputs, "
                                     f"node_mean has {self.node_size}")
        if self.rounds and self.parameters["edge0.0.weight"].shape[0] != 2 * hidden + self.edge_size:
            raise ModelMismatchError("edge0.0.weight: expected 2 hidden + edge features inputs")

    @property
    def rounds(self) -> int:
        return int(self.metadata["network"]["rounds"])

    @property
    def hidden(self) -> int:
        return int(self.metadata["network"]["hidden"])

    @property
    def node_size(self) -> int:
        return int(self.statistics["node_mean"].shape[0])

    @property
    def edge_size(self) -> int:
        return int(self.statistics["edge_mean"].shape[0])

    @property
    def output_size(self) -> int:
        return int(self.statistics["output_mean"].shape[0])

    def parameter_count(self) -> int:
        return int(sum(value.size for value in self.parameters.values()))

    def _mlp(self, name: str, inputs: np.ndarray) -> np.ndarray:
        hidden = inputs @ self.parameters[f"{name}.0.weight"] + self.parameters[f"{name}.0.bias"]
        np.maximum(hidden, 0.0, out=hidden)
        return hidden @ self.parameters[f"{name}.1.weight"] + self.parameters[f"{name}.1.bias"]

    def forward(self, nodes: np.ndarray, node_mask: np.ndarray, edges: np.ndarray, edge_mask: np.ndarray
                ) -> np.ndarray:
        """Per-node outputs (G, N, O) in SI units, float64, of graphs with nodes (G, N, F),
        node_mask (G, N), edges (G, N, N, E) and edge_mask (G, N, N) ([g, i, j]: i -> j)."""
        nodes = np.asarray(nodes, dtype=np.float64)
        if nodes.ndim != 3 or nodes.shape[2] != self.node_size:
            raise ValueError(f"nodes: expected shape (G, N, {self.node_size}), got {nodes.shape}")
        count, width = nodes.shape[:2]
        if edges.shape != (count, width, width, self.edge_size):
            raise ValueError(f"edges: expected shape {(count, width, width, self.edge_size)}, got {edges.shape}")
        # only the nodes and edges that exist: in a crowded scene's graphs about 1 in 8 of the N x N pairs are
        # edges and a third of the padded nodes are padding. Edges in receiver-major order ([g, j, i]), so that
        # each receiver's messages are contiguous (one row of the sparse sum below)
        edge_mask = np.asarray(edge_mask, dtype=bool)
        graph, receiver, sender = np.nonzero(edge_mask.transpose(0, 2, 1))  # (K,) each
        used = np.asarray(node_mask, dtype=bool).reshape(-1).copy()  # nodes evaluated: masked or an edge's end
        used[graph * width + sender] = True
        used[graph * width + receiver] = True
        kept = np.flatnonzero(used)  # (R,) rows of the flattened (G N) nodes
        compact = np.cumsum(used) - 1
        sending, receiving = compact[graph * width + sender], compact[graph * width + receiver]
        # scipy here, not at module level: importing it costs every node 0.2 s at start, not only those that predict
        from scipy.sparse import csr_matrix

        # the sum over each receiver's messages as one sparse product: (R, K), a 1 at [receiving[k], k] (a quarter of
        # reduceat's time on a box-clutter batch, a tenth on a 16-object one)
        incoming = csr_matrix((np.ones(receiving.size, dtype=np.float32), np.arange(receiving.size),
                               np.searchsorted(receiving, np.arange(kept.size + 1))), shape=(kept.size, receiving.size))
        node_input = ((nodes.reshape(count * width, -1)[kept] - self.statistics["node_mean"])
                      / self.statistics["node_scale"]).astype(np.float32)  # (R, F)
        edge_input = ((edges[graph, sender, receiver] - self.statistics["edge_mean"])
                      / self.statistics["edge_scale"]).astype(np.float32)  # (K, E)
        hidden = self._mlp("encoder", node_input)
        size = self.hidden
        for index in range(self.rounds):
            weight = self.parameters[f"edge{index}.0.weight"]
            pre = edge_input @ weight[2 * size:]  # (K, H), summed in place
            pre += (hidden @ weight[:size])[sending]
            pre += (hidden @ weight[size:2 * size])[receiving]
            pre += self.parameters[f"edge{index}.0.bias"]
            np.maximum(pre, 0.0, out=pre)
            messages = pre @ self.parameters[f"edge{index}.1.weight"]
            messages += self.parameters[f"edge{index}.1.bias"]
            aggregated = np.asarray(incoming @ messages)  # (R, H): the sum over the senders i of each receiver j
            hidden = hidden + self._mlp(f"node{index}", np.concatenate([hidden, aggregated], axis=-1))
        outputs = np.zeros((count * width, self.output_size))
        outputs[kept] = self._mlp("decoder", hidden) * self.statistics["output_scale"] + self.statistics["output_mean"]
        return np.where(node_mask[..., None], outputs.reshape(count, width, -1), 0.0)

    def save(self, path: str | Path) -> Path:
        """Write float32 arrays and the metadata to ``path`` (.npz, uncompressed)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {name: value.astype(np.float32) for name, value in self.parameters.items()}
        arrays.update({name: value.astype(np.float32) for name, value in self.statistics.items()})
        metadata = dict(self.metadata, format=GRAPH_NETWORK_FORMAT)
        with path.open("wb") as handle:
            np.savez(handle, metadata=np.array(json.dumps(metadata, sort_keys=True)), **arrays)
        return path


def load_graph_network(path: str | Path) -> GraphNetworkWeights:
    """Read an exported interaction network; refuses other formats (ModelMismatchError naming the file)."""
    path = Path(path)
    with np.load(path, allow_pickle=False) as archive:
        if "metadata" not in archive:
            raise ModelMismatchError(f"{path}: not an exported parapush network (no metadata)")
        metadata = json.loads(str(archive["metadata"]))
        if metadata.get("format") != GRAPH_NETWORK_FORMAT:
            raise ModelMismatchError(f"{path}: format {metadata.get('format')!r}, expected {GRAPH_NETWORK_FORMAT!r}")
        parameters = {name: archive[name].astype(np.float32) for name in archive.files
                      if name.endswith(".weight") or name.endswith(".bias")}
        statistics = {name: archive[name].astype(np.float64) for name in _STATISTICS if name in archive.files}
    try:
        return GraphNetworkWeights(parameters, statistics, metadata)
    except ModelMismatchError as error:
        raise ModelMismatchError(f"{path}: {error}") from None
