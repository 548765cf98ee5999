"""tnpx: transformer neural processes.

>>> import tnpx
>>> model = tnpx.build_model("tnp", dim_x=1, dim_y=1)
>>> sorted(tnpx.list_models())[:2]
['cnp', 'gp-oracle']
"""

from ._version import __version__
from .apply.compiled import compile_for_inference
from .apply.predict import DataError, predict
from .apply.sample import sample
from .apply.stream import ContextStream
from .batch import Batch
from .checkpoint import CheckpointError, load, save
from .models import NeuralProcess, build_model, list_models
from .zoo import list_pretrained, pretrained

__all__ = [
    "Batch",
    "CheckpointError",
    "ContextStream",
    "DataError",
    "NPRegressor",
    "NeuralProcess",
    "__version__",
    "build_model",
    "compile_for_inference",
    "list_models",
    "list_pretrained",
    "load",
    "predict",
    "pretrained",
    "sample",
    "save",
    "train",
]


def __getattr__(name: str):
    # NPRegressor imports scikit-learn (an optional extra, ~1.3 s) and train the training
    # machinery (the optimisers, the run folder): each only when it is asked for.
    if name == "NPRegressor":
        from .apply.estimator import NPRegressor

        return NPRegressor
    if name == "train":
        from .training.entry import train

        return train
    raise AttributeError(f"module 'tnpx' has no attribute {name!r}")
