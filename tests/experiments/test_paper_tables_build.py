"""experiments/paper_tables/build.py: the KR-3 configs' layout, one tiny real cell end to end; the
real-data tables (KR-4, TE-2, TE-3): row labels to models and options, their configs, the skip
of a cell whose data are missing, a tiny generic table (an image column, LL) trained, reported
and resumed, and shared-training tables. The README from cached cells: test_table_report.py;
stale cells: test_stale_cells.py."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from experiments.paper_tables import build as kt
from tests.helpers.table_fakes import nll_rows
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.evaluation.protocol import build_test_sampler
from tnpx.models import build_model

# End to end through the lab's scripts or a subprocess: `make test-slow` (CI runs it).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

GP_TABLES = [name for name, spec in kt.TABLES.items() if spec.gp_data]
REAL_TABLES = ["kr4", "te2", "te3"]


@pytest.mark.parametrize("name", ["kr3", "kr3-budget"])
def test_kr3_configs_give_the_2d_layout(name):
    cfg = load_config(ROOT / "configs" / f"{name}.yaml")
    batch = batch_at(build_test_sampler(cfg), 0, split="test")
    n_ctx = batch.xc.shape[1]
    assert 12 <= n_ctx <= 127
    assert batch.xt.shape == (16, 384, 2) and batch.yt.shape == (16, 384, 1)
    axis = torch.linspace(-2, 2, 16)
    assert_close(batch.xt[0, 128:], torch.cartesian_prod(axis, axis))
    assert cfg.eval.n_batches * cfg.eval.batch_size == (80_000 if name == "kr3" else 1024)


@pytest.mark.slow
def test_one_tiny_real_cell_end_to_end(tmp_path, capsys):
    out, runs = tmp_path / "results", tmp_path / "runs"
    argv = [
        "--tables",
        "kr1",
        "--models",
        "cnp",
        "--kernels",
        "rbf",
        "--steps",
        "3",
        "--eval-batches",
        "2",
        "--out",
        str(out),
        "--runs",
        str(runs),
    ]
    kt.main(argv)
    cell = kt.Cell.from_json(kt.cell_path(out, "kr1", "rbf", "cnp").read_text())
    assert cell.steps == 3 and cell.test_tasks == 32 and cell.parameters > 100_000
    assert cell.train_seconds is not None and cell.eval_seconds > 0
    assert (runs / "kr1-rbf" / "cnp" / "model.pt").exists()
    text = (out / "kr1" / "README.md").read_text()
    assert f"{cell.nll:.3f} ± {cell.nll_se:.3f} (0.238)" in nll_rows(text)["cnp"]
    assert "**Not run yet** (35 of 36 cells" in text
    kt.main(argv)  # cached: nothing retrained or rescored
    assert "(cached)" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="other settings"):
        kt.main([*argv[:7], "4", *argv[8:]])  # --steps 4 would mix two protocols


@pytest.mark.slow
def test_restore_runs_retrains_a_missing_run_behind_a_cached_cell(tmp_path, capsys):
    """A fresh machine has the committed cells but not runs/: --restore-runs retrains the
    model (seeded, so here it scores exactly as the cached cell) and leaves the cell alone."""
    out, runs = tmp_path / "results", tmp_path / "runs"
    argv = ["--tables", "kr1", "--models", "cnp", "--kernels", "rbf", "--steps", "3"]
    argv += ["--eval-batches", "2", "--out", str(out), "--runs", str(runs)]
    kt.main(argv)
    cell_file = kt.cell_path(out, "kr1", "rbf", "cnp")
    cached, model = cell_file.read_text(), runs / "kr1-rbf" / "cnp" / "model.pt"
    shutil.rmtree(model.parent)
    capsys.readouterr()
    kt.main([*argv, "--restore-runs"])
    printed = capsys.readouterr().out
    assert model.exists() and cell_file.read_text() == cached
    assert "(difference +0.0000, 0.00 s.e.)" in printed and "restored 1 runs" in printed
    kt.main([*argv, "--restore-runs"])  # nothing left to restore
    assert "no run behind a cached cell is missing" in capsys.readouterr().out


# --- the real-data tables (KR-4, TE-2, TE-3) and the generic engine ------------------------


def test_default_tables_are_kr1_and_kr3_and_every_table_is_a_choice():
    assert kt.parse_args([]).tables == ["kr1", "kr3"]
    assert kt.parse_args(["--tables", *REAL_TABLES]).tables == REAL_TABLES
    args = kt.parse_args(["--tables", "kr4", "--columns", "mnist", "--models", "tnp-d"])
    assert args.kernels == ["mnist"]
    with pytest.raises(SystemExit):
        kt.parse_args(["--tables", "kr1", "--columns", "mnist"])  # not a KR-1 column


@pytest.mark.parametrize(
    "table, column, label, model, options",
    [
        ("te2", "t-mnist", "pt-tnp-m64", "pt-tnp-ist", {"n_pseudo": 64}),
        ("te2", "t-cifar10", "pt-tnp-m128", "pt-tnp-ist", {"n_pseudo": 128}),
        ("te2", "t-mnist", "te-pt-tnp-m128", "te-pt-tnp", {"n_pseudo": 128}),
        ("te2", "t-mnist", "convcnp", "convcnp", {"preset": "te-code", "grid_points": 56}),
        ("te2", "t-cifar10", "convcnp", "convcnp", {"preset": "te-code", "grid_points": 64}),
        ("te3", "kolmogorov", "te-pt-tnp-m64", "te-pt-tnp", {"n_pseudo": 64}),
        ("te3", "kolmogorov", "mt-gp", "mt-gp", {}),
        ("kr4", "mnist", "tnp-kr-full", "tnp-kr-full", {"min_std": 0.05}),
    ],
)
@pytest.mark.parametrize("exact", [False, True])
def test_a_label_maps_to_its_model_and_options(
    tmp_path, table, column, label, model, options, exact
):
    spec = kt.TABLES[table]
    row = spec.rows[label]
    cfg = kt.cell_config(spec, column, label, exact, tmp_path, [])
    assert cfg.model["name"] == row.model == model
    assert cfg.protocol == ("exact" if exact else "budget")
    for key, value in options.items():
        assert cfg.model[key] == value
    for key, value in row.budget.items():  # budget sizes at the budget only
        assert cfg.model.get(key) == (row.options.get(key) if exact else value)
    assert cfg.train.out_dir == str(tmp_path / f"{table}-{column}" / label)
    assert kt.cell_path(tmp_path, table, column, label).name == f"{column}-{label}.json"
    # TE-PT-TNP and RCNP train with batch 8 (TE F.2/F.3), the others with the file's
    batch = 8 if model in ("te-pt-tnp", "rcnp") else 32 if (table, exact) == ("kr4", True) else 16
    assert cfg.data["batch_size"] == batch
    if table == "te2":
        assert cfg.model["likelihood"] == "homoscedastic" and cfg.model["dim_model"] != 128
    if table in ("te2", "te3") and row.trained and model != "convcnp":
        assert cfg.model["dim_model"] == 32  # D_z = 32
    built = build_model(model, cfg.model["dim_x"], cfg.model["dim_y"], **cfg.model_options())
    assert built.name == model


@pytest.mark.parametrize("name", REAL_TABLES)
@pytest.mark.parametrize("exact", [False, True])
def test_real_table_configs_load_for_every_cell(tmp_path, name, exact):
    spec = kt.TABLES[name]
    for column, label in zip(spec.kernels * len(spec.models), spec.models * len(spec.kernels)):
        cfg = kt.cell_config(spec, column, label, exact, tmp_path, [])
        test = cfg.data_options(test=True)
        train = cfg.data_options()
        split = "subset" if cfg.data["name"] == "kolmogorov" else "split_data"
        assert train[split] == "train" and test[split] == "test"
        assert cfg.data["name"] == ("kolmogorov" if name == "te3" else "image")
        assert cfg.model["dim_x"] == {"kr4": 2, "te2": 2, "te3": 3}[name]
        assert cfg.model["dim_y"] == (1 if "mnist" in column else 2 if name == "te3" else 3)
        if exact:
            assert cfg.train.steps >= 100_000
            assert "standin" not in str(train.get("dataset", ""))
        else:
            assert train.get("dataset", "kolmogorov").endswith(("standin", "kolmogorov"))
    assert not spec.gp_data and kt.ORACLE not in spec.models


def test_a_cell_whose_data_are_missing_is_skipped_with_the_command_that_makes_them(
    tmp_path, capsys
):
    out, runs = tmp_path / "results", tmp_path / "runs"
    cache = tmp_path / "nowhere" / "kolmogorov-budget.pt"
    argv = ["--tables", "te3", "--models", "cnp", "mt-gp", "--out", str(out)]
    kt.main([*argv, "--runs", str(runs), f"data.cache={cache}"])
    printed = capsys.readouterr().out
    command = f"tnpx data kolmogorov --preset budget --out {cache}"
    assert printed.count("skipped") == 2 and command in printed
    assert not runs.exists() and not (out / "te3" / "cells").exists()
    text = (out / "te3" / "README.md").read_text()
    assert (
        "**Not run yet** (8 of 8 cells" in text
        and f"Skipped for missing data: data file {cache}" in text
    )
    results = json.loads((out / "te3" / "results.json").read_text())
    why = {m["model"]: m.get("why") for m in results["missing"]}
    assert command in why["cnp"] and command in why["mt-gp"] and why["rcnp"] is None
    # the exact protocol names the exact preset
    cfg = kt.cell_config(kt.TABLES["te3"], "kolmogorov", "cnp", True, runs, [f"data.cache={cache}"])
    assert f"--preset exact --out {cache}" in kt.missing_data(cfg, exact=True)


def tiny_image_table(tmp_path: Path) -> kt.TableSpec:
    """A one-column LL table on 40 random 8×8 images (a ``.npy`` file), two rows: a CNP and a
    pseudo-token TNP whose label sets ``n_pseudo``; its budget config lives in ``tmp_path``."""
    images = np.random.default_rng(0).integers(0, 256, (40, 8, 8, 1), dtype=np.uint8)
    np.save(tmp_path / "digits.npy", images)
    (tmp_path / "tiny-digits-budget.yaml").write_text(
        f"""name: tiny-digits-budget
