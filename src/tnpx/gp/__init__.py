"""GP machinery shared by the data priors, the GP models, the lab and the benchmarks.

- :mod:`.kernels`: the covariance functions (``KERNELS``, ``kernel_matrix``, sums of kernels).
- :mod:`.kernels_anisotropic`: rotated, stretched inputs into those kernels (the 2D priors).
- :mod:`.prior`: exact joint draws of zero-mean GP functions from a covariance matrix.
- :mod:`.hyper_grid` and :mod:`.average`: the Bayes-optimal predictive of a GP prior (GPs
  averaged over its hyper-parameters), the reference no trained model can beat.
- :mod:`.batch_gp`: the GPyTorch batch of exact, masked GPs behind the fitted GP baselines
  ``gp`` / ``mt-gp`` (registered in :mod:`tnpx.models.gp_fit`); needs the ``gp`` extra.

The room imports no other room at run time (the data priors and models import it), and this
``__init__`` imports nothing, so a module of it pays for no other.
"""
