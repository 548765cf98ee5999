"""benchmarks/kr_tables.py: the KR-1 / KR-3 tables built from cached cells (no training),
the per-model budget sizes, the stale-cell guard, the KR-3 configs' layout, and one tiny real
cell end to end."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.evaluate import Metrics, build_test_sampler
from tnpx.models import build_model

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import kr_tables as kt  # noqa: E402

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


@pytest.mark.parametrize("name", list(kt.TABLES))
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
    assert "Command**: `python benchmarks/kr_tables.py`, commit `abc1234`" in text
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


@pytest.mark.parametrize(
    "table, model",
    [(t, m) for t, spec in kt.TABLES.items() for m in spec.models if m != kt.ORACLE],
)
def test_budget_sizes_are_comparable(tmp_path, table, model):
    spec = kt.TABLES[table]
    cfg = kt.cell_config(spec, spec.kernels[0], model, False, tmp_path, [])
    assert cfg.model["name"] == model
    assert cfg.train.out_dir == str(tmp_path / f"{table}-{spec.kernels[0]}" / model)
    for key, value in kt.BUDGET_SIZES[model].items():
        assert cfg.model[key] == value
    built = build_model(model, cfg.model["dim_x"], 1, **cfg.model_options())
    assert 100_000 <= sum(p.numel() for p in built.parameters()) <= 150_000


def test_exact_cells_use_the_library_sizes(tmp_path):
    cfg = kt.cell_config(kt.TABLES["kr1"], "rbf", "cnp", True, tmp_path, ["train.steps=5"])
    assert cfg.protocol == "exact" and cfg.train.steps == 5
    assert cfg.model == {
        "name": "cnp",
        "dim_x": 1,
        "dim_y": 1,
        "min_std": 0.0,
        "scale_transform": "exp",
    }


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
