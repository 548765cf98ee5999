"""Reports of KR-5 (:mod:`benchmarks.scaling_points`): the stored points turned into one
markdown file (our tables beside the TNP-KR paper's Tables 1–2, with command, commit, hardware
and limits) and one log-log PNG per device, and an index ``README.md``. :func:`write_reports`
writes them; :func:`benchmarks.scaling.run_scaling` calls it at the end of a run, also an
interrupted one.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import torch

from benchmarks.bench import OK
from benchmarks.scaling_points import (
    KR_SIZES,
    MODELS,
    SIZES,
    SKIPPED,
    SLOW_CALL_S,
    SWEEPS,
    RunSummary,
    Settings,
    device_hardware,
    device_points,
    model_options,
    parameter_count,
    status_word,
)
from tnpx.extras import pyplot
from tnpx.provenance import command_line

# KR Tables 1–2 as restated in PROTOCOLS.md (KR-5): µs per sample on one RTX 4090 for
# N = 10^0 … 10^6; None is the paper's "OOM".
PAPER_DEVICE = "one NVIDIA RTX 4090 (24 GB)"
PAPER_US = {
    "targets": {
        "tnp-d": (118, 119, 129, 286, 45_000, None, None),
        "tnp-kr-full": (171, 287, 267, 230, 474, 7_040, 86_800),
        "tnp-kr-fast": (194, 327, 282, 226, 436, 4_510, 64_300),
    },
    "context": {
        "tnp-d": (99, 99, 114, 247, 44_700, None, None),
        "tnp-kr-full": (98, 220, 286, 302, 36_700, None, None),
        "tnp-kr-fast": (138, 277, 299, 234, 632, 6_900, 88_400),
    },
}


def format_n(n: int) -> str:
    """``10⁴`` for powers of ten, ``1,234`` otherwise."""
    k = len(str(n)) - 1
    if n == 10**k:
        return "10" + "".join("⁰¹²³⁴⁵⁶⁷⁸⁹"[int(c)] for c in str(k))
    return f"{n:,}"


def format_cell(point: dict | None) -> str:
    """``1,234 µs, 56 MB`` for a finished point; the status spelled out otherwise."""
    if point is None:
        return "—"
    if point["status"] == OK:
        return f"{point['us_per_sample']:,.0f} µs, {max(point['peak_mb'], 0):,.0f} MB"
    if point["status"] == SKIPPED:
        return f"skipped ({point['message']})"
    return status_word(point["status"])


def ordered_models(found: Iterable[str]) -> list[str]:
    """The paper's six in their order first, then any others sorted."""
    found = set(found)
    return [m for m in MODELS if m in found] + sorted(found - set(MODELS))


def forward_kind(row: list[dict]) -> str:
    """How a row's points called the model: streamed (chunk) or the plain forward."""
    kinds = set()
    for p in row:
        if p["status"] == SKIPPED:
            continue
        streamed = p.get("streamed", p.get("stream") is not None)
        kinds.add(f"streamed ({p['stream']:,})" if streamed and p.get("stream") else "plain")
    return " / ".join(sorted(kinds)) or "—"


def results_table(found: list[dict], sweep: str, dtype: str) -> str:
    """Rows = models, columns = N; cells µs per sample and peak MB, or the failure."""
    cells = {(p["model"], p["n"]): p for p in found if p["sweep"] == sweep and p["dtype"] == dtype}
    sizes = sorted({n for _, n in cells})
    models = ordered_models(m for m, _ in cells)
    lines = [
        f"| model | forward | {' | '.join(format_n(n) for n in sizes)} |",
        "| --- | --- |" + " ---: |" * len(sizes),
    ]
    for m in models:
        row = [cells.get((m, n)) for n in sizes]
        kind = forward_kind([p for p in row if p is not None])
        lines.append(f"| `{m}` | {kind} | {' | '.join(format_cell(p) for p in row)} |")
    return "\n".join(lines)


def paper_table(sweep: str) -> str:
    """The paper's µs per sample for ``sweep``, in the same layout as ours (transposed from
    the paper's, which has N down the rows)."""
    lines = [
        "| model (paper) | " + " | ".join(format_n(n) for n in SIZES) + " |",
        "| --- |" + " ---: |" * len(SIZES),
    ]
    for model, values in PAPER_US[sweep].items():
        cells = ["OOM" if v is None else f"{v:,} µs" for v in values]
        lines.append(f"| `{model}` | {' | '.join(cells)} |")
    return "\n".join(lines)


def error_notes(found: list[dict]) -> str:
    """One line per failed point with its message (the tables only name the status)."""
    notes = [
        f"- `{p['model']}` {p['sweep']} N = {p['n']:,} {p['dtype']}: "
        f"{status_word(p['status'])}: {p.get('message') or '(no message)'}"
        for p in sorted(found, key=lambda p: (p["model"], p["sweep"], p["dtype"], p["n"]))
        if p["status"] not in (OK, SKIPPED)
    ]
    return "\n".join(notes) if notes else "none."


