"""The identification node over real Fast DDS, with the prediction service beside it.

Pushes simulated with known parameters are sent as ObservedPush messages; the identified
parameters are published on ``object_parameters`` and the prediction service's fine model
must then predict exactly as a model with those parameters does. Malformed requests are
answered with success = false and a message naming the field.
"""

from __future__ import annotations

import copy
import math
import time

import numpy as np
import pytest
import rclpy
from parareal_pushing.msg import ObjectParameters as ObjectParametersMsg
from parareal_pushing.msg import ObservedPush
from parareal_pushing.srv import IdentifyObject, PredictTrajectory
from rclpy.parameter import Parameter
from test_prediction_service import call

from parapush.graph import resolve_scene_path
from parapush.identification import ObjectModelVariants, ObjectParameters
from parapush.nodes.conversions import MessageError, controls_to_msg, state_to_msg, trajectory_from_msg
from parapush.nodes.identification import IdentificationNode
from parapush.nodes.identification_messages import OBJECT_PARAMETERS_QOS, parameters_from_msg, parameters_to_msg
from parapush.nodes.prediction_service import SERVICE_QOS, PredictionServiceNode
from parapush.physics.backends import ThreadBackend
from parapush.physics.fine import FineModel
from parapush.scene import ObjectPatch, load_scene

SCENE_FILE = "isrr_obstacle.yaml"
SCENE = load_scene(resolve_scene_path(SCENE_FILE))
TRUTH = ObjectParameters(mass=0.8, support_friction=0.7, pusher_friction=0.45, com_offset=(0.01, -0.008))
SLIDER = (0.1, 0.2)


def observed_pushes(count: int, seed: int) -> list[ObservedPush]:
    """Pushes of 2 x 0.5 s simulated by the fine model with TRUTH, as messages."""
    fine = FineModel(SCENE)
    model = ObjectModelVariants(fine, 0).make(TRUTH)
    rng = np.random.default_rng(seed)
    reach = SCENE.objects[0].radius + SCENE.pusher.radius + 0.001
    pushes = []
    with ThreadBackend(fine, threads=1) as backend:
        for _ in range(count):
            state = SCENE.layout.compose(np.array([SLIDER[0] - reach, SLIDER[1] + rng.uniform(-0.03, 0.03)]),
                                         np.array([[*SLIDER, rng.uniform(-math.pi, math.pi)]]))
            controls = np.column_stack([np.full(2, 0.06), rng.uniform(-0.01, 0.01, 2)])
            states = [state]
            for control in controls:
                states.append(backend.propagate(states[-1][None], control[None], np.array([0.5]), models=[model])[0])
            pushes.append(ObservedPush(states=[state_to_msg(s, SCENE) for s in states],
                                       controls=controls_to_msg(controls, 0.5)))
    return pushes


@pytest.fixture
def nodes(ros_context, spinning):
    """(identification node, prediction service node, identify client, predict client)."""
    identification = IdentificationNode(context=ros_context, parameter_overrides=[
        Parameter("scene_file", value=SCENE_FILE), Parameter("model.workers", value=2),
        Parameter("population", value=8), Parameter("iterations", value=3)])
    service = PredictionServiceNode(context=ros_context, parameter_overrides=[
        Parameter("scene_file", value=SCENE_FILE), Parameter("model.workers", value=2)])
    client_node = rclpy.create_node("identification_test_client", context=ros_context)
    spinning.add(identification, service, client_node)
    identify = client_node.create_client(IdentifyObject, "identify_object")
    predict = client_node.create_client(PredictTrajectory, "predict_trajectory", qos_profile=SERVICE_QOS)
    assert identify.wait_for_service(timeout_sec=10.0) and predict.wait_for_service(timeout_sec=10.0)
    try:
        yield identification, service, identify, predict
    finally:
        service.close()


