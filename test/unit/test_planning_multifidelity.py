"""The multi-fidelity planner: elites, decision on corrected predictions, refinement; the presets."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_planning_fixtures import GluedPropagator, glued_model, glued_world, initial_state, tiny_scene

from parapush.planning import (
    CostFunction,
    MpcLoop,
    MpcSettings,
    OptimizerSettings,
    PropagatorRollout,
    StochasticTrajectoryOptimizer,
    load_planner_config,
)
from parapush.planning.multifidelity import (
    BiasedModel,
    MultiFidelityPlanner,
    MultiFidelitySettings,
    coarse_continuation,
    select_elites,
)
from parapush.planning.pipelined_mpc import PipelinedMpcLoop
from parapush.planning.presets import PRESETS, PlannerPreset, planner_preset
from parapush.planning.stack_planner import PlannerSources, build_planner
from parapush.scene import load_scene

GOAL_ONLY = {"goal_distance": {"weight": 1.0}, "smoothness": {"weight": 0.1}}


class SlippingPropagator(GluedPropagator):
    """The target follows the pusher's motion scaled by ``gain`` and turned by ``angle`` (a
    corrector that disagrees with the glued coarse model)."""

    def __init__(self, layout, gain: float, angle: float = 0.0) -> None:
        super().__init__(layout)
        self.gain = gain
        self.rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])

    def propagate(self, states, controls, durations):
        before = np.array(states, dtype=float)
        after = super().propagate(states, controls, durations)
        start = self.layout.object_pose(self.target_index).start
        xy = slice(start, start + 2)
        moved = (after[:, xy] - before[:, xy]) @ self.rotation.T
        after[:, xy] = before[:, xy] + self.gain * moved
        return after


class DraggingPropagator(GluedPropagator):
    """The glued model, and object 1 dragged along with the target (two objects move)."""

    def propagate(self, states, controls, durations):
        before = np.array(states, dtype=float)
        after = super().propagate(states, controls, durations)
        target, other = self.layout.object_pose(self.target_index).start, self.layout.object_pose(1).start
        after[:, other : other + 2] += after[:, target : target + 2] - before[:, target : target + 2]
        return after


def make_planner(scene, *, seed=0, **settings):
    optimizer = StochasticTrajectoryOptimizer(OptimizerSettings(samples=10, max_iterations=4, seed=seed))
    return MultiFidelityPlanner(optimizer, glued_model(scene), MultiFidelitySettings(**settings))


def test_the_chosen_plan_is_predicted_and_costed_with_the_corrector() -> None:
    scene = tiny_scene()
    state = initial_state(scene)
    corrector = PropagatorRollout(SlippingPropagator(scene.layout, gain=0.5, angle=0.3))
    cost = CostFunction.from_config(scene, GOAL_ONLY)
    planner = make_planner(scene)
    guess = np.tile([0.05, 0.0], (4, 1))
    result = planner.optimize(state, guess, corrector, cost)
    expected = corrector.predict(state, result.controls[None], np.ones(4))[0]
    np.testing.assert_allclose(result.trajectory, expected)
    assert result.cost == pytest.approx(float(cost.evaluate(expected[None], result.controls[None])[0]))
    coarse = glued_model(scene).predict(state, result.controls[None], np.ones(4))[0]
    assert not np.allclose(coarse, expected)  # the coarse prediction was not returned
    report = planner.last_report
    assert report.corrected_cost == pytest.approx(result.cost)
    assert 1 <= report.rounds <= 2 and report.corrected_sequences <= 2 * 4


def test_the_decision_is_no_worse_under_the_corrector_than_the_coarse_choice() -> None:
    scene = tiny_scene()
    state = initial_state(scene)
    corrector = PropagatorRollout(SlippingPropagator(scene.layout, gain=0.7, angle=0.5))
    cost = CostFunction.from_config(scene, GOAL_ONLY)
    guess = np.tile([0.05, 0.0], (4, 1))
    coarse_only = StochasticTrajectoryOptimizer(OptimizerSettings(samples=10, max_iterations=4, seed=3))
    coarse_choice = coarse_only.optimize(state, guess, glued_model(scene), cost).controls
    coarse_choice_cost = cost.evaluate(corrector.predict(state, coarse_choice[None], np.ones(4)), coarse_choice[None])
    result = make_planner(scene, seed=3, rounds=1).optimize(state, guess, corrector, cost)
    assert result.cost <= float(coarse_choice_cost[0]) + 1e-12


def test_a_large_mismatch_runs_a_refinement_round_and_agreement_does_not() -> None:
    scene = tiny_scene()
    state = initial_state(scene)
    cost = CostFunction.from_config(scene, GOAL_ONLY)
    guess = np.tile([0.05, 0.0], (4, 1))
    agreeing = make_planner(scene, rounds=3)
    agreeing.optimize(state, guess, glued_model(scene), cost)
    assert agreeing.last_report.rounds == 1 and not agreeing.last_report.rank_changed
    disagreeing = make_planner(scene, rounds=3, mismatch_tolerance=0.0)
    disagreeing.optimize(state, guess, PropagatorRollout(SlippingPropagator(scene.layout, gain=0.3)), cost)
    assert disagreeing.last_report.rounds >= 2
    assert disagreeing.last_report.corrected_sequences > 4


def test_select_elites_takes_the_cheapest_distinct_finite_sequences() -> None:
    controls = np.zeros((5, 2, 2))
    controls[1] += 0.01
    controls[2] += 0.01 + 1e-5  # a near-copy of 1
    controls[3] += 0.02
    controls[4] += 0.03
    costs = np.array([3.0, 1.0, 0.5, np.inf, 2.0])
    np.testing.assert_array_equal(select_elites(controls, costs, 3, 1e-3), [2, 4, 0])
    np.testing.assert_array_equal(select_elites(controls, costs, 10, 1e-3), [2, 4, 0])


def test_biased_model_adds_the_jumps_to_every_row() -> None:
    scene = tiny_scene()
    state = initial_state(scene)
    bias = np.zeros((3, scene.layout.dimension))
    bias[1:, 2] = [0.01, 0.02]
    controls = np.full((2, 2, 2), 0.03)
    base = glued_model(scene).predict(state, controls, np.ones(2))
    shifted = BiasedModel(glued_model(scene), bias).predict(state, controls, np.ones(2))
    np.testing.assert_allclose(shifted - base, np.broadcast_to(bias, base.shape))


def test_settings_are_validated_with_the_field_name() -> None:
    for field, value in (("elites", 0), ("rounds", 1.5), ("mismatch_tolerance", -1.0)):
        with pytest.raises(ValueError, match=field):
            MultiFidelitySettings(**{field: value})


def test_the_planner_drops_into_the_sequential_mpc_loop() -> None:
    scene = tiny_scene()
    corrector = PropagatorRollout(SlippingPropagator(scene.layout, gain=1.0))
    loop = MpcLoop(scene, make_planner(scene), corrector, CostFunction.from_config(scene, GOAL_ONLY), MpcSettings())
    assert loop.run(glued_world(scene)).success


# -- presets -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_builds_its_loop(name: str) -> None:
    scene = load_scene("config/scenes/isrr_obstacle.yaml")
    preset = planner_preset(name)
    sources = PlannerSources.load().with_overrides({"preset": name, "model": {"workers": 1}})
    with build_planner(scene, sources, seed=1) as built:
        assert built.loop.optimizer.settings.seed == 1
        assert built.loop.settings == preset.mpc_settings(sources.planner.mpc)  # the preset's MPC overrides
        assert (built.loop.cost.route is not None) == (name == "realtime")  # isrr_obstacle: a post in the way
        if preset.loop == "pipelined":
            assert isinstance(built.loop, PipelinedMpcLoop) and isinstance(built.planner, MultiFidelityPlanner)
        else:
            assert isinstance(built.loop, MpcLoop) and isinstance(built.planner, StochasticTrajectoryOptimizer)


def test_isrr2019_keeps_the_configured_optimizer_and_realtime_is_the_default() -> None:
    config = load_planner_config("config/planner.yaml")
    isrr = planner_preset("isrr2019")
    assert isrr.optimizer_settings(config.optimizer) == config.optimizer
    assert (isrr.loop, isrr.model) == ("sequential", None)  # the model file's predictor (Parareal K = 1)
    assert planner_preset().name == "realtime"
    with pytest.raises(ValueError, match="isrr2019"):
        planner_preset("fastest")


def test_preset_fields_are_validated() -> None:
    with pytest.raises(ValueError, match="loop"):
        PlannerPreset(name="x", loop="parallel", model="fine")
    with pytest.raises(ValueError, match="multifidelity"):
        PlannerPreset(name="x", loop="sequential", model="fine", coarse="auto")
    with pytest.raises(ValueError, match="optimizer_overrides"):
        PlannerPreset(name="x", loop="sequential", model="fine", optimizer_overrides={"sample": 3})
    with pytest.raises(ValueError, match=r"mpc_overrides: unknown field\(s\) \['initial_sped'\]"):
        PlannerPreset(name="x", loop="sequential", model="fine", mpc_overrides={"initial_sped": 0.1})
    for refused in (0, 65, 1.0):  # K = 0 is the coarse model, named model="coarse"; at most ModelConfig's 64
        with pytest.raises(ValueError, match="^parareal_iterations: expected an integer >= 1 and <= 64"):
            PlannerPreset(name="x", loop="sequential", model="parareal", parareal_iterations=refused)


def test_a_parareal_preset_takes_the_model_files_k_unless_it_sets_its_own() -> None:
    from parapush.prediction import ModelConfig

    model = ModelConfig(iterations=3)
    parareal = PlannerPreset(name="x", loop="sequential", model="parareal")
    assert parareal.corrector_config(model) == dataclasses.replace(model, name="parareal")
    assert parareal.corrector_config(ModelConfig()).iterations == ModelConfig().iterations
    assert dataclasses.replace(parareal, parareal_iterations=2).corrector_config(model).iterations == 2
    fine = PlannerPreset(name="x", loop="sequential", model="fine", parareal_iterations=2)
    assert fine.corrector_config(model) == dataclasses.replace(model, name="fine")


def test_partial_correction_uses_the_corrector_for_the_leading_controls_and_the_coarse_model_after() -> None:
    scene = tiny_scene()
    state = initial_state(scene)
    corrector = PropagatorRollout(SlippingPropagator(scene.layout, gain=0.5, angle=0.3))
    cost = CostFunction.from_config(scene, GOAL_ONLY)
    planner = make_planner(scene, corrected_controls=1, rounds=1)
    result = planner.optimize(state, np.tile([0.05, 0.0], (4, 1)), corrector, cost)
    head = corrector.predict(state, result.controls[None, :1], np.ones(1))[0]
    tail = glued_model(scene).predict(head[1], result.controls[None, 1:], np.ones(3))[0]
    np.testing.assert_allclose(result.trajectory, np.concatenate([head, tail[1:]]))
    assert result.cost == pytest.approx(float(cost.evaluate(result.trajectory[None], result.controls[None])[0]))


class RowByRow:
    """A coarse model with only ``predict`` (one initial state per call): the per-row path."""

    def __init__(self, model: PropagatorRollout) -> None:
        self.model = model
        self.calls = 0

    def predict(self, initial_state, controls, durations):
        self.calls += 1
        return self.model.predict(initial_state, controls, durations)


def test_the_coarse_continuation_of_all_rows_is_one_rollout_and_equals_one_per_row() -> None:
    scene = tiny_scene()
    rng = np.random.default_rng(3)
    controls = rng.uniform(-0.05, 0.05, size=(4, 4, 2))
    durations = np.ones(4)
    heads = PropagatorRollout(SlippingPropagator(scene.layout, gain=0.5, angle=0.3)).predict(
        initial_state(scene), controls[:, :2], durations[:2])
    heads[2, -1] = np.nan  # a row the corrector could not predict stays NaN after its head
    propagator = GluedPropagator(scene.layout)
    together = coarse_continuation(PropagatorRollout(propagator), heads, controls, durations)
    assert propagator.calls == 2  # the two controls after the heads, all rows at once
    row_by_row = RowByRow(glued_model(scene))
    np.testing.assert_array_equal(together, coarse_continuation(row_by_row, heads, controls, durations))
    assert row_by_row.calls == 3  # the finite rows
    np.testing.assert_array_equal(together[:, :3][[0, 1, 3]], heads[[0, 1, 3]])
    assert np.all(np.isnan(together[2, 2:])) and np.all(np.isfinite(together[[0, 1, 3]]))


def test_preset_cost_overrides_merge_into_the_configured_costs_without_changing_them() -> None:
    config = load_planner_config("config/planner.yaml")
    preset = dataclasses.replace(
        planner_preset("isrr2019"), cost_overrides={"non_target_objects": {"goal_entry_margin": 0.03}}
    )
    merged = preset.costs(config.costs)
    assert merged["non_target_objects"] == {**config.costs["non_target_objects"], "goal_entry_margin": 0.03}
    assert "goal_entry_margin" not in config.costs["non_target_objects"]
    assert planner_preset("isrr2019").costs(config.costs) == {k: dict(v) for k, v in config.costs.items()}


@pytest.mark.parametrize("coarse_moves_two", [False, True])
def test_elites_whose_coarse_prediction_moves_two_objects_are_corrected_over_the_horizon(coarse_moves_two) -> None:
    scene = tiny_scene(others=((0.1, -0.3),))
    state = initial_state(scene)
    corrector = PropagatorRollout(SlippingPropagator(scene.layout, gain=0.5, angle=0.3))
    coarse = PropagatorRollout((DraggingPropagator if coarse_moves_two else GluedPropagator)(scene.layout))
    cost = CostFunction.from_config(scene, GOAL_ONLY)
    optimizer = StochasticTrajectoryOptimizer(OptimizerSettings(samples=10, max_iterations=4, seed=0))
    settings = MultiFidelitySettings(corrected_controls=1, contact_corrected_controls=None, rounds=1)
    result = MultiFidelityPlanner(optimizer, coarse, settings).optimize(
        state, np.tile([0.05, 0.0], (4, 1)), corrector, cost
    )
    full = corrector.predict(state, result.controls[None], np.ones(4))[0]
    head_then_coarse = np.concatenate(
        [full[:2], coarse.predict(full[1], result.controls[None, 1:], np.ones(3))[0][1:]]
    )
    np.testing.assert_allclose(result.trajectory, full if coarse_moves_two else head_then_coarse)
    assert not np.allclose(full, head_then_coarse)  # the two cases differ


def test_contact_correction_settings_are_validated() -> None:
    assert MultiFidelitySettings().contact_corrected_controls == 0  # off unless asked for
    with pytest.raises(ValueError, match="contact_corrected_controls"):
        MultiFidelitySettings(contact_corrected_controls=-1)
    with pytest.raises(ValueError, match="contact_displacement"):
        MultiFidelitySettings(contact_displacement=-0.01)


@pytest.mark.parametrize(("workers", "corrected"), [(2, 1), (7, 1), (8, None), (16, None)])
def test_with_eight_or_more_fine_workers_the_elites_are_corrected_over_the_whole_horizon(workers, corrected) -> None:
    scene = load_scene("config/scenes/clutter_fig1.yaml")
    sources = PlannerSources.load().with_overrides({"model": {"backend": "threads", "workers": workers}})
    with build_planner(scene, sources, seed=0) as built:
        assert built.model.engine.backend.workers == workers
        assert built.planner.multifidelity.corrected_controls == corrected
        assert built.planner.corrected_depth() == (built.planner.settings.horizon if corrected is None else 1)
        assert built.settings()["multifidelity"]["corrected_controls"] == corrected
    never = dataclasses.replace(PRESETS["realtime"].multifidelity, full_horizon_workers=None)
    assert never.for_workers(64) is never


def test_the_multifidelity_overrides_replace_the_presets_fields_and_name_an_unknown_one() -> None:
    sources = PlannerSources.load()
    never = sources.with_overrides({"multifidelity": {"full_horizon_workers": None, "elites": 3}})
    assert never.preset.multifidelity == dataclasses.replace(sources.preset.multifidelity, full_horizon_workers=None,
                                                             elites=3)
    assert never.overrides["multifidelity"] == {"full_horizon_workers": None, "elites": 3}
    with pytest.raises(ValueError, match="elite_count"):
        sources.with_overrides({"multifidelity": {"elite_count": 3}})
    with pytest.raises(ValueError, match="rounds"):
        sources.with_overrides({"multifidelity": {"rounds": 0}})
    with pytest.raises(ValueError, match="isrr2019.*no multi-fidelity"):
        sources.with_overrides({"preset": "isrr2019", "multifidelity": {"elites": 3}})
