"""FailoverPrediction: the primary while it answers; a backup, a wait or an error once it is lost."""

from __future__ import annotations

import numpy as np
import pytest

from parapush.prediction.failover import FailoverPrediction


class LostError(RuntimeError):
    pass


class Predictor:
    """Answers with a constant, or raises ``LostError`` while ``lost`` is true."""

    layout = None

    def __init__(self, value: float, lost: bool = False) -> None:
        self.value = value
        self.lost = lost
        self.calls = 0

    def predict(self, initial_state, controls, durations):
        self.calls += 1
        if self.lost:
            raise LostError("no answer within 1.0 s")
        return np.full((len(controls), controls.shape[1] + 1, 2), self.value)


ARGUMENTS = (np.zeros(2), np.zeros((3, 4, 2)), np.ones(4))


def test_the_primary_answers_while_it_can_then_a_backup_built_once() -> None:
    primary, built = Predictor(1.0), []
    events = []

    def make_backup():
        built.append(Predictor(2.0))
        return built[-1]

    model = FailoverPrediction(primary, lost_errors=(LostError,), make_backup=make_backup, on_event=events.append)
    assert np.all(model.predict(*ARGUMENTS) == 1.0) and not model.using_backup
    primary.lost = True
    assert np.all(model.predict(*ARGUMENTS) == 2.0) and model.using_backup
    assert np.all(model.predict(*ARGUMENTS) == 2.0)
    assert len(built) == 1 and primary.calls == 2  # the lost primary is not asked again
    assert len(events) == 1 and "no answer within 1.0 s" in events[0] and "local engine" in events[0]


def test_abort_raises_and_other_errors_propagate_whatever_the_policy() -> None:
    model = FailoverPrediction(Predictor(1.0, lost=True), lost_errors=(LostError,), policy="abort")
    with pytest.raises(LostError, match="no answer"):
        model.predict(*ARGUMENTS)
    model = FailoverPrediction(Predictor(1.0, lost=True), lost_errors=(KeyError,), make_backup=lambda: Predictor(2.0))
    with pytest.raises(LostError):
        model.predict(*ARGUMENTS)


def test_wait_asks_again_once_the_primary_is_back_and_gives_up_after_the_limit() -> None:
    primary, events = Predictor(1.0, lost=True), []

    def back_after_two_polls(timeout: float) -> bool:
        back_after_two_polls.polls += 1
        primary.lost = back_after_two_polls.polls < 2
        return not primary.lost

    back_after_two_polls.polls = 0
    model = FailoverPrediction(primary, lost_errors=(LostError,), policy="wait", wait_for_primary=back_after_two_polls,
                               wait_limit=30.0, on_event=events.append)
    assert np.all(model.predict(*ARGUMENTS) == 1.0)
    assert "waiting for it" in events[0] and "answering again" in events[1]
    never = FailoverPrediction(Predictor(1.0, lost=True), lost_errors=(LostError,), policy="wait",
                               wait_for_primary=lambda timeout: False, wait_limit=0.0)
    with pytest.raises(LostError, match="no answer from the prediction service for 0 s"):
        never.predict(*ARGUMENTS)


@pytest.mark.parametrize(("options", "message"), [
    ({"policy": "retry"}, "policy"), ({"policy": "local"}, "make_backup"), ({"policy": "wait"}, "wait_for_primary"),
])
def test_invalid_settings_name_the_argument(options, message) -> None:
    with pytest.raises(ValueError, match=message):
        FailoverPrediction(Predictor(1.0), lost_errors=(LostError,), **options)
