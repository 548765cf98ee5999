"""Small-N latency, eager against compiled (`tnpx.compile_for_inference`): µs per forward
(batch 1, the TNP-KR paper's model size) with 100 context points and N targets, and 100
targets and N context points, N = 1 ... 1,000, where an eager forward is dominated by
per-operation overhead rather than arithmetic (KR-5's small-N regime).

Each (model, sweep, N) is measured eager then compiled, back to back, each in its own
process (`benchmarks.bench.measure`); the compiled one's first call (the compilation) is never
timed. Writes ``results/perf/compiled_latency.md`` and ``.json``.

    python -m benchmarks.compiled_latency                      # CPU (inductor C++ kernels)
    python -m benchmarks.compiled_latency --device cuda        # GPU (CUDA graphs)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tqdm import tqdm

from benchmarks.bench import OK, measure
from benchmarks.harness import write_results
from benchmarks.scaling import FIXED_N, device_hardware, model_options
from tnpx.provenance import command_line, git_commit

MODELS = ("tnp-d", "tnp-kr-full", "tnp-kr-fast", "linear-tnp")
SIZES = (1, 10, 100, 1000)
SWEEPS = {"targets": "100 context, N targets", "context": "100 targets, N context"}


def point(model: str, sweep: str, n: int, args, compiled: bool) -> dict:
    n_ctx, n_tgt = (FIXED_N, n) if sweep == "targets" else (n, FIXED_N)
    spec = {
        "model": model,
        "options": model_options(model),
        "n_ctx": n_ctx,
        "n_tgt": n_tgt,
        "device": args.device,
        "repeats": args.repeats,
        **({"compile": True} if compiled else {}),
    }
    return measure(spec, timeout_s=args.timeout, memory_gb=args.memory_gb)


def micros(p: dict) -> str:
    if p["status"] != OK:
        return p["status"]
    fell_back = " (fell back to eager)" if p.get("compiled") is False else ""
    return f"{p['seconds'] * 1e6:,.0f}{fell_back}"


def speedup(eager: dict, compiled: dict) -> str:
    if eager["status"] != OK or compiled["status"] != OK or not compiled.get("compiled"):
        return "—"
    return f"{eager['seconds'] / compiled['seconds']:.2f}×"


def table(rows: list[dict], sweep: str) -> str:
    lines = [
        "| model | N | eager µs | compiled µs | speed-up |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        if r["sweep"] == sweep:
            lines.append(
                f"| `{r['model']}` | {r['n']:,} | {micros(r['eager'])} | "
                f"{micros(r['compiled'])} | {speedup(r['eager'], r['compiled'])} |"
            )
    return "\n".join(lines)


def reading(rows: list[dict]) -> str:
    """One sentence from the numbers: where compiling helps, and by how much."""
    ratios = [
        (r["eager"]["seconds"] / r["compiled"]["seconds"], r)
        for r in rows
        if r["eager"]["status"] == OK
        and r["compiled"]["status"] == OK
        and r["compiled"].get("compiled")
    ]
    if not ratios:
        return "No point ran compiled code on this machine."
    faster = [x for x, _ in ratios if x > 1.1]
    best, at = max(ratios, key=lambda t: t[0])
    worst, wat = min(ratios, key=lambda t: t[0])
    return (
        f"Compiling made {len(faster)} of {len(ratios)} points more than 10% faster; the "
        f"largest speed-up is {best:.2f}× (`{at['model']}`, {SWEEPS[at['sweep']]}, N = "
        f"{at['n']:,}) and the smallest {worst:.2f}× (`{wat['model']}`, {SWEEPS[wat['sweep']]}, "
        f"N = {wat['n']:,})."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--sweeps", nargs="+", choices=list(SWEEPS), default=list(SWEEPS))
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per point")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--memory-gb", type=float, default=16)
    parser.add_argument("--out", default="results/perf/compiled_latency")
    args = parser.parse_args()
    commit, command, start = git_commit(), command_line(), time.perf_counter()
    plan = [(m, s, n) for s in args.sweeps for m in args.models for n in args.sizes]
    rows = []
    for model, sweep, n in tqdm(plan, desc="compiled latency", unit="point"):
        eager = point(model, sweep, n, args, compiled=False)
        compiled = point(model, sweep, n, args, compiled=True)
        rows.append({"model": model, "sweep": sweep, "n": n, "eager": eager, "compiled": compiled})
    wall = time.perf_counter() - start
    sections = "\n\n".join(f"### {SWEEPS[s]}\n\n{table(rows, s)}" for s in args.sweeps)
    modes = sorted({r["compiled"].get("mode", "?") for r in rows if r["compiled"]["status"] == OK})
    text = f"""# Small-N latency: eager against compiled inference

**What**: µs per forward (batch 1, no gradients; median of {args.repeats} timed calls after a
warm-up) of each model at the TNP-KR paper's size, eager (`model(xc, yc, xt)`) against
`tnpx.compile_for_inference(model)` (`torch.compile` mode {", ".join(modes) or "—"}; inputs
validated eagerly as by the model). Each measurement runs in its own process; the compiled
one's compiling first call is not timed. Lower is better.

**Command**: `{command}`, commit `{commit}` (recorded at start); {wall:.0f} s of wall time.

**Protocol or budget**: not a paper table; the small-N end of KR-5 (TNP-KR Tables 1–2), where
the paper's GPU numbers are ~100–300 µs per sample.

**Hardware**: {device_hardware(args.device)}; device `{args.device}`, torch threads torch's
default.

{sections}

**Reading**: {reading(rows)}
"""
    write_results(Path(args.out), {"command": command, "commit": commit, "rows": rows}, text, 1)
    print(text)


if __name__ == "__main__":
    main()
