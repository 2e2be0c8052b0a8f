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
  :class:`~parapush.planning.async_world.TransitionRecorder` and, at the start of each plan (the
  loop's ``before_plan``, chained before any hook already there), feeds every control that ran
  alone to :class:`~parapush.identification.online_identification.OnlineIdentification`; so the
  update's time is re-plan time, and the next plan's models are drawn from the narrowed belief.
  With a :class:`~parapush.planning.multifidelity.MultiFidelityPlanner` the update runs on a
  thread beside the planner's coarse search (which uses neither the belief nor the corrector),
  and the planner waits for it before its first correction (its ``before_correction``,
  :meth:`RobustPlanning.settle`); with any other loop it runs before the plan;
- the corrector's parameters (:class:`CorrectorParameters`: a local prediction engine's, or a
  prediction service's through the MPC node): the belief starts around what the corrector
  predicts with now (e.g. an identification result it was given), and with ``settings.adapt``
  each update gives the corrector the belief's estimate, so the planner's own fine-model
  predictions (the plan's trajectory, the pipelined loop's start of the next plan, the first of
  the M scores) use what the pushes have shown; closing gives the corrector its parameters back.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

import numpy as np

from parapush.identification import ObjectIdentifier, ObjectParameters
from parapush.identification.online_identification import OnlineIdentification
from parapush.identification.parameter_belief import ParameterBelief
from parapush.lifecycle import Closeable
from parapush.planning.async_world import Transition, TransitionRecorder
from parapush.planning.multifidelity import MultiFidelityPlanner
from parapush.planning.robust_scoring import RobustScoring, RobustSettings
from parapush.scene import Scene
from parapush.validation import check_instance

__all__ = ["CorrectorParameters", "RobustPlanning"]


class CorrectorParameters(Protocol):
    """The target's parameters in the planner's corrector (where its fine model lives)."""

    def current(self) -> ObjectParameters:
        """What the corrector predicts the target with now."""

    def apply(self, parameters: ObjectParameters) -> ObjectParameters:
        """Make the corrector predict the target with ``parameters``; returns the ones replaced."""


class RobustPlanning(Closeable):
    """The belief, narrowing and robust scoring of one task (module docstring).

    Args:
        scene: the task's scene.
        settings: the ``robust`` settings; ``samples`` > 1.
        fine_settings: the fine model's settings (the corrector's, ``ModelConfig.fine``).
        target: the uncertain object's index (default: the scene's target).
        identified: the target's identified parameters and their spread (5,) (an identification
            result's), instead of the prior: the target's ``uncertainty`` in the scene (else
            ``settings.spread``) around what ``corrector`` predicts it with (else the scene's
            parameters; patched parameters, which the belief cannot describe, leave it at the
            scene's and the corrector as it is).
        workers: fine-model threads (default: the cores available).
        corrector: the target's parameters in the planner's corrector: the prior's centre and,
            with ``settings.adapt``, given the belief's estimate after each update; :meth:`close`
            gives it back the parameters it had, so a corrector shared between goals starts the
            next one as it was (None: the scene's parameters, and the corrector stays as it is).

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, scene: Scene, settings: RobustSettings, fine_settings: Any, *, target: int | None = None,
                 identified: tuple[ObjectParameters, np.ndarray] | None = None, workers: int | None = None,
                 corrector: CorrectorParameters | None = None) -> None:
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
        centre = ObjectParameters.from_scene(scene, target)
        in_corrector = None if corrector is None else corrector.current()
        # the belief's vector cannot describe patches (a cell map's regions, e.g. identified by the grid
        # method): with them in the scene or the corrector, the prior centres on the scene's parameters
        # and the corrector keeps its own
        patched = bool(centre.patches) or (in_corrector is not None and bool(in_corrector.patches))
        if in_corrector is not None and not patched:
            centre = in_corrector
        if identified is None:
            spread = scene.objects[target].uncertainty or settings.spread  # the scene's own, else the file's
            self.belief = ParameterBelief.from_spread(centre, spread, settings.belief)
        else:
            self.belief = ParameterBelief.from_identification(*identified, settings.belief)
        self.online = OnlineIdentification(self.identifier, self.belief)
        self.scoring = RobustScoring(self.identifier, self.belief, settings)
        self.corrector = corrector if settings.adapt and not patched else None
        self.applied: ObjectParameters | None = None
        """The estimate last given to the corrector (None: none yet)."""
        self.history: list[tuple[np.ndarray, np.ndarray]] = [(self.belief.estimate(), self.belief.spread())]
        """(estimate, spread) (5,) each of the prior and after each update, in order."""
        self._replaced: ObjectParameters | None = None
        self._narrowing: threading.Thread | None = None
        self._narrowing_error: BaseException | None = None

    def attach(self, loop: Any, world: Any) -> TransitionRecorder:
        """Narrow the belief as ``loop`` runs on ``world``: returns the world to run the loop on
        (``world`` recording its transitions) and chains the narrowing into ``loop.before_plan``
        (beside the coarse search when ``loop.optimizer`` is a multi-fidelity planner: module
        docstring)."""
        recorder = TransitionRecorder(world)
        previous = loop.before_plan
        planner = getattr(loop, "optimizer", None)
        beside_search = isinstance(planner, MultiFidelityPlanner)
        if beside_search:
            planner.before_correction = self.settle

        def narrow_then_plan(running_loop: Any) -> None:
            self.settle()  # one update at a time, in the order of the controls
            transitions = recorder.take()
            if transitions:
                self._narrowing = threading.Thread(target=self._narrow, args=(transitions,), name="belief-narrowing",
                                                   daemon=True)
                self._narrowing.start()
                if not beside_search:
                    self.settle()
            if previous is not None:
                previous(running_loop)

        loop.before_plan = narrow_then_plan
        return recorder

    def settle(self) -> None:
        """Wait for the update under way (if any): afterwards the belief and the corrector hold
        every observed control. Raises what the update raised."""
        self._join_narrowing()
        error, self._narrowing_error = self._narrowing_error, None
        if error is not None:
            raise error

    def _join_narrowing(self) -> None:
        narrowing, self._narrowing = self._narrowing, None
        if narrowing is not None:
            narrowing.join()

    def _narrow(self, transitions: list[Transition]) -> None:
        """The update of :meth:`attach` (on its thread): the belief, then the corrector's estimate."""
        try:
            updated = False
            for transition in transitions:
                if self.online.observe(transition.state, transition.control, transition.duration,
                                       transition.next_state):
                    updated = True
                    self.history.append((self.belief.estimate(), self.belief.spread()))
            if updated and self.corrector is not None:
                self.applied = ObjectParameters.from_vector(self.belief.estimate())
                replaced = self.corrector.apply(self.applied)
                if self._replaced is None:
                    self._replaced = replaced
        except BaseException as error:  # re-raised by settle(), in the planning thread
            self._narrowing_error = error

    def estimate(self) -> np.ndarray:
        """(5,) the target's parameter estimate after the last finished update (order of
        ``PARAMETER_NAMES``)."""
        return self.history[-1][0]

    def spread(self) -> np.ndarray:
        """(5,) its standard deviation per parameter."""
        return self.history[-1][1]

    def close(self) -> None:
        """Wait for the update under way, give the corrector back its parameters from before the
        first estimate and stop the fine-model threads; idempotent."""
        self._join_narrowing()  # its error, if any, is the plan's, which has ended
        replaced, self._replaced = self._replaced, None
        if replaced is not None and self.corrector is not None:
            self.corrector.apply(replaced)
        self.identifier.close()