protocol: budget
model: {{name: cnp, dim_x: 2, dim_y: 1, dim_model: 16, n_encoder_hidden: 1}}
data: {{name: image, batch_size: 4, dataset: file, path: {tmp_path / "digits.npy"},
       split_data: train, mode: kr, n_points: 20, min_ctx: 3, max_ctx: 10}}
optim: {{name: adamw, lr: 1.0e-3}}
train: {{steps: 3, log_every: 1, val_every: 100, val_batches: 1, checkpoint_every: 100,
        progress: false}}
eval: {{n_batches: 2, batch_size: 4, data: {{split_data: test}}}}
"""
    )
    small = {"dim_model": 16, "n_layers": 1, "n_heads": 2, "dim_head": 8, "dim_ff": 16}
    return kt.TableSpec(
        name="tiny",
        title="TINY: a test table",
        what="random 8×8 images",
        columns={"digits": "Digits"},
        rows={"cnp": kt.Row("cnp"), "pt-m4": kt.Row("pt-tnp-ist", {"n_pseudo": 4}, small)},
        paper={"cnp": {"digits": 0.5}, "pt-m4": {"digits": 1.0}},
        config=str(tmp_path / "tiny-{column}"),
        metric="ll",
        column_kind="dataset",
        paper_digits=2,
        budget_data="random images",
    )


def test_a_tiny_generic_table_trains_reports_and_resumes(tmp_path, monkeypatch, capsys):
    spec = tiny_image_table(tmp_path)
    monkeypatch.setitem(kt.TABLES, "tiny", spec)
    out, runs = tmp_path / "results", tmp_path / "runs"
    argv = ["--tables", "tiny", "--out", str(out), "--runs", str(runs)]
    kt.main([*argv, "--models", "pt-m4"])
    cell = kt.Cell.from_json((out / "tiny" / "cells" / "digits-pt-m4.json").read_text())
    assert (cell.model, cell.model_name, cell.registered) == ("pt-m4", "pt-tnp-ist", "pt-tnp-ist")
    assert cell.model_options["n_pseudo"] == 4 and cell.model_options["n_layers"] == 1
    assert cell.steps == 3 and cell.test_tasks == 8 and cell.train_seconds is not None
    assert (runs / "tiny-digits" / "pt-m4" / "model.pt").exists()
    text = (out / "tiny" / "README.md").read_text()
    assert "Metric: LL per target point (higher is better)" in text
    assert f"| pt-m4 | {cell.metrics.ll:.3f} ± {cell.metrics.ll_se:.3f} (1.00) |" in text
    assert "**Not run yet** (1 of 2 cells" in text and "cnp (Digits)" in text
    assert "| dataset | model | protocol |" in text and "data: random images" in text
    assert (out / "tiny" / "ll_vs_paper.png").exists()
    capsys.readouterr()
    kt.main(argv)  # resumes: the finished cell is read back, the missing one trained
    printed = capsys.readouterr().out
    assert "[tiny digits pt-m4] LL" in printed and "(cached)" in printed
    assert "[tiny digits cnp] LL" in printed and printed.count("(cached)") == 1
    results = json.loads((out / "tiny" / "results.json").read_text())
    assert results["missing"] == [] and len(results["cells"]) == 2
    assert "All cells are run." in (out / "tiny" / "README.md").read_text()
    cnp = kt.Cell.from_json((out / "tiny" / "cells" / "digits-cnp.json").read_text())
    assert cnp.model_name is None and cnp.registered == "cnp"  # label = model: as before


@pytest.mark.parametrize("exact", [False, True])
def test_te4_columns_are_test_regions_of_one_training_run(tmp_path, exact):
    spec = kt.TABLES["te4"]
    assert spec.shared_training and spec.kernels == ("train", "west", "north")
    for label in spec.models:
        configs = [kt.cell_config(spec, c, label, exact, tmp_path, []) for c in spec.kernels]
        assert len({cfg.train.out_dir for cfg in configs}) == 1  # one run per row
        for column, cfg in zip(spec.kernels, configs):
            assert cfg.data["name"] == "era5" and cfg.data["region"] == "train"
            assert cfg.data_options(test=True)["region"] == column
            assert cfg.model["dim_x"] == (4 if exact else 3)
        # training settings are identical across the columns: only the test set differs
        trained = [{k: v for k, v in kt.settings(c).items() if k != "eval"} for c in configs]
        assert trained[0] == trained[1] == trained[2]
    pt = kt.cell_config(spec, "train", "te-pt-tnp", exact, tmp_path, [])
    assert pt.model["n_pseudo"] == (128 if exact else 16) and pt.data["batch_size"] == 8


def test_a_shared_training_table_trains_once_and_reports_the_transfer(tmp_path, capsys):
    out, runs = tmp_path / "results", tmp_path / "runs"
    argv = ["--tables", "te4", "--models", "cnp", "--steps", "2", "--eval-batches", "1"]
    kt.main([*argv, "--out", str(out), "--runs", str(runs)])
    assert [p.name for p in runs.iterdir()] == ["te4"]  # not one run per region
    cells = [
        kt.Cell.from_json((out / "te4" / "cells" / f"{r}-cnp.json").read_text())
        for r in ("train", "west", "north")
    ]
    assert len({c.metrics.ll for c in cells}) == 3  # scored on three different test sets
    text = (out / "te4" / "README.md").read_text()
    assert "## Generalisation to held-out regions" in text
    diff = cells[1].metrics.ll - cells[0].metrics.ll
    assert f"| cnp | {diff:+.3f} ± " in text and "(-6.06)" in text


def test_the_reference_cell_is_scored_without_training(tmp_path):
    out, runs = tmp_path / "results", tmp_path / "runs"
    argv = ["--tables", "kr4", "--columns", "mnist", "--models", kt.REFERENCE, "--out", str(out)]
    kt.main([*argv, "--runs", str(runs), "--eval-batches", "2"])
    cell = kt.load_cells(out, kt.TABLES["kr4"])["mnist", kt.REFERENCE]
    assert cell.parameters == 0 and cell.train_seconds is None and cell.steps == 0
    assert cell.metrics.n_tasks > 0 and math.isfinite(cell.metrics.ll)
    assert "reference, not trained" in cell.ll_estimator and not runs.exists()


def test_figures_draw_every_row_of_an_image_column_and_the_readme_links_them(tmp_path, capsys):
    out, runs = tmp_path / "results", tmp_path / "runs"
    argv = ["--tables", "kr4", "--columns", "mnist", "--out", str(out), "--runs", str(runs)]
    smoke = ["--steps", "2", "--eval-batches", "1", "train.val_every=2", "train.progress=false"]
    kt.main([*argv, "--models", "cnp", kt.REFERENCE, *smoke])
    figure = out / "kr4" / "completions-mnist.png"
    assert not figure.exists()  # only drawn when asked
    kt.main([*argv, "--models", "cnp", kt.REFERENCE, *smoke, "--figures"])
    assert figure.read_bytes()[:4] == b"\x89PNG"
    text = (out / "kr4" / "README.md").read_text()
    assert "## Completions" in text and "](completions-mnist.png)" in text
    assert "`python -m experiments.paper_tables.build --tables kr4 --figures`" in text
    # without a trained row's run there is nothing to compare: no figure
    (runs / "kr4-mnist" / "cnp" / "model.pt").unlink()
    figure.unlink()
    kt.main([*argv, "--models", kt.REFERENCE, *smoke, "--figures"])
    assert "no completion figure for mnist" in capsys.readouterr().out and not figure.exists()
    assert "## Completions" not in (out / "kr4" / "README.md").read_text()
