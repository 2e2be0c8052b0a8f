"""The interaction network of the general learned model in torch (training), exported to numpy.

The same computation as :meth:`parapush.learning.graph_network_numpy.GraphNetworkWeights.forward`
(see that module for the equations), on standardised inputs and outputs; the
standardisation lives in the exported statistics. Needs torch (the ``learning`` extra).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from parapush.learning.graph_network_numpy import GraphNetworkWeights, module_names


def _mlp(inputs: int, hidden: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, outputs))


class InteractionNetwork(nn.Module):
    """Encoder, ``rounds`` rounds of edge/node updates, decoder (all MLPs Linear-ReLU-Linear).

    Args:
        node_size: F, node features. edge_size: E, edge features. output_size: O.
        hidden: width of every layer. rounds: message-passing rounds (>= 0).
    """

    def __init__(self, node_size: int, edge_size: int, output_size: int, hidden: int = 96, rounds: int = 3) -> None:
        super().__init__()
        if hidden < 1 or rounds < 0:
            raise ValueError(f"hidden, rounds: expected >= 1 and >= 0, got {hidden}, {rounds}")
        self.hidden = hidden
        self.rounds = rounds
        self.encoder = _mlp(node_size, hidden, hidden)
        self.edges = nn.ModuleList(_mlp(2 * hidden + edge_size, hidden, hidden) for _ in range(rounds))
        self.updates = nn.ModuleList(_mlp(2 * hidden, hidden, hidden) for _ in range(rounds))
        self.decoder = _mlp(hidden, hidden, output_size)

    def forward(self, nodes: torch.Tensor, edges: torch.Tensor, edge_mask: torch.Tensor) -> torch.Tensor:
        """Standardised nodes (G, N, F), edges (G, N, N, E), edge_mask (G, N, N) -> (G, N, O)."""
        hidden = self.encoder(nodes)
        weights = edge_mask.to(hidden.dtype).unsqueeze(-1)
        size = self.hidden
        for edge_mlp, update in zip(self.edges, self.updates, strict=True):
            first = edge_mlp[0]
            weight = first.weight  # (out, in)
            pre = ((hidden @ weight[:, :size].T).unsqueeze(2) + (hidden @ weight[:, size:2 * size].T).unsqueeze(1)
                   + edges @ weight[:, 2 * size:].T + first.bias)
            messages = edge_mlp[2](torch.relu(pre))
            aggregated = torch.sum(messages * weights, dim=1)
            hidden = hidden + update(torch.cat([hidden, aggregated], dim=-1))
        return self.decoder(hidden)

    def export(self, statistics: dict[str, np.ndarray], metadata: dict[str, Any]) -> GraphNetworkWeights:
        """The numpy network (float32 weights as (in, out) matrices) with the given
        standardisation and metadata (``metadata["network"]`` is filled in)."""
        modules = [self.encoder]
        for edge_mlp, update in zip(self.edges, self.updates, strict=True):
            modules += [edge_mlp, update]
        modules.append(self.decoder)
        parameters = {}
        for name, module in zip(module_names(self.rounds), modules, strict=True):
            for layer, index in ((0, 0), (1, 2)):
                linear = module[index]
                parameters[f"{name}.{layer}.weight"] = linear.weight.detach().cpu().numpy().T.astype(np.float32).copy()
                parameters[f"{name}.{layer}.bias"] = linear.bias.detach().cpu().numpy().astype(np.float32).copy()
        metadata = dict(metadata, network={"hidden": self.hidden, "rounds": self.rounds,
                                           "kind": "interaction network, residual node updates, sum aggregation"})
        return GraphNetworkWeights(parameters, {name: np.asarray(value, dtype=np.float64)
                                                for name, value in statistics.items()}, metadata)
