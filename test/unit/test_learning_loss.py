"""Penetration terms of the learned model's loss (journal Eq 5) on hand-built configurations.

Pusher radius 0.01 m, slider radius 0.05 m: the pusher touches a slider at a centre
distance of 0.06 m, two sliders touch at 0.10 m.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from parapush.learning.loss import coarse_model_loss, penetration_penalties  # noqa: E402

PUSHER_RADIUS = 0.01
SLIDER_RADIUS = 0.05


def penalties(pusher, sliders, active=None):
    sliders_tensor = torch.tensor([sliders], dtype=torch.float64)
    active_tensor = torch.ones(sliders_tensor.shape[:2], dtype=torch.bool) if active is None else torch.tensor([active])
    pusher_slider, slider_slider = penetration_penalties(
        torch.tensor([pusher], dtype=torch.float64), sliders_tensor, active_tensor, PUSHER_RADIUS, SLIDER_RADIUS
    )
    return float(pusher_slider[0]), float(slider_slider[0])


def test_separated_bodies_cost_nothing():
    assert penalties([0.0, 0.0], [[0.2, 0.0], [0.0, 0.3]]) == (0.0, 0.0)


def test_touching_bodies_cost_nothing():
    pusher_slider, slider_slider = penalties([0.0, 0.0], [[0.06, 0.0], [0.16, 0.0]])
    assert pusher_slider == pytest.approx(0.0, abs=1e-20)
    assert slider_slider == pytest.approx(0.0, abs=1e-20)


def test_pusher_overlap_is_the_squared_depth():
    # centre distance 0.05 < 0.06: 1 cm deep
    pusher_slider, slider_slider = penalties([0.0, 0.0], [[0.03, 0.04], [0.5, 0.5]])
    assert pusher_slider == pytest.approx(0.01**2)
    assert slider_slider == 0.0


def test_slider_overlaps_sum_over_pairs():
    # three sliders on a line 0.08 m apart: pairs (0,1) and (1,2) overlap by 2 cm, (0,2) is clear
    pusher_slider, slider_slider = penalties([-1.0, 0.0], [[0.0, 0.0], [0.08, 0.0], [0.16, 0.0]])
    assert pusher_slider == 0.0
    assert slider_slider == pytest.approx(2 * 0.02**2)


def test_inactive_sliders_are_ignored():
    pusher_slider, slider_slider = penalties([0.0, 0.0], [[0.03, 0.0], [0.05, 0.0]], active=[True, False])
    assert pusher_slider == pytest.approx(0.03**2)
    assert slider_slider == 0.0


def test_penalty_gradient_pushes_bodies_apart_and_is_finite_for_coincident_sliders():
    sliders = torch.tensor([[[0.03, 0.0], [0.03, 0.0]]], dtype=torch.float64, requires_grad=True)
    pusher_slider, slider_slider = penetration_penalties(
        torch.zeros(1, 2, dtype=torch.float64), sliders, torch.ones(1, 2, dtype=torch.bool),
        PUSHER_RADIUS, SLIDER_RADIUS,
    )
    (pusher_slider + slider_slider).sum().backward()
    assert torch.all(torch.isfinite(sliders.grad))
    assert float(sliders.grad[0, 0, 0]) < 0.0  # descending moves the slider away from the pusher (+x)


def test_loss_adds_weighted_penetration_to_the_mse():
    predicted = torch.tensor([[1.0, 2.0]])
    target = torch.tensor([[0.0, 0.0]])
    positions = torch.tensor([[[0.03, 0.04]]])  # 1 cm into the pusher
    terms = coarse_model_loss(predicted, target, positions, torch.zeros(1, 2), torch.ones(1, 1, dtype=torch.bool),
                              PUSHER_RADIUS, SLIDER_RADIUS, penetration_weight=1000.0)
    assert float(terms.mse) == pytest.approx(2.5)
    assert float(terms.pusher_slider) == pytest.approx(1e-4)
    assert float(terms.total) == pytest.approx(2.5 + 1000.0 * 1e-4)
