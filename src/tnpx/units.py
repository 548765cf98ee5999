"""Between a user's units and a model's: :class:`UnitMap`, one per-column affine map for the
inputs and one for the outputs, shared by :func:`tnpx.predict` and the BoTorch adapter
:class:`tnpx.bo.NPSurrogate`; :func:`in_user_units` maps a whole predictive distribution
(``tnpx.ContextStream``), where the others map its moments.

- inputs: ``x_model = (x - loc) / scale`` takes a range ``[low, high]`` per input column (the
  context's range in ``predict``, the search box in BO) affinely onto the model's training
  domain (:func:`range_onto_box`).
- outputs: ``y_model = (y - mean) / std`` with the observed outputs' mean and *population*
  standard deviation per column (:func:`standardising`). A column without spread (one point,
  or all values equal up to rounding: ``std <= REL_STD_FLOOR * |mean|``) keeps scale 1: it is
  centred on its value and stays in its own units, so the model sees a flat context at 0 and
  the predictions stay finite and in the user's units. Dividing by a rounding-error std would
  blow the context up to values of order 1 made of noise, and shrink every predicted std to
  nothing.

Why not BoTorch's ``Normalize`` / ``Standardize`` transforms: their semantics differ
(``Normalize`` maps onto the unit cube, not onto a training domain such as ``[-2, 2]``;
``Standardize`` divides by the Bessel-corrected std and floors it at an absolute ``1e-8``, not
relative to the mean), they are stateful modules built for BoTorch models, and
:func:`tnpx.predict` must work without importing BoTorch (an optional, heavy dependency).
The maps hold float64 NumPy arrays and apply to NumPy arrays and (differentiably) to tensors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import torch
from torch.distributions import Distribution, Normal

from .distributions import JointGaussian, LatentMixture

# A std at or below this fraction of |mean| is rounding error: the column has no spread.
REL_STD_FLOOR = 1e-10

Values = TypeVar("Values", np.ndarray, torch.Tensor)


def _like(constants: np.ndarray, values: Values) -> Values:
    """``constants`` as the type (and for tensors, the dtype and device) of ``values``."""
    if isinstance(values, torch.Tensor):
        return torch.as_tensor(constants, dtype=values.dtype, device=values.device)
    return constants


@dataclass(frozen=True)
class Affine:
    """Per-column affine map ``model = (user - loc) / scale``; ``loc``, ``scale`` ``[D]``."""

    loc: np.ndarray
    scale: np.ndarray

    @classmethod
    def identity(cls, d: int) -> Affine:
        return cls(np.zeros(d), np.ones(d))

    def to_model(self, values: Values) -> Values:
        """``[..., D]`` user values in the model's units."""
        return (values - _like(self.loc, values)) / _like(self.scale, values)

    def is_identity(self) -> bool:
        """Whether the map leaves values as they are (loc 0, scale 1 for every column)."""
        return bool(np.all(np.asarray(self.loc) == 0) and np.all(np.asarray(self.scale) == 1))

    def to_user(self, values: Values) -> Values:
        """``[..., D]`` model values in the user's units."""
        return values * _like(self.scale, values) + _like(self.loc, values)


def box_pairs(value, d: int, name: str) -> np.ndarray:
    """A ``(a, b)`` pair for every column, or one pair per column, as ``[d, 2]`` float64."""
    pairs = np.asarray(value, dtype=np.float64)
    if pairs.shape in ((2,), (1, 2)):
        pairs = np.tile(pairs.reshape(2), (d, 1))
    if pairs.shape != (d, 2) or not np.isfinite(pairs).all():
        raise ValueError(
            f"{name}: expected one finite pair or {d} pairs (one per column), got {value!r}"
        )
    return pairs


def range_onto_box(ranges: np.ndarray, box: np.ndarray) -> Affine:
    """The map taking each column's ``ranges [D, 2]`` (``low < high``) onto ``box [D, 2]``."""
    scale = (ranges[:, 1] - ranges[:, 0]) / (box[:, 1] - box[:, 0])
    return Affine(ranges[:, 0] - box[:, 0] * scale, scale)


