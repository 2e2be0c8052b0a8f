"""The general learned coarse model: numpy = torch network, invariances, gate, sampler determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_learned_general_support import mixed_scene, random_weights_file

from parapush.learning import GeneralLearnedCoarseModel
from parapush.learning.general_sampling import GeneralPushSampler, GeneralSamplingConfig
from parapush.learning.graph_encoding import EDGE_SIZE, OUTPUT_SIZE, GraphEncodingSpec
from parapush.learning.graph_network_numpy import load_graph_network
from parapush.learning.graph_network_torch import InteractionNetwork
from parapush.scene import scene_from_dict


def test_numpy_forward_equals_torch_forward(tmp_path):
    torch.manual_seed(3)
    spec = GraphEncodingSpec()
    network = InteractionNetwork(spec.node_size, EDGE_SIZE, OUTPUT_SIZE, hidden=12, rounds=2)
    rng = np.random.default_rng(4)
    statistics = {"node_mean": rng.normal(size=spec.node_size), "node_scale": rng.uniform(0.5, 2, spec.node_size),
                  "edge_mean": rng.normal(size=EDGE_SIZE), "edge_scale": rng.uniform(0.5, 2, EDGE_SIZE),
                  "output_mean": rng.normal(size=OUTPUT_SIZE), "output_scale": rng.uniform(0.5, 2, OUTPUT_SIZE)}
    exported = network.export(statistics, {"encoding": spec.to_dict()})
    loaded = load_graph_network(exported.save(tmp_path / "net.npz"))
    nodes = rng.normal(size=(5, 4, spec.node_size))
    edges = rng.normal(size=(5, 4, 4, EDGE_SIZE))
    edge_mask = rng.random((5, 4, 4)) < 0.6
    node_mask = np.ones((5, 4), dtype=bool)

    def torch_outputs(mask):
        with torch.no_grad():
            return network(
                torch.from_numpy(((nodes - statistics["node_mean"]) / statistics["node_scale"]).astype(np.float32)),
                torch.from_numpy(((edges - statistics["edge_mean"]) / statistics["edge_scale"]).astype(np.float32)),
                torch.from_numpy(mask)).numpy() * statistics["output_scale"] + statistics["output_mean"]

    expected = torch_outputs(edge_mask)
    actual = loaded.forward(nodes, node_mask, edges, edge_mask)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)
    # an edge mask of all False makes the messages vanish: the output changes
    assert not np.allclose(loaded.forward(nodes, node_mask, edges, np.zeros_like(edge_mask)), actual)
    # padded graphs with few edges (as a crowded scene's): numpy computes only the edges that exist
    sparse = (rng.random((5, 4, 4)) < 0.15) & ~np.eye(4, dtype=bool)
    padded = np.arange(4)[None, :] < np.array([4, 3, 2, 1, 4])[:, None]
    sparse &= padded[:, :, None] & padded[:, None, :]
    np.testing.assert_allclose(loaded.forward(nodes, padded, edges, sparse),
                               np.where(padded[..., None], torch_outputs(sparse), 0.0), rtol=1e-4, atol=1e-5)
    # numpy evaluates the masked nodes only, and any node an edge touches: the torch network masks edges, not nodes
    unmasked_ends = (rng.random((5, 4, 4)) < 0.3) & ~np.eye(4, dtype=bool)
    assert np.any(unmasked_ends & ~(padded[:, :, None] & padded[:, None, :]))
    np.testing.assert_allclose(loaded.forward(nodes, padded, edges, unmasked_ends),
                               np.where(padded[..., None], torch_outputs(unmasked_ends), 0.0), rtol=1e-4, atol=1e-5)


def _state(scene, pusher=None, twists=None):
    poses = np.array([spec.pose for spec in scene.objects])
    pusher = np.array(scene.pusher.position) if pusher is None else pusher
    return scene.layout.compose(pusher, poses, None, twists)


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    return random_weights_file(tmp_path_factory.mktemp("general"), seed=7)


def _moved_rows(scene):
    """Pushes towards the cluster (contact) with several speeds and durations."""
    state = _state(scene)
    controls = np.array([[0.08, 0.0], [0.06, 0.02], [0.099, -0.01]])
    durations = np.array([1.0, 1.5, 0.8])
    return np.repeat(state[None], 3, axis=0), controls, durations


def test_prediction_is_invariant_to_the_object_order(weights):
    scene = mixed_scene()
    order = [3, 0, 4, 2, 1]
    data = {"name": "reordered", "table": {"friction": 0.6},
            "pusher": {"radius": 0.0145, "friction": 0.25, "position": [-0.12, 0.0]}, "object_friction": 0.3,
            "objects": [_spec_dict(scene.objects[index]) for index in order],
            "obstacles": [{"name": "post", "shape": "box", "half_extents": [0.03, 0.03], "pose": [0.26, 0.0, 0.5]}]}
    reordered = scene_from_dict(data)
    states, controls, durations = _moved_rows(scene)
    original = GeneralLearnedCoarseModel(scene, weights, resolve_overlaps=False).propagate(states, controls, durations)
    states2, _, _ = _moved_rows(reordered)
    permuted = GeneralLearnedCoarseModel(reordered, weights, resolve_overlaps=False).propagate(states2, controls,
                                                                                               durations)
    poses = scene.layout.poses(original)
    assert np.any(np.abs(poses - scene.layout.poses(states)) > 1e-4), "the push must move something"
    np.testing.assert_allclose(reordered.layout.poses(permuted), poses[:, order], atol=1e-7)
    np.testing.assert_allclose(reordered.layout.twists(permuted), scene.layout.twists(original)[:, order], atol=1e-6)


def _spec_dict(spec):
    data = {"name": spec.name, "shape": spec.shape, "mass": spec.mass, "friction": spec.friction,
            "pose": list(spec.pose)}
    if spec.shape == "cylinder":
        data["radius"] = spec.radius
    elif spec.shape in ("box", "ellipse"):
        data["half_extents"] = list(spec.half_extents)
    else:
        data["vertices"] = [list(vertex) for vertex in spec.vertices]
    return data


def _rigid(points, angle, shift):
    cos, sin = math.cos(angle), math.sin(angle)
    return np.stack([cos * points[..., 0] - sin * points[..., 1], sin * points[..., 0] + cos * points[..., 1]],
                    axis=-1) + shift


def test_prediction_moves_with_a_rigid_motion_of_the_scene(weights):
    scene = mixed_scene()
    angle, shift = 1.1, np.array([0.05, -0.08])
    objects = []
    for spec in scene.objects:
        data = _spec_dict(spec)
        position = _rigid(np.array(spec.pose[:2]), angle, shift)
        data["pose"] = [float(position[0]), float(position[1]), spec.pose[2] + angle]
        objects.append(data)
    obstacle_position = _rigid(np.array([0.26, 0.0]), angle, shift)
    moved_scene = scene_from_dict({
        "name": "rotated", "table": {"friction": 0.6, "length": 2.0, "width": 2.0}, "object_friction": 0.3,
        "pusher": {"radius": 0.0145, "friction": 0.25,
                   "position": _rigid(np.array([-0.12, 0.0]), angle, shift).tolist()},
        "objects": objects,
        "obstacles": [{"name": "post", "shape": "box", "half_extents": [0.03, 0.03],
                       "pose": [*obstacle_position.tolist(), 0.5 + angle]}]})
    states, controls, durations = _moved_rows(scene)
    twists = np.tile(np.array([[0.02, -0.01, 0.3]]), (len(scene.objects), 1))
    states[1] = _state(scene, twists=twists)
    original = GeneralLearnedCoarseModel(scene, weights, resolve_overlaps=False).propagate(states, controls, durations)
    rotated_states, _, _ = _moved_rows(moved_scene)
    rotated_twists = twists.copy()
    rotated_twists[:, :2] = _rigid(twists[:, :2], angle, 0.0)
    rotated_states[1] = _state(moved_scene, twists=rotated_twists)
    rotated = GeneralLearnedCoarseModel(moved_scene, weights, resolve_overlaps=False).propagate(
        rotated_states, _rigid(controls, angle, 0.0), durations)
    layout = scene.layout
    expected_poses = layout.poses(original).copy()
    expected_poses[..., :2] = _rigid(expected_poses[..., :2], angle, shift)
    expected_poses[..., 2] += angle
    actual_poses = layout.poses(rotated)
    np.testing.assert_allclose(actual_poses[..., :2], expected_poses[..., :2], atol=2e-6)
    np.testing.assert_allclose(np.angle(np.exp(1j * (actual_poses[..., 2] - expected_poses[..., 2]))), 0.0,
                               atol=2e-5)
    expected_twists = layout.twists(original).copy()
    expected_twists[..., :2] = _rigid(expected_twists[..., :2], angle, 0.0)
    np.testing.assert_allclose(layout.twists(rotated), expected_twists, atol=2e-5)


def test_a_push_that_misses_everything_leaves_the_objects_in_place_at_rest(weights):
    scene = mixed_scene()
    state = _state(scene)
    controls = np.array([[-0.1, 0.0], [0.0, -0.05]])  # away from every object
    predicted = GeneralLearnedCoarseModel(scene, weights).propagate(np.stack([state, state]), controls,
                                                                    np.array([1.0, 2.0]))
    layout = scene.layout
    np.testing.assert_array_equal(layout.poses(predicted), layout.poses(np.stack([state, state])))
    np.testing.assert_array_equal(layout.twists(predicted), 0.0)
    np.testing.assert_allclose(predicted[:, layout.pusher_position], state[layout.pusher_position] + controls
                               * np.array([[1.0], [2.0]]))


def test_a_pushed_row_moves_only_the_involved_objects(weights):
    scene = mixed_scene()
    states, controls, durations = _moved_rows(scene)
    predicted = GeneralLearnedCoarseModel(scene, weights).propagate(states, controls, durations)
    far = scene.object_index("far")
    np.testing.assert_array_equal(scene.layout.poses(predicted)[:, far], scene.layout.poses(states)[:, far])
    assert np.all(np.isfinite(predicted))


def test_the_sampler_is_deterministic_per_seed():
    sampler = GeneralPushSampler(GeneralSamplingConfig())
    first = [sampler.sample_scene(np.random.default_rng([5, index])) for index in range(6)]
    second = [sampler.sample_scene(np.random.default_rng([5, index])) for index in range(6)]
    for (scene_a, push_a), (scene_b, push_b) in zip(first, second, strict=True):
        assert scene_a == scene_b
        np.testing.assert_array_equal(push_a.state, push_b.state)
        np.testing.assert_array_equal(push_a.control, push_b.control)
    other = sampler.sample_scene(np.random.default_rng([6, 0]))
    assert other[0] != first[0][0]
    for scene_dict, _ in first:
        scene = scene_from_dict(scene_dict)
        assert 1 <= len(scene.objects) <= 16
        GeneralSamplingConfig().ranges.check_scene(scene)


def test_mirroring_the_scene_mirrors_the_features_as_training_augments_them():
    scene = mixed_scene()
    mirrored_objects = []
    for spec in scene.objects:
        data = _spec_dict(spec)
        data["pose"] = [spec.pose[0], -spec.pose[1], -spec.pose[2]]
        if spec.shape == "polygon":
            data["vertices"] = [[x, -y] for x, y in spec.vertices]
        mirrored_objects.append(data)
    mirrored = scene_from_dict({
        "name": "mirrored", "table": {"friction": 0.6}, "object_friction": 0.3, "objects": mirrored_objects,
        "pusher": {"radius": 0.0145, "friction": 0.25, "position": [-0.12, 0.0]},
        "obstacles": [{"name": "post", "shape": "box", "half_extents": [0.03, 0.03], "pose": [0.26, 0.0, -0.5]}]})
    from parapush.learning.body_descriptors import BodyDescriptors
    from parapush.learning.graph_encoding import GraphEncoder

    spec = GraphEncodingSpec()
    encoder = GraphEncoder(spec)
    twists = np.tile(np.array([[0.02, -0.01, 0.3]]), (len(scene.objects), 1))

    def encode(which, control, twist):
        poses = np.array([item.pose for item in which.objects])[None]
        obstacles = np.array([item.pose for item in which.obstacles])[None]
        return encoder.encode(BodyDescriptors.from_scene(which), np.array([[-0.12, 0.0]]), poses, twist[None],
                              obstacles, np.array([control]), np.array([1.2]),
                              np.array([[0.0145, 0.25, 0.3]]))

    original = encode(scene, [0.08, 0.03], twists)
    flipped = encode(mirrored, [0.08, -0.03], twists * np.array([1.0, -1.0, -1.0]))
    permutation, node_signs, edge_signs, _ = spec.mirror_signs()
    np.testing.assert_array_equal(original.node_bodies, flipped.node_bodies)
    np.testing.assert_allclose(flipped.nodes, original.nodes[..., permutation] * node_signs, atol=1e-9)
    np.testing.assert_array_equal(flipped.edge_mask, original.edge_mask)
    np.testing.assert_allclose(flipped.edges, original.edges * edge_signs, atol=1e-9)


def test_the_gate_clips_only_bodies_near_the_path_and_finds_the_same_contacts():
    from parapush.learning.body_descriptors import SUPPORT_SAMPLES, BodyDescriptors
    from parapush.learning.graph_encoding import GraphEncoder
    from parapush.physics.planar_geometry import rotate

    scene = mixed_scene()
    descriptors = BodyDescriptors.from_scene(scene)
    encoder = GraphEncoder(GraphEncodingSpec())
    rng = np.random.default_rng(11)
    rows, bodies = 4000, len(descriptors.present)
    poses = np.array([item.pose for item in scene.objects] + [item.pose for item in scene.obstacles])
    yaws = np.broadcast_to(poses[:, 2], (rows, bodies))
    centroids = np.broadcast_to(poses[:, :2] + rotate(descriptors.centroids, poses[:, 2]), (rows, bodies, 2))
    pusher = rng.uniform([-0.25, -0.2], [0.35, 0.35], (rows, 2))
    travel = rng.normal(0.0, 0.06, (rows, 2)) * (rng.random((rows, 1)) < 0.95)  # some rows stand still
    pusher_radius = rng.uniform(0.005, 0.03, rows)
    present = ~descriptors.static
    contact, entry = encoder.path_contacts(pusher, travel, centroids, yaws, descriptors.supports, pusher_radius,
                                           present)
    # the reference: every path clipped against every body, no shortcut
    hit, enter = encoder.clip(
        (pusher[:, None] - centroids).reshape(-1, 2), np.repeat(travel, bodies, axis=0), yaws.reshape(-1),
        np.broadcast_to(descriptors.supports, (rows, bodies, SUPPORT_SAMPLES)).reshape(-1, SUPPORT_SAMPLES),
        np.repeat(pusher_radius, bodies))
    expected_contact = hit.reshape(rows, bodies) & present[None, :]
    expected_entry = np.where(expected_contact, enter.reshape(rows, bodies), 1.0)
    assert 0.1 < contact.any(axis=1).mean() < 0.9  # the paths graze, enter and miss
    np.testing.assert_array_equal(contact, expected_contact)
    np.testing.assert_allclose(entry, expected_entry, rtol=0.0, atol=1e-12)


def test_support_read_through_rows_equals_support_of_gathered_tables():
    from parapush.learning.body_descriptors import BodyDescriptors, support_along

    tables = BodyDescriptors.from_scene(mixed_scene()).supports  # (B, S)
    rng = np.random.default_rng(5)
    rows = rng.integers(0, len(tables), (7, 3))
    angles = rng.uniform(-10.0, 10.0, (7, 3, 4))
    np.testing.assert_array_equal(support_along(tables, angles, rows=rows), support_along(tables[rows], angles))
    with pytest.raises(ValueError, match="tables"):
        support_along(tables[None], angles, rows=rows)