def sizes_table(models: list[str]) -> str:
    lines = ["| model | options given | parameters |", "| --- | --- | ---: |"]
    for m in models:
        lines.append(f"| `{m}` | {model_options(m)} | {parameter_count(m):,} |")
    return "\n".join(lines)


def provenance_table(found: list[dict]) -> str:
    """Which command, commit and limits measured the points in a file, with their wall time."""
    groups: dict[tuple, list[dict]] = {}
    for p in found:
        if p["status"] != SKIPPED:
            key = (p.get("command"), p.get("commit"), p.get("threads"))
            key += (p.get("timeout_s"), p.get("memory_gb"), p.get("repeats"))
            groups.setdefault(key, []).append(p)
    lines = [
        "| command | commit | threads | time limit | memory cap | repeats | points "
        "| their wall time |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (cmd, commit, threads, timeout, memory, repeats), ps in groups.items():
        wall = sum(p.get("wall_s", 0) for p in ps)
        lines.append(
            f"| `{cmd}` | `{commit}` | {threads or 'torch default'} | {timeout:.0f} s | "
            f"{memory:g} GB | {repeats} | {len(ps)} | {wall:,.0f} s |"
        )
    return "\n".join(lines)


def stream_meaning(settings: Settings) -> str:
    plain = '"plain" in the forward column is `model(xc, yc, xt)` on all targets at once.'
    if settings.stream is None:
        return plain
    return (
        f"A streamed model encodes the context once and decodes the targets "
        f"{settings.stream:,} at a time (`predict_streamed`); {plain}"
    )


def memory_meaning(device: str) -> str:
    if device.startswith("cuda"):
        return (
            "peak memory allocated by torch on the GPU during the timed calls "
            "(`torch.cuda.max_memory_allocated` after `reset_peak_memory_stats`), weights and "
            "inputs included; the memory cap limits torch's allocator "
            "(`set_per_process_memory_fraction`)"
        )
    return (
        "peak resident memory of the process above its level just before the first call "
        "(inputs and weights excluded); the memory cap limits the address space above the "
        "process's size at start-up"
    )


def device_report(
    found: list[dict], label: str, settings: Settings, commit: str, summary: RunSummary
) -> str:
    """The markdown file for one device: header, our tables, the paper's, notes."""
    dtypes = sorted({p["dtype"] for p in found}, key=lambda d: (d != "float32", d))
    models = ordered_models(p["model"] for p in found)
    threads = settings.threads or f"torch default ({torch.get_num_threads()})"
    state = "complete" if summary.complete else "interrupted"
    sections = []
    for sweep in (s for s in SWEEPS if any(p["sweep"] == s for p in found)):
        for dtype in dtypes:
            if any(p["sweep"] == sweep and p["dtype"] == dtype for p in found):
                sections.append(
                    f"### {SWEEPS[sweep].title}, {dtype}\n\n{results_table(found, sweep, dtype)}"
                )
    paper = "\n\n".join(f"### {SWEEPS[s].title}, paper\n\n{paper_table(s)}" for s in SWEEPS)
    return f"""# KR-5 scaling: µs per sample and peak memory on `{label}`

**What**: wall time of one forward (no gradients, batch 1, dim_x = dim_y = 1) in µs per
sample, and peak memory in MB; sweep (a) holds 100 context points and varies the number of
targets N, sweep (b) holds 100 targets and varies the number of context points N (TNP-KR
paper, Tables 1–2). Lower is better. Each point runs in its own process. Time is the median
of {settings.repeats} timed calls after one untimed warm-up call (always on CUDA; on the CPU
when more than one call is timed); a point whose first call takes over {SLOW_CALL_S:.0f} s
is timed by that call alone, so slow points cost one call, not four. {stream_meaning(settings)}
Once a model runs out of memory (OOM) or time at some N, the larger N of that sweep are
skipped, not run.

**Memory**: {memory_meaning(label)}.

**Command**: `{command_line()}`, commit `{commit}` (recorded at start); this run measured
{summary.measured} points, reused {summary.reused} from `points.json` and skipped
{summary.skipped}, in {summary.wall_s:,.0f} s of wall time ({state}).

**Settings of this run**: device `{settings.device}`, dtypes {", ".join(settings.dtypes)},
torch threads {threads}, time limit {settings.timeout_s:.0f} s and memory cap
{settings.memory_gb:g} GB per point, repeats {settings.repeats}, torch {torch.__version__}.

**Protocol or budget**: the paper's protocol (KR-5) at the paper's model size, on this
machine instead of the paper's {PAPER_DEVICE}.

**Hardware**: {device_hardware(settings.device)}.

**Model sizes**: `KR_SIZES = {KR_SIZES}` (the TNP-KR paper's size), given to every model as
far as it takes these options; other options are the library defaults.

{sizes_table(models)}

**Where the points in this file come from** (a point is reused only if measured with the
same options, streaming, threads and repeats; a failure also needs the same limits):

{provenance_table(found)}

## Measured here

{chr(10).join(s + chr(10) for s in sections)}
Failures: {error_notes(found)}

![time and memory against N]({label}.png)

## The paper's numbers (RTX 4090)

µs per sample from the TNP-KR paper (Tables 1–2, as in `PROTOCOLS.md` KR-5), measured on
{PAPER_DEVICE}; the paper gives no memory figures. Transposed to the layout above.

{paper}

**Reading**: compare rows within one file, and the paper's numbers by how time grows with N
rather than by value unless this file is from a GPU. The paper's OOM marks where its 24 GB card
ran out; OOM here means this run's memory cap (or the machine) was reached.
"""


def plot_scaling(found: list[dict], path: Path) -> None:
    """Log-log time and memory against N: rows = sweeps, columns = (µs per sample, MB);
    one colour per model (the same in every file), one line style per dtype, the paper's
    times dotted with crosses. Failed points are not drawn (the tables name them)."""
    plt = pyplot("plotting")
    from matplotlib.ticker import LogFormatter

    models = ordered_models([*MODELS, *(p["model"] for p in found)])
    colours = {m: plt.cm.tab10(i % 10) for i, m in enumerate(models)}
    styles = dict(zip(sorted({p["dtype"] for p in found}), ("-", "--", "-.", ":")))
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), squeeze=False)
    for row, sweep in zip(axes, SWEEPS.values()):
        for (model, dtype), ok in _ok_lines(found, sweep.name).items():
            ns = [p["n"] for p in ok]
            kw = {"color": colours[model], "linestyle": styles[dtype], "marker": "o", "ms": 3}
            row[0].plot(ns, [p["us_per_sample"] for p in ok], label=f"{model} {dtype}", **kw)
            row[1].plot(ns, [max(p["peak_mb"], 1e-3) for p in ok], **kw)
        for model, values in PAPER_US[sweep.name].items():
            ns = [n for n, v in zip(SIZES, values) if v is not None]
            us = [v for v in values if v is not None]
            row[0].plot(ns, us, ":x", color=colours[model], label=f"{model} (paper, RTX 4090)")
        for ax, what in zip(row, ("µs per sample", "peak memory (MB)")):
            ax.set(xscale="log", yscale="log", xlim=(0.5, 2 * SIZES[-1]))
            ax.set(xlabel=f"N ({sweep.name})", ylabel=what)
            ax.yaxis.set_major_formatter(LogFormatter(labelOnlyBase=False))
            ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False))
            ax.set_title(f"{sweep.title}: {what}", fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
        row[0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _ok_lines(found: list[dict], sweep: str) -> dict[tuple[str, str], list[dict]]:
    """Finished points of ``sweep`` grouped by (model, dtype), sorted by N."""
    lines: dict[tuple[str, str], list[dict]] = {}
    for p in sorted(found, key=lambda p: p["n"]):
        if p["sweep"] == sweep and p["status"] == OK:
            lines.setdefault((p["model"], p["dtype"]), []).append(p)
    return lines


def index_report(points: dict[str, dict]) -> str:
    """``README.md``: what KR-5 is, how to run it, and one line per device file."""
    labels = sorted({p["device"] for p in points.values()})
    rows = []
    for label in labels:
        found = device_points(points, label)
        ok = sum(p["status"] == OK for p in found)
        rows.append(f"| [`{label}`]({label}.md) | {ok} of {len(found)} | [plot]({label}.png) |")
    return f"""# KR-5 scaling (TNP-KR Tables 1–2)

µs per sample and peak memory of one forward (batch 1) of `tnp-d`, `tnp`, `tnp-kr-full`,
`tnp-kr-fast`, `linear-tnp` and `te-tnp` at the TNP-KR paper's size, (a) with 100 context
points and N = 10⁰…10⁶ targets, (b) with 100 targets and N = 10⁰…10⁶ context points. One file
per device; each names its command, commit, hardware and limits, and puts the paper's
RTX 4090 numbers beside the measured ones. The measured points are in `points.json`.

```bash
python -m benchmarks.scaling                                           # CPU, float32
python -m benchmarks.scaling --device cuda --dtype float32 bfloat16    # GPU
```

| device | points finished | plot |
| --- | ---: | --- |
{chr(10).join(rows)}
"""


def write_reports(
    points: dict[str, dict], settings: Settings, label: str, commit: str, summary: RunSummary
) -> Path:
    """Write ``<label>.md``, ``<label>.png`` and the index ``README.md``; returns the .md."""
    out = Path(settings.out)
    out.mkdir(parents=True, exist_ok=True)
    found = device_points(points, label)
    report = out / f"{label}.md"
    report.write_text(device_report(found, label, settings, commit, summary))
    plot_scaling(found, out / f"{label}.png")
    (out / "README.md").write_text(index_report(points))
    return report
