"""What ``tnpx demo`` runs (:mod:`.run`): its settings and default output folder, apart so
that the report (:mod:`.report`) can name them without importing the demo."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .zero_shot import ZERO_SHOT_MODEL

DEFAULT_OUT = "runs/demo"  # ignored by git: the demo leaves a checkout clean


@dataclass
class DemoSettings:
    """What ``tnpx demo`` runs: the data ``config``, the output folder ``out`` (training runs
    under ``runs``, default ``out/train``), ``overrides`` for both models, ``quick``."""

    config: str = "configs/kr1-rbf-tnpx-budget.yaml"
    out: Path = Path(DEFAULT_OUT)
    runs: Path | None = None
    overrides: list[str] = field(default_factory=list)
    quick: bool = False
    pretrained: str = ZERO_SHOT_MODEL

    @property
    def runs_dir(self) -> Path:
        return Path(self.runs) if self.runs is not None else Path(self.out) / "train"
