"""The differentiable cell-grid sliding model and the identification of mass/friction maps (no ROS).

References: finite differences (gradients), the quasi-static Coulomb solution computed
independently by minimising the support's dissipation (the model's physics), the fine
MuJoCo model (same pushes of a uniform cylinder) and pushes simulated with known cells
(identification).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from parapush.identification import ObjectParameters, PushRecord
from parapush.identification.cell_grid import CellGrid, OutlinePart
from parapush.identification.grid_identifier import GridIdentificationSettings, GridIdentifier
from parapush.identification.grid_model import GridModelSettings, GridSlidingModel
from parapush.physics.fine import FineModel
from parapush.scene import ObjectSpec, Pusher, Scene, StateLayout, Table

PUSHER_RADIUS = 0.0145


# -- the grid -------------------------------------------------------------------------------------
def test_cells_fill_the_outline_and_neighbours_share_a_side():
    disc = CellGrid.from_parts([OutlinePart("cylinder", radius=0.05)], 0.01)
    assert np.all(np.linalg.norm(disc.centers, axis=1) < 0.05)
    assert disc.count == sum(1 for i in range(-5, 6) for j in range(-5, 6) if math.hypot(i, j) < 5)
    gaps = np.linalg.norm(disc.centers[disc.neighbours[:, 0]] - disc.centers[disc.neighbours[:, 1]], axis=1)
    np.testing.assert_allclose(gaps, 0.01)
    tee = CellGrid.from_parts([OutlinePart("box", half_extents=(0.06, 0.015)),
                               OutlinePart("box", center=(0.0, -0.05), half_extents=(0.015, 0.04))], 0.01)
    assert set(tee.part_of_cells().tolist()) == {0, 1}
    with pytest.raises(ValueError, match="shape: expected one of"):
        OutlinePart("sphere")
    with pytest.raises(ValueError, match="cell_size: 1.0 m leaves no cell"):
        CellGrid.from_parts([OutlinePart("box", center=(0.5, 0.5), half_extents=(0.02, 0.02))], 1.0)


def test_outline_distance_and_normal_of_a_union():
    tee = CellGrid.from_parts([OutlinePart("box", half_extents=(0.06, 0.015)),
                               OutlinePart("cylinder", center=(0.0, -0.05), radius=0.02)], 0.01)
    model = GridSlidingModel(tee, PUSHER_RADIUS)
    points = torch.tensor([[-0.1, 0.0], [0.0, 0.03], [0.0, -0.09], [0.07, 0.025]], dtype=torch.float64)
    distance, normal = model.outline_distance(points)
    np.testing.assert_allclose(distance.numpy(), [0.04, 0.015, 0.02, math.hypot(0.01, 0.01)], atol=1e-12)
    np.testing.assert_allclose(normal.numpy(), [[-1, 0], [0, 1], [0, -1], [math.sqrt(0.5), math.sqrt(0.5)]],
                               atol=1e-12)


# -- the model ------------------------------------------------------------------------------------
def test_gradients_match_finite_differences():
    grid = CellGrid.from_parts([OutlinePart("box", half_extents=(0.02, 0.02))], 0.015)
    assert grid.count == 9
    model = GridSlidingModel(grid, PUSHER_RADIUS, GridModelSettings(solver_iterations=30))
    pushers = np.array([[-0.0345, 0.008], [-0.0345, -0.004]])  # touching the -x face, off centre

    def final_poses(mass, friction, pusher_friction):
        poses, _ = model.rollout(np.zeros((2, 3)), np.zeros((2, 3)), pushers,
                                 np.array([[[0.05, 0.01], [0.04, 0.0]]] * 2), [0.1, 0.1], mass, friction,
                                 pusher_friction)
        return poses[:, 1:]

    rng = np.random.default_rng(0)
    arguments = (torch.tensor(grid.uniform(0.5) * rng.uniform(0.5, 1.5, 9), requires_grad=True),
                 torch.tensor(rng.uniform(0.4, 0.8, 9), requires_grad=True),
                 torch.tensor(0.3, dtype=torch.float64, requires_grad=True))
    assert torch.autograd.gradcheck(final_poses, arguments, eps=1e-6, atol=1e-7, rtol=1e-3)


def test_a_frictionless_push_moves_a_box_as_the_quasi_static_coulomb_solution():
    """Pushed slowly, the object's twist minimises the support's dissipation sum_i mu_i m_i g |v_i|
    subject to the pusher's normal velocity (independent reference: Nelder-Mead on that minimum)."""
    grid = CellGrid.from_parts([OutlinePart("box", half_extents=(0.0545, 0.077))], 0.01)
    offset, speed = 0.03, 0.05
    rng = np.random.default_rng(1)
    friction = rng.uniform(0.3, 0.9, grid.count)

    def dissipation(unknowns):
        sideways, spin = unknowns
        forward = speed + spin * offset  # the contact point (-hx, offset) moves with the pusher along x
        velocities = np.column_stack([forward - spin * grid.centers[:, 1], sideways + spin * grid.centers[:, 0]])
        return float(np.sum(friction * np.sqrt(np.sum(velocities**2, axis=1) + 1e-14)))

    solution = minimize(dissipation, [0.0, 0.0], method="Nelder-Mead",
                        options={"xatol": 1e-10, "fatol": 1e-16, "maxiter": 4000}).x
    expected = np.array([speed + solution[1] * offset, *solution])
    model = GridSlidingModel(grid, PUSHER_RADIUS, GridModelSettings(timestep=0.005))
    poses, _ = model.rollout(np.zeros((1, 3)), np.zeros((1, 3)), np.array([[-0.0545 - PUSHER_RADIUS, offset]]),
                             np.array([[[speed, 0.0], [speed, 0.0]]]), [0.02, 0.02], grid.uniform(0.5), friction,
                             0.0)
    twist = (poses[0, 2] - poses[0, 1]).numpy() / 0.02  # after the start-up transient
    np.testing.assert_allclose(twist, expected, rtol=0.05, atol=1e-3)  # 2 % of the speed: the pose turns meanwhile


