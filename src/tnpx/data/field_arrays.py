"""Array helpers that several data sources share: a field's weighted mean and standard deviation
(:func:`mean_std`) and a time axis as numbers (:func:`time_values`).

One job: small numpy functions with no source of their own. The ``era5`` source standardises its
regions with them, the ``grid`` source its windows and time axis, the ``stations`` source lines
its readings' times up with a grid's; each source imports them from here, not from another
source's room.
"""

from __future__ import annotations

import numpy as np


def mean_std(values: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """The weighted mean and standard deviation of ``values`` (any shape, flattened; ``weights``
    the same number of entries). A constant field gets standard deviation 1.0, so dividing by it
    stays finite."""
    values, weights = np.asarray(values, np.float64).ravel(), np.asarray(weights).ravel()
    mean = float(np.average(values, weights=weights))
    std = float(np.sqrt(np.average((values - mean) ** 2, weights=weights)))
    return mean, std if std > 0 else 1.0


def time_values(times: np.ndarray) -> np.ndarray:
    """Times as float64 inputs: hours since 1970-01-01 for datetime64, else the numbers
    themselves (years for the stand-in)."""
    times = np.asarray(times)
    if np.issubdtype(times.dtype, np.datetime64):
        return (times - np.datetime64("1970-01-01T00:00")) / np.timedelta64(1, "h")
    if np.issubdtype(times.dtype, np.number):
        return times.astype(np.float64)
    raise TypeError(f"the time axis must be datetime64 or numeric, got {times.dtype}")


__all__ = ["mean_std", "time_values"]
