"""Training curves: validation LL against step, one line per run."""

from __future__ import annotations

from pathlib import Path

from ..extras import pyplot
from .figures import save_figure


def plot_validation_curves(csv_paths: dict[str, Path], path: str | Path) -> Path:
    """Validation LL against training step for each run, read from its ``metrics.csv``."""
    import pandas as pd

    plt = pyplot("plotting")

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for label, csv_path in csv_paths.items():
        frame = pd.read_csv(csv_path).dropna(subset=["val_ll"])
        ax.plot(frame["step"], frame["val_ll"], "o-", label=label)
    ax.set_xlabel("training step")
    ax.set_ylabel("validation LL per target (higher is better)")
    ax.legend()
    return save_figure(fig, path)