def test_a_uniform_cylinder_slides_as_in_the_fine_model():
    """Same pushes in MuJoCo and the grid model; the position error is reported, and must stay a
    small part of the distance pushed (MuJoCo's soft friction rotates objects far less than
    Coulomb friction does, so yaw is reported only)."""
    spec = ObjectSpec(name="disc", shape="cylinder", mass=0.5, friction=0.6)
    scene = Scene(name="check", table=Table(friction=0.6), pusher=Pusher(friction=0.3, position=(-0.1, 0.0)),
                  objects=(spec,))
    fine = FineModel(scene)
    rng = np.random.default_rng(2)
    reach = spec.radius + scene.pusher.radius + 0.002
    starts = np.stack([scene.layout.compose(np.array([-reach, rng.uniform(-0.03, 0.03)]), np.zeros((1, 3)))
                       for _ in range(4)])
    controls = np.stack([np.column_stack([np.full(3, 0.05), rng.uniform(-0.01, 0.01, 3)]) for _ in range(4)])
    states = starts
    for index in range(3):
        states = fine.propagate(states, controls[:, index], np.full(4, 0.5))
    grid = CellGrid.from_spec(spec, 0.01)
    model = GridSlidingModel(grid, scene.pusher.radius)
    poses, _ = model.rollout(starts[:, 2:5], starts[:, 7:10], starts[:, :2], controls, [0.5] * 3,
                             grid.uniform(spec.mass), np.full(grid.count, 0.6), 0.3)
    errors = np.linalg.norm(poses[:, -1, :2].numpy() - states[:, 2:4], axis=1)
    travelled = np.linalg.norm(states[:, 2:4] - starts[:, 2:4], axis=1)
    yaw = np.degrees(poses[:, -1, 2].numpy() - states[:, 4])
    print(f"grid vs MuJoCo, uniform cylinder: final position error {np.round(errors * 1000, 1)} mm after "
          f"{np.round(travelled * 1000, 0)} mm; yaw difference {np.round(yaw, 1)} deg")
    assert np.all(errors < 0.1 * travelled)


# -- identification -------------------------------------------------------------------------------
def simulated_pushes(model: GridSlidingModel, mass, friction, pusher_friction, count: int, seed: int):
    """``count`` pushes of 2 x 0.5 s at 5 cm/s towards the object from random directions, simulated with
    known cells; states in a one-object layout."""
    rng = np.random.default_rng(seed)
    layout = StateLayout(1)
    records = []
    for _ in range(count):
        heading = rng.uniform(-math.pi, math.pi)
        direction = np.array([math.cos(heading), math.sin(heading)])
        side = np.array([-direction[1], direction[0]])
        along = np.linspace(-0.15, 0.0, 1501)
        path = torch.tensor(along[:, None] * direction + rng.uniform(-0.02, 0.02) * side)
        distance, _ = model.outline_distance(path)
        first = int(np.argmax(distance.numpy() < model.pusher_radius + 0.002))
        start = layout.compose(path[first].numpy(), np.zeros((1, 3)))
        controls = np.array([0.05 * direction + rng.uniform(-0.01, 0.01, 2) for _ in range(2)])
        poses, pushers = model.rollout(start[None, 2:5], np.zeros((1, 3)), start[None, :2], controls[None], [0.5] * 2,
                                       mass, friction, pusher_friction)
        states = np.zeros((3, layout.dimension))
        states[:, 2:5], states[:, :2] = poses[0].numpy(), pushers[0].numpy()
        records.append(PushRecord(states, controls, np.full(2, 0.5)))
    return records


