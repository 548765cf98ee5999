"""The kr-code ConvCNP's training step, fused per-channel read-out against the einsum.

KR-1 sizes (``configs/kr1-rbf.yaml``: batches of 32 tasks, 3-49 context points, 150 targets,
a fixed grid of 320 points, 128 channels): seconds per forward + backward of
``build_model("convcnp", 1, 1, preset="kr-code")`` with ``readout.fused`` on and off, and the
peak resident memory of each. Each measurement runs in its own subprocess (so ``ru_maxrss``
is that variant's peak), the variants alternating over rounds so that load on a shared
machine falls on both. Writes ``README.md`` and ``results.json`` to ``--out``.

    python -m benchmarks.setconv_speed [--steps 3] [--rounds 3] [--out results/setconv-speed]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.models import build_model
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.training import build_train_sampler

CONFIG = "configs/kr1-rbf.yaml"
VARIANTS = ("fused", "einsum")


def worker(variant: str, steps: int, threads: int) -> dict:
    """Wall and CPU (this process's) seconds per forward + backward for ``steps`` KR-1 batches
    (after one warm-up step) and the process's peak resident memory in MiB. CPU time is the
    steadier of the two on a shared machine."""
    torch.set_num_threads(threads)
    cfg = load_config(CONFIG, ["model.name=convcnp"])
    torch.manual_seed(0)
    model = build_model("convcnp", 1, 1, **cfg.model_options()).train()
    model.readout.fused = variant == "fused"
    sampler = build_train_sampler(cfg)
    wall, cpu = [], []
    for step in range(steps + 1):
        batch = batch_at(sampler, step)
        start, start_cpu = time.perf_counter(), time.process_time()
        model.training_loss(batch).backward()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        model.zero_grad(set_to_none=True)
    shape = dict(batch=batch.xc.shape[0], n_tgt=batch.xt.shape[1], n_ctx="3-49")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"step_s": wall[1:], "cpu_s": cpu[1:], "peak_rss_mib": peak, "shape": shape}


def run_variant(variant: str, steps: int, threads: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", variant, "--steps", str(steps)]
    cmd += ["--threads", str(threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarise(runs: dict[str, list[dict]]) -> dict:
    rows = {}
    for variant, results in runs.items():
        times = [t for r in results for t in r["step_s"]]
        cpu = [t for r in results for t in r["cpu_s"]]
        rows[variant] = {
            "median_step_s": statistics.median(times),
            "min_step_s": min(times),
            "median_cpu_s": statistics.median(cpu),
            "peak_rss_mib": max(r["peak_rss_mib"] for r in results),
            "steps": len(times),
        }
    rows["speedup"] = rows["einsum"]["median_step_s"] / rows["fused"]["median_step_s"]
    rows["cpu_speedup"] = rows["einsum"]["median_cpu_s"] / rows["fused"]["median_cpu_s"]
    return rows


def report(rows: dict, shape: dict, args, commit: str) -> str:
    lines = [
        "# Fused per-channel set-conv read-out: kr-code ConvCNP training step",
        "",
        "**What**: seconds per forward + backward of `build_model('convcnp', 1, 1, "
        "preset='kr-code')` (training mode, NLL loss) on KR-1 batches "
        f"({CONFIG}: {shape}), read-out fused (`tnpx.nn.setconv_channels`) against the "
        "einsum over `[batch, n, G, C]` weights; peak resident memory of the process (lower "
        "is better for both).",
        "",
        f"**Command**: `{command_line()}` at commit {commit}.",
        "",
        f"**Hardware**: {hardware()}; {args.threads} thread(s); each variant in its own "
        f"process, variants alternating over {args.rounds} rounds of {args.steps} steps "
        "(after a warm-up step).",
        "",
        "| read-out | median s / step | min s / step | median CPU s / step | peak RSS MiB |",
        "| --- | --- | --- | --- | --- |",
    ]
    for variant in VARIANTS:
        r = rows[variant]
        lines.append(
            f"| {variant} | {r['median_step_s']:.2f} | {r['min_step_s']:.2f} | "
            f"{r['median_cpu_s']:.2f} | {r['peak_rss_mib']:.0f} |"
        )
    lines += [
        "",
        f"**Reading**: with the fused read-out the step is {rows['speedup']:.1f}x faster in wall "
        f"time ({rows['cpu_speedup']:.1f}x in CPU time; medians) and the process peaks "
        f"{rows['einsum']['peak_rss_mib'] / rows['fused']['peak_rss_mib']:.1f}x lower. "
        "The two variants alternate in one run, so load on the machine falls on both; compare "
        "them only within a run (machines here differ by 10-50 %).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="results/setconv-speed")
    parser.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.steps, args.threads)))
        return
    commit = git_commit()
    runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    for i in range(args.rounds):
        for variant in VARIANTS if i % 2 == 0 else VARIANTS[::-1]:
            runs[variant].append(run_variant(variant, args.steps, args.threads))
            r = runs[variant][-1]
            times = ", ".join(f"{t:.2f}" for t in r["step_s"])
            cpu = ", ".join(f"{t:.2f}" for t in r["cpu_s"])
            print(
                f"round {i} {variant}: s/step {times} (CPU {cpu}); peak {r['peak_rss_mib']:.0f} MiB"
            )
    rows = summarise(runs)
    shape = runs["fused"][0]["shape"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"rows": rows, "runs": runs}, indent=2))
    (out / "README.md").write_text(report(rows, shape, args, commit))
    print(f"speedup {rows['speedup']:.1f}x; wrote {out / 'README.md'}")


if __name__ == "__main__":
    main()
