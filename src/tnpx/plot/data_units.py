"""A source's model units back to the data's, for axes drawn in the user's units."""

from __future__ import annotations

import numpy as np
import torch


def _real(mask: torch.Tensor | None, values: torch.Tensor) -> torch.Tensor:
    """``[batch, n]`` True at the real points of ``values [batch, n, dim]`` (all without a mask)."""
    return torch.ones(values.shape[:2], dtype=torch.bool) if mask is None else mask.bool()


class DataUnits:
    """A source's model units back to the data's (``value = value_model * scale + loc``, per
    column, float64), from its ``normalisation``; the identity and ``x``/``y`` without one.
    ``x(values)``: every value is input column ``column``'s (0: a 1D source's); ``column=None``:
    ``values [..., k]`` are the first ``k`` input columns. ``y`` likewise; ``scale_y``
    ``[dim_y]`` maps a standard deviation."""

    def __init__(self, normalisation: dict | None):
        def part(key: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
            if not normalisation:
                return np.zeros(1), np.ones(1), [key]
            p = normalisation[key]
            loc, scale = (np.asarray(p[k], dtype=np.float64) for k in ("loc", "scale"))
            return loc, scale, [str(c) for c in p["columns"]]

        self.loc_x, self.scale_x, self.x_names = part("x")
        self.loc_y, self.scale_y, self.y_names = part("y")
        self.x_name, self.y_name = self.x_names[0], self.y_names[0]

    def x(self, values: torch.Tensor, column: int | None = 0) -> np.ndarray:
        return _affine(values, self.loc_x, self.scale_x, column)

    def y(self, values: torch.Tensor, column: int | None = 0) -> np.ndarray:
        return _affine(values, self.loc_y, self.scale_y, column)


def _affine(values: torch.Tensor, loc: np.ndarray, scale: np.ndarray, column: int | None):
    if column is None:
        k = values.shape[-1]
        return values.double().numpy() * scale[:k] + loc[:k]
    return values.double().numpy() * scale[column] + loc[column]
