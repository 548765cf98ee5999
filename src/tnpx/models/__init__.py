"""Model families. Importing this package registers every model and, from :mod:`.presets`,
every preset. The public names: :class:`NeuralProcess` (every model's base),
:func:`build_model` / :func:`list_models` and the registry behind them (``REGISTRY``,
``PRESETS``, :func:`register`, :func:`resolve_hyper` for a model's settings,
:func:`options_taken` for the options a model accepts), and ``SMALL_SIZES`` (the small sizes
the tests and benchmarks build every model at)."""

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
from .registry import (
    PRESETS,
    REGISTRY,
    build_model,
    list_models,
    options_taken,
    register,
    resolve_hyper,
)
from .sizes import SMALL_SIZES

__all__ = [
    "PRESETS",
    "REGISTRY",
    "SMALL_SIZES",
    "NeuralProcess",
    "build_model",
    "list_models",
    "options_taken",
    "register",
    "resolve_hyper",
]
