"""``tnpx predict --plot`` with one input: each output's mean and interval against it."""

from __future__ import annotations

from pathlib import Path

from ..extras import pyplot
from .figures import save_figure


def plot_prediction(
    result,
    path: str | Path,
    x_col,
    y_cols: list,
    context=None,
    level: float = 0.95,
    max_points: int = 20000,
) -> Path:
    """Save a PNG of :func:`tnpx.predict`'s ``result`` for one input column: per output, the
    predictive mean against ``x_col`` with its central ``level`` interval as a band, and the
    ``context`` DataFrame's points. More than ``max_points`` targets are thinned for drawing.
    """
    plt = pyplot("plotting")

    ordered = result.sort_values(x_col, kind="stable")
    ordered = ordered.iloc[:: max(1, len(ordered) // max_points)]
    x = ordered[x_col].to_numpy()
    fig, axes = plt.subplots(
        len(y_cols), 1, figsize=(7, 3.2 * len(y_cols)), squeeze=False, sharex=True
    )
    for ax, y in zip(axes[:, 0], y_cols):
        lower, upper = ordered[f"{y}_lower"].to_numpy(), ordered[f"{y}_upper"].to_numpy()
        band = f"{level:.0%} interval"
        ax.fill_between(x, lower, upper, color="tab:blue", alpha=0.2, lw=0, label=band)
        ax.plot(x, ordered[f"{y}_mean"].to_numpy(), color="tab:blue", lw=1.3, label="mean")
        if context is not None and len(context):
            ax.plot(context[x_col], context[y], "o", color="crimson", ms=4, label="context")
        ax.set_ylabel(str(y))
    axes[-1, 0].set_xlabel(str(x_col))
    axes[0, 0].legend(fontsize=8, loc="best")
    return save_figure(fig, path)
