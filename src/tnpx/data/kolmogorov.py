"""2-D Kolmogorov flow data: trajectories, a resumable cache and the TE-3 task sampler (the
solver is :mod:`tnpx.data.kolmogorov_solver`).

The flow is incompressible Navier–Stokes on the periodic box ``[0, 2π)²`` with the
Kolmogorov forcing ``f = (A sin(k_f y), 0)`` in the x-momentum equation, viscosity
``ν = 1 / Re`` and a linear drag ``-α u``. Taking the curl, the vorticity
``ω = ∂v/∂x - ∂u/∂y`` obeys::

    ∂ω/∂t + u ∂ω/∂x + v ∂ω/∂y = ν ∇²ω - α ω + F,    F = ∂f_y/∂x - ∂f_x/∂y = -A k_f cos(k_f y)

and the velocity comes from the stream function ``ψ`` with ``∇²ψ = -ω``:
``u = ∂ψ/∂y``, ``v = -∂ψ/∂x`` (so ``∇·u = 0`` identically).

Grid convention: a field ``[..., n, n]`` is indexed ``[..., i, j]`` with ``x = 2π i / n`` on
the second-to-last axis and ``y = 2π j / n`` on the last axis ("ij" indexing). Fourier
coefficients use the ``torch.fft.rfft2`` layout ``[..., n, n // 2 + 1]`` (x full, y half).

Time stepping is the integrating-factor (Lawson) RK4: the stiff linear viscous + drag term is
integrated exactly by the factor ``exp(-(ν|k|² + α) dt)`` and RK4 handles the advection and
forcing; the advection product is dealiased with the 2/3 rule.

Data (TE paper, Section 4.3 / F.3, after Rozet & Louppe 2023): solve at 256², discard a
spin-up transient, keep 64 snapshots 0.2 time units apart, average-pool the velocity to 64².
A cache file holds ``"train"`` and ``"test"`` velocity tensors
``[n_traj, n_snapshots, out_n, out_n, 2]`` (axes: trajectory, t, x, y, (u, v)).
"""

from __future__ import annotations

import inspect
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..batch import Batch
from .base import SPLITS, randint
from .kolmogorov_solver import (
    KolmogorovSolver,
    coarsen,
    default_dt,
    random_initial_vorticity,
)

CACHE_FORMAT = "tnpx-kolmogorov-v1"
_HINT = "generate it with `tnpx data kolmogorov` (tnpx.data.kolmogorov.write_cache)"


# --- trajectories ---------------------------------------------------------------------------


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
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True, **kwargs)


# --- cache ----------------------------------------------------------------------------------


class CacheNotFoundError(FileNotFoundError):
    """The Kolmogorov-flow cache file does not exist."""


# keyword arguments of generate_trajectories that define the data (and so the cache settings)
_DATA_KEYS = (
    "solver_n",
    "out_n",
    "spin_up",
    "snapshot_dt",
    "n_snapshots",
    "reynolds",
    "drag",
    "forcing_wavenumber",
    "dt",
    "seed",
    "dtype",
    # Batching changes results at round-off level (batched FFTs), which the chaotic flow
    # amplifies; recording it (and the chunk size) makes a resumed cache bit-identical to an
    # uninterrupted one.
    "batch",
)
_RUN_KEYS = ("device",)  # CPU and GPU differ at round-off too, but a resume may switch


# the defaults of generate_trajectories, captured once (robust to later monkeypatching)
_GENERATE_DEFAULTS = {
    k: p.default for k, p in inspect.signature(generate_trajectories).parameters.items()
}


def _cache_settings(n_train: int, n_test: int, kwargs: dict[str, Any]) -> dict[str, Any]:
    defaults = {k: _GENERATE_DEFAULTS[k] for k in _DATA_KEYS}
    unknown = sorted(set(kwargs) - set(_DATA_KEYS) - set(_RUN_KEYS))
    if unknown:
        raise TypeError(
            f"unknown argument(s) {unknown} for write_cache; valid: "
            f"{', '.join(_DATA_KEYS + _RUN_KEYS)}"
        )
    settings = {**defaults, **{k: v for k, v in kwargs.items() if k in _DATA_KEYS}}
    if settings["dt"] is None:
        settings["dt"] = default_dt(settings["solver_n"])
    settings["dtype"] = str(settings["dtype"]).removeprefix("torch.")
    settings = {k: (float(v) if isinstance(v, float) else v) for k, v in settings.items()}
    return {"format": CACHE_FORMAT, "n_train": n_train, "n_test": n_test, **settings}


