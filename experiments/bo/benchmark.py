"""A BO benchmark (PROTOCOLS KR-2, or the older TNP-D protocol) as a table of final regret per
surrogate and kernel, resumable cell by cell: ``python -m experiments.bo.run CONFIG``.

A config (``configs/kr2*.yaml``, ``configs/tnpd-bo*.yaml``) names the task distribution (the
data section of a KR-1 config per kernel, with overrides), the loop's settings, the trained
models (checkpoint paths with ``{kernel}``) and the baselines. Each (kernel, surrogate) cell
is saved to ``OUT/cells/KERNEL/LABEL.json`` when done; a later run skips finished cells with
the same settings. The report ``OUT/README.md``, ``OUT/results.json`` and ``OUT/regret.png``
are rewritten from all saved cells after every cell.

This module is what a benchmark is: its config (:func:`load_benchmark`), its rows
(:func:`labels`) and where its checkpoints and saved cells are (:func:`load_cells`).
:mod:`.run` runs the cells (and is the command line), :mod:`.report`
writes the report.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

BASELINES = ("gp-oracle", "gp-fitted", "random")


@dataclass
class BOSettings:
    """The loop and task settings of a benchmark (everything a cell's numbers depend on)."""

    tasks_from: str = "kr1-{kernel}.yaml"  # experiment config whose data section gives tasks
    data: dict = field(default_factory=dict)  # overrides to that data section
    kernels: list = field(default_factory=lambda: ["matern32", "periodic", "rbf"])
    n_tasks: int = 100
    n_seeds: int = 5
    task_seed: int = 0
    n_init: int = 10
    n_iter: int = 50
    noise: float = 0.0
    acquisition: str = "kr-ei"
    optimizer: str = "candidates"


@dataclass
class BOBenchmark:
    name: str
    description: str
    protocol: str  # exact | budget
    notes: str  # how a budget differs from the paper
    settings: BOSettings
    models: dict  # label -> checkpoint path template with {kernel}
    baselines: list
    paper: dict  # label -> {kernel: published final regret}
    out_dir: Path
    config_path: Path


def load_benchmark(path: str | Path, out_dir: str | Path | None = None) -> BOBenchmark:
    """Read a BO benchmark config; unknown keys and baselines are errors that list valid ones."""
    path = Path(path)
    raw = yaml.safe_load(path.read_text()) or {}
    known = {"name", "description", "protocol", "notes", "bo", "models", "baselines", "paper"}
    known |= {"out_dir"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {unknown}; valid: {', '.join(sorted(known))}")
    bo = raw.get("bo", {})
    valid = set(BOSettings.__dataclass_fields__)
    bad = sorted(set(bo) - valid)
    if bad:
        raise ValueError(f"{path}: unknown bo option(s) {bad}; valid: {', '.join(sorted(valid))}")
    baselines = list(raw.get("baselines", BASELINES))
    wrong = sorted(set(baselines) - set(BASELINES))
    if wrong:
        raise ValueError(f"{path}: unknown baseline(s) {wrong}; valid: {', '.join(BASELINES)}")
    return BOBenchmark(
        name=raw.get("name", path.stem),
        description=raw.get("description", ""),
        protocol=raw.get("protocol", "budget"),
        notes=raw.get("notes", ""),
        settings=BOSettings(**bo),
        models=dict(raw.get("models", {})),
        baselines=baselines,
        paper=dict(raw.get("paper", {})),
        out_dir=Path(out_dir or raw.get("out_dir", f"results/bo/{path.stem}")),
        config_path=path,
    )


def labels(bench: BOBenchmark) -> list[str]:
    return list(bench.models) + [b for b in bench.baselines if b not in bench.models]


# -- checkpoints and cells ---------------------------------------------------------------------
def checkpoint_path(bench: BOBenchmark, label: str, kernel: str) -> Path:
    return Path(bench.models[label].format(kernel=kernel))


def cell_path(bench: BOBenchmark, kernel: str, label: str) -> Path:
    return bench.out_dir / "cells" / kernel / f"{label}.json"


def checkpoint_digest(path: Path) -> str:
    """SHA-256 of a surrogate's checkpoint file: what a saved cell was computed from."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_cells(bench: BOBenchmark) -> dict[tuple[str, str], dict]:
    """Saved cells whose settings match the config's and whose surrogate is the checkpoint
    there now (others are stale and re-run). A cell saved before cells recorded their
    checkpoint's digest, or whose checkpoint is not on this machine, cannot be checked and is
    kept."""
    cells, digests = {}, {}
    for path in sorted((bench.out_dir / "cells").glob("*/*.json")):
        cell = json.loads(path.read_text())
        if cell["settings"] != asdict(bench.settings):
            continue
        recorded, checkpoint = cell.get("checkpoint_sha256"), cell.get("checkpoint")
        if recorded and checkpoint and Path(checkpoint).exists():
            if checkpoint not in digests:
                digests[checkpoint] = checkpoint_digest(checkpoint)
            if digests[checkpoint] != recorded:
                continue  # the surrogate was retrained since: this cell is not its result
        cells[(cell["kernel"], cell["label"])] = cell
    return cells
