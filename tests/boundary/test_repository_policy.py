"""What git keeps of training (the long-runs policy of experiments/README.md): no committed
``.pt`` over 5 MB but a finished long run's ``model.pt`` (at most 8 MB: TE-1's models at the
paper's sizes, 4-7.4 MB of float32 weights), and a finished long run (its ``model.pt``
committed) keeps no ``checkpoints/`` beside it.
Checked on the files git tracks (staged included), so it holds for what a commit would keep."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_BYTES = 5_000_000
MAX_MODEL_BYTES = 8_000_000  # a finished long run's weights alone, no optimiser state


def tracked(pattern: str) -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--", pattern],
            cwd=ROOT, capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout")
    return [ROOT / line for line in out.splitlines() if (ROOT / line).exists()]


def limit(path: Path) -> int:
    """The most bytes ``path`` may take in git."""
    relative = path.relative_to(ROOT).parts
    finished_model = len(relative) == 3 and relative[0] == "long-runs" and relative[2] == "model.pt"
    return MAX_MODEL_BYTES if finished_model else MAX_BYTES


def test_no_committed_checkpoint_is_over_its_limit():
    big = [
        f"{p.relative_to(ROOT)} ({p.stat().st_size / 1e6:.1f} MB)"
        for p in tracked("*.pt")
        if p.stat().st_size > limit(p)
    ]
    assert not big, f"checkpoints over 5 MB (a finished long run's model.pt: 8 MB) in git: {big}"


def test_only_a_finished_long_runs_weights_may_pass_5_mb():
    assert limit(ROOT / "long-runs" / "te1-tnp" / "model.pt") == MAX_MODEL_BYTES
    assert limit(ROOT / "long-runs" / "te1-tnp" / "checkpoints" / "last.pt") == MAX_BYTES
    assert limit(ROOT / "src" / "tnpx" / "zoo" / "gp1d-tnp.pt") == MAX_BYTES


def test_a_finished_long_run_keeps_no_training_state():
    files = {p.relative_to(ROOT).as_posix() for p in tracked("long-runs")}
    finished = {f.rsplit("/", 1)[0] for f in files if f.endswith("/model.pt")}
    kept = sorted(f for f in files if f.rsplit("/", 2)[0] in finished and "/checkpoints/" in f)
    assert not kept, (
        f"finished runs keep training state (python -m experiments.long_runs.driver tidy): {kept}"
    )
