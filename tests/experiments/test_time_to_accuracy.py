"""experiments/long_runs/time_to_accuracy.py: a recipe's curve from its run's metrics log
(core-hours summed from the logged speeds, FLOPs counted per step), where it reaches the paper's
NLL."""

from __future__ import annotations

import pytest

from experiments.long_runs import time_to_accuracy as tta

# End to end through the lab's scripts or a subprocess: `make test-slow` (CI runs it).
pytestmark = pytest.mark.slow

LOG = """step,loss,lr,steps_per_s,val_ll
100,1.0,0.001,10.0,
200,0.9,0.001,5.0,0.40
300,0.8,0.001,10.0,
400,0.7,0.001,10.0,0.47
"""


# The tests whose subject is the FLOP count measure it (a protocol-sized model's forward and
# backward passes: seconds each); the rest count 1 GFLOP a step.
MEASURES_FLOPS = {
    "test_a_curve_from_the_metrics_log",
    "test_the_wider_and_deeper_runs_spend_the_base_recipes_flops",
}


@pytest.fixture(autouse=True)
def _one_gflop_a_step(request, monkeypatch):
    if request.node.originalname not in MEASURES_FLOPS:
        monkeypatch.setattr(tta, "step_gflops", lambda *args, **kwargs: 1.0)


def test_a_curve_from_the_metrics_log(tmp_path):
    (tmp_path / "kr1-rbf-tnp-kr-full").mkdir()
    (tmp_path / "kr1-rbf-tnp-kr-full" / "metrics.csv").write_text(LOG)
    c = tta.curve("protocol", "kr1-rbf-tnp-kr-full", "tnp-kr-full", "x", root=tmp_path)
    assert c.steps == [200, 400] and c.nll == [-0.40, -0.47]
    assert c.hours == pytest.approx([(10 + 20) / 3600, (10 + 20 + 10 + 10) / 3600])
    per_step = c.gflops_per_step
    assert per_step > 0 and c.gflops == pytest.approx([200 * per_step, 400 * per_step])
    assert c.reached(-0.453) == 1 and c.reached(-0.5) is None
    rows = tta.table([c])
    assert "| 400 |" in rows[2] and "| on validation; test not yet scored |" in rows[2]
    assert tta.curve("x", "kr1-rbf-tnp-kr-full", "tnp-kr-full", "x", root=tmp_path / "no") is None


def test_each_kernel_is_held_to_its_own_paper_number(tmp_path):
    """A Matérn-3/2 run is judged against Table 3's Matérn-3/2 NLL (-0.024), not RBF's."""
    run = "tta-kr1-matern32-tnp-kr-full-adamw1e3-25k"
    (tmp_path / run).mkdir()
    (tmp_path / run / "metrics.csv").write_text(LOG.replace("0.40", "0.01").replace("0.47", "0.03"))
    c = tta.curve("recipe", run, "tnp-kr-full", "x", root=tmp_path)
    assert c.kernel == "matern32" and c.goal == -0.024
    assert c.reached(c.goal) == 1 and c.steps_planned == 25_000
    assert "Matérn-3/2 -0.024" in tta.reading([c])


def test_a_finished_run_is_scored_once_and_the_cell_reused(tmp_path, monkeypatch):
    """A run with a model.pt gets its test score from the cache after the first time; a run
    still training has none (a dash in the table)."""
    run = "tta-kr1-rbf-tnp-kr-full-adamw-25k"
    (tmp_path / run).mkdir()
    (tmp_path / run / "metrics.csv").write_text(LOG)
    c = tta.curve("recipe", run, "tnp-kr-full", "x", root=tmp_path)
    tta.score_finished(c, tmp_path / "cells", 2, root=tmp_path)
    assert c.test is None and tta.test_score(c) == "—"
    calls = []

    def fake_evaluate(model, cfg, cell, needs=()):
        assert needs == ("ll_se_batches",)  # a cell stored before the s.e. over batches is redone
        calls.append((cfg.eval.n_batches, cell))
        return type(
            "M", (), {"as_dict": lambda self: {"ll": 0.5, "ll_se_batches": 0.01, "oracle_ll": 0.6}}
        )()

    monkeypatch.setattr(tta, "cached_evaluate", fake_evaluate)
    monkeypatch.setattr("tnpx.load", lambda path: path)
    (tmp_path / run / "model.pt").write_bytes(b"")
    (tmp_path / run / "config.yaml").write_text(open("configs/kr1-rbf.yaml").read())
    tta.score_finished(c, tmp_path / "cells", 2, root=tmp_path)
    assert calls == [(2, tmp_path / "cells" / f"{run}-test2.json")]
    assert tta.test_score(c) == "-0.500 ± 0.010 (-0.600)"
    assert tta.table([c])[2].endswith("| -0.500 ± 0.010 (-0.600) |")


