"""Differentiable planar sliding of a cell-grid object pushed by a cylinder (torch).

The object's outline (what the pusher touches) is its :class:`~parapush.identification.cell_grid.CellGrid`'s
parts: discs, axis-aligned boxes and convex polygons (a scene polygon's or ellipse's convex parts),
their union's signed distance and outward normal differentiable in the pusher's body-frame position.

The paper (shared/papers/differentiable-physics-sliding-unknown-objects.txt, Fig. 2) writes
each time step of the pushed object's motion as an LCP: the cells' mass matrix, rigid
adjacency constraints that make the cells move as one body, Coulomb friction of every cell
on the support with its own coefficient ``mu_i`` and normal force ``m_i g``, and the
pusher's contact. Here the cells are held together exactly (the object's twist is the only
unknown) and the step is the equivalent convex minimisation (the LCP's optimality
conditions are its stationarity conditions, with maximal dissipation for friction): with
time step ``dt`` (:class:`GridModelSettings`), the next twist ``v'`` = (vx, vy, w) of the
body origin in the table frame minimises

    E(v') = 1/2 (v' - v)^T M(q) (v' - v)                 inertia, M = sum_i of the cells' masses
          + dt g sum_i mu_i m_i s(v_i(v'))                support friction of each cell i
          + 1/2 k max(0, dt n . v_c(v') - phi)^2          pusher contact (non-penetration, stiffness k)
          + dt mu_p lambda s(t . (v_c(v') - u))           pusher friction (normal force lambda lagged a step)

where ``v_i`` is cell i's velocity, ``v_c`` the object's velocity at the contact point,
``phi`` the gap to the pusher after its move ``dt u`` (``u``: the commanded pusher velocity;
the pusher is kinematic, like the fine model's stiff velocity servo), ``n``/``t`` the
contact normal/tangent and ``s(x) = sqrt(|x|^2 + eps^2) - eps`` the Coulomb norm smoothed
below ``eps`` m/s. Then ``q' = q + dt v'`` (semi-implicit Euler).

Solving: Newton steps with a step choice among the Newton step (1, 1/2, 1/4) and the
majorise-minimise step (the friction norms replaced by their quadratic upper bounds), all
evaluated together, so every iteration decreases ``E``. Gradients: the solver runs without
autograd (in numpy: the same functions, written for both array kinds) and one last Newton step
from the (detached) solution is differentiated in torch, its Hessian held constant, which is
the implicit-function theorem's derivative ``dv'/dtheta = -H^-1 dG/dtheta`` at the solution.
Everything is batched over pushes (and hypotheses) along the first dimension.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from parapush.identification.cell_grid import CellGrid
from parapush.settings import check_settings, setting
from parapush.validation import check_positive

CANDIDATE_STEPS = (1.0, 0.5, 0.25)
"""Fractions of the Newton step tried at every iteration (with the majorise-minimise step and no step)."""


def array_namespace(array):
    """The module whose functions operate on ``array``: torch for a tensor (the differentiable step),
    numpy for an array (the solver's iterations)."""
    return torch if isinstance(array, torch.Tensor) else np


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run torch on one thread meanwhile: the model's tensors are small (a few hundred numbers per
    operation), so intra-op threads only add overhead, five-fold on a loaded 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@dataclass(frozen=True, kw_only=True)
class GridModelSettings:
    """The differentiable sliding model (each field's meaning, unit and range: its :func:`setting`)."""

    timestep: float = setting(0.025, "time step dt of the differentiable model", unit="s", above=0.0,
                              maximum=0.1)
    friction_smoothing: float = setting(
        0.002, "speed eps below which Coulomb friction is smoothed", unit="m/s", above=0.0, maximum=0.1
    )
    contact_stiffness: float = setting(3.0e4, "pusher contact penalty stiffness k", unit="N/m", above=0.0)
    solver_iterations: int = setting(
        4, "Newton iterations per time step (4: converged to < 1 um on the tests)", minimum=1, maximum=100
    )
    gravity: float = setting(9.81, "gravity g", unit="m/s^2", above=0.0)

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass
class _StepTerms:
    """What one step's potential needs (batch B, K cells), built once per step: torch tensors (the
    differentiable step), or their detached numpy copies (the solver's iterations, :meth:`GridSlidingModel.step`)."""

    previous: torch.Tensor  # (B, 3) twist v
    mass_matrix: torch.Tensor  # (B, 3, 3)
    offsets: torch.Tensor  # (B, K, 2) cell centres relative to the body origin, table frame, m
    friction_weight: torch.Tensor  # (B, K) dt g mu_i m_i, N s
    normal_row: torch.Tensor  # (B, 3) n . v_c = normal_row . v'
    tangent_row: torch.Tensor  # (B, 3)
    tangent_pusher: torch.Tensor  # (B,) t . u, m/s
    gap: torch.Tensor  # (B,) phi, m
    pusher_weight: torch.Tensor  # (B,) dt mu_p lambda, N s


