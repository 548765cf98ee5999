"""benchmarks/streamed_memory.py: each point runs in its own process and reports the peak-RSS
growth after every call; the report names every model and allocator setting."""

from __future__ import annotations

from argparse import Namespace

import pytest

from benchmarks import streamed_memory as sm


@pytest.mark.slow  # subprocesses measuring memory: ~25 s
def test_points_and_report_at_a_tiny_size():
    args = Namespace(n_targets=300, repeats=2, threads=1)
    points = {(m, a): sm.measure(m, a, args) for m in sm.MODELS for a in sm.ALLOCATORS}
    for point in points.values():
        assert len(point["growth_mb"]) == 2 and all(g >= 0 for g in point["growth_mb"])
        assert point["growth_mb"][0] <= point["growth_mb"][1]  # a peak never falls
    text = sm.report(points, args, "abc1234")
    assert "commit `abc1234`" in text
    for name in (*sm.MODELS, *sm.ALLOCATORS):
        assert name in text
