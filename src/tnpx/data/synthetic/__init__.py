"""Task sources drawn from priors, and measured series for zero-shot checks.

- :mod:`~tnpx.data.synthetic.gp`: the 1D/2D GP prior (:class:`GPConfig`, :class:`GPSampler`).
- :mod:`~tnpx.data.synthetic.gp_composite`: the broader 1D prior of the v2 / v3 zoo
  (:class:`CompositeGPConfig`, :class:`CompositeGPSampler`).
- :mod:`~tnpx.data.synthetic.gp2d_composite`: the 2D zoo's anisotropic prior
  (:class:`GP2DCompositeConfig`, :class:`GP2DCompositeSampler`).
- :mod:`~tnpx.data.synthetic.link_priors`: tasks of each likelihood family (counts, rain,
  0/1, fractions, ...) drawn from GP latents through the family's link, with the truth
  (:class:`LinkPriorConfig`, :class:`LinkPriorSampler`, :func:`true_predictive_log_prob`); the
  families' laws are :mod:`~tnpx.data.synthetic.link_families`.
- :mod:`~tnpx.data.synthetic.sawtooth`: sawtooth waves (:class:`SawtoothConfig`,
  :class:`SawtoothSampler`).
- :mod:`~tnpx.data.synthetic.real_series`: measured 1D series shipped inside statsmodels
  (:data:`SERIES`, :class:`RealSeries`, :func:`load_series`), for zero-shot evaluation.
"""

from __future__ import annotations

from .gp import GPConfig, GPSampler
from .gp2d_composite import GP2DCompositeConfig, GP2DCompositeSampler
from .gp_composite import CompositeGPConfig, CompositeGPSampler, single_kernel_options
from .link_priors import LinkPriorConfig, LinkPriorSampler, true_predictive_log_prob
from .real_series import SERIES, RealSeries, load_series
from .sawtooth import SawtoothConfig, SawtoothSampler

__all__ = [
    "SERIES",
    "CompositeGPConfig",
    "CompositeGPSampler",
    "GP2DCompositeConfig",
    "GP2DCompositeSampler",
    "GPConfig",
    "GPSampler",
    "LinkPriorConfig",
    "LinkPriorSampler",
    "RealSeries",
    "SawtoothConfig",
    "SawtoothSampler",
    "load_series",
    "single_kernel_options",
    "true_predictive_log_prob",
]