def _atomic_save(obj: Any, path: Path) -> None:
    """``torch.save`` to a temporary file then ``os.replace``: never a half-written file."""
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def partial_path(path: str | os.PathLike) -> Path:
    """Where :func:`write_cache` keeps its progress: ``path`` with suffix ``.partial.pt``."""
    return Path(path).with_suffix(".partial.pt")


def write_cache(
    path: str | os.PathLike,
    n_train: int,
    n_test: int,
    *,
    chunk: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
    **generate_kwargs: Any,
) -> dict[str, Any]:
    """Simulate the train and test trajectories and save them to ``path`` (resumable).

    Trajectories are generated ``chunk`` at a time (default: ``batch``, 16); after each chunk
    the progress so far is saved atomically to :func:`partial_path`, so a run that is
    interrupted continues where it stopped when called again with the same settings. Train
    and test draw their initial conditions from different streams (they never overlap), and
    the same settings give the same data (bit for bit on the same device and software).

    Args:
        path: the cache file to write (a torch file).
        n_train, n_test: numbers of trajectories (TE-3: 819 and 102).
        chunk: trajectories per saved chunk.
        overwrite: regenerate even if ``path`` already holds a cache with other settings.
        progress: show tqdm progress bars.
        generate_kwargs: :func:`generate_trajectories` options (``solver_n``, ``out_n``,
            ``spin_up``, ``snapshot_dt``, ``n_snapshots``, ``reynolds``, ``drag``,
            ``forcing_wavenumber``, ``dt``, ``seed``, ``dtype``, ``batch``, ``device``).
            All but ``device`` are recorded in ``settings`` and must match to resume.

    Returns:
        The cache: ``{"train": [n_train, T, n, n, 2], "test": [n_test, T, n, n, 2],
        "settings": dict}``, velocities in float32.
    """
    path = Path(path)
    if n_train < 0 or n_test < 0:
        raise ValueError(f"need n_train, n_test >= 0, got {n_train}, {n_test}")
    settings = _cache_settings(n_train, n_test, generate_kwargs)
    settings["chunk"] = chunk = settings["batch"] if chunk is None else int(chunk)
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    if path.exists() and not overwrite:
        existing = read_cache(path, mmap=False)
        if existing["settings"] == settings:
            return existing
        raise FileExistsError(
            f"{path} holds a Kolmogorov cache with other settings; pass overwrite=True "
            f"(--overwrite) or choose another path"
        )
    partial = partial_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = _load_partial(partial, settings)
    data_kwargs = {k: settings[k] for k in _DATA_KEYS if k != "dtype"}
    data_kwargs["dtype"] = getattr(torch, settings["dtype"])
    data_kwargs["device"] = generate_kwargs.get("device")
    done = sum(parts[s].shape[0] for s in ("train", "test"))
    bar = _progress(n_train + n_test, progress, f"writing {path.name}", "traj", initial=done)
    for split, n_total in (("train", n_train), ("test", n_test)):
        while parts[split].shape[0] < n_total:
            start = parts[split].shape[0]
            count = min(chunk, n_total - start)
            new = generate_trajectories(
                count, split=split, start=start, progress=False, **data_kwargs
            )
            parts[split] = torch.cat([parts[split], new.float()])
            _atomic_save({**parts, "settings": settings}, partial)
            if bar is not None:
                bar.update(count)
    if bar is not None:
        bar.close()
    cache = {**parts, "settings": settings}
    _atomic_save(cache, path)
    partial.unlink(missing_ok=True)
    return cache


