"""Model families. Importing this package registers every model and, from :mod:`.presets`,
every preset."""

from . import (  # noqa: F401  (registration side effects)
    attentive,
    bootstrap,
    cnp,
    convcnp,
    gp,
    gp_fit,
    inc_tnp,
    latent,
    linear,
    presets,
    pseudo_token,
    rcnp,
    reference,
    te_tnp,
    tnp,
    tnp_kr,
    tnp_nd,
)
from .base import NeuralProcess
from .registry import PRESETS, REGISTRY, build_model, list_models, register

__all__ = ["PRESETS", "REGISTRY", "NeuralProcess", "build_model", "list_models", "register"]
