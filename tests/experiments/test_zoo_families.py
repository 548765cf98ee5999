"""experiments/zoo/families.py: the families partition the tasks, each cell is the mean
and standard error of its tasks' gaps, and the command scores a zoo model on the cards' (c)
tasks (its "all" cell is the card's gap on as many batches)."""

from __future__ import annotations

import json

import pytest
import torch

from experiments.zoo import families
from experiments.zoo.score import prior_score
from tnpx.zoo import pretrained


def test_families_partition_the_tasks_and_average_their_gaps():
    gen = torch.Generator().manual_seed(0)
    gap = torch.rand(40, generator=gen, dtype=torch.float64)
    flags = {"composite": torch.rand(40, generator=gen) < 0.5,
             "quiet": torch.rand(40, generator=gen) < 0.3}  # fmt: skip
    cells = families.breakdown({"m": gap}, flags)["m"]
    assert sum(cells[f][2] for f in families.FAMILIES) == cells["all"][2] == 40
    for family, (composite, quiet) in families.FAMILIES.items():
        chosen = gap[(flags["composite"] == composite) & (flags["quiet"] == quiet)]
        assert cells[family][0] == pytest.approx(chosen.mean().item(), abs=1e-12)
        se = chosen.std(unbiased=True).item() / chosen.numel() ** 0.5
        assert cells[family][1] == pytest.approx(se, abs=1e-12)


@pytest.mark.slow
def test_the_command_repeats_the_cards_gap_on_its_tasks(tmp_path):
    assert families.main(["--models", "gp1d-tnp", "--batches", "1", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "v3-families.json").read_text())
    card_way = prior_score(pretrained("gp1d-tnp"), "eval_v3", 1)
    assert rows["gp1d-tnp"]["all"][0] == pytest.approx(card_way["gap"], abs=1e-9)
    assert rows["gp1d-tnp"]["all"][2] == 16
    assert "| `gp1d-tnp` |" in (tmp_path / "v3-families.md").read_text()
