"""The TE ablation's reading: the change input adjustment makes per input distribution, with
its noise, and whether the paper's pattern (a benefit on both, larger on bimodal) holds."""

from __future__ import annotations

from experiments.paper_tables import te_ablation as ta
from tnpx.evaluation.protocol import Metrics


def rows(uniform: float, bimodal: float, se: float = 0.01) -> dict[str, dict[str, Metrics]]:
    """Two ablation rows whose difference (with minus without) is ``uniform`` and ``bimodal``."""
    with_adj = {t: Metrics("te-pt-tnp", 64, -1.0 + g, se, 0.95) for t, g in
                (("uniform", uniform), ("bimodal", bimodal))}  # fmt: skip
    without = {t: Metrics("te-pt-tnp", 64, -1.0, se, 0.95) for t in ta.TESTS}
    return {"with": with_adj, "without": without}


def test_the_papers_pattern_is_recognised():
    text = ta.reading(rows(0.02, 0.09))
    assert "+0.020 ± 0.014 on uniform inputs (within 2 s.e.; paper +0.02)" in text
    assert "+0.090 ± 0.014 on bimodal inputs (more than 2 s.e.; paper +0.09)" in text
    assert "pattern (a benefit on both, larger on bimodal inputs) is reproduced" in text


def test_a_benefit_larger_on_uniform_inputs_is_not_the_papers_pattern():
    text = ta.reading(rows(0.063, 0.054))
    assert "A benefit on both input distributions, as in the paper, but not the larger" in text


def test_a_loss_is_reported_as_not_reproduced():
    assert "NOT reproduced" in ta.reading(rows(0.05, -0.03))
