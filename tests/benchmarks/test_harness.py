"""benchmarks/harness.py: what the probes share times a real training step, takes the median of
repeated calls and writes a probe's numbers beside its report."""

from __future__ import annotations

import copy
import json

import torch

import tnpx
from benchmarks import harness


def _model_and_batch():
    torch.manual_seed(0)
    model = tnpx.build_model("tnp", dim_model=16, n_layers=1, n_heads=2, dim_head=8, dim_ff=16)
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(2, 12, 1, generator=g), torch.randn(2, 12, 1, generator=g)
    return model, tnpx.Batch(x[:, :6], y[:, :6], x[:, 6:], y[:, 6:])


def test_train_step_ms_is_one_optimiser_step():
    model, batch = _model_and_batch()
    twin = copy.deepcopy(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    twin_optimizer = torch.optim.AdamW(twin.parameters(), lr=1e-2)
    ms = harness.train_step_ms(model, optimizer, batch)
    twin.training_loss(batch).backward()
    twin_optimizer.step()
    assert ms > 0
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0, msg=name)


def test_median_seconds_is_the_median_and_returns_the_last_output(monkeypatch):
    clock = iter([0.0, 1.0, 10.0, 13.0, 20.0, 22.0])  # calls of 1 s, 3 s and 2 s
    monkeypatch.setattr(harness.time, "perf_counter", lambda: next(clock))
    calls = []
    median, out = harness.median_seconds(lambda: calls.append(1) or len(calls), 3)
    assert median == 2.0 and out == 3 and len(calls) == 3


def test_write_results_puts_the_numbers_beside_the_report(tmp_path):
    report = harness.write_results(tmp_path / "new" / "probe", {"rows": [1.5, 2]}, "# Probe\n")
    assert report == tmp_path / "new" / "probe.md" and report.read_text() == "# Probe\n"
    assert json.loads((tmp_path / "new" / "probe.json").read_text()) == {"rows": [1.5, 2]}
    harness.write_results(tmp_path / "probe.md", [1], "x", indent=1)  # a stem with a suffix
    assert (tmp_path / "probe.json").read_text() == "[\n 1\n]"
