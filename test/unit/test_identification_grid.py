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
from parapush.scene.outline import Outline

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


HEXAGON = Outline.polygon([(0.0605 * math.cos(k * math.pi / 3), 0.0605 * math.sin(k * math.pi / 3)) for k in range(6)])


def test_the_cells_of_a_hexagon_cover_it():
    spec = ObjectSpec("nut", shape="polygon", vertices=HEXAGON.vertices)
    grid = CellGrid.from_spec(spec, 0.01)
    assert np.all(HEXAGON.signed_distance(grid.centers) < 0.0)  # every centre inside
    # every grid point inside is a cell (reference: all points of a larger grid, tested one by one)
    points = 0.01 * np.stack(np.meshgrid(np.arange(-10, 11), np.arange(-10, 11), indexing="ij"), -1).reshape(-1, 2)
    assert grid.count == int(np.sum(HEXAGON.signed_distance(points) < 0.0))
    perimeter = 6 * 0.0605
    assert abs(grid.count * 0.01**2 - HEXAGON.area) < 0.5 * perimeter * 0.01  # within half a cell of the outline
    assert [part.shape for part in grid.parts] == ["polygon"]
    gaps = np.linalg.norm(grid.centers[grid.neighbours[:, 0]] - grid.centers[grid.neighbours[:, 1]], axis=1)
    np.testing.assert_allclose(gaps, 0.01)
    # cylinders and boxes: the cells they had before outlines existed (one part each), from the spec or the outline
    box = ObjectSpec("crate", shape="box", half_extents=(0.05, 0.03))
    for spec, part in ((ObjectSpec("can", radius=0.0512), OutlinePart("cylinder", radius=0.0512)),
                       (box, OutlinePart("box", half_extents=(0.05, 0.03)))):
        before = CellGrid.from_parts([part], 0.01)
        for after in (CellGrid.from_spec(spec, 0.01), CellGrid.from_outline(spec.outline, 0.01)):
            assert after.parts == before.parts
            np.testing.assert_array_equal(after.centers, before.centers)
            np.testing.assert_array_equal(after.neighbours, before.neighbours)


def test_ellipse_and_non_convex_polygon_cells_and_contact():
    ellipse = CellGrid.from_spec(ObjectSpec("oval", shape="ellipse", half_extents=(0.06, 0.035)), 0.01)
    outline = Outline.ellipse(0.06, 0.035)
    assert np.all(outline.contains(ellipse.centers)) and abs(ellipse.count * 1e-4 - outline.area) < 0.5e-4 * 30
    ell = Outline.polygon([(0, 0), (0.08, 0), (0.08, 0.03), (0.03, 0.03), (0.03, 0.08), (0, 0.08)])
    grid = CellGrid.from_outline(ell, 0.01)
    assert len(grid.parts) == 2 and set(grid.part_of_cells().tolist()) == {0, 1}
    model = GridSlidingModel(grid, PUSHER_RADIUS)
    points = np.random.default_rng(0).uniform(-0.05, 0.13, (500, 2))
    distance, normal = model.outline_distance(torch.tensor(points))
    exact = ell.signed_distance(points)
    outside = exact > 0.0  # outside a union of parts: the union's distance
    np.testing.assert_allclose(distance.numpy()[outside], exact[outside], atol=1e-12)
    assert np.all(distance.numpy()[~outside] <= 0.0)
    step = 1e-7  # the normal is the distance's gradient
    gradient = np.stack([(ell.signed_distance(points + offset) - ell.signed_distance(points - offset)) / (2 * step)
                         for offset in np.eye(2) * step], -1)
    clear = exact > 1e-3
    np.testing.assert_allclose(normal.numpy()[clear], gradient[clear], atol=1e-6)
    with pytest.raises(ValueError, match="vertices: the polygon must be convex"):
        OutlinePart("polygon", vertices=ell.vertices)
    with pytest.raises(ValueError, match="vertices: only a polygon"):
        OutlinePart("box", vertices=((0, 0), (1, 0), (0, 1)))


