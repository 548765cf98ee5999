"""The resumable cache file of Kolmogorov-flow trajectories (TE-3 data).

One job: writing the cache chunk by chunk, resuming an interrupted run (:func:`write_cache`,
:func:`partial_path`), and reading it back (:func:`read_cache`). The trajectories themselves
come from :func:`~tnpx.data.kolmogorov.trajectories.generate_trajectories`; the TE-3 task
sampler lives in :mod:`tnpx.data.kolmogorov`, which re-exports the public names of this module.

A cache file holds ``"train"`` and ``"test"`` velocity tensors
``[n_traj, n_snapshots, out_n, out_n, 2]`` (axes: trajectory, t, x, y, (u, v)).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import torch

from .solver import default_dt

# generate_trajectories is looked up here by write_cache (tests patch it in this module) and
# stays importable from here.
from .trajectories import _progress, generate_trajectories

CACHE_FORMAT = "tnpx-kolmogorov-v1"
_HINT = "generate it with `tnpx data kolmogorov` (tnpx.data.kolmogorov.write_cache)"


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


__all__ = [
    "CACHE_FORMAT",
    "CacheNotFoundError",
    "generate_trajectories",
    "partial_path",
    "read_cache",
    "write_cache",
]