def test_the_goal_is_met_only_by_the_test_nll(tmp_path):
    """A run that passes the paper's NLL on validation but not on the test set is a 'no'."""
    run = "tta-kr1-rbf-tnp-kr-full-adamw-25k"
    (tmp_path / run).mkdir()
    (tmp_path / run / "metrics.csv").write_text(LOG)
    c = tta.curve("recipe", run, "tnp-kr-full", "x", root=tmp_path)
    c.test = {"ll": 0.445, "ll_se_batches": 0.002, "oracle_ll": 0.568}
    assert tta.goal_verdict(c, 400) == "no: test NLL -0.445 is above it"
    c.test = {"ll": 0.46, "ll_se_batches": 0.002, "oracle_ll": 0.568}
    assert tta.goal_verdict(c, 400) == "yes" and tta.goal_verdict(c, 30_000) == "no"
    assert "0.007 at or below the paper's" in tta.reading([c])
    assert "within 2 s.e." not in tta.reading([c])
    c.test["ll_se_batches"] = 0.004  # the test set's noise covers the margin: said so
    assert "0.007 at or below the paper's (within 2 s.e.)" in tta.reading([c])


def test_a_replicate_shows_its_own_seed(tmp_path):
    """The second seed of the recipe says so in its row; every other recipe is seed 0."""
    for run in (
        "tta-kr1-rbf-tnp-kr-full-adamw1e3-25k",
        "tta-kr1-rbf-tnp-kr-full-adamw1e3-25k-seed1",
    ):
        (tmp_path / run).mkdir()
        (tmp_path / run / "metrics.csv").write_text(LOG)
    first, second = (
        tta.curve(recipe, *tta.RECIPES[recipe], root=tmp_path)
        for recipe in (
            "adamw-1e-3-warmup-25k (tnp-kr-full)",
            "adamw-1e-3-warmup-25k (tnp-kr-full), seed 1",
        )
    )
    assert (first.seed, second.seed) == (0, 1)
    assert "| seed |" in tta.table([first])[0]
    assert f"| {second.what} | 1 | 25,000 |" in tta.table([second])[2]


def test_the_wider_and_deeper_runs_spend_the_base_recipes_flops():
    """The fixed-budget comparison holds: steps x FLOPs per step within 3 % of the base's."""
    from experiments.long_runs.driver import RUNS
    from tnpx.config import load_config

    def total(run):
        config, overrides = RUNS[run]
        return load_config(config, overrides).train.steps * tta.step_gflops(config, overrides)

    base = total("tta-kr1-rbf-tnp-kr-full-adamw1e3-25k")
    for run in ("tta-kr1-rbf-tnp-kr-full-96x3-adamw1e3", "tta-kr1-rbf-tnp-kr-full-48x11-adamw1e3"):
        assert total(run) == pytest.approx(base, rel=0.03), run


def test_a_smaller_batch_is_judged_by_the_tasks_it_has_seen(tmp_path):
    """The batch-16 run's steps count half a protocol step each: 50,000 of them are the
    quarter of the protocol the goal allows, and the table says which batch a step is of."""
    recipe = "adamw-1e-3-warmup, batch 16 (tnp-kr-full)"
    run = tta.RECIPES[recipe][0]
    (tmp_path / run).mkdir()
    (tmp_path / run / "metrics.csv").write_text(LOG)
    c = tta.curve(recipe, *tta.RECIPES[recipe], root=tmp_path)
    assert c.batch == 16 and c.steps_planned == 50_000
    assert c.protocol_steps(50_000) == 25_000
    c.test = {"ll": 0.46, "ll_se_batches": 0.002, "oracle_ll": 0.568}
    assert tta.goal_verdict(c, 50_000) == "yes" and tta.goal_verdict(c, 50_001) == "no"
    row = tta.table([c])[2]
    assert "| 50,000 of 16 |" in row and "| 400 of 16 |" in row
    assert "reached at step 400 of 16" in tta.reading([c])