def test_identified_parameters_reach_the_prediction_service(nodes):
    identification, service, identify, predict = nodes
    pushes = observed_pushes(3, seed=1)
    response = call(identify, IdentifyObject.Request(object="slider", pushes=pushes, publish=True))
    print(f"\n[identify_object] {response.message}")
    assert response.success, response.message
    assert response.error < response.initial_error
    assert list(response.parameter_names) == ["mass", "support_friction", "pusher_friction", "com_x", "com_y"]
    assert len(response.sensitivity) == 5 and response.evaluations == 1 + 8 * 3 + 10
    assert response.initial.mass == SCENE.objects[0].mass and response.initial.pusher_friction == SCENE.pusher.friction
    identified = ObjectParameters(mass=response.parameters.mass, support_friction=response.parameters.support_friction,
                                  pusher_friction=response.parameters.pusher_friction,
                                  com_offset=(response.parameters.com_x, response.parameters.com_y))
    deadline = time.monotonic() + 10.0
    while service.applied_parameters < 1:
        assert time.monotonic() < deadline, "the prediction service did not apply the parameters"
        time.sleep(0.01)
    assert service.engine.object_parameters("slider") == identified
    # A fine prediction through the service now equals the fine model with those parameters.
    start = pushes[0]
    request = PredictTrajectory.Request(initial_state=start.states[0], sequences=[start.controls], model="fine")
    answer = call(predict, request)
    assert answer.success, answer.message
    fine = FineModel(SCENE)
    model = ObjectModelVariants(fine, 0).make(identified)
    states = [trajectory_from_msg(answer.trajectories[0], SCENE)[0]]
    with ThreadBackend(fine, threads=1) as backend:
        for control in start.controls.controls:
            states.append(backend.propagate(states[-1][None], np.array([[control.vx, control.vy]]),
                                            np.array([control.duration]), models=[model])[0])
    np.testing.assert_allclose(trajectory_from_msg(answer.trajectories[0], SCENE), np.array(states), atol=1e-12)
    # The next identification of the same object starts from what was published.
    again = call(identify, IdentifyObject.Request(object="slider", pushes=pushes, fit=["pusher_friction"],
                                                  iterations=1, population=4))
    assert again.success, again.message
    assert again.initial.pusher_friction == identified.pusher_friction
    assert again.parameters.mass == identified.mass  # not searched


def test_method_grid_returns_cell_maps_and_publishes_what_the_fine_model_takes(nodes):
    _, service, identify, _ = nodes
    pushes = observed_pushes(2, seed=1)
    response = call(identify, IdentifyObject.Request(object="slider", method="grid", pushes=pushes, iterations=5,
                                                     publish=True))
    print(f"\n[identify_object grid] {response.message}")
    assert response.success, response.message
    cells = len(response.cell_x)
    assert cells > 50 and all(len(values) == cells for values in (
        response.cell_y, response.cell_mass, response.cell_friction, response.cell_sensitivity))
    assert response.evaluations == 5 and response.error < response.initial_error
    assert sum(response.cell_mass) == pytest.approx(response.parameters.mass)
    assert response.initial.mass == SCENE.objects[0].mass
    deadline = time.monotonic() + 10.0
    while service.applied_parameters < 1:
        assert time.monotonic() < deadline, "the prediction service did not apply the grid's summary"
        time.sleep(0.01)
    applied = service.engine.object_parameters("slider")
    assert applied.mass == pytest.approx(response.parameters.mass)
    assert applied.pusher_friction == pytest.approx(response.parameters.pusher_friction)
    assert len(applied.patches) == len(response.parameters.patch_x)  # the map's regions, if any


def test_published_patches_rebuild_the_services_fine_model_and_bad_ones_are_refused(nodes, ros_context):
    """A distribution travels as patches (parallel arrays); the service rebuilds its fine model for
    them; arrays of different lengths or a patch outside the object leave the model as it was."""
    _, service, _, predict = nodes
    spot = ObjectPatch(center=(0.02, 0.0), half_extents=(0.015, 0.015), mass=0.2, friction=1.5)
    parameters = ObjectParameters(mass=0.8, support_friction=0.7, pusher_friction=0.45, patches=(spot,))
    message = parameters_to_msg("slider", parameters)
    assert parameters_from_msg(message) == ("slider", parameters)
    node = rclpy.create_node("patches_publisher", context=ros_context)
    publisher = node.create_publisher(ObjectParametersMsg, "object_parameters", OBJECT_PARAMETERS_QOS)
    try:
        uneven = copy.deepcopy(message)
        uneven.patch_mass = []
        outside = copy.deepcopy(message)
        outside.patch_x = [0.045]
        for bad in (uneven, outside):
            publisher.publish(bad)
        publisher.publish(message)
        deadline = time.monotonic() + 10.0
        while service.applied_parameters < 1:
            assert time.monotonic() < deadline, "the prediction service did not apply the patches"
            time.sleep(0.01)
    finally:
        node.destroy_node()
    assert service.applied_parameters == 1  # the two bad ones were refused (in order, before it)
    assert service.engine.object_parameters("slider") == parameters
    assert service.engine.scene.objects[0].patches == (spot,)
    start = observed_pushes(1, seed=4)[0]
    answer = call(predict, PredictTrajectory.Request(initial_state=start.states[0], sequences=[start.controls],
                                                     model="fine"))
    assert answer.success, answer.message  # the rebuilt model answers
    with pytest.raises(MessageError, match="patch_"):
        parameters_from_msg(uneven)


