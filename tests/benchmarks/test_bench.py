"""The benchmark runner: one forward per process, with out-of-memory recorded, not fatal."""

from __future__ import annotations

import pytest

from benchmarks.bench import OK, OOM, measure


@pytest.mark.slow
def test_measure_reports_time_and_memory():
    result = measure(
        {
            "model": "tnp",
            "options": {"dim_model": 16, "n_layers": 1},
            "n_ctx": 50,
            "n_tgt": 50,
            "threads": 1,
            "repeats": 2,
        },
        timeout_s=120,
    )
    assert result["status"] == OK, result
    assert result["seconds"] > 0 and result["peak_mb"] >= 0


@pytest.mark.slow
def test_measure_records_out_of_memory():
    # Unchunked TE pair features for 3000 x 3000 points need ~4.6 GB; allow 0.5 GB.
    spec = {
        "model": "te-tnp",
        "options": {"chunk_elements": 2**62, "n_layers": 1},
        "n_ctx": 3000,
        "n_tgt": 3000,
        "threads": 1,
        "repeats": 1,
    }
    result = measure(spec, timeout_s=120, memory_gb=0.5)
    assert result["status"] == OOM, result
    assert "allocate" in result["message"]


@pytest.mark.slow
def test_measure_records_errors():
    result = measure({"model": "no-such-model", "n_ctx": 1, "n_tgt": 1}, timeout_s=60)
    assert result["status"] == "error"
    assert "unknown model" in result["message"]