def _load_partial(partial: Path, settings: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The trajectories an interrupted :func:`write_cache` saved, or empty tensors."""
    n, t = settings["out_n"], settings["n_snapshots"]
    empty = {s: torch.empty(0, t, n, n, 2) for s in ("train", "test")}
    if not partial.exists():
        return empty
    try:
        saved = torch.load(partial, map_location="cpu", weights_only=True)
    except Exception as err:  # a corrupt partial file cannot be resumed
        raise ValueError(
            f"cannot read the partial Kolmogorov cache {partial} ({err}); delete it to restart"
        ) from err
    if not isinstance(saved, dict) or saved.get("settings") != settings:
        raise ValueError(
            f"the partial Kolmogorov cache {partial} was written with other settings "
            f"({saved.get('settings') if isinstance(saved, dict) else None}); resume with "
            f"the same settings or delete it to restart"
        )
    return {s: saved[s] for s in ("train", "test")}


def read_cache(path: str | os.PathLike, mmap: bool = True) -> dict[str, Any]:
    """Load a cache written by :func:`write_cache`.

    Args:
        path: the cache file.
        mmap: memory-map the tensors (loaded lazily: a 2 GB cache costs little memory).

    Returns:
        ``{"train": [n_train, T, n, n, 2], "test": [n_test, T, n, n, 2], "settings": dict}``.

    Raises:
        CacheNotFoundError: (a ``FileNotFoundError``) ``path`` does not exist.
        ValueError: ``path`` is not a Kolmogorov-flow cache.
    """
    path = Path(path)
    if not path.is_file():
        raise CacheNotFoundError(f"no Kolmogorov-flow cache at {path}; {_HINT}")
    try:
        cache = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except Exception as err:
        raise ValueError(f"{path} is not a Kolmogorov-flow cache ({err}); {_HINT}") from err
    ok = (
        isinstance(cache, dict)
        and isinstance(cache.get("settings"), dict)
        and cache["settings"].get("format") == CACHE_FORMAT
        and all(
            isinstance(cache.get(s), torch.Tensor)
            and cache[s].dim() == 5
            and cache[s].shape[-1] == 2
            for s in ("train", "test")
        )
    )
    if not ok:
        raise ValueError(f"{path} is not a Kolmogorov-flow cache ({CACHE_FORMAT}); {_HINT}")
    return cache


# --- task sampler ---------------------------------------------------------------------------


@dataclass
class KolmogorovConfig:
    """TE-3 tasks: random ``block`` = (x, y, t) sub-blocks of cached Kolmogorov trajectories.

    ``cache``: the file written by :func:`write_cache`; ``subset``: which part of it
    (``train`` or ``test``) this sampler draws from. Each task picks a trajectory and a block
    (wrapping periodically in x and y, not in t); its inputs are the block's (x, y, t) grid
    coordinates mapped to ``input_range`` on each axis, its outputs the velocity (u, v).
    ``n_ctx ~ U{min_ctx, ..., max_ctx}`` once per batch; a random ``n_ctx`` of the block's
    points are the context and all the others the targets. ``max_tgt`` optionally keeps only
    the first ``max_tgt`` of those targets (a random subset; a CPU budget's cap on time and
    memory, not the paper's protocol); it draws nothing more, so the tasks are otherwise the
    same.
    """

    cache: str = "data/kolmogorov.pt"
    subset: str = "train"
    block: list[int] = field(default_factory=lambda: [16, 16, 16])
    min_ctx: int = 1
    max_ctx: int = 500
    input_range: list[float] = field(default_factory=lambda: [-3.0, 3.0])
    max_tgt: int | None = None


class KolmogorovSampler:
    """Samples TE-3 Kolmogorov-flow tasks; see :class:`KolmogorovConfig`.

    Args:
        config: the task distribution.
        batch_size: default tasks per batch.
        seed: the seed of the task stream (see :func:`tnpx.data.base.batch_at`).
        data: velocity ``[n_traj, T, nx, ny, 2]`` to sample from instead of reading
            ``config.cache`` (tests, in-memory data).

    Batches: ``xc [B, n_ctx, 3]``, ``yc [B, n_ctx, 2]``, ``xt [B, P - n_ctx, 3]``,
    ``yt [B, P - n_ctx, 2]`` with ``P = prod(block)``, float32; ``info["trajectory"] [B]`` and
    ``info["origin"] [B, 3]`` (the block's first (x, y, t) grid index) locate each task.
    """

    dim_x = 3
    dim_y = 2

    def __init__(
        self,
        config: KolmogorovConfig | None = None,
        batch_size: int = 16,
        seed: int = 0,
        data: torch.Tensor | None = None,
    ):
        self.config = config = config or KolmogorovConfig()
        if config.subset not in ("train", "test"):
            raise ValueError(f"subset must be 'train' or 'test', got {config.subset!r}")
        if len(config.block) != 3 or any(int(s) < 1 for s in config.block):
            raise ValueError(f"block must be three positive sizes (x, y, t), got {config.block}")
        if len(config.input_range) != 2 or not config.input_range[0] < config.input_range[1]:
            raise ValueError(
                f"input_range must be [low, high], low < high, got {config.input_range}"
            )
        n_points = math.prod(int(s) for s in config.block)
        if not 0 <= config.min_ctx <= config.max_ctx:
            raise ValueError(
                f"need 0 <= min_ctx <= max_ctx, got {config.min_ctx}, {config.max_ctx}"
            )
        if config.max_ctx >= n_points:
            raise ValueError(
                f"max_ctx={config.max_ctx} leaves no targets in a block of {n_points} points"
            )
        if config.max_tgt is not None and config.max_tgt < 1:
            raise ValueError(f"max_tgt must be None or >= 1, got {config.max_tgt}")
        if data is None:
            data = read_cache(config.cache)[config.subset]
        if data.dim() != 5 or data.shape[-1] != 2 or data.shape[0] < 1:
            raise ValueError(
                f"data must be velocity [n_traj, T, nx, ny, 2], got {tuple(data.shape)}"
            )
        bx, by, bt = (int(s) for s in config.block)
        _, nt, nx, ny, _ = data.shape
        if bx > nx or by > ny or bt > nt:
            raise ValueError(
                f"block (x, y, t) = {tuple(config.block)} is larger than the data "
                f"(x, y, t) = ({nx}, {ny}, {nt})"
            )
        self.data = data
        self.block = (bx, by, bt)
        self.batch_size = batch_size
        self.seed = seed
        lo, hi = (float(r) for r in config.input_range)
        axes = [
            torch.linspace(lo, hi, s, dtype=torch.float64)
            if s > 1
            else torch.full((1,), 0.5 * (lo + hi), dtype=torch.float64)
            for s in self.block
        ]
        # [P, 3] in the order the block is flattened: x slowest, then y, then t.
        self.inputs = torch.stack(torch.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3).float()

    @classmethod
    def from_tensor(
        cls,
        velocity: torch.Tensor,
        config: KolmogorovConfig | None = None,
        batch_size: int = 16,
        seed: int = 0,
    ) -> KolmogorovSampler:
        """A sampler over in-memory velocity ``[n_traj, T, nx, ny, 2]`` (no cache file)."""
        return cls(config, batch_size=batch_size, seed=seed, data=velocity)

    def sample(self, generator: torch.Generator, batch_size: int | None = None) -> Batch:
        g, b, c = generator, batch_size or self.batch_size, self.config
        n_traj, nt, nx, ny, _ = self.data.shape
        bx, by, bt = self.block
        n_ctx = randint(g, c.min_ctx, c.max_ctx)
        traj = torch.randint(n_traj, (b,), generator=g)
        x0 = torch.randint(nx, (b,), generator=g)
        y0 = torch.randint(ny, (b,), generator=g)
        t0 = torch.randint(nt - bt + 1, (b,), generator=g)  # time does not wrap
        ix = (x0[:, None] + torch.arange(bx)) % nx  # periodic in x and y
        iy = (y0[:, None] + torch.arange(by)) % ny
        it = t0[:, None] + torch.arange(bt)
        # [b, bx, by, bt, 2], flattened in the order of self.inputs
        values = self.data[
            traj[:, None, None, None],
            it[:, None, None, :],
            ix[:, :, None, None],
            iy[:, None, :, None],
        ]
        values = values.reshape(b, -1, 2).float()
        order = torch.rand(b, values.shape[1], generator=g).argsort(dim=1)
        ctx, tgt = order[:, :n_ctx], order[:, n_ctx:]
        if c.max_tgt is not None:
            tgt = tgt[:, : c.max_tgt]

        def take(source: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
            return torch.gather(source, 1, idx[..., None].expand(-1, -1, source.shape[-1]))

        inputs = self.inputs.expand(b, -1, -1)
        info = {"trajectory": traj, "origin": torch.stack([x0, y0, t0], dim=-1)}
        return Batch(
            take(inputs, ctx), take(values, ctx), take(inputs, tgt), take(values, tgt), info=info
        )
