"""benchmarks/incremental.py: every part end to end at toy sizes (two training steps), the
report written from the cached parts, and the peak-memory counter."""

from __future__ import annotations

import json

import pytest
import torch

from benchmarks import incremental
from benchmarks.incremental_parts import PeakTensorMemory

# End to end through the lab's scripts or a subprocess: `make test-slow` (CI runs it).
pytestmark = pytest.mark.slow


def test_peak_tensor_memory_counts_what_is_alive_at_once():
    with torch.no_grad(), PeakTensorMemory() as memory:
        a = torch.zeros(1000)  # 4 kB
        b = a + 1  # 8 kB alive
        del a
        c = b * 2  # a was freed: still 8 kB at most
        del b, c
    assert memory.peak == 8000 and memory.now == 0
    before = torch.zeros(1000)
    with torch.no_grad(), PeakTensorMemory() as memory:
        before.view(10, 100).t().add_(1)  # views and in-place ops allocate nothing
    assert memory.peak == 0


def test_every_part_runs_and_the_report_names_each(tmp_path):
    out, runs = tmp_path / "out", tmp_path / "runs"
    args = ["--out", str(out), "--runs", str(runs), "--sizes", "8", "16", "--repeats", "1"]
    args += ["--n-ctx", "6", "--paths", "2", "--sweep", "2", "3", "--orders", "2"]
    args += ["--tasks", "1", "--n-targets", "3", "--n-samples", "20"]
    args += ["train.steps=2", "eval.n_batches=1", "train.val_every=1", "train.log_every=1"]
    incremental.main(args)
    for part in incremental.PARTS:
        result = json.loads((out / f"{part}.json").read_text())
        assert result["provenance"]["command"]
    text = (out / "README.md").read_text()
    assert "Not run yet" not in text and "## Reading" in text
    assert (out / "update.png").exists() and (out / "sampling.png").exists()
    assert len(json.loads((out / "sampling.json").read_text())["rows"]) == 2 * 3
    incremental.main(args)  # cached: nothing recomputed, the report rewritten
