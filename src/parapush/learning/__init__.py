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
"""

from parapush.learning.coarse_learned import FineSettingsMismatchWarning, LearnedCoarseModel, shipped_weights_path
from parapush.learning.geometry import ModelMismatchError, TrainedGeometry

__all__ = [
    "FineSettingsMismatchWarning",
    "LearnedCoarseModel",
    "ModelMismatchError",
    "TrainedGeometry",
    "shipped_weights_path",
]
