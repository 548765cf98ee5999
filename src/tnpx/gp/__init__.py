"""GP machinery shared by the data priors, the GP models, the lab and the benchmarks.

- :mod:`.kernels`: the covariance functions (``KERNELS``, ``kernel_matrix``, sums of kernels).
- :mod:`.kernels_anisotropic`: rotated, stretched inputs into those kernels (the 2D priors).
- :mod:`.prior`: exact joint draws of zero-mean GP functions from a covariance matrix.
- :mod:`.hyper_grid` and :mod:`.average`: the Bayes-optimal predictive of a GP prior (GPs
  averaged over its hyper-parameters), the reference no trained model can beat.
- :mod:`.batch_gp`: the GPyTorch batch of exact, masked GPs behind the fitted GP baselines
  ``gp`` / ``mt-gp`` (registered in :mod:`tnpx.models.gp_fit`); needs the ``gp`` extra.
- :mod:`.approx_fit`: a GP fitted to each task with a likelihood family's own likelihood
  (variational inference in GPyTorch), the per-task baseline on the ``gp-link`` tasks
  (``approx_gp_log_prob``); needs the ``gp`` extra.

The room imports no other room at run time (the data priors and models import it). Its public
names (``__all__``: ``from tnpx.gp import KERNELS, HyperGrid, average_log_likelihood``) are
imported from their module on first use, so a module of it pays for no other.
"""

from __future__ import annotations

from ..extras import names_on_first_use

# public name -> the module of this package that defines it
_HOMES = {
    "ALL_KERNELS": "kernels",
    "GPPrior": "hyper_grid",
    "HyperGrid": "hyper_grid",
    "KERNELS": "kernels",
    "TREND_KERNELS": "kernels",
    "anisotropic_kernel_matrix": "kernels_anisotropic",
    "approx_gp_log_prob": "approx_fit",
    "approx_gp_predictive": "approx_fit",
    "APPROX_FAMILIES": "approx_fit",
    "average_log_likelihood": "average",
    "canonical_kernel": "kernels",
    "joint_draw": "prior",
    "kernel_matrix": "kernels",
    "kernel_matrix_mixed": "kernels",
    "kernel_matrix_sum": "kernels",
}

__all__ = sorted(_HOMES)
__getattr__ = names_on_first_use(__name__, _HOMES)
