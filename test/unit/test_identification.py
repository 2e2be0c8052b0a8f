"""Identification of an object's parameters from pushes (parapush.identification), no ROS.

The "observed" pushes are made by the fine model itself with known parameters, so the
search has an exact answer; held-out pushes check that what was found predicts new pushes.
"""

from __future__ import annotations

import numpy as np
import pytest

from parapush.graph import resolve_scene_path
from parapush.identification import (
    IdentificationSettings,
    ObjectIdentifier,
    ObjectModelVariants,
    ObjectParameters,
    ParameterBounds,
    PushRecord,
)
from parapush.physics.backends import ThreadBackend
from parapush.physics.fine import FineModel
from parapush.physics.fine_settings import FineSettings
from parapush.scene import load_scene, scene_from_dict

TRUTH = ObjectParameters(mass=0.8, support_friction=0.7, pusher_friction=0.45, com_offset=(0.01, -0.008))
SLIDER = (0.1, 0.2)  # isrr_obstacle.yaml's slider, far from its obstacle


@pytest.fixture(scope="module")
def fine_model() -> FineModel:
    return FineModel(load_scene(resolve_scene_path("isrr_obstacle.yaml")))


@pytest.fixture(scope="module")
def identifier(fine_model):
    with ObjectIdentifier(fine_model, 0, workers=2) as identifier:
        yield identifier


def pushes(fine_model: FineModel, parameters: ObjectParameters, count: int, seed: int) -> list[PushRecord]:
    """``count`` pushes of 2 x 0.5 s along +x, off centre by up to 3 cm, simulated with ``parameters``."""
    rng = np.random.default_rng(seed)
    model = ObjectModelVariants(fine_model, 0).make(parameters)
    layout, radii = fine_model.layout, fine_model.scene.objects[0].radius + fine_model.scene.pusher.radius
    records = []
    with ThreadBackend(fine_model, threads=1) as backend:
        for _ in range(count):
            start = layout.compose(np.array([SLIDER[0] - radii - 0.001, SLIDER[1] + rng.uniform(-0.03, 0.03)]),
                                   np.array([[*SLIDER, rng.uniform(-np.pi, np.pi)]]))
            controls = np.column_stack([np.full(2, 0.06), rng.uniform(-0.01, 0.01, 2)])
            states = [start]
            for control in controls:
                states.append(backend.propagate(states[-1][None], control[None], np.array([0.5]), models=[model])[0])
            records.append(PushRecord(np.array(states), controls, np.full(2, 0.5)))
    return records


# -- parameters and bounds ----------------------------------------------------------------------
def test_the_nominal_parameters_are_the_fine_models(fine_model):
    nominal = ObjectParameters.from_scene(fine_model.scene, 0)
    scene = fine_model.scene
    assert nominal == ObjectParameters(mass=scene.objects[0].mass,
                                       support_friction=max(scene.table.friction, scene.objects[0].friction),
                                       pusher_friction=scene.pusher.friction)
    assert ObjectParameters.from_vector(nominal.as_vector()) == nominal
    with pytest.raises(IndexError, match="object index 1"):
        ObjectParameters.from_scene(scene, 1)


@pytest.mark.parametrize(("arguments", "message"), [
    ({"mass": 0.0}, "mass: expected a finite number > 0"),
    ({"support_friction": -0.1}, "support_friction: expected a finite number >= 0"),
    ({"pusher_friction": float("nan")}, "pusher_friction: expected a finite number"),
    ({"com_offset": (0.0,)}, r"com_offset: expected \(x, y\)"),
])
def test_bad_parameters_name_the_field(arguments, message):
    values = {"mass": 0.5, "support_friction": 1.0, "pusher_friction": 0.2, **arguments}
    with pytest.raises(ValueError, match=message):
        ObjectParameters(**values)


def test_bad_bounds_and_settings_name_the_field():
    with pytest.raises(ValueError, match="mass: expected"):
        ParameterBounds(mass=(1.0, 0.5))
    with pytest.raises(ValueError, match="com_offset: expected a finite number >= 0"):
        ParameterBounds(com_offset=-0.01)
    with pytest.raises(ValueError, match="elite: must be < population"):
        IdentificationSettings(population=8, elite=8)
    with pytest.raises(ValueError, match="fit: expected distinct names"):
        IdentificationSettings(fit=("mass", "density"))
    with pytest.raises(ValueError, match="smoothing: expected a finite number > 0 and <= 1"):
        IdentificationSettings(smoothing=1.5)


