"""Kolmogorov-flow trajectories (TE-3 data): simulated, snapshotted and coarsened.

One job: simulating trajectories (:func:`generate_trajectories`), each from its own seeded
initial condition. The flow, its grid convention and the time stepping are described in
:mod:`tnpx.data.kolmogorov.solver`; the resumable cache file that holds the trajectories is
:mod:`tnpx.data.kolmogorov.cache`, and the TE-3 task sampler :mod:`tnpx.data.kolmogorov`,
which re-exports the public names of this module.

Data (TE paper, Section 4.3 / F.3, after Rozet & Louppe 2023): solve at 256², discard a
spin-up transient, keep 64 snapshots 0.2 time units apart, average-pool the velocity to 64².
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..base import SPLITS
from .solver import (
    KolmogorovSolver,
    coarsen,
    default_dt,
    random_initial_vorticity,
)


def _trajectory_generator(seed: int, split: str, index: int) -> torch.Generator:
    """The generator of trajectory ``index`` of ``split``: independent of batching/chunking."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    state = np.random.SeedSequence([seed, SPLITS[split], index]).generate_state(1, np.uint64)
    return torch.Generator().manual_seed(int(state[0]) & (2**63 - 1))


def generate_trajectories(
    n_traj: int,
    *,
    solver_n: int = 256,
    out_n: int = 64,
    spin_up: float = 13.0,
    snapshot_dt: float = 0.2,
    n_snapshots: int = 64,
    reynolds: float = 1000.0,
    drag: float = 0.1,
    forcing_wavenumber: int = 4,
    dt: float | None = None,
    seed: int = 0,
    split: str = "train",
    start: int = 0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
    batch: int = 16,
    progress: bool = True,
) -> torch.Tensor:
    """Simulate Kolmogorov-flow trajectories and return their coarsened velocity.

    Each trajectory starts from :func:`random_initial_vorticity` drawn from its own generator,
    seeded from ``(seed, split, start + i)``: trajectory ``i`` does not depend on how many
    are simulated together, and splits never share an initial condition. The flow is solved
    at ``solver_n²``; snapshots are taken at ``t = spin_up + k * snapshot_dt``,
    ``k = 0, ..., n_snapshots - 1`` (the defaults reproduce Rozet & Louppe 2023: of 128
    states 0.2 apart the first 64 are discarded), and the velocity is average-pooled to
    ``out_n²``.

    Args:
        n_traj: number of trajectories.
        solver_n: simulation grid size (a multiple of ``out_n``).
        out_n: output grid size.
        dt: solver step; ``None`` uses :func:`default_dt` (``0.64 / solver_n``).
        seed, split, start: identify the trajectories ``start, ..., start + n_traj - 1`` of
            ``split`` (``train`` / ``val`` / ``test``) of the data set ``seed``.
        device, dtype: where and in which real precision to simulate.
        batch: trajectories simulated together.
        progress: show a tqdm progress bar.

    Returns:
        Velocity ``[n_traj, n_snapshots, out_n, out_n, 2]`` on the CPU in ``dtype``; axes
        (trajectory, t, x, y, (u, v)).
    """
    if out_n < 1 or solver_n % out_n:
        raise ValueError(f"solver_n={solver_n} must be a multiple of out_n={out_n}")
    if n_traj < 0 or n_snapshots < 1 or batch < 1:
        raise ValueError(
            f"need n_traj >= 0, n_snapshots >= 1, batch >= 1; got {n_traj}, {n_snapshots}, {batch}"
        )
    if spin_up < 0 or snapshot_dt <= 0:
        raise ValueError(f"need spin_up >= 0 and snapshot_dt > 0, got {spin_up}, {snapshot_dt}")
    device = torch.device(device) if device is not None else torch.device("cpu")
    solver = KolmogorovSolver(
        solver_n,
        reynolds=reynolds,
        drag=drag,
        forcing_wavenumber=forcing_wavenumber,
        dt=default_dt(solver_n) if dt is None else dt,
        device=device,
        dtype=dtype,
    )
    factor = solver_n // out_n
    steps_per_traj = math.ceil(spin_up / solver.dt - 1e-9) + (n_snapshots - 1) * math.ceil(
        snapshot_dt / solver.dt - 1e-9
    )
    out = torch.empty(n_traj, n_snapshots, out_n, out_n, 2, dtype=dtype)
    bar = _progress(n_traj * steps_per_traj, progress, "kolmogorov flow", "step")
    for lo in range(0, n_traj, batch):
        hi = min(lo + batch, n_traj)
        omega = torch.cat(
            [
                random_initial_vorticity(
                    1, solver_n, _trajectory_generator(seed, split, start + i), dtype=dtype
                )
                for i in range(lo, hi)
            ]
        ).to(device)
        for k in range(n_snapshots):
            span = spin_up if k == 0 else snapshot_dt
            omega = solver.advance(omega, span)
            if bar is not None:
                bar.update((hi - lo) * math.ceil(span / solver.dt - 1e-9))
            u, v = solver.velocity(omega)
            out[lo:hi, k] = (
                coarsen(torch.stack([u, v], dim=-1).movedim(-1, 1), factor).movedim(1, -1).cpu()
            )
    if bar is not None:
        bar.close()
    return out


def _progress(total: int, enabled: bool, desc: str, unit: str, **kwargs):
    """A tqdm progress bar, or None when not ``enabled`` (also used by the cache writer)."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True, **kwargs)


__all__ = ["generate_trajectories"]
