"""TE-1's protocol table: a finished run is scored at every shift beside the paper, a run still
training is listed with where it stands, and Δ = 0 is read against the paper."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from experiments.paper_tables import te1_protocol
from experiments.paper_tables.te1 import SHIFTS
from tnpx.evaluation.protocol import Metrics
from tnpx.training import RunStatus
from tnpx.training.loop import train_or_load


def _metrics(ll: float, se: float) -> Metrics:
    return Metrics("m", 16, ll, se, 0.95, ll_se_batches=se)


def test_delta_zero_is_read_against_the_paper():
    assert te1_protocol.verdict(_metrics(-0.47, 0.01), -0.48).startswith("at or above")
    assert te1_protocol.verdict(_metrics(-0.495, 0.01), -0.48).startswith("within 2 s.e.")
    assert "short by 0.050" in te1_protocol.verdict(_metrics(-0.53, 0.01), -0.48)
    assert te1_protocol.verdict(_metrics(-0.5, 0.01), None) == "not in the paper"


def test_a_row_short_of_the_paper_says_whether_its_curve_still_falls():
    status = RunStatus(Path("te1-convcnp"), "convcnp", 125_000, 125_000, 125_000, 26.0, None,
                       -0.6, 125_000, True)  # fmt: skip
    flat = [(s, 0.60 - 0.0002 * s / 1000) for s in range(0, 125_001, 2_500)]  # 0.006 in 25k
    falling = [(s, 0.60 - 0.002 * s / 1000) for s in range(0, 125_001, 2_500)]
    short = [_metrics(-0.54, 0.014)] * len(SHIFTS)
    for curve, word in ((flat, "flattened"), (falling, "still falling")):
        row = te1_protocol.Row("convcnp", status, short, curve)
        text = te1_protocol.shortfall_reading(row, -0.46)
        assert "short of the paper at Δ = 0 by 0.080" in text and word in text
        assert "from step 92,500 to 125,000" in text  # the validation before the last quarter
    close = te1_protocol.Row("tnp", status, [_metrics(-0.47, 0.014)] * len(SHIFTS), flat)
    assert te1_protocol.shortfall_reading(close, -0.48) == ""  # within 2 s.e.: nothing to say


def test_a_short_row_still_learning_says_what_the_recipe_s_quarter_would_cost():
    """2 core-hours for 5,000 steps: the quarter's 125,000 steps at that pace are 50."""
    status = RunStatus(Path("te1-te-pt-tnp"), "te-pt-tnp", 5_000, 5_000, 5_000, 0.7, 2.0,
                       -0.7, 5_000, True)  # fmt: skip
    falling = [(s, 0.90 - 0.03 * s / 1000) for s in range(0, 5_001, 2_500)]
    short = [_metrics(-0.70, 0.013)] * len(SHIFTS)
    row = te1_protocol.Row("te-pt-tnp", status, short, falling)
    text = te1_protocol.shortfall_reading(row, -0.46)
    assert "still falling" in text and "(125,000 steps) would take ~50 core-hours" in text
    flat = [(s, 0.60) for s in range(0, 5_001, 2_500)]
    text = te1_protocol.shortfall_reading(te1_protocol.Row("convcnp", status, short, flat), -0.46)
    assert "flattened" in text and "core-hours" not in text  # more steps would not help


def test_the_half_precision_rows_are_named():
    text = te1_protocol.stored_weights(["te-pt-tnp", "pt-tnp-ist"])
    assert text.startswith("`te-pt-tnp`, `pt-tnp-ist`: `model.pt` kept with float16 weights")


@pytest.mark.slow  # trains a tiny CNP and scores it at six shifts (~8 s)
def test_a_finished_run_is_scored_at_every_shift_and_cached(tmp_path):
    runs = tmp_path / "long-runs"
    cfg = te1_protocol.test_config("te1-cnp", 1)
    cfg.train.steps, cfg.train.log_every, cfg.train.val_every = 3, 1, 3
    cfg.train.checkpoint_every, cfg.train.progress = 3, False
    cfg.train.out_dir = str(runs / "te1-cnp")
    train_or_load(cfg)
    cells = tmp_path / "cells"
    (row,) = te1_protocol.rows(cells, 1, runs)
    assert row.model == "cnp" and row.status.finished and row.status.steps_done == 3
    assert len(row.cells) == len(SHIFTS) and all(math.isfinite(m.ll) for m in row.cells)
    assert len(list(cells.glob("cnp-shift*-test1.json"))) == len(SHIFTS)
    again = te1_protocol.rows(cells, 1, runs)[0].cells  # read back from the cache
    assert [m.ll for m in again] == [m.ll for m in row.cells]
    reference = te1_protocol.reference_cells(cells, 1)
    text = te1_protocol.report([row], reference, 1, "abc1234")
    assert "| cnp | " in text and "(-0.69)" in text and "| context-moments | " in text
    assert "Not finished yet: none." in text
    assert "**Stored weights**: every row's `model.pt` at float32." in text
    assert "`te-tnp` (TE-TNP, `released-code`) is not run" in text
