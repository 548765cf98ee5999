"""Where the resident memory of a long streamed prediction goes (issue 21): peak RSS growth of
``model.predict_streamed`` over repeated calls, per model, under three allocator settings.

    python -m benchmarks.streamed_memory       # writes results/perf/streamed_memory.md
    python -m benchmarks.streamed_memory --n-targets 1000000 --repeats 4

Each (model, allocator) point runs in a fresh process (torch threads ``--threads``): the
context (100 points) is encoded once and ``--n-targets`` targets are decoded in chunks of
16,384, ``--repeats`` times; the growth of the peak resident set above its level before the
first call is reported after each call. Allocator settings:

- ``glibc``: the defaults. glibc raises its mmap threshold after freeing a large block, so
  later blocks of that size come from the heap, and freed heap memory stays resident.
- ``trim``: ``malloc_trim(0)`` after every chunk, which hands free heap pages back.
- ``mmap``: ``MALLOC_MMAP_THRESHOLD_=131072`` fixes the threshold, so every block over 128 KiB
  is mapped and unmapped on its own and the resident set follows the live tensors.

The ``mmap`` column is what the prediction itself holds; the others add the allocator's cache.
Memory only: times are printed but are not a benchmark (the mmap setting makes each large
allocation a system call).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from tnpx.provenance import command_line, git_commit, hardware

MODELS = ("tnp-kr-full", "te-tnp-rope")
ALLOCATORS = {"glibc": {}, "trim": {}, "mmap": {"MALLOC_MMAP_THRESHOLD_": "131072"}}
# results/scaling's KR-5 sizes (dim_model 64, 6 layers of 4 heads of 16)
OPTIONS = {"dim_model": 64, "n_layers": 6, "n_heads": 4, "dim_head": 16, "dim_ff": 128}
CHUNK = 16384


def child(model: str, allocator: str, n_targets: int, repeats: int, threads: int) -> None:
    """One point, in this process: print one JSON line with the growth after each call."""
    import ctypes
    import resource
    import time

    import torch

    import tnpx

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    net = tnpx.build_model(model, 1, 1, **OPTIONS).eval()
    xc, yc = torch.rand(1, 100, 1) * 4 - 2, torch.randn(1, 100, 1)
    xt = torch.rand(1, n_targets, 1) * 4 - 2
    if allocator == "trim":
        libc = ctypes.CDLL("libc.so.6")
        decode = net.decode_targets

        def decode_and_trim(context, part):
            out = decode(context, part)
            libc.malloc_trim(0)
            return out

        net.decode_targets = decode_and_trim

    def peak_mb() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    start, growth, began = peak_mb(), [], time.perf_counter()
    with torch.no_grad():
        for _ in range(repeats):
            net.predict_streamed(xc, yc, xt, chunk_size=CHUNK)
            growth.append(peak_mb() - start)
    print(json.dumps({"growth_mb": growth, "seconds": time.perf_counter() - began}))


def measure(model: str, allocator: str, args) -> dict:
    env = {**os.environ, **ALLOCATORS[allocator]}
    cmd = [sys.executable, __file__, "--child", model, allocator]
    cmd += ["--n-targets", str(args.n_targets), "--repeats", str(args.repeats)]
    cmd += ["--threads", str(args.threads)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def reading(last: dict) -> str:
    """What the last call's growth says, from the numbers (``last[model, allocator]``)."""
    live = [last[m, "mmap"] for m in MODELS]
    spread = (max(live) - min(live)) / max(max(live), 1e-9)
    same = "about the same" if spread < 0.1 else f"different amounts ({spread:.0%} apart)"
    excess = ", ".join(
        f"{m} {last[m, 'glibc'] - last[m, 'mmap']:+.0f} MB (trim: "
        f"{last[m, 'trim'] - last[m, 'mmap']:+.0f} MB)"
        for m in MODELS
    )
    return (
        f"with a fixed mmap threshold, where the resident set follows the live tensors, the two "
        f"models hold {same}: {' and '.join(f'{v:.0f}' for v in live)} MB after the last call, "
        "one chunk's activations and the outputs. Under glibc's defaults the resident set "
        f"exceeds that by: {excess}. That excess is memory the allocator keeps after tensors "
        "are freed; it changes from run to run (with the sizes, the threads and what ran "
        "before), and `malloc_trim` after each chunk does not reliably reduce it. So a single "
        "peak-RSS figure of a long streamed prediction (e.g. 393 MB for `te-tnp-rope` against "
        "55 MB for `tnp-kr-full` at 10⁶ targets in `results/scaling-rope-ab`) measures the "
        "allocator's state in that process, not the model. Where resident memory matters, run "
        "long predictions with `MALLOC_MMAP_THRESHOLD_` set or under jemalloc/tcmalloc "
        "(`LD_PRELOAD`)."
    )


def report(points: dict, args, commit: str) -> str:
    header = "| model | " + " | ".join(f"`{a}`: growth per call (MB)" for a in ALLOCATORS) + " |"
    lines = [header, "| --- |" + " --- |" * len(ALLOCATORS)]
    for model in MODELS:
        cells = [" → ".join(f"{g:.0f}" for g in points[model, a]["growth_mb"]) for a in ALLOCATORS]
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    last = {(m, a): points[m, a]["growth_mb"][-1] for m in MODELS for a in ALLOCATORS}
    return f"""# Resident memory of long streamed predictions

**What**: growth of the peak resident set (MB) of `predict_streamed` with 100 context points
and {args.n_targets:,} targets in chunks of {CHUNK:,}, after each of {args.repeats} calls in one
process, for `tnp-kr-full` and `te-tnp-rope` at the KR-5 sizes (`{OPTIONS}`), under three
allocator settings (see `benchmarks/streamed_memory.py`): glibc's defaults, `malloc_trim(0)`
after every chunk, and a fixed mmap threshold (`MALLOC_MMAP_THRESHOLD_=131072`), under which
the resident set follows the live tensors.

**Command**: `{command_line()}`, commit `{commit}`.

**Hardware**: {hardware()}. Memory only; other processes ran beside it (they change
no allocation of this one).

{table}

**Reading**: {reading(last)}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-targets", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="results/perf/streamed_memory.md")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "ALLOCATOR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.n_targets, args.repeats, args.threads)
        return
    import torch

    torch.set_num_threads(args.threads)  # as the children, for the hardware line
    commit = git_commit()
    points = {}
    for model in MODELS:
        for allocator in ALLOCATORS:
            points[model, allocator] = measure(model, allocator, args)
            growth = ", ".join(f"{g:.0f}" for g in points[model, allocator]["growth_mb"])
            print(f"{model:12s} {allocator:6s} growth per call (MB): {growth}", flush=True)
    Path(args.out).write_text(report(points, args, commit))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
