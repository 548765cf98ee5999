"""benchmarks/kr_tables.py: the KR-1 / KR-3 tables built from cached cells (no training),
the per-model budget sizes, the stale-cell guard, the KR-3 configs' layout, one tiny real
cell end to end; the real-data tables (KR-4, TE-2, TE-3): row labels to models and options,
their configs, the LL sign, the skip of a cell whose data are missing, and a tiny generic
table (an image column, LL) trained, reported and resumed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from benchmarks import kr_tables as kt
from tnpx.checkpoint import save
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.evaluate import Metrics, build_test_sampler
from tnpx.models import build_model
from tnpx.models.base import PRESETS

ROOT = Path(__file__).resolve().parents[2]

GP_TABLES = [name for name, spec in kt.TABLES.items() if spec.gp_data]
REAL_TABLES = ["kr4", "te2", "te3"]

RUN = {
    "command": "python benchmarks/kr_tables.py",
    "commit": "abc1234",
    "hardware": "test machine",
    "exact": False,
    "protocol": "budget",
}


def fake_cell(table: str, kernel: str, model: str, nll: float, se: float = 0.01) -> kt.Cell:
    oracle = model == kt.ORACLE
    metrics = Metrics(model, 1024, -nll, se, 0.9)
    if not oracle:
        metrics.oracle_ll, metrics.oracle_ll_se, metrics.gap, metrics.gap_se = 0.5, 0.01, 0.2, 0.01
    return kt.Cell(
        table=table,
        kernel=kernel,
        model=model,
        protocol="budget",
        metrics=metrics,
        ll_estimator=f"estimator of {model}",
        parameters=0 if oracle else 120_000,
        model_options={} if oracle else {"dim_model": 64},
        steps=0 if oracle else 1500,
        batch_size=16,
        test_tasks=1024,
        train_seconds=None if oracle else 100.0,
        eval_seconds=5.0,
        commit="abc1234",
        hardware="test machine",
    )


def write_cells(out: Path, spec: kt.TableSpec, nlls: dict[tuple[str, str], float]) -> None:
    for (kernel, model), nll in nlls.items():
        path = kt.cell_path(out, spec.name, kernel, model)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fake_cell(spec.name, kernel, model, nll).to_json())


def paper_like(spec: kt.TableSpec, offset: float = 0.1) -> dict[tuple[str, str], float]:
    """Every cell at the paper's NLL plus ``offset`` (the oracle well below)."""
    nlls = {(k, m): v + offset for m, row in spec.paper.items() for k, v in row.items()}
    nlls.update({(k, kt.ORACLE): -1.0 for k in spec.kernels})
    return nlls