class GridSlidingModel:
    """Simulates pushes of one :class:`CellGrid` object by a cylindrical pusher.

    Args:
        grid: the object's cells and outline.
        pusher_radius: m.
        settings: the model (default :class:`GridModelSettings`).
        dtype: torch dtype of every tensor (float64 for gradient checks).
    """

    def __init__(self, grid: CellGrid, pusher_radius: float, settings: GridModelSettings | None = None,
                 dtype: torch.dtype = torch.float64) -> None:
        if not isinstance(grid, CellGrid):
            raise TypeError(f"grid: expected CellGrid, got {type(grid).__name__}")
        self.settings = GridModelSettings() if settings is None else settings
        if not isinstance(self.settings, GridModelSettings):
            raise TypeError(f"settings: expected GridModelSettings, got {type(self.settings).__name__}")
        self.grid = grid
        self.pusher_radius = check_positive("pusher_radius", pusher_radius)
        self.dtype = dtype
        self.centers = torch.tensor(np.array(grid.centers), dtype=dtype)
        self.cell_moment = torch.as_tensor(np.sum(grid.centers**2, axis=1) + grid.cell_size**2 / 6.0, dtype=dtype)
        circles = [(*part.center, part.radius) for part in grid.parts if part.shape == "cylinder"]
        boxes = [(*part.center, *part.half_extents) for part in grid.parts if part.shape == "box"]
        self._circles = torch.tensor(circles, dtype=dtype).reshape(-1, 3)
        self._boxes = torch.tensor(boxes, dtype=dtype).reshape(-1, 4)
        # Convex polygons as (P, E, 2) edge starts, edge vectors and outward unit normals, body frame;
        # a part with fewer than E edges repeats its first (a repeated edge changes no minimum or maximum).
        polygons = [np.array(part.center) + np.array(part.vertices) for part in grid.parts if part.shape == "polygon"]
        edges = max((len(polygon) for polygon in polygons), default=0)
        starts = np.array([np.concatenate([polygon, np.repeat(polygon[:1], edges - len(polygon), axis=0)])
                           for polygon in polygons]).reshape(len(polygons), edges, 2)
        ends = np.array([np.concatenate([np.roll(polygon, -1, axis=0),
                                         np.repeat(polygon[1:2], edges - len(polygon), axis=0)])
                         for polygon in polygons]).reshape(len(polygons), edges, 2)
        self._edge_starts = torch.tensor(starts, dtype=dtype)
        self._edge_vectors = torch.tensor(ends - starts, dtype=dtype)
        lengths = torch.linalg.vector_norm(self._edge_vectors, dim=-1, keepdim=True)
        self._edge_normals = torch.stack([self._edge_vectors[..., 1], -self._edge_vectors[..., 0]], -1) / lengths
        self._edge_lengths2 = lengths[..., 0] ** 2

    # -- geometry ---------------------------------------------------------------------------
    def outline_distance(self, points: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Signed distance (B,) m and outward unit normal (B, 2) of body-frame points (B, 2) to the outline."""
        distances, normals = [], []
        if self._circles.shape[0]:
            offset = points[:, None, :] - self._circles[None, :, :2]
            length = torch.linalg.vector_norm(offset, dim=-1).clamp_min(1e-12)
            distances.append(length - self._circles[None, :, 2])
            normals.append(offset / length[..., None])
        if self._boxes.shape[0]:
            offset = points[:, None, :] - self._boxes[None, :, :2]
            excess = offset.abs() - self._boxes[None, :, 2:]
            outside = excess.clamp_min(0.0)
            length = torch.linalg.vector_norm(outside, dim=-1)
            distances.append(length + excess.max(dim=-1).values.clamp_max(0.0))
            sign = torch.where(offset >= 0.0, 1.0, -1.0).to(points.dtype)
            inside_axis = torch.nn.functional.one_hot(excess.argmax(dim=-1), 2).to(points.dtype)
            normals.append(torch.where((length > 0.0)[..., None], outside / length.clamp_min(1e-12)[..., None],
                                       inside_axis) * sign)
        if self._edge_starts.shape[0]:
            # Outside a convex polygon: the distance to the nearest point of its edges, the normal from
            # there to the point; inside: the nearest edge line's (the largest of the edges' plane distances).
            relative = points[:, None, None, :] - self._edge_starts[None]  # (B, P, E, 2)
            along = ((relative * self._edge_vectors).sum(-1) / self._edge_lengths2).clamp(0.0, 1.0)
            away = relative - along[..., None] * self._edge_vectors
            length = torch.linalg.vector_norm(away, dim=-1)  # (B, P, E)
            nearest_length, nearest_edge = length.min(dim=-1)  # (B, P)
            plane, plane_edge = (relative * self._edge_normals[None]).sum(-1).max(dim=-1)
            outside = plane > 0.0
            distances.append(torch.where(outside, nearest_length, plane))
            away = torch.gather(away, 2, nearest_edge[..., None, None].expand(-1, -1, 1, 2))[:, :, 0]
            inward = self._edge_normals[torch.arange(self._edge_normals.shape[0])[None], plane_edge]  # (B, P, 2)
            normals.append(torch.where(outside[..., None], away / nearest_length.clamp_min(1e-12)[..., None], inward))
        distance, normal = torch.cat(distances, dim=1), torch.cat(normals, dim=1)
        nearest = distance.argmin(dim=1)
        rows = torch.arange(points.shape[0])
        return distance[rows, nearest], normal[rows, nearest]

    # -- one step ---------------------------------------------------------------------------
    def _terms(self, pose, twist, pusher_next, control, normal_force, cell_mass, cell_friction,
               pusher_friction) -> _StepTerms:
        dt = self.settings.timestep
        cos, sin = torch.cos(pose[:, 2:3]), torch.sin(pose[:, 2:3])  # (B, 1)
        # The cell centres in the table frame's orientation, R c_i (explicit products: einsum's own
        # overhead was a tenth of the identification's time, the tensors being small).
        center_x, center_y = self.centers[:, 0], self.centers[:, 1]
        offset_x, offset_y = cos * center_x - sin * center_y, sin * center_x + cos * center_y  # (B, K)
        offsets = torch.stack([offset_x, offset_y], -1)
        total = cell_mass.sum(dim=1)
        first_x, first_y = (cell_mass * offset_x).sum(dim=1), (cell_mass * offset_y).sum(dim=1)
        moment = (cell_mass * self.cell_moment).sum(dim=1)
        zero = torch.zeros_like(total)
        mass_matrix = torch.stack([
            torch.stack([total, zero, -first_y], -1),
            torch.stack([zero, total, first_x], -1),
            torch.stack([-first_y, first_x, moment], -1),
        ], -2)
        relative = pusher_next - pose[:, :2]
        local = torch.cat([cos * relative[:, :1] + sin * relative[:, 1:],
                           cos * relative[:, 1:] - sin * relative[:, :1]], -1)  # R^T (p' - x)
        distance, local_normal = self.outline_distance(local)
        normal = torch.cat([cos * local_normal[:, :1] - sin * local_normal[:, 1:],
                            sin * local_normal[:, :1] + cos * local_normal[:, 1:]], -1)
        contact = relative - self.pusher_radius * normal  # contact point relative to the body origin
        tangent = torch.stack([-normal[:, 1], normal[:, 0]], -1)

        def row(direction: torch.Tensor) -> torch.Tensor:
            return torch.stack([direction[:, 0], direction[:, 1],
                                contact[:, 0] * direction[:, 1] - contact[:, 1] * direction[:, 0]], -1)

        return _StepTerms(
            previous=twist,
            mass_matrix=mass_matrix,
            offsets=offsets,
            friction_weight=dt * self.settings.gravity * cell_friction * cell_mass,
            normal_row=row(normal),
            tangent_row=row(tangent),
            tangent_pusher=(tangent * control).sum(-1),
            gap=distance - self.pusher_radius,
            pusher_weight=dt * pusher_friction * normal_force,
        )

    @staticmethod
    def _cell_velocities(terms: _StepTerms, twist):
        """(B, C, K, 2) cell velocities of candidate twists (B, C, 3)."""
        xp = array_namespace(twist)
        offsets = terms.offsets[:, None]
        spin = twist[..., 2:3]
        return xp.stack([twist[..., 0:1] - spin * offsets[..., 1], twist[..., 1:2] + spin * offsets[..., 0]], -1)

    def _violation(self, terms: _StepTerms, twist):
        """(B, C) m, penetration after the step of candidate twists (B, C, 3)."""
        along = (twist * terms.normal_row[:, None]).sum(-1)
        depth = self.settings.timestep * along - terms.gap[:, None]
        return depth * (depth > 0.0)

    def _energy(self, terms: _StepTerms, twist):
        """(B, C) J, the step's potential E of candidate twists (B, C, 3)."""
        xp = array_namespace(twist)
        eps = self.settings.friction_smoothing
        change = twist - terms.previous[:, None]
        inertia = 0.5 * (xp.matmul(change, terms.mass_matrix) * change).sum(-1)
        speeds = xp.sqrt(xp.square(self._cell_velocities(terms, twist)).sum(-1) + eps**2) - eps
        support = (terms.friction_weight[:, None] * speeds).sum(-1)
        contact = 0.5 * self.settings.contact_stiffness * xp.square(self._violation(terms, twist))
        slip = (twist * terms.tangent_row[:, None]).sum(-1) - terms.tangent_pusher[:, None]
        pusher = terms.pusher_weight[:, None] * (xp.sqrt(xp.square(slip) + eps**2) - eps)
        return inertia + support + contact + pusher

    def _derivatives(self, terms: _StepTerms, twist, *, curvatures: bool = True):
        """Gradient (B, 3) of E at twists (B, 3); with ``curvatures`` also its Hessian (B, 3, 3) and
        majorising Hessian (B, 3, 3): (gradient, hessian, majorant)."""
        xp = array_namespace(twist)
        eps, dt, stiffness = self.settings.friction_smoothing, self.settings.timestep, self.settings.contact_stiffness
        batch = twist.shape[0]
        offset_x, offset_y = terms.offsets[..., 0], terms.offsets[..., 1]
        velocity_x = twist[:, 0:1] - twist[:, 2:3] * offset_y  # (B, K)
        velocity_y = twist[:, 1:2] + twist[:, 2:3] * offset_x
        norms = xp.sqrt(xp.square(velocity_x) + xp.square(velocity_y) + eps**2)
        scale = terms.friction_weight / norms  # (B, K)
        # J_i^T v_i with J_i = [[1, 0, -r_y], [0, 1, r_x]]
        projected = xp.stack([velocity_x, velocity_y, offset_x * velocity_y - offset_y * velocity_x], -1)
        weighted = scale[:, None, :]  # (B, 1, K): sums over cells as batched products
        violation = self._violation(terms, twist[:, None])[:, 0]
        slip = (twist * terms.tangent_row).sum(-1) - terms.tangent_pusher
        slip_norm = xp.sqrt(xp.square(slip) + eps**2)
        gradient = xp.matmul(terms.mass_matrix, (twist - terms.previous)[..., None])[..., 0] \
            + xp.matmul(weighted, projected)[:, 0] \
            + (stiffness * dt * violation)[:, None] * terms.normal_row \
            + (terms.pusher_weight * slip / slip_norm)[:, None] * terms.tangent_row
        if not curvatures:
            return gradient
        # sum_i scale_i J_i^T J_i, with J_i^T J_i = [[1, 0, -r_y], [0, 1, r_x], [-r_y, r_x, r_x^2 + r_y^2]]
        one, zero = xp.ones_like(offset_x), xp.zeros_like(offset_x)
        cell_gram = xp.stack([one, zero, -offset_y, zero, one, offset_x, -offset_y, offset_x,
                              xp.square(offset_x) + xp.square(offset_y)], -1)  # (B, K, 9)
        support = terms.mass_matrix + xp.matmul(weighted, cell_gram).reshape(batch, 3, 3)
        contact_curvature = stiffness * dt**2 * terms.normal_row[:, :, None] * terms.normal_row[:, None, :]
        tangent_outer = terms.tangent_row[:, :, None] * terms.tangent_row[:, None, :]
        curved = projected * (scale / xp.square(norms))[..., None]
        hessian = support - xp.matmul(xp.swapaxes(curved, 1, 2), projected) \
            + contact_curvature * (violation > 0.0)[:, None, None] \
            + (terms.pusher_weight * eps**2 / slip_norm**3)[:, None, None] * tangent_outer
        majorant = support + contact_curvature + (terms.pusher_weight / slip_norm)[:, None, None] * tangent_outer
        return gradient, hessian, majorant

    def step(self, pose, twist, pusher, control, normal_force, cell_mass, cell_friction, pusher_friction):
        """One time step of a batch.

        Args:
            pose: (B, 3) object pose (x m, y m, yaw rad), table frame.
            twist: (B, 3) its twist (m/s, m/s, rad/s) at the body origin.
            pusher: (B, 2) m, pusher position.
            control: (B, 2) m/s, pusher velocity during the step.
            normal_force: (B,) N, the pusher contact's normal force of the previous step.
            cell_mass: (B, K) kg; cell_friction: (B, K); pusher_friction: (B,).
        Returns:
            (pose, twist, pusher, normal_force) after the step, differentiable.
        """
        pusher_next = pusher + self.settings.timestep * control
        terms = self._terms(pose, twist, pusher_next, control, normal_force, cell_mass, cell_friction,
                            pusher_friction)
        # The solver's iterations in numpy (the same functions: the operations are written for both), with
        # no graph: a numpy operation on these small arrays costs a fraction of a torch one's dispatch.
        frozen = _StepTerms(**{name: value.detach().numpy() for name, value in vars(terms).items()})
        current = twist.detach().numpy()
        batch = current.shape[0]
        gradient, hessian, majorant = self._derivatives(frozen, current)
        for _ in range(self.settings.solver_iterations):
            # both systems in one call: (2B, 3, 3) matrices, the gradient twice
            steps = np.linalg.solve(np.concatenate([hessian, majorant]),
                                    np.concatenate([gradient, gradient])[..., None])
            newton, majorised = steps[:batch, :, 0], steps[batch:, :, 0]
            candidates = np.stack([current, current - majorised,
                                   *(current - fraction * newton for fraction in CANDIDATE_STEPS)], 1)
            best = self._energy(frozen, candidates).argmin(1)
            current = candidates[np.arange(batch), best]
            gradient, hessian, majorant = self._derivatives(frozen, current)
        # The differentiable last Newton step: the gradient in torch, the Hessian at the solution a constant
        # (where the gradient vanishes, its derivative's term is zero: the implicit-function theorem's
        # dv'/dtheta = -H^-1 dG/dtheta).
        current = torch.from_numpy(current)
        gradient = self._derivatives(terms, current, curvatures=False)
        twist_next = current - torch.linalg.solve(torch.from_numpy(hessian), gradient[..., None])[..., 0]
        force = self.settings.contact_stiffness * self._violation(terms, twist_next[:, None])[:, 0]
        return pose + self.settings.timestep * twist_next, twist_next, pusher_next, force

    def steps_for(self, duration: float) -> int:
        """Time steps in ``duration`` s (a whole number of ``timestep``; ValueError otherwise)."""
        steps = round(duration / self.settings.timestep)
        if steps < 1 or abs(steps * self.settings.timestep - duration) > 1e-9:
            raise ValueError(f"durations: {duration} s is not a whole number of {self.settings.timestep} s steps")
        return steps

    def rollout(self, pose, twist, pusher, controls, durations, cell_mass, cell_friction, pusher_friction):
        """Open-loop simulation of a batch of pushes.

        Args:
            pose: (B, 3), twist: (B, 3), pusher: (B, 2): the start (see :meth:`step`).
            controls: (B, T, 2) m/s, pusher velocity per control.
            durations: (T,) s, each a whole number of time steps, shared by the batch.
            cell_mass: (B, K) or (K,) kg; cell_friction: (B, K) or (K,); pusher_friction: (B,) or scalar.
        Returns:
            (poses (B, T + 1, 3), pushers (B, T + 1, 2)): at the control boundaries.
        """
        pose, twist, pusher, controls = (torch.as_tensor(value, dtype=self.dtype)
                                         for value in (pose, twist, pusher, controls))
        batch = pose.shape[0]
        cell_mass = torch.as_tensor(cell_mass, dtype=self.dtype).expand(batch, self.grid.count)
        cell_friction = torch.as_tensor(cell_friction, dtype=self.dtype).expand(batch, self.grid.count)
        pusher_friction = torch.as_tensor(pusher_friction, dtype=self.dtype).expand(batch)
        force = torch.zeros(batch, dtype=self.dtype)
        poses, pushers = [pose], [pusher]
        with one_torch_thread():
            for index, duration in enumerate(np.asarray(durations, dtype=float).reshape(-1)):
                for _ in range(self.steps_for(float(duration))):
                    pose, twist, pusher, force = self.step(pose, twist, pusher, controls[:, index], force,
                                                           cell_mass, cell_friction, pusher_friction)
                poses.append(pose)
                pushers.append(pusher)
        return torch.stack(poses, 1), torch.stack(pushers, 1)
