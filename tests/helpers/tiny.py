"""A tiny experiment config shared by the training and CLI tests."""

from __future__ import annotations

from pathlib import Path

TINY_YAML = """
name: tiny
model: {name: tnp, dim_x: 1, dim_y: 1, dim_model: 16, n_layers: 1, n_heads: 2, dim_head: 8,
        dim_ff: 16, n_embed_hidden: 1, n_decoder_hidden: 1}
data: {name: gp, batch_size: 4, kernels: [rbf], n_random: 12, n_grid: 12, min_ctx: 3, max_ctx: 10}
optim: {name: adamw, lr: 3.0e-3}
schedule: {name: cosine, warmup_steps: 5}
train: {steps: 40, clip_norm: 3.0, log_every: 10, val_every: 20, val_batches: 2,
        checkpoint_every: 10, progress: false}
eval: {n_batches: 3, batch_size: 4}
"""


def write_tiny(tmp: Path) -> Path:
    """Write the tiny config to ``tmp/tiny.yaml``."""
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "tiny.yaml"
    path.write_text(TINY_YAML)
    return path


def tiny_overrides(tmp: Path, **train) -> list[str]:
    """``train.key=value`` overrides with ``out_dir = tmp/run``."""
    items = {"out_dir": str(tmp / "run"), **train}
    return [f"train.{k}={v}" for k, v in items.items()]
