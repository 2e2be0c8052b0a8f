"""Training loss of the learned coarse model (journal Eq 5, torch).

    loss = MSE(standardised outputs) + W_F * (slider/slider + pusher/slider penetration)

The MSE is taken over standardised outputs, i.e. every output column is weighted by the
inverse of its variance (the authors weight columns by max_rms / rms_c for the same
reason: displacements, yaw changes and velocities have very different scales). The
penetration terms are squared overlaps in metres of the *predicted* final positions, so
W_F has units of 1 / m^2.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def penetration_penalties(
    pusher_positions: torch.Tensor,
    slider_positions: torch.Tensor,
    slider_active: torch.Tensor,
    pusher_radius: float,
    slider_radius: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Squared penetration depths of Eq 5, summed per sample.

    Args:
        pusher_positions: (B, 2) pusher centres, m.
        slider_positions: (B, S, 2) slider centres, m.
        slider_active: (B, S) bool; inactive (parked) sliders are ignored.
        pusher_radius: m.
        slider_radius: m (all sliders alike).
    Returns:
        (pusher_slider (B,), slider_slider (B,)): sum over pairs of
        min(|p_a - p_b| - (r_a + r_b), 0)^2, m^2. Zero for separated or touching bodies.
    """
    active = slider_active.to(slider_positions.dtype)
    pusher_gap = torch.linalg.vector_norm(slider_positions - pusher_positions[:, None, :], dim=-1) - (
        pusher_radius + slider_radius
    )
    pusher_slider = (torch.clamp(pusher_gap, max=0.0) ** 2 * active).sum(dim=1)
    difference = slider_positions[:, :, None, :] - slider_positions[:, None, :, :]
    # the norm's gradient at zero separation is NaN; sliders on top of each other are pushed apart by the MSE
    separation = torch.sqrt((difference**2).sum(dim=-1) + 1e-12)
    slider_gap = torch.clamp(separation - 2.0 * slider_radius, max=0.0) ** 2
    count = slider_positions.shape[1]
    upper = torch.triu(torch.ones(count, count, dtype=torch.bool, device=slider_positions.device), diagonal=1)
    pair_active = active[:, :, None] * active[:, None, :] * upper.to(active.dtype)
    slider_slider = (slider_gap * pair_active).sum(dim=(1, 2))
    return pusher_slider, slider_slider


@dataclass(frozen=True)
class LossTerms:
    """Mean loss terms of a batch (scalars; ``total`` carries the gradient).

    Attributes:
        total: MSE + W_F (pusher_slider + slider_slider).
        mse: mean squared error of the standardised outputs.
        pusher_slider: mean squared pusher/slider penetration, m^2.
        slider_slider: mean squared slider/slider penetration, m^2.
    """

    total: torch.Tensor
    mse: torch.Tensor
    pusher_slider: torch.Tensor
    slider_slider: torch.Tensor


def coarse_model_loss(
    predicted_normalised: torch.Tensor,
    target_normalised: torch.Tensor,
    predicted_positions: torch.Tensor,
    pusher_positions: torch.Tensor,
    slider_active: torch.Tensor,
    pusher_radius: float,
    slider_radius: float,
    penetration_weight: float,
) -> LossTerms:
    """Journal Eq 5 on a batch.

    Args:
        predicted_normalised: (B, O) standardised network outputs.
        target_normalised: (B, O) standardised fine-model targets.
        predicted_positions: (B, S, 2) predicted final slider centres (network frame), m.
        pusher_positions: (B, 2) final pusher centres (network frame), m.
        slider_active: (B, S) bool.
        pusher_radius: m.
        slider_radius: m.
        penetration_weight: W_F, 1/m^2, >= 0.
    """
    mse = torch.mean((predicted_normalised - target_normalised) ** 2)
    pusher_slider, slider_slider = penetration_penalties(
        pusher_positions, predicted_positions, slider_active, pusher_radius, slider_radius
    )
    pusher_slider, slider_slider = pusher_slider.mean(), slider_slider.mean()
    total = mse + penetration_weight * (pusher_slider + slider_slider)
    return LossTerms(total=total, mse=mse, pusher_slider=pusher_slider, slider_slider=slider_slider)
