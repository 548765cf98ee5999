"""tnpx: transformer neural processes.

>>> import tnpx
>>> model = tnpx.build_model("tnp", dim_x=1, dim_y=1)
>>> sorted(tnpx.list_models())[:2]
['cnp', 'gp-oracle']
"""

__version__ = "0.1.0"

from .batch import Batch  # noqa: E402
from .checkpoint import CheckpointError, load, save  # noqa: E402
from .models import NeuralProcess, build_model, list_models  # noqa: E402

__all__ = [
    "Batch",
    "CheckpointError",
    "NeuralProcess",
    "__version__",
    "build_model",
    "list_models",
    "load",
    "save",
]
