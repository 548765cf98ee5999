"""Seconds per batch of the GP task samplers, with the former ``[b, n, m, d]`` kernel path
against the current one (one dimension at a time, :mod:`tnpx.gp.kernels`), interleaved.

Samplers (each config's ``data`` section and batch size): ``gp`` (KR-1, configs/kr1-rbf.yaml),
``gp-composite`` v2 and v3 (configs/pretrained-gp1d-v2-tnp.yaml, -v3-tnp.yaml) and
``gp2d-composite`` (configs/pretrained-gp2d-te-tnp-rope.yaml). For each step ``s`` of
``--steps``, the batch of step ``s`` is drawn with the old path and then with the new one (so
load on the machine hits both alike); the table gives the median per path and their ratio.
:func:`old_kernels` (a context manager) is also what the tests compare the new path with.

    python -m benchmarks.gp_sampling [--steps 5] [--out results/perf/gp_sampling]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import torch

import tnpx.gp.kernels as kernels_module
from benchmarks.harness import write_results
from tnpx.config import load_config
from tnpx.data import batch_at, build_sampler
from tnpx.provenance import command_line, git_commit, hardware

CONFIGS = {
    "gp (KR-1 rbf)": "configs/kr1-rbf.yaml",
    "gp-composite v2": "configs/pretrained-gp1d-v2-tnp.yaml",
    "gp-composite v3": "configs/pretrained-gp1d-v3-tnp.yaml",
    "gp2d-composite": "configs/pretrained-gp2d-te-tnp-rope.yaml",
}


def old_kernel_matrix(name, x1, x2, lengthscale, period=None, variance=None, envelope=None):
    """:func:`tnpx.gp.kernels.kernel_matrix` as it was: differences held as ``[b, n, m, d]``."""
    name = kernels_module.canonical_kernel(name, kernels_module.ALL_KERNELS)

    def sq_distance(ls: torch.Tensor) -> torch.Tensor:
        diff = (x1[:, :, None, :] - x2[:, None, :, :]) / ls.view(-1, 1, 1, 1)
        return diff.pow(2).sum(-1)

    if name in kernels_module.TREND_KERNELS:
        ls2 = lengthscale.view(-1, 1, 1).pow(2)
        degree = kernels_module.TREND_KERNELS.index(name) + 1
        k = (0.5 * (1.0 + x1 @ x2.transpose(1, 2) / ls2)).pow(degree)
    elif name == "periodic":
        diff = (x1[:, :, None, :] - x2[:, None, :, :]).abs()
        s = torch.sin(math.pi * diff / period.view(-1, 1, 1, 1)).pow(2).sum(-1)
        k = torch.exp(-2.0 * s / lengthscale.view(-1, 1, 1).pow(2))
    elif name == "rbf":
        k = torch.exp(-0.5 * sq_distance(lengthscale))
    else:
        r = kernels_module._safe_sqrt(sq_distance(lengthscale))
        if name == "matern12":
            k = torch.exp(-r)
        elif name == "matern32":
            s = math.sqrt(3.0) * r
            k = (1.0 + s) * torch.exp(-s)
        else:
            s = math.sqrt(5.0) * r
            k = (1.0 + s + s.pow(2) / 3.0) * torch.exp(-s)
    if envelope is not None:
        k = k * torch.exp(-0.5 * sq_distance(envelope))
    if variance is not None:
        k = k * variance.view(-1, 1, 1)
    return k


@contextlib.contextmanager
def old_kernels() -> Iterator[None]:
    """Within the block, every sampler and kernel sum uses :func:`old_kernel_matrix`."""
    current = kernels_module.kernel_matrix
    kernels_module.kernel_matrix = old_kernel_matrix
    try:
        yield
    finally:
        kernels_module.kernel_matrix = current


def sampler_of(config: str):
    """The sampler of a config's ``data`` section, at its training batch size."""
    cfg = load_config(config)
    return build_sampler(cfg.data["name"], cfg.data.get("batch_size", 16), **cfg.data_options())


def measure(config: str, steps: int) -> dict:
    """Seconds per batch of each path (per step, interleaved) and the largest difference."""
    sampler = sampler_of(config)
    times: dict[str, list[float]] = {"old": [], "new": []}
    gap = 0.0
    for step in range(steps):
        batches = {}
        for path in ("old", "new"):
            with old_kernels() if path == "old" else contextlib.nullcontext():
                start = time.perf_counter()
                batches[path] = batch_at(sampler, step)
                times[path].append(time.perf_counter() - start)
        old, new = batches["old"], batches["new"]
        gap = max(gap, (old.yt - new.yt).abs().max().item(), (old.yc - new.yc).abs().max().item())
    return {
        "config": config,
        "batch_size": sampler.batch_size,
        "old_s": statistics.median(times["old"]),
        "new_s": statistics.median(times["new"]),
        "max_abs_difference": gap,
        "times": times,
    }


def report(rows: dict[str, dict], steps: int, began: str, ended: str) -> str:
    lines = [
        "| sampler | config | batch | old s/batch | new s/batch | old / new | max abs diff |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | `{r['config']}` | {r['batch_size']} | {r['old_s']:.3f} | "
            f"{r['new_s']:.3f} | {r['old_s'] / r['new_s']:.2f} | {r['max_abs_difference']:.1e} |"
        )
    table = "\n".join(lines)
    return f"""# GP task sampling: seconds per batch, old vs new kernel distances

**What**: wall time of drawing one training batch (`batch_at(sampler, step)`) of each GP
prior, with the former kernel path (differences held as `[batch, n, m, dim_x]`) and the
current one (one input dimension at a time, `[batch, n, m]`), interleaved step by step; the
median over {steps} steps. "max abs diff" is the largest difference of the batches' outputs
between the two paths (0: bit-identical). See `benchmarks/gp_sampling.py`.

**Command**: `{command_line()}`

Run {began} to {ended} UTC on {hardware()}, commit `{git_commit()}`. The same steps' batches
for both paths, so each row's ratio compares like with like (the number of points varies by
step, most in the v3 and 2D priors).

{table}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--samplers", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--out", default="results/perf/gp_sampling")
    args = parser.parse_args()
    torch.set_num_threads(1)
    began = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    rows = {}
    for name in args.samplers:
        rows[name] = measure(CONFIGS[name], args.steps)
        print(name, {k: v for k, v in rows[name].items() if k != "times"}, flush=True)
    ended = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    print(write_results(Path(args.out), rows, report(rows, args.steps, began, ended)))


if __name__ == "__main__":
    main()
