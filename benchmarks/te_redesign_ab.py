"""TE attention before and after a change, interleaved in one run (issue 36, item 8): ``te-tnp``
at a preset (default ``released-code``) from two source trees, each measurement in its own
fresh process, the two trees alternating (ABBA order per round).

Measured per process: one forward without gradients at ``N_c = N_t = N`` (batch 1), and at
batch 16 (32 context, 128 targets) the median of a few training steps (forward, Gaussian NLL,
backward, AdamW) and of a few forwards without gradients. Beside each time: the minor page
faults of the call (first touches of new memory, which do not depend on the machine's load)
and, where both trees build the same parameters, the largest difference of their predicted
means (the same weights from the same seed: the same function gives ~0).

    git worktree add --detach /tmp/old-4cdcf18 4cdcf18     # a tree of the old revision
    python -m benchmarks.te_redesign_ab --ref-src /tmp/old-4cdcf18/src
    # writes results/perf/te_redesign_ab.md and .json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

import tnpx

HERE_SRC = Path(__file__).resolve().parents[1] / "src"
TRAIN_BATCH, TRAIN_CTX, TRAIN_TGT = 16, 32, 128


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def tasks(batch: int, n_ctx: int, n_tgt: int, seed: int = 0):
    """``xc [batch, n_ctx, 1]``, ``yc``, ``xt [batch, n_tgt, 1]``, ``yt``: sines at random x."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(batch, n_ctx + n_tgt, 1, generator=g) * 4 - 2
    y = torch.sin(3 * x) + 0.1 * torch.randn(x.shape, generator=g)
    return x[:, :n_ctx], y[:, :n_ctx], x[:, n_ctx:], y[:, n_ctx:]


def timed(fn) -> tuple[float, int]:
    """Seconds and minor page faults of one call of ``fn``."""
    faults, start = minor_faults(), time.perf_counter()
    fn()
    return time.perf_counter() - start, minor_faults() - faults


def worker(n: int, preset: str | None, steps: int) -> dict:
    """One tree's numbers (this process imports that tree's tnpx)."""
    torch.manual_seed(0)
    options = {"preset": preset} if preset else {}
    model = tnpx.build_model("te-tnp", dim_x=1, dim_y=1, **options)
    out: dict = {"params": sum(p.numel() for p in model.parameters())}
    out["names"] = sorted(name for name, _ in model.named_parameters())
    xc, yc, xt, _ = tasks(1, n, n, seed=1)
    with torch.no_grad():
        model(*tasks(1, 50, 50)[:3])  # warm-up
        pred = {}
        seconds, faults = timed(lambda: pred.setdefault("p", model(xc, yc, xt)))
    out["forward"] = {"s": seconds, "faults": faults, "mean": pred["p"].mean.flatten().tolist()}
    xc, yc, xt, yt = tasks(TRAIN_BATCH, TRAIN_CTX, TRAIN_TGT, seed=2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        loss = -model(xc, yc, xt).log_prob(yt).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    def forward():
        with torch.no_grad():
            model(xc, yc, xt)

    for name, fn in (("train", step), ("forward16", forward)):
        fn()  # warm-up
        runs = [timed(fn) for _ in range(steps)]
        out[name] = {
            "s": statistics.median(s for s, _ in runs),
            "faults": statistics.median(f for _, f in runs),
        }
    return out


def run_tree(src: str, args: argparse.Namespace) -> dict:
    """:func:`worker` in a fresh process whose ``tnpx`` is the one under ``src``."""
    env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": str(args.threads)}
    command = [sys.executable, "-m", "benchmarks.te_redesign_ab", "--worker"]
    command += ["--n", str(args.n), "--steps", str(args.steps), "--threads", str(args.threads)]
    command += ["--preset", args.preset]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the worker for {src} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def tree_commit(src: str) -> str:
    """Short commit of the git tree that holds ``src`` (``+dirty`` when it has changes)."""
    git = ["git", "-C", src]
    rev = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no", "--", "."],
                           capture_output=True, text=True)  # fmt: skip
    return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def summarise(runs: dict[str, list[dict]]) -> list[dict]:
    """Per measurement: each tree's median seconds and page faults, and their ratio."""
    rows = []
    for key in ("forward", "forward16", "train"):
        row = {"what": key}
        for tree, results in runs.items():
            row[f"{tree}_s"] = statistics.median(r[key]["s"] for r in results)
            row[f"{tree}_faults"] = statistics.median(r[key]["faults"] for r in results)
        row["ratio"] = row["new_s"] / row["ref_s"]
        rows.append(row)
    return rows


