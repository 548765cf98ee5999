"""A table's README and results from cached cells (fakes, no training): every row, column and
paper number, the dashes of cells not run, the latent rows' estimators, the ordering against
the paper (swaps, ties, Spearman), LL tables' sign and order, and the reference row."""

from __future__ import annotations

import json

import pytest

from experiments.paper_tables import build as kt
from tests.helpers.table_fakes import fake_cell, nll_rows, paper_like, readme, write_cells

# End to end through the lab's scripts or a subprocess: `make test-slow` (CI runs it).
pytestmark = pytest.mark.slow

GP_TABLES = [name for name, spec in kt.TABLES.items() if spec.gp_data]


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
    assert (
        f"Command**: `python -m experiments.paper_tables.build --tables {name}` builds the whole"
        in text
    )
    assert "last written by `python -m experiments.paper_tables.build`, commit `abc1234`" in text
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
