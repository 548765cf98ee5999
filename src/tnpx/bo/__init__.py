"""Bayesian optimisation with neural-process surrogates, through BoTorch.

- :class:`NPSurrogate`: any tnpx model as a BoTorch ``Model`` (``posterior(X)``), so BoTorch's
  acquisition functions and optimisers run on it unchanged.
- :func:`make_acquisition`: BoTorch acquisitions by name, set up for minimisation.
- :func:`run_bo`: the KR-2 loop over a task's candidate locations; surrogates
  :class:`NeuralSurrogate`, :class:`OracleGP`, :class:`FittedGP`, :class:`RandomSearch` (each a
  :class:`Surrogate`, the protocol a surrogate of your own follows).
- :func:`suggest`: the next point(s) to evaluate given a user's observations.

Names are imported on first use, so ``tnpx`` (and its command line) starts without BoTorch.
BoTorch is the ``bo`` extra: without it, importing this package (or any module of it) is the
one-line error ``tnpx.bo needs botorch: pip install 'tnpx[bo]'``.
"""

from __future__ import annotations

from ..extras import names_on_first_use, require

require("botorch", "bo", "tnpx.bo")  # checked once here, for every module of the package

_WHERE = {
    "ACQUISITIONS": "acquisition",
    "JitteredExpectedImprovement": "acquisition",
    "make_acquisition": "acquisition",
    "BORun": "loop",
    "BOTask": "loop",
    "FittedGP": "loop",
    "NeuralSurrogate": "loop",
    "OracleGP": "loop",
    "RandomSearch": "loop",
    "Surrogate": "loop",
    "run_bo": "loop",
    "NPSurrogate": "surrogate",
    "suggest": "suggestion",
}

__all__ = sorted(_WHERE)
__getattr__ = names_on_first_use(__name__, _WHERE)
