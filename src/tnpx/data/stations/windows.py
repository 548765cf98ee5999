"""The ``stations`` source's time windows: each reading's task key and its time within its
window.

One job: ``window`` checked, and a reading's time (:func:`~tnpx.data.table.times.parse_times`)
turned into the start of its window (the task key) and its offset from that start. A window is
None (one task per time value), a width in the time column's units (numbers), or for dates a
pandas offset: a fixed width (``1D``, ``6h``, ``30min``) aligned to 1970-01-01 00:00, or a
calendar period (``W``, ``M``, ``Y``) aligned to its own starts. Used by
:class:`~tnpx.data.stations.StationsSampler`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...user_files import DataError, Table
from ..table.times import is_dates

if TYPE_CHECKING:  # pandas is imported where it is used, so `import tnpx` stays light
    import pandas as pd


def check_window(window) -> None:
    """A ``ValueError`` of one line unless ``window`` is None, a positive finite number, a
    positive width of time (``1D``) or a calendar period (``W``)."""
    if window is None:
        return
    if isinstance(window, bool) or not isinstance(window, (int, float, str)):
        raise ValueError(
            f"stations: window must be a number, a pandas offset or null, got {window!r}"
        )
    if isinstance(window, str):
        _window_kind(window)
    elif not (np.isfinite(window) and window > 0):
        raise ValueError(f"stations: window must be > 0, got {window!r}")


def window_keys(
    table: Table, times: pd.Series, col: str, window: float | str | None
) -> tuple[pd.Series, np.ndarray]:
    """Each reading's task key and its time since its window's start.

    Args:
        table: the readings (its name, for the message).
        times: ``[rows]`` the parsed times of column ``col`` (float64 or datetime64).
        col: the time column.
        window: None, a number (numbers) or a pandas offset (dates), checked by
            :func:`check_window`.

    Returns:
        ``keys [rows]``: each window's start, a number, or for dates text as written (such as
        ``2024-01-31 12:00:00``); ``offsets [rows]`` float64: the time since that start
        (hours for dates).

    Raises:
        DataError: dates with a numeric window, or numbers with an offset.
    """
    import pandas as pd

    dates = is_dates(times)
    if window is not None and dates != isinstance(window, str):
        what, want = ("dates", "a pandas offset such as '1D'") if dates else ("numbers", "a number")
        raise DataError(
            f"{table.name}, column {col!r}: the times are {what}, so window must be {want}, "
            f"got {window!r}"
        )
    if window is None:
        starts = times
    elif not dates:
        starts = np.floor(times / window) * window
    elif _window_kind(window) == "width":
        starts = times.dt.floor(window)
    else:
        starts = _period_starts(times, window)
    if not dates:
        return starts, (times - starts).to_numpy(np.float64)
    offset = ((times - starts) / pd.Timedelta(hours=1)).to_numpy(np.float64)
    return starts.astype(str), offset  # text keys: dates as written, not integer ticks


def _window_kind(window: str) -> str:
    """``"width"`` for a fixed width of time (``1D``, ``6h``, ``30min``), ``"period"`` for a
    calendar period (``W``, ``M``, ``Y``); a ``ValueError`` for anything else."""
    import pandas as pd
    from pandas.tseries.frequencies import to_offset
    from pandas.tseries.offsets import Day, Tick

    try:
        offset = to_offset(window)
    except ValueError:
        offset = None  # "M", "Y": periods, not offsets
    if isinstance(offset, (Tick, Day)):
        if pd.Timedelta(offset) <= pd.Timedelta(0):
            raise ValueError(f"stations: window {window!r} must be a positive width of time")
        return "width"
    try:
        pd.Period("2000-01-01", freq=window)
    except ValueError:
        raise ValueError(
            f"stations: window {window!r} is neither a width of time (such as '1D', '6h' or "
            "'30min') nor a calendar period (such as 'W', 'M' or 'Y')"
        ) from None
    return "period"


def _period_starts(times: pd.Series, window: str) -> pd.Series:
    """The start of each time's calendar period (``W``, ``M``, ...), in its time zone."""
    import warnings

    tz = times.dt.tz
    with warnings.catch_warnings():  # periods have no time zone: it is put back below
        warnings.simplefilter("ignore", UserWarning)
        starts = times.dt.to_period(window).dt.start_time
    return starts if tz is None else starts.dt.tz_localize(tz)