def test_a_recipe_is_set_against_its_protocol_run_on_the_same_tasks(tmp_path):
    """The paired difference is the two test NLLs' difference; its s.e. bound is the sum of the
    two gaps' s.e. (the oracle's noise cancels); cells scored on other tasks (another oracle
    NLL) are refused, and an unscored pair gives no rows."""
    for run in ("kr1-rbf-tnp-kr-full", "tta-kr1-rbf-tnp-kr-full-adamw1e3-25k"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "metrics.csv").write_text(LOG)
    protocol, recipe = (
        tta.curve(r, *tta.RECIPES[r], root=tmp_path)
        for r in ("protocol (tnp-kr-full)", "adamw-1e-3-warmup-25k (tnp-kr-full)")
    )
    assert tta.paired_rows([protocol, recipe]) == []
    protocol.test = {"ll": 0.474, "oracle_ll": 0.568, "gap_se_batches": 0.0006}
    recipe.test = {"ll": 0.457, "oracle_ll": 0.568, "gap_se_batches": 0.0005}
    rows = tta.paired_rows([protocol, recipe])
    assert rows[-2] == (
        "| adamw-1e-3-warmup-25k (tnp-kr-full) | protocol (tnp-kr-full) "
        "| +0.017 | ≤ 0.0011 | 15.4 |"
    )
    assert sum(r.startswith("| adamw") for r in rows) == 1  # the protocol is not set against itself

    recipe.test["oracle_ll"] = 0.570
    with pytest.raises(ValueError, match="different test tasks"):
        tta.paired_rows([protocol, recipe])


def _kr1_and_kr3_curves(tmp_path):
    """KR-1's protocol run and KR-3's recipe run of tnp-kr-full, from the same log."""
    for run in ("kr1-rbf-tnp-kr-full", "kr3-tnp-kr-full"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "metrics.csv").write_text(LOG)
    kr1 = tta.curve("protocol (tnp-kr-full)", *tta.RECIPES["protocol (tnp-kr-full)"],
                    root=tmp_path)  # fmt: skip
    kr3 = tta.curve("KR-3 recipe (tnp-kr-full)", "kr3-tnp-kr-full", "tnp-kr-full", "x", tmp_path)
    return kr1, kr3


def test_a_kr3_run_is_not_paired_with_kr1s_protocol_run_of_its_model(tmp_path):
    """KR-3's tnp-kr-full (2D, its own test set) shares KR-1's model and kernel name: it has
    no protocol run of its own table, so no paired row (it was refused as "different tasks")."""
    protocol, kr3 = _kr1_and_kr3_curves(tmp_path)
    assert (protocol.table, kr3.table) == ("kr1", "kr3") and protocol.kernel == kr3.kernel
    protocol.test = {"ll": 0.474, "oracle_ll": 0.568, "gap_se_batches": 0.0006}
    kr3.test = {"ll": 0.471, "oracle_ll": 0.413, "gap_se_batches": 0.0002}
    assert tta.paired_rows([protocol, kr3]) == []