def prediction_gap(runs: dict[str, list[dict]]) -> float | None:
    """Largest |difference| of the two trees' predicted means at N (None: other parameters)."""
    ref, new = runs["ref"][0], runs["new"][0]
    if ref["names"] != new["names"] or ref["params"] != new["params"]:
        return None
    pairs = zip(ref["forward"]["mean"], new["forward"]["mean"], strict=True)
    return max(abs(a - b) for a, b in pairs)


def report(args, rows: list[dict], gap: float | None, commits: dict[str, str]) -> str:
    from tnpx.provenance import command_line, hardware

    points = f"batch {TRAIN_BATCH}, {TRAIN_CTX} + {TRAIN_TGT} points"
    label = {"forward": f"forward, batch 1, N_c = N_t = {args.n:,}",
             "forward16": f"forward, {points}", "train": f"training step, {points}"}  # fmt: skip
    table = ["| measurement | ref: s | new: s | new / ref | ref: page faults | new: page faults |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    table += [
        f"| {label[r['what']]} | {r['ref_s']:.3f} | {r['new_s']:.3f} | {r['ratio']:.2f} "
        f"| {r['ref_faults']:,.0f} | {r['new_faults']:,.0f} |"
        for r in rows
    ]
    same = "not compared (the trees build different parameters)" if gap is None else f"{gap:.2e}"
    forward = rows[0]
    return f"""# TE attention before and after, interleaved

**What**: wall time (s, lower is better) of `te-tnp` (preset `{args.preset}`) from two source
trees: "ref" = `{args.ref_src}` at `{commits["ref"]}`, "new" = `{args.new_src}` at
`{commits["new"]}`. Each measurement runs in a fresh process, the trees alternating (ABBA) over
{args.rounds} rounds; the table gives the median over rounds of: one forward without gradients,
and the median of {args.steps} calls for the batch-{TRAIN_BATCH} rows. Page faults are the
minor faults of one call (first touches of new memory; they do not depend on the load).

**Command**: `{command_line()}`.

**Protocol or budget**: a micro-benchmark (issue 36, item 8), not a paper table.

**Hardware**: {hardware()}.

{chr(10).join(table)}

Largest difference of the two trees' predicted means at N = {args.n:,} (same seed): {same}.

**Reading**: the new tree's forward at N = {args.n:,} takes {forward["ratio"]:.2f}x the
reference's time with {forward["new_faults"] / max(forward["ref_faults"], 1):.2f}x its page
faults. Times on a shared machine move between runs; compare the two trees within this run only.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref-src", help="the reference (old) revision's src folder")
    parser.add_argument("--new-src", default=str(HERE_SRC), help="default: this tree's src")
    parser.add_argument("--n", type=int, default=1000, help="N_c = N_t of the batch-1 forward")
    parser.add_argument("--preset", default="released-code", help="'' for the defaults")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=5, help="calls per batch-16 measurement")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="results/perf")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.worker:
        print(json.dumps(worker(args.n, args.preset or None, args.steps)))
        return
    if not args.ref_src or not Path(args.ref_src, "tnpx").is_dir():
        parser.error("--ref-src must name a src folder that holds tnpx")
    trees = {"ref": args.ref_src, "new": args.new_src}
    runs: dict[str, list[dict]] = {"ref": [], "new": []}
    for round_ in range(args.rounds):
        order = ("ref", "new") if round_ % 2 == 0 else ("new", "ref")
        for tree in order:
            runs[tree].append(run_tree(trees[tree], args))
            print(f"round {round_ + 1} {tree}: forward {runs[tree][-1]['forward']['s']:.2f} s")
    rows = summarise(runs)
    gap = prediction_gap(runs)
    commits = {tree: tree_commit(src) for tree, src in trees.items()}
    for r in rows:
        print(f"{r['what']:10s} ref {r['ref_s']:.3f} s new {r['new_s']:.3f} s {r['ratio']:.2f}x "
              f"faults {r['ref_faults']:,.0f} -> {r['new_faults']:,.0f}")  # fmt: skip
    data = {"commits": commits, "preset": args.preset, "n": args.n, "rows": rows, "gap": gap,
            "runs": {t: [{k: v for k, v in r.items() if k != "names"} | {"forward": {
                k: v for k, v in r["forward"].items() if k != "mean"}} for r in rs]
                     for t, rs in runs.items()}}  # fmt: skip
    from benchmarks.harness import write_results

    path = write_results(Path(args.out) / "te_redesign_ab", data, report(args, rows, gap, commits))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
