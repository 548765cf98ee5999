"""Where a training step's time goes, for each exact-protocol model: sampling the batch,
forward, backward, clipping + optimiser + schedule, the non-finite guard; plus validation
and logging amortised over their intervals; and an interleaved A/B of the trainer's
background prefetch (``train.prefetch``) against sampling each batch in turn.

    python -m benchmarks.train_profile                        # KR-1 exact models
    python -m benchmarks.train_profile --models tnp-d --steps 40

Writes ``results/perf/train_profile.md`` and ``.json``. Run on a quiet machine: timings of
different runs compare to no better than 10-50 % on these shared machines.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from benchmarks.harness import write_results
from tnpx.config import load_config
from tnpx.data import batch_at
from tnpx.models import build_model
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.training import (
    BatchStream,
    all_finite,
    build_optimizer,
    build_schedule,
    build_train_sampler,
    clip_gradients,
    parameter_groups,
    validation_ll,
)

PHASES = ("sample", "forward", "backward", "clip + optimiser", "guard")


def setup(config: str, model: str):
    cfg = load_config(config, [f"model.name={model}"])
    torch.manual_seed(0)
    net = build_model(cfg.model["name"], 1, 1, **cfg.model_options())
    named = list(net.named_parameters())
    opt = build_optimizer(parameter_groups(named, cfg.optim), cfg.optim)
    return cfg, net, named, opt, build_schedule(opt, cfg.schedule, cfg.train.steps)


def phase_split(config: str, model: str, steps: int) -> tuple[dict, dict]:
    """Median ms per phase of a step (after 5 warm-up steps), and the amortised ms per step of
    validation and logging at the config's intervals."""
    cfg, net, named, opt, schedule = setup(config, model)
    params = [p for _, p in named]
    sampler = build_train_sampler(cfg)
    net.train()
    times = {k: [] for k in PHASES}
    for step in range(steps + 5):
        t = [time.perf_counter()]
        batch = batch_at(sampler, step)
        t.append(time.perf_counter())
        loss = net.training_loss(batch)
        t.append(time.perf_counter())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t.append(time.perf_counter())
        clip_gradients(params, cfg.train.clip_value, cfg.train.clip_norm)
        opt.step()
        schedule.step()
        t.append(time.perf_counter())
        all_finite(loss, params)
        loss.item()
        t.append(time.perf_counter())
        if step >= 5:
            for k, a, b in zip(PHASES, t, t[1:]):
                times[k].append(1e3 * (b - a))
    start = time.perf_counter()
    validation_ll(net, sampler, cfg.train.val_batches, torch.device("cpu"))
    val_ms = 1e3 * (time.perf_counter() - start)
    amortised = {
        "validation (amortised)": val_ms / cfg.train.val_every,
        "logging (amortised, < 1 ms a row)": 1.0 / cfg.train.log_every,
    }
    return {k: statistics.median(v) for k, v in times.items()}, amortised


def prefetch_ab(config: str, model: str, steps: int, rounds: int) -> dict[str, float]:
    """Median ms per training step with and without prefetch, alternating blocks of
    ``steps`` steps for ``rounds`` rounds in one process."""
    cfg, net, named, opt, schedule = setup(config, model)
    params = [p for _, p in named]
    sampler = build_train_sampler(cfg)
    net.train()
    per = {True: [], False: []}
    step = 0
    for _ in range(rounds):
        for prefetch in (False, True):
            with BatchStream(sampler, 0, prefetch) as batches:
                for _ in range(steps):
                    t0 = time.perf_counter()
                    loss = net.training_loss(batches.get(step))
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    clip_gradients(params, cfg.train.clip_value, cfg.train.clip_norm)
                    opt.step()
                    schedule.step()
                    all_finite(loss, params)
                    per[prefetch].append(1e3 * (time.perf_counter() - t0))
                    step += 1
    return {"off": statistics.median(per[False]), "on": statistics.median(per[True])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/kr1-rbf.yaml")
    parser.add_argument("--models", nargs="*", default=["tnp-d", "tnp-kr-full", "cnp"])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="results/perf")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    commit = git_commit()
    rows = {}
    for model in args.models:
        split, amortised = phase_split(args.config, model, args.steps)
        ab = prefetch_ab(args.config, model, args.steps // 2, args.rounds)
        rows[model] = {"phases": split, "amortised": amortised, "prefetch": ab}
        print(model, {k: round(v, 1) for k, v in {**split, **amortised}.items()}, ab, flush=True)
    written = write_results(Path(args.out) / "train_profile", rows, report(rows, args, commit))
    print(f"wrote {written}")


def report(rows: dict, args, commit: str) -> str:
    head = "| model | " + " | ".join(PHASES) + " | validation | step (sum) | sampling share |"
    lines = [head, "|" + " --- |" * (len(PHASES) + 4)]
    for model, r in rows.items():
        p, val = r["phases"], r["amortised"]["validation (amortised)"]
        total = sum(p.values()) + val
        cells = " | ".join(f"{p[k]:.1f}" for k in PHASES)
        lines.append(
            f"| {model} | {cells} | {val:.2f} | {total:.1f} | {100 * p['sample'] / total:.0f}% |"
        )
    ab = [
        "| model | prefetch off (ms/step) | prefetch on | on / off |",
        "| --- | ---: | ---: | ---: |",
    ]
    for model, r in rows.items():
        off, on = r["prefetch"]["off"], r["prefetch"]["on"]
        ab.append(f"| {model} | {off:.1f} | {on:.1f} | {on / off:.2f} |")
    ratios = [r["prefetch"]["on"] / r["prefetch"]["off"] for r in rows.values()]
    verdict = (
        "Prefetching paid here (every ratio < 1): the sampler ran beside the step on a free core."
        if max(ratios) < 1
        else "Prefetching did not pay in this run (ratios "
        + ", ".join(f"{x:.2f}" for x in ratios)
        + "): the worker thread competes with the step for the same two cores (and with "
        "whatever else runs beside it), so `train.prefetch` is off by default; it can pay "
        "where a core is idle."
    )
    return f"""# Where a training step's time goes (issue 20, item 0)

**What**: median milliseconds per phase of one training step of each exact-protocol model
(`{args.config}`: batch 32, the models at their `kr-code` presets), after 5 warm-up steps,
{args.steps} steps; validation ({load_config(args.config).train.val_batches} held-out batches)
amortised over its interval; logging writes one CSV row every
{load_config(args.config).train.log_every} steps (well under 1 ms each, so < 0.01 ms a step).
Then an A/B of the trainer's background prefetch (the next step's batch sampled in a worker
thread, `train.prefetch`, bit-identical weights): blocks of {args.steps // 2} steps alternating
off / on, {args.rounds} rounds, in one process.

**Command**: `{command_line()}`, commit `{commit}`.

**Protocol or budget**: a micro-benchmark, not a PROTOCOLS.md experiment.

**Hardware**: {hardware()}; torch threads {args.threads}. Timings on these shared machines move
10–50 % between machines and runs: compare within this file only.

## Phase split (ms)

{chr(10).join(lines)}

## Prefetch A/B (ms per step)

{chr(10).join(ab)}

**Reading**: everything but the model's own arithmetic (forward, backward, the optimiser) is
the task sampler (a float64 Cholesky of each task's 150 × 150 kernel matrix) plus a guard,
validation and logging of under 1 % together. {verdict}
"""


if __name__ == "__main__":
    main()
