"""The MPC node's writable parameters: live tuning of cost weights and planner settings (issue 31).

``ros2 param set /mpc costs.smoothness.weight 0.5`` (or Foxglove's parameter panel) changes a
setting of the running node. Which settings, their ranges and from when a change applies (the
next re-plan of a running goal, or the next goal for structural ones) are
:mod:`parapush.planning.live_settings`'s; this module declares them as node parameters (one
``ParameterDescriptor`` each, read_only false, its range from the settings' own checks, its
initial value the planner file's and preset's, or the parameter file's where it sets one) and
registers the set-parameters callback: a change the settings refuse is unsuccessful with their
error naming the parameter (the old value stays); an accepted one says in the result's ``reason``
from when it applies, and the running goal's feedback ``event`` reports it ("parameters changed:
costs.smoothness.weight 1.0 -> 0.5 (from this re-plan)"; a structural one "(applies from the next
goal)" at once). The node's other parameters stay read-only (rclpy refuses them).
"""

from __future__ import annotations

from collections.abc import Callable

from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node

from parapush.nodes.parameters import ParameterError, ParameterSpec, declare_parameters
from parapush.planning.live_settings import Change, LiveTuning, TunableSetting, TuningError
from parapush.planning.stack_planner import PlannerSources
from parapush.scene import Scene

__all__ = ["declare_tuning", "tuning_specs"]


def tuning_specs(settings: tuple[TunableSetting, ...] | list[TunableSetting]) -> tuple[ParameterSpec, ...]:
    """The writable :class:`ParameterSpec` of each tunable setting (its value, range, description)."""
    return tuple(ParameterSpec(item.name, item.default, item.description, minimum=item.minimum, read_only=False)
                 for item in settings)


def declare_tuning(node: Node, sources: PlannerSources, scene: Scene,
                   on_change: Callable[[list[Change]], None]) -> LiveTuning:
    """Declare the tunable parameters of ``sources`` on ``node`` and register the callback that
    validates and keeps changes (module docstring); ``on_change`` gets every accepted change
    (in the executor's thread).

    Returns:
        the node's :class:`LiveTuning` (values a parameter file set at start-up already applied).
    Raises:
        ParameterError: naming a parameter whose start-up value the settings refuse.
    """
    tuning = LiveTuning(sources, scene)
    values = declare_parameters(node, tuning_specs(list(tuning.settings.values())))
    try:
        tuning.propose(values)
    except TuningError as error:
        raise ParameterError(f"parameter '{error.parameter}': {error.problem}") from None

    def on_set(parameters) -> SetParametersResult:
        proposed = {parameter.name: parameter.value for parameter in parameters if parameter.name in tuning.settings}
        if not proposed:
            return SetParametersResult(successful=True)
        try:
            changes = tuning.propose(proposed)
        except TuningError as error:
            node.get_logger().warning(f"parameter change refused: {error}")
            return SetParametersResult(successful=False, reason=f"parameter '{error.parameter}': {error.problem}")
        if changes:
            on_change(changes)
        reason = "; ".join(f"{name}: {tuning.settings[name].applies}" for name in proposed)
        return SetParametersResult(successful=True, reason=reason)

    node.add_on_set_parameters_callback(on_set)
    return tuning