def test_patches_of_a_non_convex_polygon_lie_inside_it():
    """A heavy U on a block: the region's bounding box spans the U's gap (its corners all inside), so the
    patch is shrunk until no vertex of the outline lies in it, and the scene takes it."""
    vertices = [(-0.03, -0.15), (0.12, -0.15), (0.12, 0.09), (0.06, 0.09), (0.06, 0.03), (0.03, 0.03),
                (0.03, 0.09), (-0.03, 0.09)]
    spec = ObjectSpec("cup", shape="polygon", vertices=vertices, mass=0.5)
    grid = CellGrid.from_spec(spec, 0.01)
    heavy = grid.centers[:, 1] > 0.0
    mass = np.where(heavy, 3.0, 1.0) * 0.5 / np.where(heavy, 3.0, 1.0).sum()
    _, patches = grid.patches(mass, np.full(grid.count, 0.5))
    assert patches and patches[0].mass > 0.0
    for patch in patches:  # the whole box inside, not only its corners (reference: a dense sampling of it)
        steps = np.linspace(-1.0, 1.0, 41)
        points = np.array(patch.center) + np.stack(np.meshgrid(steps, steps), -1).reshape(-1, 2) * patch.half_extents
        assert np.all(spec.outline.contains(points, tolerance=1e-9))
    ObjectSpec("cup", shape="polygon", vertices=vertices, mass=0.5 + sum(patch.mass for patch in patches),
               patches=patches)  # raises SceneError when a patch leaves the outline


def test_gradients_match_finite_differences_at_a_polygon_face():
    small = Outline.polygon([(0.03 * math.cos(k * math.pi / 3), 0.03 * math.sin(k * math.pi / 3)) for k in range(6)])
    grid = CellGrid.from_outline(small, 0.015)
    model = GridSlidingModel(grid, PUSHER_RADIUS, GridModelSettings(solver_iterations=30))
    # touching the hexagon's -x-ish face (apothem 0.026 m) and its vertex (-0.03, 0)
    apothem = 0.03 * math.cos(math.pi / 6)
    face = np.array([-math.cos(math.pi / 6), math.sin(math.pi / 6)])
    pushers = np.array([(apothem + PUSHER_RADIUS) * face, [-0.03 - PUSHER_RADIUS, 0.001]])

    def final_poses(mass, friction, pusher_friction):
        poses, _ = model.rollout(np.zeros((2, 3)), np.zeros((2, 3)), pushers,
                                 np.array([[[0.05, -0.01], [0.04, 0.0]]] * 2), [0.1, 0.1], mass, friction,
                                 pusher_friction)
        return poses[:, 1:]

    rng = np.random.default_rng(0)
    arguments = (torch.tensor(grid.uniform(0.5) * rng.uniform(0.5, 1.5, grid.count), requires_grad=True),
                 torch.tensor(rng.uniform(0.4, 0.8, grid.count), requires_grad=True),
                 torch.tensor(0.3, dtype=torch.float64, requires_grad=True))
    moved = final_poses(*arguments).detach().numpy()
    assert np.all(np.linalg.norm(moved[:, -1, :2], axis=1) > 0.003)  # both pushes move it
    assert torch.autograd.gradcheck(final_poses, arguments, eps=1e-6, atol=1e-7, rtol=1e-3)


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


def test_a_hexagon_s_heavy_side_is_found_from_a_few_pushes():
    """The smoke test of identification over a polygon: pushes simulated with known cells (one heavy,
    high-friction side), a few iterations from the uniform nominal."""
    grid = CellGrid.from_outline(HEXAGON, 0.02)
    model = GridSlidingModel(grid, PUSHER_RADIUS)
    heavy = grid.centers[:, 1] > 0.01
    mass = np.where(heavy, 3.0, 1.0)
    mass *= 0.5 / mass.sum()
    friction = np.where(heavy, 0.75, 0.5)
    training = simulated_pushes(model, mass, friction, 0.3, 4, seed=7)
    identifier = GridIdentifier(grid, PUSHER_RADIUS, ObjectParameters(mass=0.5, support_friction=0.5,
                                                                      pusher_friction=0.3))
    result = identifier.identify(training, GridIdentificationSettings(cell_size=0.02, iterations=12))
    weight = result.friction_weight
    print(f"hexagon, {grid.count} cells: friction weight heavy side {weight[heavy].mean():.4f} vs rest "
          f"{weight[~heavy].mean():.4f}; ADD {result.initial_error * 1000:.2f} -> {result.error * 1000:.2f} mm "
          f"in {result.seconds:.1f} s")
    assert result.error < 0.5 * result.initial_error
    assert weight[heavy].mean() > 2.0 * weight[~heavy].mean()  # true: 4.5 times


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
