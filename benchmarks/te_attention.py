"""Time and peak memory of one TE-TNP forward (batch 1, Nc = Nt = N), with the pair features
computed in query chunks (the default) and all at once. Each point runs in its own process
with a time and memory limit (``benchmarks.bench.measure``), so an out-of-memory point
is recorded, not fatal. Writes ``results/perf/te_attention.md`` and ``.json``.

    python -m benchmarks.te_attention [--sizes 100 1000 10000] [--timeout 900]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import tnpx
from benchmarks.bench import OK, measure
from benchmarks.harness import write_results
from tnpx.provenance import command_line, git_commit, hardware

UNCHUNKED = 2**62  # chunk_elements so large that every call is one chunk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000, 3000, 10000])
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--memory-gb", type=float, default=16.0)
    parser.add_argument("--out", default="results/perf")
    parser.add_argument("--fresh", action="store_true", help="re-measure sizes already in the JSON")
    args = parser.parse_args()
    commit = git_commit()
    defaults = tnpx.build_model("te-tnp").hyper
    hidden = defaults.dim_model
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    done = {}  # sizes measured by an earlier run of this command are reused, not re-timed
    if (out / "te_attention.json").exists() and not args.fresh:
        done = {r["n"]: r for r in json.loads((out / "te_attention.json").read_text())}
    rows = dict(done)  # every size measured so far stays in the table
    for n in args.sizes:
        if n in done:
            continue
        row = {"n": n, "pair_features_gb": n * n * hidden * 4 / 2**30}
        row.update(commit=commit, command=command_line(), hardware=hardware())
        row.update(timeout_s=args.timeout, memory_gb=args.memory_gb)
        for label, chunk in (("chunked", defaults.chunk_elements), ("unchunked", UNCHUNKED)):
            spec = {
                "model": "te-tnp",
                "options": {"chunk_elements": chunk},
                "n_ctx": n,
                "n_tgt": n,
                "repeats": 3 if n <= 300 else 1,
            }
            row[label] = measure(spec, timeout_s=args.timeout, memory_gb=args.memory_gb)
            print(n, label, row[label], flush=True)
        rows[n] = row
        # rewritten after every size, so a stopped run keeps what it measured
        write(out, [rows[k] for k in sorted(rows)], args, defaults)
    write(out, [rows[k] for k in sorted(rows)], args, defaults)
    print(f"wrote {out / 'te_attention.md'}")


def write(out: Path, rows: list[dict], args, hyper) -> None:
    write_results(out / "te_attention", rows, report(rows, args, hyper))


def cell(result: dict) -> str:
    if result["status"] != OK:
        return f"{result['status'].upper()} ({result['message'][:60]})"
    return f"{result['seconds']:.2f} s, {result['peak_mb']:.0f} MB"


def provenance(rows) -> str:
    """Which command, commit and hardware measured which sizes (rows may come from several
    runs of this script; rows from before this was recorded say so)."""
    groups: dict[tuple, list[int]] = {}
    for r in rows:
        key = (r.get("command", "not recorded"), r.get("commit", "not recorded"))
        key += (r.get("hardware", "not recorded"), r.get("timeout_s"), r.get("memory_gb"))
        groups.setdefault(key, []).append(r["n"])
    return "\n".join(
        f"- N = {', '.join(f'{n:,}' for n in ns)}: `{cmd}`, commit `{commit}`, {hw}; limits "
        f"{limit:.0f} s and {memory:.0f} GB of address space per point"
        for (cmd, commit, hw, limit, memory), ns in groups.items()
    )


def report(rows, args, hyper) -> str:
    table = [
        "| N = Nc = Nt | chunked: time, peak memory | unchunked: time, peak memory | "
        "[N, N, hidden] pair features if materialised |",
        "| ---: | --- | --- | ---: |",
    ]
    table += [
        f"| {r['n']:,} | {cell(r['chunked'])} | {cell(r['unchunked'])} | "
        f"{r['pair_features_gb']:.2f} GB |"
        for r in rows
    ]
    return f"""# TE-TNP forward: chunked vs unchunked pair features

**What**: wall time and peak memory (resident, above the level before the call) of one
TE-TNP forward, batch 1, Nc = Nt = N, no gradients. Lower is better. The model is the TE F.1
default size (D_z {hyper.dim_model}, {hyper.n_layers} layers of {hyper.n_heads} heads, rho and
phi MLPs {hyper.dim_model} wide, location update on). "Chunked" computes the per-pair
features per query chunk of at most {hyper.chunk_elements:,} elements; "unchunked" forms
them for all queries at once. Each point runs in its own process, limited in time and in
address space above its start-up size (limits per command below).

**Commands** (each size is measured once and kept; `--fresh` re-measures):
{provenance(rows)}

**Protocol or budget**: a micro-benchmark (issue: TE attention memory), not a paper table.

**Hardware**: named per command above; the machine was otherwise idle while timing.

{chr(10).join(table)}

**Reading**: {reading(rows, args)} Time grows as N² either way: the rho and phi MLPs run on
every (query, key) pair, which is the cost of TE attention on this CPU.
"""


def reading(rows, args) -> str:
    """What the table shows about memory, from the measured rows."""
    ok = [r for r in rows if r["chunked"]["status"] == OK and r["unchunked"]["status"] == OK]
    oom = [r["n"] for r in rows if r["unchunked"]["status"] != OK]
    text = ""
    if len(ok) >= 2:
        a, b = ok[0], ok[-1]
        text = (
            f"from N = {a['n']:,} to {b['n']:,} the chunked form's peak memory goes from "
            f"{a['chunked']['peak_mb']:.0f} to {b['chunked']['peak_mb']:.0f} MB, the unchunked "
            f"form's from {a['unchunked']['peak_mb']:.0f} to {b['unchunked']['peak_mb']:.0f} MB "
            "(it holds the whole [N, N, hidden] pair tensor of a layer)."
        )
    if oom:
        text += f" Unchunked fails (out of memory or time) at N = {', '.join(map(str, oom))}."
    return text or "too few points measured to compare."


if __name__ == "__main__":
    main()
