"""Memory and speed of the ``grid`` task source on a NetCDF file larger than the memory it may
take (issue 35, item 1): it trains without loading the file whole.

Writes a float32 NetCDF of about ``--gib`` GiB (time × 512 × 512, chunked 8 × 64 × 64, no
compression) in a child process, so that writing it never counts towards this process's peak;
then, in this process: builds the lazy sampler (``load: lazy``: one pass over the file lists the
complete windows and fits the normalisation, a block at a time), draws ``--batches`` training
batches of 16 TE-4-sized windows (15 × 15 × 5 points), and trains the default ``tnp`` on them
for ``--steps`` steps. Peak resident memory (``getrusage``) after each stage against the file's
size; time per batch against a training step. One torch thread.

    python -m benchmarks.grid_source_memory                # results/data-sources/grid-memory.*
    python -m benchmarks.grid_source_memory --gib 0.05 --out /tmp/grid   # a quick trial
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import xarray  # noqa: F401  (imported before the baseline: its ~100 MiB are not the source's)

import tnpx
from tnpx.data import batch_at, build_sampler
from tnpx.provenance import command_line, git_commit, hardware

SIDE = 512  # lat and lon points
CHUNKS = (8, 64, 64)
WINDOW = {"time": 5, "lat": 15, "lon": 15}


def write_file(path: str, n_time: int, seed: int = 0) -> None:
    """A smooth field plus noise, ``t2m [n_time, SIDE, SIDE]`` float32, written a slab of
    time steps at a time (never whole in memory)."""
    import netCDF4

    rng = np.random.default_rng(seed)
    lat, lon = np.linspace(30, 70, SIDE), np.linspace(-20, 40, SIDE)
    base = 280 + 0.5 * (50 - lat)[:, None] + 3 * np.sin(np.radians(lon))[None, :]
    with netCDF4.Dataset(path, "w") as nc:
        for name, n in (("time", n_time), ("lat", SIDE), ("lon", SIDE)):
            nc.createDimension(name, n)
        nc.createVariable("time", "f8", ("time",))[:] = np.arange(n_time) * 6.0
        nc["time"].units = "hours since 2000-01-01"
        nc.createVariable("lat", "f8", ("lat",))[:] = lat
        nc.createVariable("lon", "f8", ("lon",))[:] = lon
        t2m = nc.createVariable("t2m", "f4", ("time", "lat", "lon"), chunksizes=CHUNKS)
        for start in range(0, n_time, CHUNKS[0]):
            stop = min(n_time, start + CHUNKS[0])
            season = 10 * np.sin(2 * np.pi * np.arange(start, stop) / 1460)[:, None, None]
            noise = rng.standard_normal((stop - start, SIDE, SIDE))
            t2m[start:stop] = (base + season + noise).astype(np.float32)


def peak_mib() -> float:
    """This process's peak resident set so far (MiB; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.5, help="file size (GiB)")
    parser.add_argument("--batches", type=int, default=20, help="batches drawn and timed")
    parser.add_argument("--steps", type=int, default=5, help="training steps timed")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--dir", default=None, help="where the file is written (default: tmp)")
    parser.add_argument("--out", default="results/data-sources")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    n_time = max(WINDOW["time"] * 10, round(args.gib * 2**30 / (4 * SIDE * SIDE)))
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = str(Path(tmp) / "t2m.nc")
        start = time.perf_counter()
        child = multiprocessing.get_context("spawn").Process(target=write_file, args=(path, n_time))
        child.start()
        child.join()
        if child.exitcode != 0:
            raise SystemExit(f"writing {path} failed (exit code {child.exitcode})")
        write_s = time.perf_counter() - start
        file_mib = os.path.getsize(path) / 2**20
        peaks = {"start": peak_mib()}
        start = time.perf_counter()
        sampler = build_sampler(
            "grid", args.batch_size, 0, path=path, y=["t2m"], window=WINDOW, load="lazy"
        )
        build_s = time.perf_counter() - start
        peaks["built"] = peak_mib()
        sample_times = []
        for step in range(args.batches):
            start = time.perf_counter()
            batch = batch_at(sampler, step)
            sample_times.append(time.perf_counter() - start)
        peaks["sampled"] = peak_mib()
        model = tnpx.build_model("tnp", sampler.dim_x, sampler.dim_y)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        step_times = []
        for step in range(args.steps + 1):  # the first is a warm-up
            batch = batch_at(sampler, args.batches + step)
            start = time.perf_counter()
            loss = model.training_loss(batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step_times.append(time.perf_counter() - start)
        peaks["trained"] = peak_mib()
        windows = len(sampler.windows("train"))
    sample_s = statistics.median(sample_times)
    step_s = statistics.median(step_times[1:]) if args.steps else float("nan")
    result = {
        "file_mib": file_mib,
        "shape": [n_time, SIDE, SIDE],
        "chunks": list(CHUNKS),
        "window": WINDOW,
        "batch_size": args.batch_size,
        "train_windows": windows,
        "write_s": write_s,
        "build_s": build_s,
        "sample_s": sample_s,
        "train_step_s": step_s,
        "peak_rss_mib": peaks,
        "load_average": os.getloadavg()[0],
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "grid-memory.json").write_text(json.dumps(result, indent=1) + "\n")
    text = report(result, args)
    (out / "grid-memory.md").write_text(text)
    print(text)
    return 0


def report(r: dict, args) -> str:
    peaks, file_mib = r["peak_rss_mib"], r["file_mib"]
    verdict = (
        "it never held the file"
        if peaks["trained"] < file_mib
        else "NOT below the file's size: at this size the check says nothing"
    )
    rows = "\n".join(
        f"| {stage} | {mib:,.0f} | {100 * mib / file_mib:.1f} % |"
        for stage, mib in (
            ("after imports, xarray included (the file: a child process)", peaks["start"]),
            ("after building the lazy sampler (one pass over the file)", peaks["built"]),
            (f"after drawing {args.batches} batches", peaks["sampled"]),
            (f"after {args.steps} training steps of the default `tnp`", peaks["trained"]),
        )
    )
    return f"""# The grid task source on a file larger than its memory

**What**: peak resident memory (MiB, `getrusage`) of one process that builds the `grid` source
lazily (`load: lazy`) on a float32 NetCDF of {file_mib:,.0f} MiB ({" × ".join(map(str, r["shape"]))}
time × lat × lon, chunks {" × ".join(map(str, r["chunks"]))}, uncompressed), draws batches of
{r["batch_size"]} windows of {" × ".join(f"{k} {v}" for k, v in r["window"].items())} points and
trains the default `tnp` on them; and the time per batch against a training step. Issue 35:
a gridded data set larger than the memory given to the process trains without loading it
whole.

**Command**: `{command_line()}`, commit `{git_commit()}`.

**Protocol**: not a paper experiment; a benchmark, not a timed test. The file is written first
by a child process (not counted, {r["write_s"]:.0f} s). Medians of {args.batches} batches and
{args.steps} steps (after one warm-up); one torch thread. {r["train_windows"]:,} training windows.

**Hardware**: {hardware()}; load average {r["load_average"]:.1f} at the end.

| stage | peak RSS (MiB) | share of the file |
| --- | ---: | ---: |
{rows}

| what | seconds |
| --- | ---: |
| build the lazy sampler (scan {file_mib:,.0f} MiB once) | {r["build_s"]:.1f} |
| draw one batch | {r["sample_s"]:.4f} |
| one training step of the default `tnp` | {r["train_step_s"]:.4f} |

**Reading**: the process peaked at {peaks["trained"]:,.0f} MiB against a {file_mib:,.0f} MiB file
({verdict});
a batch costs {100 * r["sample_s"] / r["train_step_s"]:.1f} % of a training step.
"""


if __name__ == "__main__":
    sys.exit(main())