def test_push_records_check_their_shapes():
    with pytest.raises(ValueError, match=r"states: expected shape \(3, D\)"):
        PushRecord(np.zeros((2, 10)), np.zeros((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="durations: must be > 0"):
        PushRecord(np.zeros((3, 10)), np.zeros((2, 2)), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="controls: must be finite"):
        PushRecord(np.zeros((2, 10)), np.array([[np.nan, 0.0]]), np.ones(1))


# -- model variants -----------------------------------------------------------------------------
def test_the_nominal_variant_reproduces_the_fine_model_bit_for_bit(fine_model):
    variants = ObjectModelVariants(fine_model, 0)
    records = pushes(fine_model, variants.nominal, 2, seed=3)
    starts = np.concatenate([record.states[:-1] for record in records])
    controls = np.concatenate([record.controls for record in records])
    durations = np.concatenate([record.durations for record in records])
    expected = fine_model.propagate(starts, controls, durations)
    with ThreadBackend(fine_model, threads=2) as backend:
        got = backend.propagate(starts, controls, durations, models=[variants.make(variants.nominal)] * len(starts))
    assert np.array_equal(got, expected)
    assert np.array_equal(got, np.concatenate([record.states[1:] for record in records]))


def test_a_variant_changes_its_copy_only(fine_model):
    variants = ObjectModelVariants(fine_model, 0)
    body = fine_model.mj_model.body("object0").id
    mass_before, pairs_before = fine_model.mj_model.body_mass[body], fine_model.mj_model.pair_friction.copy()
    variant = variants.make(TRUTH)
    assert variant.body_mass[body] == TRUTH.mass
    assert np.allclose(variant.body_ipos[body][:2], TRUTH.com_offset)
    assert sorted(set(variant.pair_friction[:, 0]) - set(pairs_before[:, 0])) == [0.45, 0.7]
    assert fine_model.mj_model.body_mass[body] == mass_before
    assert np.array_equal(fine_model.mj_model.pair_friction, pairs_before)
    support = fine_model.mj_model.geom("object0_support").id  # the torsion support moved under the com
    assert np.allclose(variant.geom_pos[support][:2], TRUTH.com_offset)
    assert np.allclose(fine_model.mj_model.geom_pos[support][:2], 0.0)


@pytest.mark.parametrize("com_y", [0.0, 0.015, -0.02])
def test_an_off_centre_com_turns_a_torsion_supported_object_as_a_tilting_support_does(com_y):
    # a cylinder pushed 12 cm through its centre: its one torsion contact lies under the centre of
    # mass, so the object turns about as much as on 8 tilting support points (whose pressure centre
    # a rigid body's statics put under the centre of mass); before, it turned ~10x less
    scene = scene_from_dict({
        "name": "com", "table": {"length": 0.8, "width": 1.0, "friction": 1.0},
        "pusher": {"radius": 0.0145, "position": [-0.0667, 0.0]},
        "objects": [{"name": "o", "shape": "cylinder", "radius": 0.0512, "mass": 0.5, "pose": [0.0, 0.0, 0.0]}],
        "goal": {"center": [0.3, 0.0], "radius": 0.05}, "target": "o"})
    start = scene.layout.compose(np.array(scene.pusher.position), np.array([[0.0, 0.0, 0.0]]))
    parameters = ObjectParameters(mass=0.5, support_friction=1.0, pusher_friction=0.3, com_offset=(0.0, com_y))
    yaws = []
    for settings in (FineSettings(), FineSettings(support="points", object_tilt=True, native_ccd=False)):
        assert settings.support == "torsion" or settings.object_tilt
        with ObjectIdentifier(FineModel(scene, settings), 0, workers=1) as identifier:
            rolled = identifier.rollouts(start, np.tile([[[0.05, 0.0]]], (1, 6, 1)), np.full(6, 0.4),
                                         parameters.as_vector()[None])
        yaws.append(rolled[0, 0, -1, scene.layout.object_pose(0)][2])
    torsion, tilting = yaws
    if com_y == 0.0:
        assert abs(torsion) < 0.01 and abs(tilting) < 0.05
    else:
        assert np.sign(torsion) == np.sign(tilting) == np.sign(com_y)
        assert 0.5 * abs(tilting) < abs(torsion) < 1.5 * abs(tilting)


def test_a_non_convex_polygon_s_variant_sets_every_part_s_friction():
    """An L-shaped polygon is two convex geoms in the fine model, each with its table and pusher pairs."""
    scene = scene_from_dict({"name": "ell", "objects": [{
        "name": "ell", "shape": "polygon", "mass": 0.3,
        "vertices": [[0, 0], [0.08, 0], [0.08, 0.03], [0.03, 0.03], [0.03, 0.08], [0, 0.08]]}]})
    variants = ObjectModelVariants(FineModel(scene, FineSettings(support="collider")), 0)  # a support per part
    model = variants.fine_model.mj_model
    names = {(model.geom(int(first)).name, model.geom(int(second)).name)
             for first, second in zip(model.pair_geom1, model.pair_geom2, strict=True)}
    assert {("table", "object0_support_part1"), ("pusher_collider", "object0_collider_part1")} <= names
    wanted = ObjectParameters(mass=0.4, support_friction=0.77, pusher_friction=0.22)
    variant = variants.make(wanted)
    for first, second, friction in zip(variant.pair_geom1, variant.pair_geom2, variant.pair_friction[:, 0],
                                       strict=True):
        pair = (variant.geom(int(first)).name, variant.geom(int(second)).name)
        if pair[0] == "table":
            assert friction == 0.77, pair
        elif pair[0] == "pusher_collider":
            assert friction == 0.22, pair
    assert variants.current(variant) == wanted


def test_per_row_models_are_checked(fine_model):
    states = np.zeros((2, fine_model.layout.dimension))
    states[:, 2:4] = SLIDER
    one_model = "models: expected one model per row"
    with ThreadBackend(fine_model, threads=1) as backend, pytest.raises(ValueError, match=one_model):
        backend.propagate(states, np.zeros((2, 2)), np.ones(2), models=[fine_model.mj_model])
    rollout_only = "engine='rollout'"
    with ThreadBackend(fine_model, threads=1, engine="batch") as backend, pytest.raises(ValueError, match=rollout_only):
        backend.propagate(states, np.zeros((2, 2)), np.ones(2), models=[fine_model.mj_model] * 2)


# -- errors and search --------------------------------------------------------------------------
def test_the_true_parameters_predict_their_pushes_exactly(fine_model, identifier):
    records = pushes(fine_model, TRUTH, 2, seed=1)
    hypotheses = np.stack([TRUTH.as_vector(), identifier.variants.nominal.as_vector()])
    errors = identifier.prediction_errors(records, hypotheses)
    assert errors[0] == 0.0
    assert errors[1] > 1e-3  # the nominal object moves visibly differently (m)


def test_identification_finds_parameters_that_predict_new_pushes(fine_model, identifier):
    records = pushes(fine_model, TRUTH, 3, seed=1)
    settings = IdentificationSettings(population=24, elite=6, iterations=14, seed=0)
    result = identifier.identify(records, settings=settings)
    print(f"\n[identification] {result.parameters}; error {result.initial_error * 1e3:.2f} -> "
          f"{result.error * 1e3:.3f} mm; sensitivity {np.round(result.sensitivity * 1e3, 3)} mm")
    assert result.error < 0.2 * result.initial_error
    assert np.all(np.diff(result.history) <= 0.0)  # the best so far never gets worse
    assert result.evaluations == 1 + settings.population * result.iterations + 2 * 5
    assert abs(result.parameters.pusher_friction - TRUTH.pusher_friction) < 0.15
    held_out = pushes(fine_model, TRUTH, 3, seed=2)
    nominal, found = identifier.prediction_errors(
        held_out, np.stack([identifier.variants.nominal.as_vector(), result.parameters.as_vector()])
    )
    print(f"[identification] held-out pushes: nominal {nominal * 1e3:.2f} mm, identified {found * 1e3:.2f} mm")
    assert found < 0.5 * nominal


def test_only_the_chosen_parameters_are_searched(fine_model, identifier):
    records = pushes(fine_model, TRUTH, 2, seed=4)
    settings = IdentificationSettings(fit=("pusher_friction",), population=8, elite=2, iterations=3)
    result = identifier.identify(records, settings=settings)
    nominal = identifier.variants.nominal
    assert result.parameters.mass == nominal.mass
    assert result.parameters.com_offset == nominal.com_offset
    assert result.parameters.support_friction == nominal.support_friction
    assert np.count_nonzero(result.sensitivity) == 1 and result.sensitivity[2] > 0.0
    assert result.error <= result.initial_error


def test_bad_searches_fail_with_the_argument_named(fine_model, identifier):
    records = pushes(fine_model, TRUTH, 1, seed=5)
    with pytest.raises(ValueError, match="records: at least one"):
        identifier.identify([])
    with pytest.raises(ValueError, match="initial: .* outside the bounds"):
        identifier.identify(records, initial=ObjectParameters(mass=5.0, support_friction=1.0, pusher_friction=0.2))
    bad = PushRecord(np.zeros((2, 4 + 6 * 2)), np.zeros((1, 2)), np.ones(1))
    with pytest.raises(ValueError, match=r"records\[0\].states: expected 10 values"):
        identifier.identify([bad])
    odd = PushRecord(records[0].states[:2], records[0].controls[:1], np.array([0.0005 * 3.3]))
    with pytest.raises(ValueError, match="durations"):
        identifier.identify([odd])


# -- the prediction engine uses applied parameters ----------------------------------------------
def test_the_engine_predicts_with_applied_parameters(fine_model):
    from parapush.prediction import ModelConfig, PredictionEngine, PredictionError, PredictionRequest, RequestError

    record = pushes(fine_model, TRUTH, 1, seed=6)[0]
    request = PredictionRequest(record.states[0], record.controls[None], record.durations[None], model="fine")
    with PredictionEngine(fine_model.scene, ModelConfig(workers=2)) as engine:
        before = engine.predict(request).trajectories[0]
        previous = engine.apply_object_parameters("slider", TRUTH)
        assert previous == ObjectModelVariants(fine_model, 0).nominal
        assert engine.object_parameters("slider") == TRUTH
        after = engine.predict(request).trajectories[0]
        with pytest.raises(RequestError, match="object: unknown object 'box'"):
            engine.apply_object_parameters("box", TRUTH)
    np.testing.assert_array_equal(after, record.states)  # the pushes were simulated with TRUTH
    assert not np.allclose(before, record.states, atol=1e-4)
    processes = ModelConfig(backend="processes", workers=1)
    refused = "'threads' or 'serial' backend"
    with PredictionEngine(fine_model.scene, processes) as engine, pytest.raises(PredictionError, match=refused):
        engine.apply_object_parameters("slider", TRUTH)


# -- push records from a recorded timeline ------------------------------------------------------
def test_records_take_the_states_nearest_to_the_control_boundaries():
    from parapush.identification import push_records_from_timeline

    times = np.arange(0.0, 10.0, 0.01)
    states = np.column_stack([times, -times])  # a state that says when it was observed
    states[times > 8.5] = np.nan  # lost tracking at the end
    sequences = [
        (1.003, np.array([[0.05, 0.0], [0.0, 0.05]]), np.array([1.0, 0.5])),
        (4.0, np.zeros((0, 2)), np.zeros(0)),  # a stop: ignored
        (-0.5, np.array([[0.05, 0.0]]), np.array([1.0])),  # starts before the recording
        (8.0, np.array([[0.05, 0.0]]), np.array([1.0])),  # ends where nothing was observed
    ]
    records, skipped = push_records_from_timeline(times, states, sequences, tolerance=0.02)
    assert len(records) == 1
    np.testing.assert_allclose(records[0].states[:, 0], [1.0, 2.0, 2.5])
    np.testing.assert_array_equal(records[0].durations, [1.0, 0.5])
    assert [(s.start, s.reason.split(" (")[0]) for s in skipped] == [
        (-0.5, "outside the recorded states"),
        (8.0, "outside the recorded states"),
    ]
    _, gaps = push_records_from_timeline(times[::20], states[::20], sequences[:1], tolerance=0.02)
    assert gaps[0].reason.startswith("no observed state within 0.02 s")
    with pytest.raises(ValueError, match="state_times: must be non-decreasing"):
        push_records_from_timeline(times[::-1], states, sequences)


def test_an_open_loop_prediction_with_the_true_parameters_replays_the_push(fine_model, identifier):
    record = pushes(fine_model, TRUTH, 1, seed=7)[0]
    np.testing.assert_array_equal(identifier.predict_push(record, TRUTH), record.states)
    nominal = identifier.predict_push(record, identifier.variants.nominal)
    assert nominal.shape == record.states.shape and not np.allclose(nominal[-1], record.states[-1], atol=1e-4)
