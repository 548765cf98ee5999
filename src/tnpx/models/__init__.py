"""Model families. Importing this package registers every model."""

from . import cnp, convcnp, gp, gp_fit, linear, pseudo_token, rcnp, te_tnp, tnp, tnp_kr  # noqa: F401  (registration side effects)
from .base import PRESETS, REGISTRY, NeuralProcess, build_model, list_models, register

__all__ = ["PRESETS", "REGISTRY", "NeuralProcess", "build_model", "list_models", "register"]
