"""Maps of :func:`tnpx.predict`'s result for two input columns (what ``tnpx predict --plot``
draws for a 2D model): per output, the predictive mean and the predictive standard deviation
over the targets' box, with the context points marked.

Targets at arbitrary points are drawn as an interpolated image (a triangulation of the targets,
filled contours), or as coloured points where they cannot be triangulated (fewer than three, or
all on one line).

Axes (:func:`map_axes`): a longitude-like input column (``lon``, ``longitude``, ``lng``) goes
across and a latitude-like one (``lat``, ``latitude``) up, whatever their order; otherwise the
first input column goes across and the second up. ``tnpx predict --plot-axes ACROSS UP``
chooses them by hand.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..extras import pyplot
from .figures import save_figure

PANELS = ("mean", "std")  # the columns of a map figure, one row per output
LONGITUDE_LIKE, LATITUDE_LIKE = ("lon", "lng"), ("lat",)  # name prefixes, any case


def map_axes(columns: list) -> tuple:
    """``(across, up)`` for a map of the two input ``columns`` (the module's convention): a
    longitude-like column across, a latitude-like one up, else the first across."""
    first, second = columns

    def like(col, prefixes) -> bool:
        return str(col).lower().startswith(prefixes)

    if like(second, LONGITUDE_LIKE) or like(first, LATITUDE_LIKE):
        return second, first
    return first, second


def prediction_map_figure(
    result, x_cols: list, y_cols: list, context=None, max_points=20000, truth=None
):
    """A figure of ``len(y_cols)`` rows and the :data:`PANELS` columns: each output's
    predictive mean and std at the targets, titled ``"{y} mean"`` and ``"{y} std"``, axes named
    by the two ``x_cols``, the ``context`` DataFrame's points marked. More than ``max_points``
    targets are thinned for drawing. Given ``truth``, a ``"{y} truth"`` panel comes first, on
    the mean's colour scale so the two read alike.

    Args:
        result: :func:`tnpx.predict`'s DataFrame (``x_cols``, then ``{y}_mean``, ``{y}_std``).
        x_cols: the two input columns (first: horizontal axis).
        y_cols: the output columns.
        context: the context DataFrame (``x_cols`` and ``y_cols``), or None.
        truth: the true outputs at the targets (a DataFrame with the ``y_cols``, row for row
            with ``result``), or None.
    """
    if len(x_cols) != 2:
        raise ValueError(f"a prediction map needs two input columns, got {len(x_cols)}")
    if truth is not None and len(truth) != len(result):
        raise ValueError(f"truth has {len(truth)} rows for {len(result)} predictions")
    plt = pyplot("plotting")
    every = max(1, len(result) // max_points)
    shown = result.iloc[::every]
    x, y = (shown[c].to_numpy(dtype=float) for c in x_cols)
    panels = PANELS if truth is None else ("truth", *PANELS)
    size = (5 * len(panels), 4 * len(y_cols))
    fig, axes = plt.subplots(len(y_cols), len(panels), figsize=size, squeeze=False)
    for row, out in zip(axes, y_cols):
        values = {p: shown[f"{out}_{p}"].to_numpy(dtype=float) for p in PANELS}
        if truth is not None:
            values["truth"] = truth[out].iloc[::every].to_numpy(dtype=float)
        for ax, panel in zip(row, panels):
            shared = [values[p] for p in ("truth", "mean") if p in values]
            levels = 20 if panel == "std" else _levels(shared)
            image = _fill(ax, x, y, values[panel], panel, levels)
            fig.colorbar(image, ax=ax)
            if context is not None and len(context):
                cx, cy = (context[c].to_numpy(dtype=float) for c in x_cols)
                ax.scatter(cx, cy, s=14, c="white", edgecolors="black", lw=0.8, label="context")
            ax.set_title(f"{out} {panel}")
            ax.set_xlabel(str(x_cols[0]))
            ax.set_ylabel(str(x_cols[1]))
    if context is not None and len(context):
        axes[0, 0].legend(fontsize=8, loc="upper right")
    return fig


def _levels(arrays: list[np.ndarray], n: int = 20) -> np.ndarray | int:
    """``n + 1`` contour levels spanning all of ``arrays`` (one scale for truth and mean; a
    missing true value, NaN, is left out of the span)."""
    finite = np.concatenate([a[np.isfinite(a)] for a in arrays])
    if not len(finite) or finite.max() <= finite.min():
        return n
    return np.linspace(finite.min(), finite.max(), n + 1)


def _fill(ax, x: np.ndarray, y: np.ndarray, values: np.ndarray, panel: str, levels=20):
    """Filled contours of ``values`` over a triangulation of the points, else the points."""
    cmap = "magma" if panel == "std" else "viridis"
    from matplotlib.tri import Triangulation

    try:
        return ax.tricontourf(Triangulation(x, y), values, levels=levels, cmap=cmap)
    except (ValueError, RuntimeError):  # too few points, or all on one line
        if isinstance(levels, np.ndarray):  # the same colour scale as the contours would use
            return ax.scatter(x, y, c=values, s=12, cmap=cmap, vmin=levels[0], vmax=levels[-1])
        return ax.scatter(x, y, c=values, s=12, cmap=cmap)


def plot_prediction_map(
    result,
    path: str | Path,
    x_cols: list,
    y_cols: list,
    context=None,
    max_points=20000,
    truth=None,
) -> Path:
    """Write :func:`prediction_map_figure` as a PNG; returns the path written."""
    figure = prediction_map_figure(result, x_cols, y_cols, context, max_points, truth)
    return save_figure(figure, path)
