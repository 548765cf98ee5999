"""The mixed-precision benchmark: both modes timed on the same batch, and a report that reads
the ratios it measured."""

from __future__ import annotations

import json

import pytest

from benchmarks import mixed_precision


def test_autocast_context_is_bfloat16_only_for_the_bf16_mode():
    import torch

    with mixed_precision.context("float32"):
        assert not torch.is_autocast_enabled("cpu")
    with mixed_precision.context(mixed_precision.MODES[1]):
        assert torch.is_autocast_enabled("cpu")
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16


def test_cpu_flags_are_a_subset_of_the_flags_that_matter():
    assert set(mixed_precision.cpu_flags()) <= set(mixed_precision.HARDWARE_FLAGS)


@pytest.mark.slow
def test_benchmark_writes_a_table_with_both_modes(tmp_path):
    assert (
        mixed_precision.main(
            ["--models", "cnp", "--rounds", "1", "--steps", "1", "--out", str(tmp_path)]
        )
        == 0
    )
    rows = json.loads((tmp_path / "mixed_precision.json").read_text())["rows"]
    (row,) = rows
    assert row["model"] == "cnp"
    assert set(row["median_ms"]) == set(mixed_precision.MODES)
    assert row["ratio"] == pytest.approx(
        row["median_ms"][mixed_precision.MODES[1]] / row["median_ms"][mixed_precision.MODES[0]]
    )
    # Same weights, same batch: the two modes' first losses differ only by rounding.
    first = row["first_loss"]
    assert abs(first[mixed_precision.MODES[0]] - first[mixed_precision.MODES[1]]) < 0.05
    report = (tmp_path / "mixed_precision.md").read_text()
    assert "| cnp |" in report and "**Reading**" in report
