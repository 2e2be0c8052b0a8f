"""A tiny system for the planner's tests, and tests of that system itself.

"Glued" pushing: the target moves with the pusher (an integrator, x_{n+1} = x_n + u dt for
the pusher and the target alike); the other objects never move. Cheap, exact, and with a
known optimum for quadratic costs.
"""

from __future__ import annotations

import numpy as np

from parapush.planning import PropagatorRollout
from parapush.scene import GoalRegion, ObjectSpec, Obstacle, Pusher, Scene, StateLayout, Table


def tiny_scene(
    *,
    target_position: tuple[float, float] = (-0.15, 0.0),
    goal: tuple[float, float] = (0.15, 0.05),
    goal_radius: float = 0.02,
    obstacles: tuple[Obstacle, ...] = (),
    others: tuple[tuple[float, float], ...] = (),
) -> Scene:
    """One cylinder target (plus optional static others) on a 0.8 x 1.0 m table."""
    pusher_x = target_position[0] - 0.0512 - 0.0145 - 0.001
    objects = [ObjectSpec(name="target", pose=(*target_position, 0.0))]
    objects += [ObjectSpec(name=f"other_{i}", pose=(*xy, 0.0)) for i, xy in enumerate(others)]
    return Scene(
        name="tiny",
        table=Table(length=0.8, width=1.0),
        pusher=Pusher(position=(pusher_x, target_position[1]), max_speed=0.1),
        objects=tuple(objects),
        obstacles=obstacles,
        goal=GoalRegion(center=goal, radius=goal_radius),
        target="target",
    )


def initial_state(scene: Scene) -> np.ndarray:
    return scene.layout.compose(
        np.array(scene.pusher.position), np.array([spec.pose for spec in scene.objects])
    )


class GluedPropagator:
    """Propagator: pusher and target (object ``target_index``) move by u * dt together."""

    def __init__(self, layout: StateLayout, target_index: int = 0) -> None:
        self.layout = layout
        self.target_index = target_index
        self.calls = 0

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        self.calls += 1
        states = np.array(states, dtype=float)
        displacement = controls * durations[:, None]
        target = self.layout.object_pose(self.target_index)
        states[:, self.layout.pusher_position] += displacement
        states[:, target.start : target.start + 2] += displacement
        states[:, self.layout.pusher_velocity] = controls
        twist = self.layout.object_twist(self.target_index)
        states[:, twist.start : twist.start + 2] = controls
        return states


def glued_model(scene: Scene) -> PropagatorRollout:
    return PropagatorRollout(GluedPropagator(scene.layout, scene.target_index))


class PropagatorWorld:
    """A World double that advances its state with a propagator; records what the loop does."""

    def __init__(self, propagator, state: np.ndarray) -> None:
        self.propagator = propagator
        self.state = np.array(state, dtype=float)
        self.executed: list[tuple[np.ndarray, float]] = []
        self.stops = 0

    def observe(self) -> np.ndarray:
        return self.state.copy()

    def execute(self, control: np.ndarray, duration: float) -> None:
        self.executed.append((np.array(control), duration))
        self.state = self.propagator.propagate(
            self.state[None], np.asarray(control)[None], np.array([duration])
        )[0]

    def stop(self) -> None:
        self.stops += 1


def glued_world(scene: Scene, state: np.ndarray | None = None) -> PropagatorWorld:
    """The glued dynamics as a World, from ``state`` (default: the scene's initial state)."""
    state = initial_state(scene) if state is None else state
    return PropagatorWorld(GluedPropagator(scene.layout, scene.target_index), state)


def test_glued_propagator_moves_pusher_and_target_only() -> None:
    scene = tiny_scene(others=((0.2, 0.3),))
    state = initial_state(scene)
    model = glued_model(scene)
    controls = np.array([[[0.05, 0.0], [0.0, 0.02], [0.01, 0.01]]])
    trajectories = model.predict(state, controls, np.array([1.0, 2.0, 0.5]))
    layout = scene.layout
    poses = layout.poses(trajectories[0])
    np.testing.assert_allclose(poses[-1, 0, :2], np.array([-0.15, 0.0]) + [0.055, 0.045])
    np.testing.assert_allclose(poses[:, 1], np.tile([0.2, 0.3, 0.0], (4, 1)))
    np.testing.assert_allclose(trajectories[0, -1, layout.pusher_position], state[:2] + [0.055, 0.045])
