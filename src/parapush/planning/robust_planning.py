"""Robust planning for one task: the target's belief, its narrowing, and the planner's robust scoring.

:class:`RobustPlanning` is what a multi-fidelity planner needs to plan for the object it is not
sure about (``config/planner.yaml``'s ``robust`` section, :class:`RobustSettings`, M > 1):

- a fine model of the scene and an :class:`~parapush.identification.ObjectIdentifier` of the
  target (predictions under parameter hypotheses, one batched call per control);
- the target's :class:`~parapush.identification.parameter_belief.ParameterBelief`, from the
  configured spread around the scene's parameters, or around an identification's result;
- :class:`~parapush.planning.robust_scoring.RobustScoring` of the planner's elites under the
  corrector's and M - 1 models drawn from the belief;
- the narrowing: :meth:`RobustPlanning.attach` wraps the loop's world in a
  :class:`~parapush.planning.async_world.TransitionRecorder` and, before each plan (the loop's
  ``before_plan``, chained after any hook already there), feeds every control that ran alone
  to :class:`~parapush.identification.online_identification.OnlineIdentification`; so the
  update's time is re-plan time, and the next plan's models are drawn from the narrowed belief.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from parapush.identification import ObjectIdentifier, ObjectParameters
from parapush.identification.online_identification import OnlineIdentification
from parapush.identification.parameter_belief import ParameterBelief
from parapush.lifecycle import Closeable
from parapush.planning.async_world import TransitionRecorder
from parapush.planning.robust_scoring import RobustScoring, RobustSettings
from parapush.scene import Scene
from parapush.validation import check_instance

__all__ = ["RobustPlanning"]


class RobustPlanning(Closeable):
    """The belief, narrowing and robust scoring of one task (module docstring).

    Args:
        scene: the task's scene.
        settings: the ``robust`` settings; ``samples`` > 1.
        fine_settings: the fine model's settings (the corrector's, ``ModelConfig.fine``).
        target: the uncertain object's index (default: the scene's target).
        identified: the target's identified parameters and their spread (5,) (an identification
            result's), instead of the configured spread around the scene's parameters.
        workers: fine-model threads (default: the cores available).

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, scene: Scene, settings: RobustSettings, fine_settings: Any, *, target: int | None = None,
                 identified: tuple[ObjectParameters, np.ndarray] | None = None, workers: int | None = None) -> None:
        from parapush.physics.fine import FineModel

        check_instance("scene", scene, Scene)
        self.settings = check_instance("settings", settings, RobustSettings)
        if settings.samples < 2:
            raise ValueError("settings.samples: robust planning needs M >= 2 (M = 1 is the nominal planner)")
        names = [spec.name for spec in scene.objects]
        if target is None:
            if scene.target not in names:
                raise ValueError("scene: robust planning needs a target object")
            target = names.index(scene.target)
        self.target = target
        self.identifier = ObjectIdentifier(FineModel(scene, fine_settings), target, workers=workers)
        if identified is None:
            self.belief = ParameterBelief.from_spread(ObjectParameters.from_scene(scene, target), settings.spread,
                                                      settings.belief)
        else:
            self.belief = ParameterBelief.from_identification(*identified, settings.belief)
        self.online = OnlineIdentification(self.identifier, self.belief)
        self.scoring = RobustScoring(self.identifier, self.belief, settings)

    def attach(self, loop: Any, world: Any) -> TransitionRecorder:
        """Narrow the belief as ``loop`` runs on ``world``: returns the world to run the loop on
        (``world`` recording its transitions) and chains the narrowing into ``loop.before_plan``."""
        recorder = TransitionRecorder(world)
        previous = loop.before_plan

        def narrow_then_plan(running_loop: Any) -> None:
            for transition in recorder.take():
                self.online.observe(transition.state, transition.control, transition.duration, transition.next_state)
            if previous is not None:
                previous(running_loop)

        loop.before_plan = narrow_then_plan
        return recorder

    def estimate(self) -> np.ndarray:
        """(5,) the target's current parameter estimate (order of ``PARAMETER_NAMES``)."""
        return self.belief.estimate()

    def spread(self) -> np.ndarray:
        """(5,) its standard deviation per parameter."""
        return self.belief.spread()

    def close(self) -> None:
        """Stop the fine-model threads; idempotent."""
        self.identifier.close()
