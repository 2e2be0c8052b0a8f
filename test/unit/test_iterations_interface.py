"""The ROS interfaces' ``iterations`` field <-> Parareal K (issue 32: one conversion of the -1 sentinel)."""

from __future__ import annotations

import numpy as np
import pytest

from parapush.prediction import ModelConfig
from parapush.prediction.config import ITERATIONS_UNSET
from parapush.prediction.request import RequestError, iterations_from_interface, iterations_to_interface
from parapush.settings import setting_fields


@pytest.mark.parametrize(("wire", "k"), [(-1, None), (0, 0), (1, 1), (64, 64), (np.int32(-1), None), (np.int32(3), 3)])
def test_the_interface_value_is_k_or_unset_and_converts_back(wire, k) -> None:
    assert iterations_from_interface(wire) == k
    assert type(iterations_from_interface(wire)) in (int, type(None))
    assert iterations_to_interface(k) == int(wire)


@pytest.mark.parametrize("wire", [-2, -100, 1.0, "1", True, None])
def test_anything_else_is_refused_naming_iterations(wire) -> None:
    with pytest.raises(ValueError, match=r"^iterations: ") as caught:
        iterations_from_interface(wire)
    assert isinstance(caught.value, RequestError)


@pytest.mark.parametrize("k", [-1, -2, 1.5, True])
def test_only_a_k_or_none_goes_onto_the_wire(k) -> None:
    with pytest.raises(ValueError, match=r"^iterations: "):
        iterations_to_interface(k)


def test_the_sentinel_is_the_configured_iterations_stand_in() -> None:
    (iterations,) = [item for item in setting_fields(ModelConfig) if item.path == "iterations"]
    assert iterations.info.ros_none == ITERATIONS_UNSET == -1
