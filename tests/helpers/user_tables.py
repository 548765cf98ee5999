"""A user's table of many tasks for the tests: noisy sine curves, and a tiny config that trains
on them (the `table` task source); weekly case counts with an exposure column, per site and
per station."""

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


def counts_stations(days: int = 30, n_stations: int = 10, seed: int = 0) -> pd.DataFrame:
    """Daily counts at stations on a 6 x 8 lattice of ``lat`` in [50, 55] and ``lon`` in [0,
    7] (nudged apart), each reading's hours observed (1 to 24) times a rate per hour smooth in
    space and time: ``day, lat, lon, hours, cases``; ~10 % of readings missing, so tasks differ
    in size (the ``stations`` source with ``exposure: hours``)."""
    rng = np.random.default_rng(seed)
    lat = rng.choice(np.linspace(50.0, 55.0, 6), n_stations)
    lon = rng.choice(np.linspace(0.0, 7.0, 8), n_stations) + 0.01 * np.arange(n_stations)
    day = np.repeat(np.arange(days, dtype=float), n_stations)
    lat, lon = np.tile(lat, days), np.tile(lon, days)
    hours = rng.uniform(1.0, 24.0, len(day))
    rate = np.exp(np.sin(lat / 2 + day / 5) + np.cos(lon / 3) - 1.0)
    frame = pd.DataFrame({"day": day, "lat": lat, "lon": lon, "hours": hours,
                          "cases": rng.poisson(hours * rate).astype(float)})  # fmt: skip
    return frame[rng.uniform(size=len(frame)) > 0.1].reset_index(drop=True)
