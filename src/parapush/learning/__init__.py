"""The learned coarse model (journal Sec 4.1): data from the fine model, training, inference.

Inference (:class:`LearnedCoarseModel`) needs numpy only; data generation needs MuJoCo
and tqdm, training needs torch (the ``learning`` extra). Modules:

- :mod:`~parapush.learning.geometry`: the scene family a model is trained for;
- :mod:`~parapush.learning.gating`: which sliders a push can move (the authors' gate);
- :mod:`~parapush.learning.encoding`: the pusher-centred network frame, slots and parking;
- :mod:`~parapush.learning.sampling`, :mod:`~parapush.learning.dataset`: training pushes
  and their fine-model labels (``python -m parapush.learning.dataset``);
- :mod:`~parapush.learning.model`, :mod:`~parapush.learning.loss`,
  :mod:`~parapush.learning.training_data`, :mod:`~parapush.learning.train`,
  :mod:`~parapush.learning.checkpoint`: the torch network, Eq 5 loss and training
  (``python -m parapush.learning.train``);
- :mod:`~parapush.learning.numpy_network`: the exported weights and numpy forward pass;
- :mod:`~parapush.learning.coarse_learned`: the Propagator;
- :mod:`~parapush.learning.evaluation`: one-step errors against the fine model.

The general model (any shape, size, mass, friction, 1-16 objects, obstacles):
:mod:`~parapush.learning.scene_ranges`, :mod:`~parapush.learning.body_descriptors`,
:mod:`~parapush.learning.graph_encoding`, :mod:`~parapush.learning.general_sampling`,
:mod:`~parapush.learning.general_dataset`, :mod:`~parapush.learning.graph_training_data`,
:mod:`~parapush.learning.graph_network_torch`, :mod:`~parapush.learning.graph_network_numpy`,
:mod:`~parapush.learning.general_train`, :mod:`~parapush.learning.general_evaluation` and the
Propagator :class:`~parapush.learning.coarse_general.GeneralLearnedCoarseModel`.
"""

from parapush.learning.coarse_general import GeneralLearnedCoarseModel, shipped_general_weights_path
from parapush.learning.coarse_learned import FineSettingsMismatchWarning, LearnedCoarseModel, shipped_weights_path
from parapush.learning.geometry import ModelMismatchError, TrainedGeometry

__all__ = [
    "FineSettingsMismatchWarning",
    "GeneralLearnedCoarseModel",
    "LearnedCoarseModel",
    "ModelMismatchError",
    "TrainedGeometry",
    "shipped_general_weights_path",
    "shipped_weights_path",
]
