"""Where long training runs stand: ``tnpx runs`` prints steps done / total, the measured
training speed, the time to go and the latest held-out validation LL of each run folder.

A long run lives in a folder (``long-runs/<name>/`` for the runs committed with the project)
with its ``config.yaml``, ``metrics.csv`` and ``checkpoints/last.pt``; it is advanced in slices
with ``tnpx train CONFIG --resume --max-minutes M``. A finished run needs only its
``config.yaml``, ``metrics.csv`` and ``model.pt`` (which records its steps and seconds).
Everything here is read from those files, nothing is trained.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..checkpoint import read_checkpoint
from .state import last_checkpoint, recorded_best, recorded_progress

RECENT_ROWS = 10  # logged intervals whose speeds give the current rate


@dataclass
class RunStatus:
    """One run folder's progress, from its files."""

    folder: Path
    model: str
    steps_done: int  # in the checkpoint: where a resumed run continues
    steps_logged: int  # the latest logged step (ahead of the checkpoint while a run trains)
    steps_total: int
    steps_per_s: float | None  # median over the last logged intervals
    train_hours: float | None  # training wall time so far, summed over slices
    val_ll: float | None  # the latest held-out validation LL
    val_step: int | None
    finished: bool

    @property
    def eta_hours(self) -> float | None:
        """Hours of training left at the measured speed (None if unknown)."""
        if self.finished:
            return 0.0
        if not self.steps_per_s:
            return None
        done = max(self.steps_done, self.steps_logged)
        return (self.steps_total - done) / self.steps_per_s / 3600


def run_status(folder: str | Path) -> RunStatus:
    """The progress of the run in ``folder``.

    Raises:
        ValueError: the folder holds no run (no ``config.yaml``).
    """
    folder = Path(folder)
    config = folder / "config.yaml"
    if not config.is_file():
        raise ValueError(f"{folder}: no run here (no config.yaml)")
    cfg = yaml.safe_load(config.read_text())
    total = int(cfg["train"]["steps"])
    done, hours = 0, None
    rows = read_metrics(folder / "metrics.csv")
    progress = recorded_progress(folder)
    if progress is not None:
        done, seconds = progress
        hours = None if seconds is None else float(seconds) / 3600
    rates = [float(r["steps_per_s"]) for r in rows[-RECENT_ROWS:] if r.get("steps_per_s")]
    vals = [(int(r["step"]), float(r["val_ll"])) for r in rows if r.get("val_ll")]
    return RunStatus(
        folder=folder,
        model=cfg["model"]["name"],
        steps_done=done,
        steps_logged=int(rows[-1]["step"]) if rows else 0,
        steps_total=total,
        steps_per_s=statistics.median(rates) if rates else None,
        train_hours=hours,
        val_ll=vals[-1][1] if vals else None,
        val_step=vals[-1][0] if vals else None,
        finished=(done >= total or stopped_for_patience(folder)) and (folder / "model.pt").exists(),
    )


def stopped_for_patience(folder: Path) -> bool:
    """Whether the run ended early for ``train.patience`` (a finished run)."""
    last = last_checkpoint(folder)
    if last.exists():
        return bool((recorded_best(last) or {}).get("stopped"))
    final = folder / "model.pt"
    trained = read_checkpoint(final).get("trained") if final.exists() else None
    return bool((trained or {}).get("early_stopped"))


def read_metrics(path: Path) -> list[dict]:
    """The logged rows (a training run logs ahead of its last checkpoint)."""
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def status_table(statuses: list[RunStatus]) -> str:
    """A markdown table of run statuses."""
    lines = [
        "| run | model | steps (checkpointed) | logged | done | steps/s | trained | ETA | "
        "val LL (at step) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for s in statuses:
        rate = f"{s.steps_per_s:.2f}" if s.steps_per_s else "—"
        trained = f"{s.train_hours:.1f} h" if s.train_hours is not None else "—"
        eta = "done" if s.finished else "—" if s.eta_hours is None else f"{s.eta_hours:.1f} h"
        val = "—" if s.val_ll is None else f"{s.val_ll:.3f} ({s.val_step:,})"
        share = 100 * max(s.steps_done, s.steps_logged) / max(s.steps_total, 1)
        lines.append(
            f"| {s.folder.name} | {s.model} | {s.steps_done:,} / {s.steps_total:,} | "
            f"{s.steps_logged:,} | {share:.0f}% | {rate} | {trained} | {eta} | {val} |"
        )
    return "\n".join(lines)


def find_runs(roots: list[str | Path]) -> list[Path]:
    """Run folders: each root that holds a ``config.yaml``, else its subfolders that do."""
    found = []
    for root in map(Path, roots):
        if (root / "config.yaml").is_file():
            found.append(root)
        elif root.is_dir():
            found += sorted(p.parent for p in root.glob("*/config.yaml"))
        else:
            raise ValueError(f"{root}: no such folder")
    return found