def test_a_heavy_high_friction_end_is_found_from_pushes():
    grid = CellGrid.from_parts([OutlinePart("box", half_extents=(0.06, 0.04))], 0.015)
    model = GridSlidingModel(grid, PUSHER_RADIUS)
    heavy = grid.centers[:, 0] > 0.02
    mass = np.where(heavy, 3.0, 1.0)
    mass *= 0.5 / mass.sum()
    friction = np.where(heavy, 0.75, 0.5)
    training = simulated_pushes(model, mass, friction, 0.3, 6, seed=3)
    nominal = ObjectParameters(mass=0.5, support_friction=0.5, pusher_friction=0.3)
    identifier = GridIdentifier(grid, PUSHER_RADIUS, nominal)
    result = identifier.identify(training, GridIdentificationSettings(cell_size=0.015, iterations=30))
    weight = result.friction_weight
    print(f"identified friction weight, heavy end {weight[heavy].mean():.4f} vs rest {weight[~heavy].mean():.4f} "
          f"(true {np.mean(mass[heavy] * 0.75):.4f} vs {np.mean(mass[~heavy] * 0.5):.4f}); ADD "
          f"{result.initial_error * 1000:.2f} -> {result.error * 1000:.2f} mm in {result.seconds:.1f} s")
    assert weight[heavy].mean() > 2.0 * weight[~heavy].mean()
    assert result.error < 0.3 * result.initial_error
    assert np.all(result.sensitivity > 0.0) and result.sensitivity.shape == (grid.count,)
    held_out = simulated_pushes(model, mass, friction, 0.3, 4, seed=4)
    before = identifier.add_errors(held_out, grid.uniform(0.5), np.full(grid.count, 0.5), 0.3).mean()
    after = identifier.add_errors(held_out, result.cell_mass, result.cell_friction, result.pusher_friction).mean()
    assert float(after) < 0.5 * float(before)


def test_records_are_checked():
    grid = CellGrid.from_parts([OutlinePart("cylinder", radius=0.05)], 0.02)
    identifier = GridIdentifier(grid, PUSHER_RADIUS, ObjectParameters(mass=0.5, support_friction=0.5,
                                                                      pusher_friction=0.3))
    with pytest.raises(ValueError, match="records: at least one"):
        identifier.identify([])
    with pytest.raises(ValueError, match=r"records\[0\].states: expected 10 values"):
        identifier.identify([PushRecord(np.zeros((2, 16)), np.zeros((1, 2)), np.ones(1))])
    with pytest.raises(ValueError, match="durations: 0.51 s is not a whole number"):
        identifier.identify([PushRecord(np.zeros((2, 10)), np.zeros((1, 2)), np.array([0.51]))])


def test_per_record_cells_predict_each_record_as_its_own_cells_and_sensitivity_is_per_record():
    """(R, K) cells: record r is predicted with row r (reference: each record alone with its row); the
    sensitivity's one backward pass equals one gradient per record (reference: autograd on each error)."""
    grid = CellGrid.from_parts([OutlinePart("box", half_extents=(0.04, 0.03))], 0.015)
    model = GridSlidingModel(grid, PUSHER_RADIUS)
    records = simulated_pushes(model, grid.uniform(0.5), np.full(grid.count, 0.5), 0.3, 3, seed=5)
    identifier = GridIdentifier(grid, PUSHER_RADIUS, ObjectParameters(mass=0.5, support_friction=0.5,
                                                                      pusher_friction=0.3))
    rng = np.random.default_rng(6)
    masses = grid.uniform(0.5) * rng.uniform(0.5, 1.5, (3, grid.count))
    frictions = rng.uniform(0.3, 0.8, (3, grid.count))
    together = identifier.predict(records, masses, frictions, 0.3)
    for index, record in enumerate(records):
        (alone,) = identifier.predict([record], masses[index], frictions[index], 0.3)
        np.testing.assert_allclose(together[index].numpy(), alone.numpy(), atol=1e-12)
    count = grid.count
    with pytest.raises(ValueError, match=rf"cell_friction: expected shape \({count},\) or \(3, {count}\), "
                                         rf"got \(2, {count}\)"):
        identifier.predict(records, masses, frictions[:2], 0.3)

    logs = [torch.tensor(np.log(masses[0] / grid.uniform(0.5))), torch.tensor(np.log(frictions[0] / 0.5)),
            torch.tensor(0.0, dtype=torch.float64)]
    base = (torch.tensor(grid.uniform(0.5)), torch.full((grid.count,), 0.5, dtype=torch.float64),
            torch.tensor(0.3, dtype=torch.float64))
    sensitivity = identifier._sensitivity(records, *base, logs)
    rows = []
    for record in records:
        log_weight = torch.zeros(grid.count, dtype=torch.float64, requires_grad=True)
        error = identifier.add_errors([record], base[0] * torch.exp(logs[0]),
                                      base[1] * torch.exp(logs[1] + log_weight), base[2])[0]
        rows.append(torch.autograd.grad(error, log_weight)[0])
    np.testing.assert_allclose(sensitivity, torch.stack(rows).pow(2).mean(0).sqrt().numpy(), rtol=1e-9, atol=1e-15)
    assert np.all(sensitivity > 0.0)
