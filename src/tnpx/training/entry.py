"""``tnpx.train``: train from a config in Python, as ``tnpx train CONFIG KEY=VALUE ...`` does from
the shell (the command calls this function), so that a notebook need not shell out.

>>> result = tnpx.train("configs/quickstart.yaml", ["train.steps=200"])  # doctest: +SKIP
>>> result.model, result.out_dir / "model.pt"  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..config import ExperimentConfig, load_config
from .loop import TrainResult, fit
from .state import claim_run_folder


def train(
    config: str | Path | Mapping | ExperimentConfig,
    overrides: Sequence[str] = (),
    *,
    resume: bool = False,
    overwrite: bool = False,
    max_minutes: float | None = None,
) -> TrainResult:
    """Train the model a config describes; returns the trained model and its run folder.

    Args:
        config: a YAML file's path, a mapping of the same sections (``{"model": {"name":
            "tnp"}, "data": {...}, "train": {"steps": 500}}``; what it leaves out takes the
            defaults), or a loaded :class:`~tnpx.config.ExperimentConfig`.
        overrides: ``section.key=value`` strings applied on top (as on the command line).
        resume: continue the run in ``train.out_dir`` from its last checkpoint.
        overwrite: train afresh over a run already in ``train.out_dir`` (removing its
            checkpoint and model). Without ``resume`` or ``overwrite`` a folder that holds a
            run is refused: a run is never silently overwritten.
        max_minutes: checkpoint and stop after this many minutes of training (resume later).

    Returns:
        :class:`~tnpx.training.loop.TrainResult`: ``model``, ``out_dir`` (holding
        ``model.pt``, ``config.yaml`` and ``metrics.csv``), ``steps_done``, ``final_loss``,
        ``stopped_early`` (a time budget or a signal ended it: resume to continue) and
        ``train_seconds``.

    Raises:
        ConfigError: an unknown key, a wrong type or a value out of range, named.
        ValueError: ``train.out_dir`` holds a run and neither ``resume`` nor ``overwrite``.
    """
    if isinstance(config, ExperimentConfig):
        if overrides:
            raise ValueError("overrides apply to a config file or mapping; edit the loaded config")
        cfg = config
    else:
        cfg = load_config(config, list(overrides))
    if max_minutes is not None and not max_minutes > 0:
        raise ValueError(f"max_minutes must be > 0, got {max_minutes!r}")
    claim_run_folder(Path(cfg.train.out_dir), resume, overwrite)
    max_seconds = None if max_minutes is None else 60 * max_minutes
    return fit(cfg, resume=resume, max_seconds=max_seconds)
