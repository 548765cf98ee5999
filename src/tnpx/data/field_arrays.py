"""Array helpers that several data sources share: a field's weighted mean and standard deviation
(:func:`mean_std`) and a time axis as numbers (:func:`time_values`).

One job: small numpy functions with no source of their own. The ``era5`` source standardises its
regions with them, the ``grid`` source its windows and time axis, the ``stations`` source lines
its readings' times up with a grid's; each source imports them from here, not from another
source's room.
"""

from __future__ import annotations

import numpy as np

# The unit of a time coordinate's float64 inputs (:func:`time_values`); a non-standard calendar's
# dates (cftime) are counted in their own calendar, named after it: :func:`time_unit`.
TIME_UNIT = "hours since 1970-01-01"
STANDARD_CALENDARS = ("standard", "gregorian", "proleptic_gregorian")


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


def time_unit(calendar: str | None = None) -> str:
    """:data:`TIME_UNIT`, with the calendar in brackets where it is not the standard one (so
    ``"hours since 1970-01-01 (360_day)"``): the unit a checkpoint stores for a time input."""
    if calendar is None or calendar.lower() in STANDARD_CALENDARS:
        return TIME_UNIT
    return f"{TIME_UNIT} ({calendar})"


def coordinate_unit(index, attrs: dict) -> str:
    """The unit of a coordinate's inputs (the grid source's ``coordinate_values``), which a
    checkpoint stores: hours since 1970-01-01 for dates (their calendar named where not the
    standard one: :func:`time_unit`), hours for time spans, else the CF ``units`` attribute
    (``"degrees_north"``; ``""`` where there is none)."""
    values = np.asarray(index)
    if values.dtype == object and len(values) and hasattr(values[0], "calendar"):
        return time_unit(values[0].calendar)
    if np.issubdtype(values.dtype, np.datetime64):
        return time_unit()
    if np.issubdtype(values.dtype, np.timedelta64):
        return "hours"
    return str(attrs.get("units", ""))


__all__ = [
    "STANDARD_CALENDARS",
    "TIME_UNIT",
    "coordinate_unit",
    "mean_std",
    "time_unit",
    "time_values",
]
