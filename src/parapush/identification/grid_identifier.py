"""Identify an object's mass and friction distributions by projected gradient descent (the paper's method).

Song and Boularias (shared/papers/differentiable-physics-sliding-unknown-objects.txt, Eq. 1 and
Algorithm 1): simulate every observed push from its first observed state with the same
controls in the differentiable model (:class:`GridSlidingModel`), measure the ADD error (the
mean distance between each cell's predicted and observed positions, at every control
boundary) and move every cell's mass ``m_i`` and support friction ``mu_i`` down its gradient,
projecting onto the bounds after each step.

Here the unknowns are logarithms relative to the nominal (scene-file) values, so the bounds
are factors and a step means the same for light and heavy cells: ``m_i = m0 exp(a_i)``,
``mu_i = mu0 exp(b_i)``, plus the pusher friction ``mu_p = mu_p0 exp(c)``. Adam steps,
projected onto the bounds. The regulariser ``prior (|a|^2 + |b|^2) / K + smoothness
sum_neighbours ((a_i - a_j)^2 + (b_i - b_j)^2) / E`` keeps cells the pushes do not reach at
the nominal values and the map smooth.

What slow pushes determine: a cell's support friction force ``mu_i m_i g`` (mass and friction
enter the quasi-static motion only as this product; inertia is small at a few cm/s), so the
result's ``friction_weight`` map is the identified quantity; the split between mass and
friction follows the regulariser. ``sensitivity`` says per cell how strongly the individual
pushes pull on its friction weight (the root mean square over pushes of the ADD error's
gradient with respect to ``log(mu_i m_i)``): near 0, the data did not determine the cell.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from parapush.identification.cell_grid import CellGrid
from parapush.identification.grid_model import GridModelSettings, GridSlidingModel, one_torch_thread
from parapush.identification.identifier import PushRecord
from parapush.identification.parameters import ObjectParameters
from parapush.scene import Scene, StateLayout
from parapush.settings import check_settings, setting


@dataclass(frozen=True, kw_only=True)
class GridIdentificationSettings:
    """The projected gradient descent (each field's meaning, unit and range: its :func:`setting`)."""

    cell_size: float = setting(0.01, "side of the grid's square cells", unit="m", above=0.0, maximum=0.1)
    iterations: int = setting(40, "gradient steps", minimum=1)
    step_size: float = setting(0.08, "Adam step, in log units (0.08: about 8 % per step)", above=0.0, maximum=1.0)
    mass_factor: float = setting(4.0, "a cell's mass stays within [m0 / f, m0 f] of its nominal m0", minimum=1.0)
    friction_factor: float = setting(
        3.0, "a cell's support friction stays within [mu0 / f, mu0 f]", minimum=1.0
    )
    pusher_friction_factor: float = setting(
        4.0, "the pusher friction stays within [mu_p0 / f, mu_p0 f] (1: held fixed)", minimum=1.0
    )
    prior: float = setting(2e-4, "weight of the pull towards the nominal values", unit="m", minimum=0.0)
    smoothness: float = setting(1e-3, "weight of the neighbour-difference penalty", unit="m", minimum=0.0)

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass(frozen=True)
class GridIdentificationResult:
    """What :meth:`GridIdentifier.identify` found (K cells, order of ``grid.centers``).

    Attributes:
        grid: the cells.
        cell_mass: (K,) kg.
        cell_friction: (K,) support friction coefficients.
        pusher_friction: the pusher/object friction coefficient.
        sensitivity: (K,) m per unit of log friction weight (see the module docstring).
        error: m, the final mean ADD error over the records' boundaries.
        initial_error: m, the same with the nominal values.
        history: (iterations + 1,) m, ADD error before each step (and after the last).
        seconds: wall time of the search.
    """

    grid: CellGrid
    cell_mass: np.ndarray
    cell_friction: np.ndarray
    pusher_friction: float
    sensitivity: np.ndarray
    error: float
    initial_error: float
    history: np.ndarray
    seconds: float

    @property
    def friction_weight(self) -> np.ndarray:
        """(K,) N/(m/s^2): mu_i m_i, the support friction force per unit gravity (what the pushes determine)."""
        return self.cell_mass * self.cell_friction

    @property
    def mass(self) -> float:
        return float(self.cell_mass.sum())

    def center_of_mass(self) -> np.ndarray:
        """(2,) m, body frame."""
        return self.cell_mass @ self.grid.centers / self.mass


class GridIdentifier:
    """Fits the cells of one object to observed pushes.

    Args:
        grid: the object's cells and outline.
        pusher_radius: m.
        nominal: the object's nominal parameters (uniform mass and support friction over the
            cells; pusher friction): where the search starts and what the prior pulls towards.
        layout: the records' state layout; object_index: the object, in that layout.
        model_settings: the differentiable model.
    """

    def __init__(self, grid: CellGrid, pusher_radius: float, nominal: ObjectParameters, *,
                 layout: StateLayout | None = None, object_index: int = 0,
                 model_settings: GridModelSettings | None = None) -> None:
        if not isinstance(nominal, ObjectParameters):
            raise TypeError(f"nominal: expected ObjectParameters, got {type(nominal).__name__}")
        self.model = GridSlidingModel(grid, pusher_radius, model_settings)
        self.grid = grid
        self.nominal = nominal
        self.layout = StateLayout(1) if layout is None else layout
        self.object_index = object_index
        self._pose = self.layout.object_pose(object_index)
        self._twist = self.layout.object_twist(object_index)
        self._centers = torch.tensor(np.array(grid.centers), dtype=self.model.dtype)

    @classmethod
    def for_scene(cls, scene: Scene, object_index: int, nominal: ObjectParameters | None = None, *,
                  cell_size: float = 0.01, model_settings: GridModelSettings | None = None) -> GridIdentifier:
        """The identifier of a scene's object: its outline's cells, the scene's pusher, records in the
        scene's state layout; ``nominal`` defaults to the scene file's parameters."""
        nominal = ObjectParameters.from_scene(scene, object_index) if nominal is None else nominal
        grid = CellGrid.from_spec(scene.objects[object_index], cell_size)
        return cls(grid, scene.pusher.radius, nominal, layout=scene.layout, object_index=object_index,
                   model_settings=model_settings)

    # -- evaluation -------------------------------------------------------------------------
    def _groups(self, records: list[PushRecord]) -> list[tuple[list[int], tuple[float, ...]]]:
        """Records with the same durations, batched together: (indices, durations)."""
        if not records:
            raise ValueError("records: at least one push record is needed")
        groups: dict[tuple[float, ...], list[int]] = {}
        for index, record in enumerate(records):
            if not isinstance(record, PushRecord):
                raise TypeError(f"records[{index}]: expected PushRecord, got {type(record).__name__}")
            if record.states.shape[1] != self.layout.dimension:
                raise ValueError(f"records[{index}].states: expected {self.layout.dimension} values per state, "
                                 f"got {record.states.shape[1]}")
            for duration in record.durations:
                self.model.steps_for(float(duration))
            groups.setdefault(tuple(float(d) for d in record.durations), []).append(index)
        return [(indices, durations) for durations, indices in groups.items()]

    def predict(self, records: list[PushRecord], cell_mass, cell_friction, pusher_friction) -> list[torch.Tensor]:
        """Open-loop object poses (T + 1, 3) of each record from its first observed state.

        ``cell_mass`` and ``cell_friction`` are (K,), the same cells for every record, or (R, K), one
        row per record; ``pusher_friction`` a scalar."""
        cell_mass, cell_friction = (torch.as_tensor(value, dtype=self.model.dtype)
                                    for value in (cell_mass, cell_friction))
        for name, value in (("cell_mass", cell_mass), ("cell_friction", cell_friction)):
            if value.shape not in ((self.grid.count,), (len(records), self.grid.count)):
                raise ValueError(f"{name}: expected shape ({self.grid.count},) or ({len(records)}, {self.grid.count}), "
                                 f"got {tuple(value.shape)}")
        predictions: list[torch.Tensor | None] = [None] * len(records)
        for indices, durations in self._groups(records):
            starts = np.stack([records[i].states[0] for i in indices])
            controls = np.stack([records[i].controls for i in indices])
            mass, friction = (value[indices] if value.dim() == 2 else value for value in (cell_mass, cell_friction))
            poses, _ = self.model.rollout(
                starts[:, self._pose], starts[:, self._twist], starts[:, self.layout.pusher_position], controls,
                durations, mass, friction, pusher_friction,
            )
            for row, index in enumerate(indices):
                predictions[index] = poses[row]
        return predictions

    def _cell_positions(self, poses: torch.Tensor) -> torch.Tensor:
        """(..., K, 2) m, table-frame cell positions of poses (..., 3)."""
        cos, sin = torch.cos(poses[..., 2:3]), torch.sin(poses[..., 2:3])
        x, y = self._centers[:, 0], self._centers[:, 1]
        return torch.stack([poses[..., 0:1] + cos * x - sin * y, poses[..., 1:2] + sin * x + cos * y], -1)

    def add_errors(self, records: list[PushRecord], cell_mass, cell_friction, pusher_friction) -> torch.Tensor:
        """(R,) m, each record's ADD error: mean over its boundaries after the first and over cells."""
        predictions = self.predict(records, cell_mass, cell_friction, pusher_friction)
        errors = []
        for record, predicted in zip(records, predictions, strict=True):
            observed = torch.tensor(record.states[1:, self._pose], dtype=self.model.dtype)
            gap = self._cell_positions(predicted[1:]) - self._cell_positions(observed)
            errors.append(torch.sqrt((gap**2).sum(-1) + 1e-12).mean())
        return torch.stack(errors)

    # -- search -----------------------------------------------------------------------------
    def identify(self, records: list[PushRecord], settings: GridIdentificationSettings | None = None
                 ) -> GridIdentificationResult:
        """Projected gradient descent from the nominal values (deterministic; one torch thread: the
        tensors are small, and intra-op threads only add overhead on a loaded machine)."""
        with one_torch_thread():
            return self._identify(records, settings)

    def _identify(self, records: list[PushRecord], settings: GridIdentificationSettings | None
                  ) -> GridIdentificationResult:
        settings = GridIdentificationSettings() if settings is None else settings
        if not isinstance(settings, GridIdentificationSettings):
            raise TypeError(f"settings: expected GridIdentificationSettings, got {type(settings).__name__}")
        started = time.perf_counter()
        self._groups(records)  # checked before the search
        dtype, count = self.model.dtype, self.grid.count
        base_mass = torch.tensor(self.grid.uniform(self.nominal.mass), dtype=dtype)
        base_friction = torch.full((count,), self.nominal.support_friction, dtype=dtype)
        base_pusher = torch.tensor(max(self.nominal.pusher_friction, 1e-3), dtype=dtype)
        log_mass = torch.zeros(count, dtype=dtype, requires_grad=True)
        log_friction = torch.zeros(count, dtype=dtype, requires_grad=True)
        log_pusher = torch.zeros((), dtype=dtype, requires_grad=True)
        limits = [(log_mass, np.log(settings.mass_factor)), (log_friction, np.log(settings.friction_factor)),
                  (log_pusher, np.log(settings.pusher_friction_factor))]
        optimiser = torch.optim.Adam([log_mass, log_friction, log_pusher], lr=settings.step_size)
        pairs = torch.as_tensor(np.array(self.grid.neighbours))

        def values():
            return base_mass * torch.exp(log_mass), base_friction * torch.exp(log_friction), \
                base_pusher * torch.exp(log_pusher)

        def regulariser() -> torch.Tensor:
            prior = settings.prior * ((log_mass**2).mean() + (log_friction**2).mean())
            if pairs.shape[0] == 0:
                return prior
            difference = (log_mass[pairs[:, 0]] - log_mass[pairs[:, 1]]) ** 2 \
                + (log_friction[pairs[:, 0]] - log_friction[pairs[:, 1]]) ** 2
            return prior + settings.smoothness * difference.mean()

        history = []
        best = (np.inf, None)
        for _ in range(settings.iterations):
            optimiser.zero_grad()
            error = self.add_errors(records, *values()).mean()
            history.append(float(error.detach()))
            if history[-1] < best[0]:
                best = (history[-1], [tensor.detach().clone() for tensor in (log_mass, log_friction, log_pusher)])
            (error + regulariser()).backward()
            optimiser.step()
            with torch.no_grad():
                for tensor, limit in limits:
                    tensor.clamp_(-limit, limit)  # the projection onto the bounds
        with torch.no_grad():
            final = float(self.add_errors(records, *values()).mean())
        history.append(final)
        if final < best[0]:
            best = (final, [tensor.detach().clone() for tensor in (log_mass, log_friction, log_pusher)])
        with torch.no_grad():
            for tensor, value in zip((log_mass, log_friction, log_pusher), best[1], strict=True):
                tensor.copy_(value)
        sensitivity = self._sensitivity(records, base_mass, base_friction, base_pusher, best[1])
        mass, friction, pusher = (tensor.detach() for tensor in values())
        return GridIdentificationResult(
            grid=self.grid,
            cell_mass=mass.numpy().copy(),
            cell_friction=friction.numpy().copy(),
            pusher_friction=float(pusher),
            sensitivity=sensitivity,
            error=best[0],
            initial_error=history[0],
            history=np.array(history),
            seconds=time.perf_counter() - started,
        )

    def _sensitivity(self, records, base_mass, base_friction, base_pusher, logs) -> np.ndarray:
        """(K,) m: root mean square over records of d ADD_r / d log(mu_i m_i) at the result.

        One backward pass: every record gets its own row of ``log_weight``, and record r's error
        depends on row r alone, so the gradient of the errors' sum holds d ADD_r / d log_weight_r in
        row r."""
        log_weight = torch.zeros(len(records), self.grid.count, dtype=self.model.dtype, requires_grad=True)
        log_mass, log_friction, log_pusher = logs
        errors = self.add_errors(records, base_mass * torch.exp(log_mass),
                                 base_friction * torch.exp(log_friction + log_weight),
                                 base_pusher * torch.exp(log_pusher))
        (rows,) = torch.autograd.grad(errors.sum(), log_weight)
        return torch.sqrt(rows.pow(2).mean(0)).numpy().copy()

    def object_parameters(self, result: GridIdentificationResult, *, contrast: float | None = 1.5,
                          max_patches: int = 4) -> ObjectParameters:
        """``result`` as a fine model takes it: the map's regions as patches (:meth:`CellGrid.patches`:
        the footprint's friction, regions that differ by more than ``contrast``), the total mass and
        the pusher friction. With no such region, or ``contrast`` None, the uniform summary:
        mass-weighted support friction and the centre of mass. Which contrast renders a map best in
        a fine model: :func:`parapush.identification.map_rendering.render_map`."""
        if contrast is not None:
            footprint_friction, patches = self.grid.patches(result.cell_mass, result.cell_friction,
                                                            contrast=contrast, max_patches=max_patches)
            if patches:
                return ObjectParameters(mass=result.mass, support_friction=footprint_friction,
                                        pusher_friction=result.pusher_friction, patches=patches)
        return ObjectParameters(
            mass=result.mass,
            support_friction=float(result.friction_weight.sum() / result.mass),
            pusher_friction=result.pusher_friction,
            com_offset=tuple(float(v) for v in result.center_of_mass()),
        )
