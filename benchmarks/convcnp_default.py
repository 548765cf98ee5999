"""A default ``convcnp`` forward in 1D and 2D (issue 36, item 8: a default 2D ConvCNP took 37 s
for 5 context and 4 target points before ``points_per_unit`` defaulted by dimension; the goal is
a small forward under about a second). Batch 1, no gradients, one torch thread; each case in a
fresh model built with ``tnpx.build_model('convcnp', dim_x, 1)`` at its defaults, inputs uniform
on [-2, 2]^dim_x; the median of ``--repeats`` calls after one warm-up call.

    python -m benchmarks.convcnp_default     # writes results/perf/convcnp_default.md and .json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

import tnpx
from benchmarks.harness import median_seconds, write_results
from tnpx.provenance import command_line, git_commit, hardware

CASES = ((1, 5, 4), (2, 5, 4), (2, 50, 100))  # (dim_x, context points, target points)


def forward_seconds(dim_x: int, n_ctx: int, n_tgt: int, repeats: int) -> dict:
    """The median forward time of a default ``convcnp`` and its grid size."""
    torch.manual_seed(0)
    model = tnpx.build_model("convcnp", dim_x, 1).eval()
    xc, yc = torch.rand(1, n_ctx, dim_x) * 4 - 2, torch.randn(1, n_ctx, 1)
    xt = torch.rand(1, n_tgt, dim_x) * 4 - 2
    with torch.no_grad():
        model(xc, yc, xt)  # warm-up
        seconds, _ = median_seconds(lambda: model(xc, yc, xt), repeats)
    return {"dim_x": dim_x, "n_ctx": n_ctx, "n_tgt": n_tgt, "seconds": seconds,
            "points_per_unit": model.hyper.points_per_unit}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="results/perf")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = [forward_seconds(*case, args.repeats) for case in CASES]
    for r in rows:
        print(f"dim_x={r['dim_x']} {r['n_ctx']:>3} ctx {r['n_tgt']:>3} tgt: {r['seconds']:.3f} s")
    table = ["| dim_x | points_per_unit | context | targets | s per forward (median) |",
             "| ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    table += [
        f"| {r['dim_x']} | {r['points_per_unit']} | {r['n_ctx']} | {r['n_tgt']} "
        f"| {r['seconds']:.3f} |"
        for r in rows
    ]
    small = next(r for r in rows if r["dim_x"] == 2 and r["n_ctx"] == 5)
    verdict = "under" if small["seconds"] < 1.0 else "over"
    text = f"""# A default `convcnp` forward in 1D and 2D

**What**: wall time of one forward (batch 1, no gradients) of `convcnp` at its default options,
median of {args.repeats} calls after a warm-up, inputs uniform on [-2, 2]^dim_x.

**Command**: `{command_line()}`, commit `{git_commit()}`.

**Protocol or budget**: a micro-benchmark (issue 36, item 8: a small 2D forward under about a
second; before the per-dimension default it took 37 s). No paper number applies: the papers'
2D ConvCNPs run on image pixels, not on an off-grid set.

**Hardware**: {hardware()}; torch threads 1; nothing else running.

{chr(10).join(table)}

**Reading**: a default 2D forward of 5 context and 4 target points takes
{small["seconds"]:.2f} s, {verdict} a second. Its cost is the UNet on the grid that covers the
points (`points_per_unit` {small["points_per_unit"]:g} in 2D, a margin around them), so it grows
with the box the points span, not with their number: 50 context and 100 target points spread
over [-2, 2]^2 make a larger grid than 9 points do (the last row).
"""
    print(f"wrote {write_results(Path(args.out) / 'convcnp_default', rows, text)}")


if __name__ == "__main__":
    main()
