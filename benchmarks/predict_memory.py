"""Peak memory and time of `tnpx predict` on large target files: streamed (the default,
16,384 targets per chunk) against one shot (`--chunk-size` = all targets).

Writes a context of 50 points and target files of 10^4 ... 10^6 rows, runs the command in a
subprocess per size and mode, and records the child's peak resident memory (getrusage) and
wall time. Results: ``results/perf/predict_memory.md`` and ``.json``.

    python -m benchmarks.predict_memory [--model gp1d-tnp] [--sizes 10000 100000 1000000]
        [--modes streamed one-shot] [--repeats 1]

Run it with nothing else heavy on the machine: the peak of one run varies with the allocator.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import write_results
from tnpx.provenance import command_line, git_commit, hardware

MODES = {"streamed": "the default chunks", "one-shot": "--chunk-size N"}

PEAK_SCRIPT = """
import resource, runpy, sys
sys.argv = ["tnpx"] + sys.argv[1:]
try:
    runpy.run_module("tnpx.cli", run_name="__main__")
finally:
    print("PEAK_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def run(model: str, ctx: Path, tgt: Path, out: Path, chunk: int | None) -> dict:
    cmd = [
        sys.executable,
        "-c",
        PEAK_SCRIPT,
        "predict",
        model,
        "--context",
        str(ctx),
        "--targets",
        str(tgt),
        "--out",
        str(out),
    ]
    if chunk is not None:
        cmd += ["--chunk-size", str(chunk)]
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    wall = time.perf_counter() - start
    peak = [line for line in proc.stderr.splitlines() if line.startswith("PEAK_KB")]
    if proc.returncode != 0 or not peak:
        return {"ok": False, "error": proc.stderr.strip().splitlines()[-1:], "wall_s": wall}
    return {"ok": True, "peak_mb": int(peak[0].split()[1]) / 1024, "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gp1d-tnp")
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--repeats", type=int, default=1, help="runs per cell (peaks vary)")
    parser.add_argument("--out", default="results/perf/predict_memory")
    args = parser.parse_args()
    commit, command = git_commit(), command_line()
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        x = np.sort(rng.uniform(0, 100, 50))
        ctx = tmp / "ctx.csv"
        ctx.write_text("x,y\n" + "".join(f"{a:.5f},{np.sin(a / 8):.5f}\n" for a in x))
        for n in args.sizes:
            tgt = tmp / f"tgt{n}.csv"
            np.savetxt(tgt, np.linspace(0, 100, n), fmt="%.6f", header="x", comments="")
            for mode in args.modes:
                for _ in range(args.repeats):
                    chunk = n if mode == "one-shot" else None
                    result = run(args.model, ctx, tgt, tmp / "pred.csv", chunk)
                    rows.append({"n_targets": n, "mode": mode, **result})
                    print(rows[-1], flush=True)
    finished = time.strftime("%H:%M", time.gmtime())
    sizes = ", ".join(f"{n:,}" for n in args.sizes)
    lines = ["| targets | mode | peak memory | wall time |", "| --- | --- | --- | --- |"]
    for r in rows:
        mem = f"{r['peak_mb']:,.0f} MB" if r["ok"] else f"failed: {r['error']}"
        lines.append(f"| {r['n_targets']:,} | {r['mode']} | {mem} | {r['wall_s']:.1f} s |")
    text = f"""# `tnpx predict` on large target files: peak memory, streamed vs one shot

**What**: peak resident memory of the whole `tnpx predict` process (reading the CSVs, the model,
writing the predictions) for a 50-point context and {sizes} target rows, model
`{args.model}`; streamed = the default (context encoded once; the targets read, decoded and
written 16,384 rows at a time), one shot = `--chunk-size N` (all targets read and decoded at
once). Lower is better. Times: {started} to {finished} UTC.

**Command**: `{command}`, commit `{commit}` (recorded at start).

**Protocol or budget**: not a paper experiment (issue: "a million-row target file works in
bounded memory"). {args.repeats} run(s) per cell; one torch thread.

**Hardware and time**: {hardware()}.

{chr(10).join(lines)}

**Reading**: streamed, nothing grows with N: the tables are never held whole, so the peak
is that of the smallest run (the imports: torch, pandas, the model) plus one chunk's
activations and what the allocator keeps of them, which varies by a few tens of MB from run
to run. One shot, the table and the activations of every target exist at once.
"""
    write_results(Path(args.out), rows, text, indent=1)
    print(text)


if __name__ == "__main__":
    main()
