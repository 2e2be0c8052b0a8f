"""The prediction service node over real Fast DDS on loopback.

Round trips against the library (the same request answered directly must give the same
trajectories), a fuzz of 1,000+ malformed requests (every one answered with
success = false and a message, the service still correct afterwards), concurrent
clients, and a worker process killed in the middle of a request.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import os
import signal
import threading
import time

import numpy as np
import pytest
import rclpy
from parareal_pushing.msg import ControlSequence
from parareal_pushing.srv import PredictTrajectory
from rclpy.parameter import Parameter
from ros_futures import wait_future

from parapush.graph import resolve_scene_path
from parapush.nodes.conversions import controls_to_msg, state_to_msg, trajectory_from_msg
from parapush.nodes.prediction_messages import prediction_request_from_msg
from parapush.nodes.prediction_service import SERVICE_QOS, PredictionServiceNode
from parapush.prediction import ModelConfig, PredictionEngine, PredictionRequest
from parapush.scene import load_scene

SCENE_FILE = "isrr_obstacle.yaml"
SCENE = load_scene(resolve_scene_path(SCENE_FILE))
LAYOUT = SCENE.layout
INITIAL = LAYOUT.compose(SCENE.pusher.position, np.array([spec.pose for spec in SCENE.objects]))
PUSH = np.array([[0.025, 0.0], [0.025, 0.005], [0.02, -0.01], [0.025, 0.0]])


MODEL_FIELDS = {item.name for item in dataclasses.fields(ModelConfig)}


def start_service(context, spinning, **parameters):
    """The node with these parameters; ModelConfig fields (workers, schedule, ...) are its model.* ones."""
    # schedule "parareal": these tests check Parareal's iteration semantics; "auto" would pick the
    # exact sample-parallel fine schedule for several sequences on 2 workers (tested separately).
    defaults = {"scene_file": SCENE_FILE, "workers": 2, "max_sequences": 8, "max_controls": 8, "schedule": "parareal"}
    defaults.update(parameters)
    overrides = [Parameter(f"model.{name}" if name in MODEL_FIELDS else name, value=value)
                 for name, value in defaults.items()]
    node = PredictionServiceNode(context=context, parameter_overrides=overrides)
    client_node = rclpy.create_node("prediction_test_client", context=context)
    spinning.add(node, client_node)
    client = client_node.create_client(PredictTrajectory, "predict_trajectory", qos_profile=SERVICE_QOS)
    assert client.wait_for_service(timeout_sec=10.0)
    return node, client


def call(client, request, timeout=60.0):
    return wait_future(client.call_async(request), timeout)


def valid_request(sequences=1, model="parareal", iterations=1):
    request = PredictTrajectory.Request()
    request.initial_state = state_to_msg(INITIAL, SCENE)
    rng = np.random.default_rng(7)
    request.sequences = [
        controls_to_msg(PUSH + (0 if index == 0 else rng.normal(0, 0.003, PUSH.shape)), 1.0)
        for index in range(sequences)
    ]
    request.model = model
    request.iterations = iterations
    return request


@pytest.fixture
def service(ros_context, spinning):
    node, client = start_service(ros_context, spinning)
    yield node, client
    node.close()


def test_round_trip_equals_a_direct_library_call(service):
    node, client = service
    response = call(client, valid_request(sequences=3, iterations=2))
    assert response.success, response.message
    assert len(response.trajectories) == 3
    assert response.iterations_used == 2 and response.exact_states == 3
    assert response.schedule == "parareal"
    assert len(response.update_position) == 2 and response.stop_reason == "iterations"
    assert response.time_total > 0 and response.time_fine > 0
    assert list(response.trajectories[0].exact) == [True, True, True, False, False]
    request = valid_request(sequences=3, iterations=2)
    controls = np.array([[(c.vx, c.vy) for c in s.controls] for s in request.sequences])
    with PredictionEngine(SCENE, node.engine.config, limits=node.limits) as engine:  # the same settings, without ROS
        direct = engine.predict(PredictionRequest(INITIAL, controls, np.ones(controls.shape[:2]), iterations=2))
    for message, states in zip(response.trajectories, direct.trajectories, strict=True):
        received = trajectory_from_msg(message, SCENE)
        yaws = LAYOUT.yaw_indices
        np.testing.assert_allclose(np.delete(received, yaws, axis=1), np.delete(states, yaws, axis=1), atol=1e-12)


def test_fine_and_coarse_models_by_name(service):
    _, client = service
    fine = call(client, valid_request(model="fine"))
    assert fine.success, fine.message
    assert fine.exact_states == 5 and all(fine.trajectories[0].exact)
    coarse = call(client, valid_request(model="coarse"))
    assert coarse.success, coarse.message
    assert coarse.iterations_used == 0 and coarse.exact_states == 1
    converged = call(client, valid_request(iterations=4))
    assert converged.success, converged.message
    np.testing.assert_allclose(
        trajectory_from_msg(converged.trajectories[0], SCENE)[:, :2],
        trajectory_from_msg(fine.trajectories[0], SCENE)[:, :2],
        atol=1e-9,
    )


def _mutations():
    """Ways to break a valid request; each must be refused with a message naming the problem."""

    def set_body(field, value, body="objects"):
        def mutate(request):
            target = request.initial_state.pusher if body == "pusher" else request.initial_state.objects[0]
            setattr(target, field, value)
        return mutate

    def set_control(field, value, sequence=0, index=0):
        def mutate(request):
            setattr(request.sequences[sequence].controls[index], field, value)
        return mutate

    def assign(field, value):
        return lambda request: setattr(request, field, value)

    return [
        ("nan x", set_body("x", math.nan), "finite"),
        ("inf yaw", set_body("yaw", math.inf), "finite"),
        ("nan pusher", set_body("vy", math.nan, "pusher"), "finite"),
        ("far away", set_body("x", 1e6), "sanity bound"),
        ("unknown object", set_body("name", "ghost"), "unknown object"),
        ("missing object", lambda r: setattr(r.initial_state, "objects", [
            body for body in r.initial_state.objects if body.name != r.initial_state.objects[0].name]), "missing"),
        ("duplicate object", lambda r: r.initial_state.objects.append(copy.deepcopy(r.initial_state.objects[0])),
         "duplicate"),
        ("overlap", lambda r: (setattr(r.initial_state.pusher, "x", r.initial_state.objects[0].x),
                               setattr(r.initial_state.pusher, "y", r.initial_state.objects[0].y)), "overlap"),
        ("no sequences", assign("sequences", []), "at least one"),
        ("too many sequences", lambda r: setattr(r, "sequences", r.sequences * 9), "at most 8"),
        ("ragged", lambda r: r.sequences.append(ControlSequence(controls=r.sequences[0].controls[:2])),
         "same length"),
        ("empty sequence", lambda r: setattr(r, "sequences", [ControlSequence()]), "empty"),
        ("too many controls", lambda r: [setattr(s, "controls", s.controls * 3) for s in r.sequences],
         "at most 8"),
        ("zero duration", set_control("duration", 0.0), "duration: must be > 0"),
        ("negative duration", set_control("duration", -1.0), "duration: must be > 0"),
        ("nan duration", set_control("duration", math.nan), "duration: must be finite"),
        ("nan velocity", set_control("vx", math.nan), "vx: must be finite"),
        ("too fast", set_control("vx", 3.0), "exceeds the limit"),
        ("long control", set_control("duration", 1e4), "durations"),
        ("unknown model", assign("model", "quantum"), "model"),
        ("unknown coarse model", assign("coarse_model", "oracle"), "coarse_model"),
        ("negative iterations", assign("iterations", -5), "iterations"),
        ("too many iterations", assign("iterations", 9), "iterations: expected an integer >= 0 and <= 4"),
        ("negative tolerance", assign("tolerance_position", -1.0), "tolerance_position"),
        ("nan tolerance", assign("tolerance_angle", math.nan), "tolerance_angle"),
        ("inf deadline", assign("deadline", math.inf), "deadline"),
    ]


def test_fuzz_of_malformed_requests_never_breaks_the_service(service):
    _, client = service
    rng = np.random.default_rng(2024)
    mutations = _mutations()
    sent = 0
    futures = []
    for round_index in range(1040):
        request = valid_request(sequences=int(rng.integers(1, 4)))
        chosen = [mutations[i] for i in rng.choice(len(mutations), size=int(rng.integers(1, 3)), replace=False)]
        for _, mutate, _ in chosen:
            # A mutation may not apply after another (e.g. no object left to edit): the
            # request is already broken by the first one then.
            with contextlib.suppress(IndexError):
                mutate(request)
        futures.append((chosen, client.call_async(request)))
        sent += 1
        if len(futures) >= 10 or round_index == 1039:
            deadline = time.monotonic() + 60
            for chosen, future in futures:
                while not future.done():
                    assert time.monotonic() < deadline
                    time.sleep(0.001)
                response = future.result()
                names = [name for name, _, _ in chosen]
                assert not response.success, f"{names} was accepted"
                assert response.message.startswith("invalid request"), (names, response.message)
                if len(chosen) == 1:
                    assert chosen[0][2] in response.message, (names, response.message)
            futures.clear()
    assert sent >= 1000
    after = call(client, valid_request(sequences=2))
    assert after.success, after.message
    assert len(after.trajectories) == 2


def test_auto_schedule_reports_what_it_ran(ros_context, spinning):
    node, client = start_service(ros_context, spinning, schedule="auto")
    try:
        response = call(client, valid_request(sequences=6, iterations=1))
        assert response.success, response.message
        assert response.schedule in ("parareal", "sample_parallel")
        if response.schedule == "sample_parallel":  # exact: every state equals the fine model's
            assert response.exact_states == 5 and all(response.trajectories[0].exact)
        else:
            assert response.exact_states == 2
    finally:
        node.close()


def test_concurrent_clients_get_their_own_answers(ros_context, spinning, service):
    _, client = service
    reference = {k: call(client, valid_request(sequences=1, iterations=k)) for k in (0, 1, 2)}
    results: dict[tuple[int, int], object] = {}

    def worker(thread_index):
        node = rclpy.create_node(f"concurrent_client_{thread_index}", context=ros_context)
        spinning.add(node)
        own = node.create_client(PredictTrajectory, "predict_trajectory")
        assert own.wait_for_service(timeout_sec=10)
        for repeat in range(3):
            iterations = (thread_index + repeat) % 3
            results[(thread_index, repeat)] = (iterations, call(own, valid_request(iterations=iterations)))

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(results) == 12
    expected = {k: trajectory_from_msg(answer.trajectories[0], SCENE) for k, answer in reference.items()}
    for first, second in ((0, 1), (1, 2), (0, 2)):  # the object poses differ with K, so a mix-up would show
        difference = expected[first][:, LAYOUT.object_poses] - expected[second][:, LAYOUT.object_poses]
        assert np.abs(difference).max() > 1e-6
    for iterations, response in results.values():
        assert response.success, response.message
        assert response.iterations_used == reference[iterations].iterations_used
        assert list(response.trajectories[0].exact) == list(reference[iterations].trajectories[0].exact)
        # the full state (pusher and every object), bit for bit
        np.testing.assert_array_equal(trajectory_from_msg(response.trajectories[0], SCENE), expected[iterations])


def test_bad_parameters_fail_at_start_naming_the_parameter(ros_context):
    from parapush.nodes.parameters import ParameterError

    for name, value, match in [
        ("model.backend", "gpu", "model.backend"),
        ("model.workers", -1, "model.workers"),
        ("model.fine.timestep", 1.0, "model.fine.timestep"),
        ("scene_file", "no_such_scene.yaml", "scene_file"),
        ("model.iterations", 100, "model.iterations"),
        ("model.workers", "two", "model.workers"),  # wrong type
    ]:
        with pytest.raises(ParameterError, match=match):
            PredictionServiceNode(context=ros_context, parameter_overrides=[Parameter(name, value=value)])


def test_a_killed_worker_process_is_replaced_and_the_request_answered(ros_context, spinning):
    node, client = start_service(ros_context, spinning, backend="processes", workers=2)
    try:
        backend = node.engine.backend
        pids = backend.worker_pids
        assert len(pids) == 2
        request = valid_request(sequences=6, model="fine")
        future = client.call_async(request)
        time.sleep(0.05)
        os.kill(pids[0], signal.SIGKILL)
        deadline = time.monotonic() + 120
        while not future.done():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        response = future.result()
        # Either answered correctly (work resubmitted) or failed cleanly, never hung or crashed.
        if response.success:
            reference = call(client, request)
            assert reference.success
            for got, want in zip(response.trajectories, reference.trajectories, strict=True):
                np.testing.assert_array_equal(trajectory_from_msg(got, SCENE)[:, :2],
                                              trajectory_from_msg(want, SCENE)[:, :2])
        else:
            assert "worker" in response.message
        assert pids[0] not in backend.worker_pids
        after = call(client, valid_request(sequences=2))
        assert after.success, after.message
        assert node.engine.statistics().worker_restarts >= 1
    finally:
        node.close()


def test_parameter_requests_do_not_break_the_service(ros_context, spinning):
    """What `ros2 param list/get/describe` sends (issue 17: the node's subscription used to
    overwrite rclpy's parameter table, and the first parameter request killed the service)."""
    from rclpy.parameter_client import AsyncParameterClient

    node, client = start_service(ros_context, spinning, iterations=2)
    try:
        client_node = rclpy.create_node("parameter_test_client", context=ros_context)
        spinning.add(client_node)
        parameters = AsyncParameterClient(client_node, "prediction_service")
        assert parameters.wait_for_services(timeout_sec=10.0)
        listed = wait_future(parameters.list_parameters()).result.names
        assert {"scene_file", "max_sequences", "model.iterations", "model.fine.timestep"} <= set(listed)
        values = wait_future(parameters.get_parameters(["model.iterations", "model.schedule"])).values
        assert (values[0].integer_value, values[1].string_value) == (2, "parareal")
        described = wait_future(parameters.describe_parameters(["model.iterations"])).descriptors[0]
        assert "Parareal iterations K" in described.description and described.read_only
        response = call(client, valid_request(iterations=-1))
        assert response.success, response.message
        assert response.iterations_used == 2
    finally:
        node.close()


def test_a_bad_k_is_refused_with_the_request_level_message_only(service, monkeypatch):
    """K's range is checked in one place: PredictionRequest (0 <= K <= N). The interface value
    is converted by iterations_from_interface alone (-1: unset; a value below -1 is no K and
    no sentinel either). The service answers with exactly the message of whichever refused it."""
    import parapush.nodes.prediction_messages as prediction_messages
    from parapush.prediction import RequestError
    from parapush.prediction.request import iterations_from_interface

    _, client = service
    with pytest.raises(RequestError) as library:
        PredictionRequest(INITIAL, PUSH[None], np.ones((1, 4)), iterations=5)
    response = call(client, valid_request(iterations=5))
    assert not response.success
    assert response.message == f"invalid request: {library.value}"
    with pytest.raises(RequestError, match="^iterations: ") as conversion:
        iterations_from_interface(-5)
    response = call(client, valid_request(iterations=-5))
    assert not response.success
    assert response.message == f"invalid request: {conversion.value}"
    received = []
    monkeypatch.setattr(prediction_messages, "PredictionRequest", lambda **fields: received.append(fields))
    for iterations in (99, -1):
        prediction_messages.prediction_request_from_msg(valid_request(iterations=iterations), SCENE)
    assert [fields["iterations"] for fields in received] == [99, None]


def test_request_stopping_rules_combine_with_the_configured_ones(ros_context, spinning):
    """A request that sets one rule keeps the other configured ones (here K = 2): a tolerance
    that is never met stops at the configured K, not at N."""
    node, client = start_service(ros_context, spinning, iterations=2, deadline=60.0)
    try:
        request = valid_request(iterations=-1)
        request.tolerance_position = 1e-12
        response = call(client, request)
        assert response.success, response.message
        assert (response.iterations_used, response.stop_reason) == (2, "iterations")
        request.iterations = 3  # the request's K replaces the configured one
        response = call(client, request)
        assert (response.iterations_used, response.stop_reason) == (3, "iterations")
        request.model = "coarse"
        assert call(client, request).iterations_used == 0
    finally:
        node.close()


def test_a_small_request_is_answered_while_a_large_one_runs(ros_context, spinning):
    node, client = start_service(ros_context, spinning, max_sequences=64)
    try:
        alone = call(client, valid_request(iterations=1))
        assert alone.success, alone.message
        large = valid_request(sequences=64, model="fine")
        for sequence in large.sequences:
            for control in sequence.controls:
                control.duration = 1.5
        large_future = client.call_async(large)
        deadline = time.monotonic() + 30.0
        while node.engine.fine_scheduler.calls_in_progress == 0:  # the large request is on the pool
            assert time.monotonic() < deadline and not large_future.done(), "the large request never started"
            time.sleep(0.002)
        small = call(client, valid_request(iterations=1))
        assert not large_future.done(), "the small request waited for the large one"
        assert small.success, small.message
        for received, expected in zip(small.trajectories, alone.trajectories, strict=True):
            np.testing.assert_array_equal(trajectory_from_msg(received, SCENE), trajectory_from_msg(expected, SCENE))
        answer = wait_future(large_future, timeout=300.0)
        assert answer.success, answer.message
        assert len(answer.trajectories) == 64 and answer.exact_states == 5
    finally:
        node.close()


def test_an_over_budget_request_is_refused_with_its_estimate(ros_context, spinning):
    node, client = start_service(ros_context, spinning, max_work=10.0)
    request = valid_request(sequences=8, iterations=8)
    for sequence in request.sequences:
        sequence.controls = list(sequence.controls) * 2
        for control in sequence.controls:
            control.duration = 10.0
    estimate = node.engine.estimate_work(prediction_request_from_msg(request, SCENE))
    response = call(client, request)
    assert not response.success
    assert response.message.startswith("refused: work: estimated ")
    assert f"over the budget of {node.limits.max_work:.4g} worker-s" in response.message
    assert f"{8 * 10.0 * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8):.4g} s of fine simulation" in response.message
    assert estimate.worker_seconds > node.limits.max_work
    assert call(client, valid_request()).success  # and the service goes on
    node.close()
