"""What git keeps of training (the long-runs policy of experiments/README.md): no committed
``.pt`` over 5 MB, and a finished long run (its ``model.pt`` committed) keeps no ``checkpoints/``
beside it.
Checked on the files git tracks (staged included), so it holds for what a commit would keep."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_BYTES = 5_000_000


def tracked(pattern: str) -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--", pattern],
            cwd=ROOT, capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout")
    return [ROOT / line for line in out.splitlines() if (ROOT / line).exists()]


def test_no_committed_checkpoint_is_over_5_mb():
    big = [
        f"{p.relative_to(ROOT)} ({p.stat().st_size / 1e6:.1f} MB)"
        for p in tracked("*.pt")
        if p.stat().st_size > MAX_BYTES
    ]
    assert not big, f"checkpoints over 5 MB in git: {big}"


def test_a_finished_long_run_keeps_no_training_state():
    files = {p.relative_to(ROOT).as_posix() for p in tracked("long-runs")}
    finished = {f.rsplit("/", 1)[0] for f in files if f.endswith("/model.pt")}
    kept = sorted(f for f in files if f.rsplit("/", 2)[0] in finished and "/checkpoints/" in f)
    assert not kept, (
        f"finished runs keep training state (python -m experiments.long_runs.driver tidy): {kept}"
    )