def nll_rows(text: str) -> dict[str, str]:
    """The NLL table's rows (the README's first table), by model label."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| model | "))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("| "):
            break
        rows[line.split("|")[1].strip()] = line
    return rows


def readme(out: Path, spec: kt.TableSpec) -> str:
    kt.write_outputs(spec, out, RUN)
    return (out / spec.name / "README.md").read_text()


@pytest.mark.parametrize("name", GP_TABLES)
def test_partial_table_has_every_row_column_paper_number_and_dash(tmp_path, name):
    spec = kt.TABLES[name]
    nlls = paper_like(spec)
    left_out = (spec.kernels[-1], "tnp-kr-fast")
    del nlls[left_out]
    write_cells(tmp_path, spec, nlls)
    text = readme(tmp_path, spec)
    header = next(line for line in text.splitlines() if line.startswith("| model | "))
    for kernel in spec.kernels:
        assert kt.KERNEL_LABELS[kernel] in header
    rows = nll_rows(text)
    for model in spec.models:
        assert kt.model_label(model) in rows, model
    for model, row in spec.paper.items():
        for kernel, paper in row.items():
            assert f"({paper:.3f})" in text, (model, kernel)
    paper = spec.paper["tnp-kr-fast"][left_out[0]]
    assert f"— ({paper:.3f})" in rows["tnp-kr-fast"]
    assert "**Not run yet** (1 of" in text and "tnp-kr-fast (RBF)" in text
    assert "Spearman ρ = 1.00" in text and "the paper's ordering is reproduced" in text
    assert f"Command**: `python benchmarks/kr_tables.py --tables {name}` builds the whole" in text
    assert "last written by `python benchmarks/kr_tables.py`, commit `abc1234`" in text
    results = json.loads((tmp_path / name / "results.json").read_text())
    assert results["missing"] == [{"kernel": left_out[0], "model": "tnp-kr-fast"}]
    assert len(results["cells"]) == len(nlls)
    assert (tmp_path / name / "nll_vs_paper.png").exists()


def test_empty_table_is_a_valid_file(tmp_path):
    spec = kt.TABLES["kr3"]
    text = readme(tmp_path, spec)
    assert f"({len(spec.models)} of {len(spec.models)} cells" in text
    assert "fewer than two models run" in text
    assert not (tmp_path / "kr3" / "nll_vs_paper.png").exists()


def test_latent_rows_are_marked_with_their_estimator(tmp_path):
    spec = kt.TABLES["kr1"]
    write_cells(tmp_path, spec, paper_like(spec))
    text = readme(tmp_path, spec)
    for model in ("np", "anp", "bnp", "banp"):
        assert f"| {model} † |" in text
        assert f"- † {model}: estimator of {model}" in text
    assert "| cnp |" in text


def test_a_significant_swap_is_reported(tmp_path):
    spec = kt.TABLES["kr3"]
    nlls = paper_like(spec)
    nlls["rbf", "cnp"] = 0.0  # the paper's second-worst model now beats every TNP
    write_cells(tmp_path, spec, nlls)
    text = readme(tmp_path, spec)
    assert "the paper's ordering is NOT reproduced" in text
    assert "cnp beats tnp-kr-full by" in text
    o = kt.ordering(spec, "rbf", kt.load_cells(tmp_path, spec))
    assert o["pairs"] == 21 and len(o["swaps"]) == 5  # cnp now beats all but np
    assert all(s.worse == "cnp" and s.significant for s in o["swaps"])


def test_paper_ties_are_not_pairs():
    spec = kt.TABLES["kr1"]
    cells = {(k, m): fake_cell("kr1", k, m, v) for (k, m), v in paper_like(spec).items()}
    periodic = kt.ordering(spec, "periodic", cells)
    assert periodic["pairs"] == 45 - 2  # cnp = bnp and tnp-d = tnp-kr-full in the paper
    assert periodic["swaps"] == []


def test_spearman_and_tied_ranks():
    assert kt.ranks([3.0, 1.0, 1.0, 2.0]) == [4.0, 1.5, 1.5, 3.0]
    assert kt.spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert kt.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # ranks (1, 2, 3, 4) against (1.5, 1.5, 3, 4): Pearson of the ranks
    assert kt.spearman([1, 2, 3, 4], [5, 5, 6, 7]) == pytest.approx(0.9486833, abs=1e-6)


def test_a_cell_from_other_settings_is_refused(tmp_path):
    spec = kt.TABLES["kr1"]
    cfg = kt.cell_config(spec, "rbf", "cnp", False, tmp_path / "runs", [])
    path = kt.cell_path(tmp_path, "kr1", "rbf", "cnp")
    path.parent.mkdir(parents=True)
    cell = fake_cell("kr1", "rbf", "cnp", 0.3)
    cell.settings = kt.settings(cfg)
    path.write_text(cell.to_json())
    assert kt.stale_reason(cfg, path) is None
    shorter = kt.cell_config(spec, "rbf", "cnp", False, tmp_path / "runs", ["train.steps=3"])
    assert "other settings" in kt.stale_reason(shorter, path)
    # where the run went does not change the numbers
    elsewhere = kt.cell_config(spec, "rbf", "cnp", False, tmp_path / "elsewhere", [])
    assert kt.stale_reason(elsewhere, path) is None


def test_a_cell_of_the_old_budget_options_is_refused(tmp_path):
    """A KR-1 cell cached with the budget's former options (tnpx defaults at small sizes,
    min_std 1e-3) is not reused by the ``kr-code`` budget."""
    spec = kt.TABLES["kr1"]
    cfg = kt.cell_config(spec, "rbf", "tnp-d", False, tmp_path / "runs", [])
    # the former model section of configs/kr1-rbf-budget.yaml, kept in the tnpx-budget file
    run = f"train.out_dir={cfg.train.out_dir}"
    old = load_config(ROOT / "configs" / "kr1-rbf-tnpx-budget.yaml", ["model.name=tnp-d", run])
    assert old.model["dim_model"] == 64 and old.model["min_std"] == 1e-3
    assert old.data == cfg.data and old.train.steps == cfg.train.steps
    path = kt.cell_path(tmp_path, "kr1", "rbf", "tnp-d")
    path.parent.mkdir(parents=True)
    cell = fake_cell("kr1", "rbf", "tnp-d", 0.3)
    cell.settings = kt.settings(old)
    path.write_text(cell.to_json())
    assert "other settings" in kt.stale_reason(cfg, path)


def test_a_changed_preset_makes_its_cells_and_runs_stale(tmp_path, monkeypatch):
    """A cell or a run made under a preset whose options have changed since is refused, though
    the config names the same preset: the cache key holds what the preset resolved to."""
    spec = kt.TABLES["kr1"]
    cfg = kt.cell_config(spec, "rbf", "cnp", False, tmp_path / "runs", [])
    assert kt.settings(cfg)["model"]["preset_options"] == kt.preset_options(cfg.model) != {}
    path = kt.cell_path(tmp_path, "kr1", "rbf", "cnp")
    path.parent.mkdir(parents=True)
    cell = fake_cell("kr1", "rbf", "cnp", 0.3)
    cell.settings = kt.settings(cfg)
    path.write_text(cell.to_json())
    run = Path(cfg.train.out_dir)
    run.mkdir(parents=True)
    save(build_model("cnp", 1, 1, **cfg.model_options()), run / "model.pt")
    assert kt.stale_reason(cfg, path) is None
    code = dict(PRESETS["cnp"]["kr-code"])
    monkeypatch.setitem(PRESETS["cnp"], "kr-code", {**code, "dim_model": 32})
    assert "other settings" in kt.stale_reason(cfg, path)
    path.unlink()
    reason = kt.stale_reason(cfg, path)
    assert "holds a model built with other options" in reason and "dim_model = 128" in reason


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
    assert "**Not run yet** (32 of 33 cells" in text
    kt.main(argv)  # cached: nothing retrained or rescored
    assert "(cached)" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="other settings"):
        kt.main([*argv[:7], "4", *argv[8:]])  # --steps 4 would mix two protocols


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


def test_ll_tables_report_ll_with_its_sign_and_order_by_higher_is_better(tmp_path):
    spec = kt.TABLES["te2"]
    assert spec.metric == "ll"
    lls = {(k, m): v - 0.2 for m, row in spec.paper.items() for k, v in row.items()}
    # a fake cell stores -nll as its LL: write LL values through fake_cell's nll argument
    write_cells(tmp_path, spec, {key: -ll for key, ll in lls.items()})
    text = readme(tmp_path, spec)
    assert "Metric: LL per target point (higher is better)" in text
    assert "NLL" not in text.split("## Model sizes")[0]
    rows = nll_rows(text)
    cell = kt.load_cells(tmp_path, spec)["t-mnist", "convcnp"]
    assert cell.value("ll") == pytest.approx(1.0) and cell.value("nll") == pytest.approx(-1.0)
    assert "| convcnp | 1.000 ± 0.010 (1.20) | 1.240 ± 0.010 (1.44) |" == rows["convcnp"]
    assert "Spearman ρ = 1.00 between our LLs" in text
    assert "the paper's ordering is reproduced" in text
    assert "Gap to the GP oracle" not in text and "gp-oracle" not in text
    assert (tmp_path / "te2" / "ll_vs_paper.png").exists()
    results = json.loads((tmp_path / "te2" / "results.json").read_text())
    assert results["metric"] == "ll" and results["paper_ll"]["cnp"]["t-mnist"] == 0.64
    assert results["rows"]["pt-tnp-m64"] == {
        "model": "pt-tnp-ist",
        "options": {"n_pseudo": 64, "dim_ff": 32},
        "budget": {"n_layers": 2},
        "column_options": {},
        "overrides": [],
        "preset": "te-code",
    }
    # the lowest LL is the worst: CNP above every TE-PT-TNP is a swap against the paper
    write_cells(tmp_path, spec, {("t-mnist", "cnp"): -5.0})  # LL 5
    o = kt.ordering(spec, "t-mnist", kt.load_cells(tmp_path, spec))
    assert {s.worse for s in o["swaps"]} == {"cnp"} and len(o["swaps"]) == 6
    assert all(s.margin > 0 and s.significant for s in o["swaps"])
    assert "cnp beats te-pt-tnp-m128 by" in readme(tmp_path, spec)


def test_nll_tables_still_order_by_lower_is_better():
    spec = kt.TABLES["kr4"]
    cells = {
        ("mnist", m): fake_cell("kr4", "mnist", m, v) for m, v in (("cnp", 0.0), ("tnp-d", -1.0))
    }
    assert kt.ordering(spec, "mnist", cells)["swaps"] == []  # TNP-D's lower NLL is better
    cells["mnist", "cnp"] = fake_cell("kr4", "mnist", "cnp", -2.0)
    (swap,) = kt.ordering(spec, "mnist", cells)["swaps"]
    assert (swap.better, swap.worse, swap.margin) == ("tnp-d", "cnp", pytest.approx(1.0))


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


def test_the_reference_row_says_which_models_beat_it_and_is_not_ranked(tmp_path):
    spec = kt.TABLES["te3"]
    assert kt.REFERENCE in spec.models and spec.paper_value(kt.REFERENCE, "kolmogorov") is None
    # LL: reference 1.0, cnp 1.5 (ahead), rcnp 1.02 (within 2 s.e. of 0.01 each), pt-tnp-m64
    # 0.9 (behind), mt-gp 2.0 (fitted, not trained: not compared)
    lls = {kt.REFERENCE: 1.0, "cnp": 1.5, "rcnp": 1.02, "pt-tnp-m64": 0.9, "mt-gp": 2.0}
    write_cells(tmp_path, spec, {("kolmogorov", m): -ll for m, ll in lls.items()})
    cells = kt.load_cells(tmp_path, spec)
    assert kt.REFERENCE not in kt.ordering(spec, "kolmogorov", cells)["models"]
    text = readme(tmp_path, spec)
    # only trained rows are compared with it (mt-gp is fitted, not trained)
    assert (
        "Against the context-moments reference (LL 1.000), LL per target gained by the "
        "trained models: ahead by more than 2 s.e.: cnp +0.500; level: rcnp +0.020; behind: "
        "pt-tnp-m64 -0.100." in text
    )
    assert "The context-moments row is a reference, not a paper's model" in text
    assert "The mt-gp row is a GP fitted" in text and "context-moments, mt-gp" not in text
    (tmp_path / "te3" / "cells" / f"kolmogorov-{kt.REFERENCE}.json").unlink()
    assert "Against the context-moments" not in readme(tmp_path, spec)


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
    assert "`python benchmarks/kr_tables.py --tables kr4 --figures`" in text
    # without a trained row's run there is nothing to compare: no figure
    (runs / "kr4-mnist" / "cnp" / "model.pt").unlink()
    figure.unlink()
    kt.main([*argv, "--models", kt.REFERENCE, *smoke, "--figures"])
    assert "no completion figure for mnist" in capsys.readouterr().out and not figure.exists()
    assert "## Completions" not in (out / "kr4" / "README.md").read_text()