def test_te1_and_kr3_runs_are_held_to_their_own_tables(tmp_path):
    """A TE-1 run's goal is minus the TE paper's LL at Δ = 0 and its protocol 500,000 steps of
    16; a KR-3 run's the TNP-KR paper's Table 5 NLL; tnpx's own te-tnp-rope has no paper row."""
    for run in ("te1-tnp", "kr3-tnp-d", "te1-te-tnp-rope"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "metrics.csv").write_text(LOG.replace("0.40", "-0.50"))
    te1 = tta.curve("TE-1 recipe (tnp)", "te1-tnp", "tnp", "x", root=tmp_path)
    assert (te1.table, te1.kernel, te1.goal) == ("te1", "mixture", 0.48)
    assert te1.protocol == (500_000, 16) and te1.reached(te1.goal) == 1  # NLL 0.50, then -0.47
    kr3 = tta.curve("KR-3 recipe (tnp-d)", "kr3-tnp-d", "tnp-d", "x", root=tmp_path)
    assert (kr3.table, kr3.kernel, kr3.goal) == ("kr3", "rbf", 0.484)
    rope = tta.curve("TE-1 recipe (te-tnp-rope)", "te1-te-tnp-rope", "te-tnp-rope", "x", tmp_path)
    assert rope.goal is None and rope.reached(rope.goal) is None
    rows = tta.table([te1, kr3, rope])
    assert "| no paper row |" in rows[4]
    assert "has no paper row" in tta.reading([rope])


def test_a_te1_run_reads_its_test_cell_from_the_te1_table(tmp_path, monkeypatch):
    """A finished TE-1 run is not scored here: its Δ = 0 cell from te1_protocol is read if
    cached, and the column stays empty otherwise."""
    import json

    (tmp_path / "long-runs" / "te1-tnp").mkdir(parents=True)
    (tmp_path / "long-runs" / "te1-tnp" / "metrics.csv").write_text(LOG)
    (tmp_path / "long-runs" / "te1-tnp" / "model.pt").write_bytes(b"")
    monkeypatch.setattr(tta, "FOLDER", tmp_path / "long-runs")
    c = tta.curve("TE-1 recipe (tnp)", "te1-tnp", "tnp", "x", root=tmp_path / "long-runs")
    tta.score_finished(c, tmp_path / "cells", 5000, root=tmp_path / "long-runs")
    assert c.test is None and tta.test_score(c) == "—"
    cells = tmp_path / "results" / "te1" / "protocol-cells"
    cells.mkdir(parents=True)
    cell = {"ll": -0.463, "ll_se_batches": 0.014}
    (cells / "tnp-shift0.0-test320.json").write_text(json.dumps(cell))
    tta.score_finished(c, tmp_path / "cells", 5000, root=tmp_path / "long-runs")
    assert tta.test_score(c) == "0.463 ± 0.014"


def test_validation_is_set_against_test_per_table_as_the_runs_lie(tmp_path):
    """KR-1's validation batches scored below its test set, KR-3's and TE-1's above: the
    reading counts each table's finished runs rather than saying one direction for all."""
    kr1, kr3 = _kr1_and_kr3_curves(tmp_path)
    assert tta.validation_against_test([kr1, kr3]) == ""  # nothing scored yet
    kr1.test = {"ll": -(kr1.nll[-1] + 0.02), "ll_se_batches": 0.01}  # test NLL above validation's
    kr3.test = {"ll": -(kr3.nll[-1] - 0.02), "ll_se_batches": 0.01}  # below it
    text = tta.validation_against_test([kr1, kr3])
    assert "KR-1: 1 of 1 lower, 0 higher; KR-3: 0 of 1 lower, 1 higher" in text


def test_a_finished_run_whose_validation_never_reached_the_goal_is_judged_by_its_test(tmp_path):
    """KR-3's validation batches score higher NLLs than its test set: a finished run that never
    reached the paper on validation still meets the goal if its test NLL does."""
    (tmp_path / "kr3-tnp-kr-full").mkdir()
    log = "step,loss,lr,steps_per_s,val_ll\n12500,1,1,1,-0.53\n25000,1,1,1,-0.49\n"
    (tmp_path / "kr3-tnp-kr-full" / "metrics.csv").write_text(log)
    c = tta.curve("KR-3 recipe (tnp-kr-full)", "kr3-tnp-kr-full", "tnp-kr-full", "x", tmp_path)
    assert c.reached(c.goal) is None and c.steps[-1] == c.steps_planned == 25_000
    c.test = {"ll": -0.471, "ll_se_batches": 0.005, "oracle_ll": -0.413}
    assert "| yes (by its test NLL at the last step) |" in tta.table([c])[2]
    c.test["ll"] = -0.5
    assert "| no: test NLL 0.500 is above it (by its test NLL" in tta.table([c])[2]
