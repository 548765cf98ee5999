"""The 1D task figure of a count model trained with an exposure column: counts drawn per unit
exposure beside the model's rate (its grid has no exposures), the axis says so."""

from __future__ import annotations

import pytest

from tests.helpers.small_models import small_model
from tests.helpers.user_tables import counts_table
from tnpx.data.table import TableSampler

pytest.importorskip("matplotlib")


def test_the_figure_of_an_exposure_model_is_drawn_per_unit_exposure(tmp_path, monkeypatch):
    from tnpx.plot import plot_1d_tasks, tasks_1d

    labels = []
    monkeypatch.setattr(tasks_1d, "save_figure", lambda fig, path: labels.append(
        fig.axes[0].get_ylabel()) or path)  # fmt: skip
    sampler = TableSampler.from_frame(
        counts_table(), task="site", x=["week"], y=["cases"], likelihood="poisson",
        exposure="person_years", val_fraction=0.2, test_fraction=0.2,
    )  # fmt: skip
    model = small_model("tnp", likelihood="poisson")
    plot_1d_tasks({"tnp": model}, sampler, tmp_path / "tasks.png", n_tasks=2, n_samples=2)
    assert labels == ["cases per unit exposure"]
