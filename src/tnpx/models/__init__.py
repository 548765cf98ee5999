"""Model families. Importing this package registers every model."""

from . import cnp, gp, tnp  # noqa: F401  (registration side effects)
from .base import REGISTRY, NeuralProcess, build_model, list_models, register

__all__ = ["REGISTRY", "NeuralProcess", "build_model", "list_models", "register"]