def malformed(pushes):
    """(name, request, expected words of the message) of malformed identification requests."""
    cases = [("unknown object", IdentifyObject.Request(object="box", pushes=pushes), "object: unknown object"),
             ("no pushes", IdentifyObject.Request(object="slider"), "pushes: at least one")]
    short = copy.deepcopy(pushes[0])
    short.states = short.states[:2]
    cases.append(("states missing", IdentifyObject.Request(object="slider", pushes=[short]),
                  "pushes[0].states: 2 states for 2 controls"))
    nan = copy.deepcopy(pushes[0])
    nan.states[1].objects[0].x = float("nan")
    cases.append(("nan", IdentifyObject.Request(object="slider", pushes=[nan]), "pushes[0].states[1].objects[0].x"))
    odd = copy.deepcopy(pushes[0])
    odd.controls.controls[1].duration = 0.0004
    cases.append(("odd duration", IdentifyObject.Request(object="slider", pushes=[odd]), "durations"))
    zero = copy.deepcopy(pushes[0])
    zero.controls.controls[0].duration = -1.0
    cases.append(("negative duration", IdentifyObject.Request(object="slider", pushes=[zero]),
                  "pushes[0].controls[0].duration: must be > 0"))
    cases.append(("bad fit", IdentifyObject.Request(object="slider", pushes=pushes, fit=["density"]), "fit:"))
    cases.append(("bad method", IdentifyObject.Request(object="slider", pushes=pushes, method="lcp"),
                  "method: expected one of"))
    cases.append(("grid, odd duration", IdentifyObject.Request(object="slider", method="grid", pushes=[odd]),
                  "durations"))
    cases.append(("tiny population", IdentifyObject.Request(object="slider", pushes=pushes, population=2),
                  "population"))
    stale = copy.deepcopy(pushes[0])
    stale.states[0].objects[0].valid = False
    cases.append(("stale state", IdentifyObject.Request(object="slider", pushes=[stale]), "not tracked"))
    return cases


def test_malformed_requests_are_answered_and_the_node_keeps_working(nodes):
    _, service, identify, _ = nodes
    pushes = observed_pushes(1, seed=2)
    for name, request, words in malformed(pushes):
        response = call(identify, request)
        assert not response.success, name
        assert words in response.message, (name, response.message)
    response = call(identify, IdentifyObject.Request(object="slider", pushes=pushes, iterations=1, population=4))
    assert response.success, response.message
    assert service.applied_parameters == 0  # nothing was published


def test_recorded_real_pushes_are_identified_by_the_service(ros_context, spinning, tmp_path):
    """Three real pushes of the MIT data set's square plate (../shared/real_pushes, a recorded-pushes
    file as bench/mit_pushes.py writes it), sent to a node started with the file's scene."""
    import sys
    from pathlib import Path

    import yaml

    from parapush.identification.recorded_pushes import load_recorded_pushes, save_recorded_pushes
    from parapush.nodes.identification_messages import push_record_to_msg

    bench = Path(__file__).resolve().parents[2] / "bench"
    sys.path.insert(0, str(bench))
    try:
        import mit_pushes
    finally:
        sys.path.remove(str(bench))
    save_recorded_pushes(tmp_path / "rect1.json", mit_pushes.convert_object("rect1"))
    recorded = load_recorded_pushes(tmp_path / "rect1.json")
    scene_file = tmp_path / "rect1_scene.yaml"
    scene_file.write_text(yaml.safe_dump(dict(recorded.scene_data)))
    node = IdentificationNode(context=ros_context, parameter_overrides=[
        Parameter("scene_file", value=str(scene_file)), Parameter("model.workers", value=2),
        Parameter("population", value=8), Parameter("iterations", value=3)])
    client_node = rclpy.create_node("recorded_pushes_client", context=ros_context)
    spinning.add(node, client_node)
    identify = client_node.create_client(IdentifyObject, "identify_object")
    assert identify.wait_for_service(timeout_sec=10.0)
    pushes = [push_record_to_msg(record, recorded.scene) for record in recorded.records[:3]]
    response = call(identify, IdentifyObject.Request(object="rect1", pushes=pushes,
                                                     fit=["support_friction", "pusher_friction", "com_x", "com_y"]))
    print(f"\n[identify_object, real pushes] {response.message}")
    assert response.success, response.message
    assert response.error < response.initial_error
    assert response.initial.support_friction == recorded.scene.table.friction