def no_spread(values: np.ndarray) -> np.ndarray:
    """``[D]``: which columns of ``values [n, D]`` (n >= 1) have no spread (see module)."""
    return values.std(0) <= REL_STD_FLOOR * np.abs(values.mean(0))


def standardising(values: np.ndarray) -> Affine:
    """``(y - mean) / std`` per column of ``values [n, D]``: mean and population std, scale 1
    where a column has no spread (:func:`no_spread`); the identity for ``n = 0``."""
    if len(values) == 0:
        return Affine.identity(values.shape[1])
    flat = no_spread(values)
    return Affine(values.mean(0), np.where(flat, 1.0, values.std(0)))


@dataclass(frozen=True)
class UnitMap:
    """The input and output maps of one context: user units <-> model units.

    ``x``: inputs ``[..., dim_x]``; ``y``: outputs ``[..., dim_y]``. Predicted means map back
    with ``y.to_user``; predicted standard deviations scale by ``y.scale`` only.
    """

    x: Affine
    y: Affine

    @classmethod
    def identity(cls, dim_x: int, dim_y: int) -> UnitMap:
        return cls(Affine.identity(dim_x), Affine.identity(dim_y))

    def inputs(self, x: Values) -> Values:
        """User inputs ``[..., dim_x]`` in the model's units."""
        return self.x.to_model(x)

    def outputs(self, y: Values) -> Values:
        """User outputs ``[..., dim_y]`` in the model's units."""
        return self.y.to_model(y)

    def mean_to_user(self, mean: Values) -> Values:
        """A predicted mean ``[..., dim_y]`` in the user's units."""
        return self.y.to_user(mean)

    def std_to_user(self, std: Values) -> Values:
        """A predicted standard deviation ``[..., dim_y]`` in the user's units."""
        return std * _like(self.y.scale, std)

    def variance_to_user(self, variance: Values) -> Values:
        """A predicted variance ``[..., dim_y]`` in the user's units."""
        return variance * _like(self.y.scale**2, variance)


def in_user_units(pred: Distribution, y: Affine, dtype: torch.dtype) -> Distribution:
    """``pred``, a prediction over outputs in the model's units, as the distribution of the
    same outputs in the user's units (``y.to_user``: mean ``* scale + loc``, standard deviation
    ``* scale``, covariance ``D Sigma D`` with ``D = diag(scale)``): the same kind of
    distribution (``Normal``, :class:`~tnpx.distributions.LatentMixture`,
    :class:`~tnpx.distributions.JointGaussian`), computed in float64 and returned in ``dtype``.
    """

    def scaled(values: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return (values.double() * scale).to(dtype)

    def mean(loc: torch.Tensor) -> torch.Tensor:
        return y.to_user(loc.double()).to(dtype)

    if isinstance(pred, LatentMixture):  # each component maps; the mixture weights do not
        return LatentMixture(in_user_units(pred.component, y, dtype))
    scale = torch.as_tensor(y.scale, dtype=torch.float64, device=pred.mean.device)  # [dim_y]
    if isinstance(pred, Normal):
        return Normal(mean(pred.loc), scaled(pred.scale, scale), validate_args=False)
    if isinstance(pred, JointGaussian):
        flat = scale.repeat(pred.loc.shape[-2])[:, None]  # [n_tgt * dim_y, 1]: target-major
        if pred.scale_tril is not None:
            return JointGaussian.cholesky(mean(pred.loc), scaled(pred.scale_tril, flat))
        diag = scaled(pred.cov_diag, flat[:, 0].square())
        return JointGaussian.low_rank(mean(pred.loc), scaled(pred.cov_factor, flat), diag)
    if y.is_identity():
        return pred  # another family's outputs left as they are (counts, 0/1, fractions)
    raise TypeError(f"cannot map a {type(pred).__name__} prediction into the user's units")


__all__ = [
    "Affine",
    "UnitMap",
    "box_pairs",
    "in_user_units",
    "no_spread",
    "range_onto_box",
    "standardising",
]
