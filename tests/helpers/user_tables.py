"""A user's table of many tasks for the tests: noisy sine curves, and a tiny config that trains
on them (the `table` task source); weekly case counts with an exposure column."""

from __future__ import annotations

import numpy as np
import pandas as pd

CONFIG = """
name: sines
model: {{name: tnp, dim_x: 1, dim_y: 1, dim_model: 16, n_layers: 1, n_heads: 2, dim_head: 8,
        dim_ff: 16, n_embed_hidden: 1, n_decoder_hidden: 1}}
data: {{name: table, path: {path}, task: curve, x: [t], y: [value], batch_size: 8}}
optim: {{name: adamw, lr: 1.0e-2}}
schedule: {{name: cosine, warmup_steps: 5}}
train: {{steps: 300, clip_norm: 3.0, log_every: 100, val_every: 300, val_batches: 4,
        checkpoint_every: 1000, progress: false, out_dir: {out}}}
eval: {{n_batches: 2, batch_size: 4}}
"""


def write_sines(path, n_curves: int = 60, seed: int = 0) -> pd.DataFrame:
    """Noisy sine curves of random phase and length on ``t`` in [0, 8]: ``curve, t, value``."""
    rng = np.random.default_rng(seed)
    rows = []
    for curve in range(n_curves):
        t = np.sort(rng.uniform(0, 8, rng.integers(15, 40)))
        value = np.sin(t + rng.uniform(0, 2 * np.pi)) + 0.05 * rng.normal(size=len(t))
        rows.append(pd.DataFrame({"curve": f"s{curve}", "t": t, "value": value}))
    frame = pd.concat(rows, ignore_index=True)
    frame.to_csv(path, index=False)
    return frame


def counts_table(n_sites: int = 12, seed: int = 0) -> pd.DataFrame:
    """Weekly case counts per site, sites of 6 to 14 weeks (so batches pad), each week's
    exposure in person-years (log-uniform on [0.2, 5]) times a rate per person-year that
    varies smoothly by week: ``site, week, person_years, cases``."""
    rng = np.random.default_rng(seed)
    parts = []
    for site in range(n_sites):
        week = np.arange(rng.integers(6, 15), dtype=float)
        exposure = np.exp(rng.uniform(np.log(0.2), np.log(5.0), len(week)))
        cases = rng.poisson(exposure * np.exp(1 + np.sin(week / 2 + site)))
        parts.append(pd.DataFrame({"site": f"s{site}", "week": week,
                                   "person_years": exposure, "cases": cases}))  # fmt: skip
    return pd.concat(parts, ignore_index=True)
