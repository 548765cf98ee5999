"""KR-5, the TNP-KR paper's scaling measurement (Tables 1–2): µs per sample and peak memory
of one forward (batch 1) against the number of targets (100 context points) and against the
number of context points (100 targets), for N = 10^0 … 10^6.

Every point runs in its own process through :func:`tnpx.bench.measure`, with a time limit
and a memory cap. Finished points are written to a JSON file (``points.json``) as soon as
they finish, keyed by device, model, sweep, N and dtype, so a stopped run resumes where it
stopped. Once a model runs out of memory or time at some N of a sweep, the larger N of that
sweep are recorded as ``skipped`` instead of being run. :func:`run_scaling` runs the points
and writes one markdown file and one PNG per device, and an index ``README.md``.

    tnpx bench scaling [--models ...] [--sizes ...] [--device cuda --dtype float32 bfloat16]
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import torch

from .bench import DTYPES, OK, OOM, TIMEOUT, measure
from .report import command_line, cpu_name, git_commit, hardware

# The TNP-KR paper's model size (PROTOCOLS "TNP-KR model"), given to every model as far as
# it takes these options; the library defaults of tnp-kr-full/-fast are these sizes already.
KR_SIZES = {"dim_model": 64, "n_layers": 6, "n_heads": 4, "dim_head": 16, "dim_ff": 128}
MODELS = ("tnp-d", "tnp", "tnp-kr-full", "tnp-kr-fast", "linear-tnp", "te-tnp")
SIZES = tuple(10**k for k in range(7))
FIXED_N = 100  # the size of the set that a sweep holds fixed
DEFAULT_CHUNK = 16384  # targets per streamed chunk
SLOW_CALL_S = 10.0  # a first call slower than this is the only timed call of its point
SKIPPED = "skipped"
FAILED = (OOM, TIMEOUT)  # statuses after which the larger N of a sweep are skipped


@dataclass(frozen=True)
class Sweep:
    """One of the paper's two sweeps: ``varied`` (``n_tgt`` | ``n_ctx``) takes N, the other
    set has ``FIXED_N`` points."""

    name: str
    varied: str
    fixed: str
    title: str


SWEEPS = {
    "targets": Sweep("targets", "n_tgt", "n_ctx", "(a) 100 context points, N targets (KR Table 1)"),
    "context": Sweep("context", "n_ctx", "n_tgt", "(b) 100 targets, N context points (KR Table 2)"),
}

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


@dataclass
class Settings:
    """What ``tnpx bench scaling`` runs; the CLI's options."""

    models: list[str] = field(default_factory=lambda: list(MODELS))
    sizes: list[int] = field(default_factory=lambda: list(SIZES))
    sweeps: list[str] = field(default_factory=lambda: list(SWEEPS))
    device: str = "cpu"
    dtypes: list[str] = field(default_factory=lambda: ["float32"])
    stream: int | None = DEFAULT_CHUNK  # None: the plain forward
    timeout_s: float = 600.0
    memory_gb: float = 20.0
    repeats: int = 3
    threads: int | None = None  # None: torch's choice
    out: Path = Path("results/scaling")

    @property
    def points_path(self) -> Path:
        return Path(self.out) / "points.json"


@dataclass
class RunSummary:
    """What :func:`run_points` did: points measured now, reused from the file, skipped."""

    measured: int = 0
    reused: int = 0
    skipped: int = 0
    wall_s: float = 0.0
    complete: bool = False


# ---------------------------------------------------------------------------- settings


def check_settings(settings: Settings) -> None:
    """Raise ``ValueError`` naming the bad option (unknown model, dtype, sweep, no CUDA...)."""
    from .models import list_models

    valid = list_models()
    unknown = [m for m in settings.models if m not in valid]
    if unknown:
        raise ValueError(f"unknown model(s) {', '.join(unknown)}; valid: {', '.join(valid)}")
    bad_sweeps = [s for s in settings.sweeps if s not in SWEEPS]
    if bad_sweeps:
        raise ValueError(f"unknown sweep(s) {bad_sweeps}; valid: {', '.join(SWEEPS)}")
    bad_dtypes = [d for d in settings.dtypes if d not in DTYPES]
    if bad_dtypes:
        raise ValueError(f"unknown dtype(s) {bad_dtypes}; valid: {', '.join(DTYPES)}")
    if any(n < 1 for n in settings.sizes):
        raise ValueError(f"--sizes must be >= 1, got {settings.sizes}")
    if settings.stream is not None and settings.stream < 1:
        raise ValueError(f"--stream must be >= 1 (or --no-stream), got {settings.stream}")
    if settings.repeats < 1 or settings.timeout_s <= 0 or settings.memory_gb <= 0:
        raise ValueError("--repeats, --timeout and --memory-gb must be positive")
    if settings.device not in ("cpu", "cuda"):
        raise ValueError(f"--device must be cpu or cuda, got {settings.device!r}")
    if settings.device == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"--device cuda: CUDA is not available to torch {torch.__version__} here "
            "(no GPU visible, or a CPU-only build); use --device cpu"
        )


def model_options(model: str) -> dict:
    """The ``KR_SIZES`` options that ``model`` takes."""
    from .models.base import REGISTRY, hyper_names

    taken = set(hyper_names(REGISTRY[model]))
    return {k: v for k, v in KR_SIZES.items() if k in taken}


def stream_for(model: str, stream: int | None) -> int | None:
    """The chunk size used for ``model``: none for a model whose targets interact."""
    from .models.base import REGISTRY

    return None if REGISTRY[model].targets_interact else stream


def parameter_count(model: str) -> int:
    from .models import build_model

    return sum(p.numel() for p in build_model(model, **model_options(model)).parameters())


def device_label(device: str) -> str:
    """A file-name-safe name of the hardware, e.g. ``cpu-amd-epyc``, ``cuda-nvidia-h100``:
    points from different machines never share a key."""
    name = torch.cuda.get_device_name(0) if device == "cuda" else cpu_name()
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return f"{device}-{slug}" if slug else device


def device_hardware(device: str) -> str:
    """``tnpx.report.hardware()``, plus the CPU when a CPU run happens on a GPU machine."""
    text = hardware()
    if device == "cpu" and torch.cuda.is_available():
        text += f"; this run used the CPU: {cpu_name()}, {os.cpu_count()} cores"
    return text


# ------------------------------------------------------------------------------ points


def point_key(label: str, model: str, sweep: str, n: int, dtype: str) -> str:
    return f"{label}/{model}/{sweep}/{n}/{dtype}"


def load_points(path: Path) -> dict[str, dict]:
    """The stored points (key -> record); empty if the file does not exist yet."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else {}


def save_points(path: Path, points: dict[str, dict]) -> None:
    """Write atomically (a kill mid-write leaves the previous file, not half of one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(points, indent=1, sort_keys=True))
    tmp.replace(path)


def point_settings(settings: Settings, model: str) -> dict:
    """The settings a stored point must share to be reused (see :func:`reusable`)."""
    return {
        "options": model_options(model),
        "stream": stream_for(model, settings.stream),
        "threads": settings.threads,
        "repeats": settings.repeats,
        "timeout_s": settings.timeout_s,
        "memory_gb": settings.memory_gb,
    }


def reusable(stored: dict | None, wanted: dict) -> bool:
    """A measurement is reused when it was taken with the same model options, streaming,
    threads and repeats; an OOM or timeout also needs the same time limit and memory cap (a
    larger limit may let it finish). Errors and skips are never reused: an error is a bug to
    see again, and a skip is re-derived from the points before it."""
    if stored is None or stored.get("status") not in (OK, *FAILED):
        return False
    same = ("options", "stream", "threads", "repeats")
    if stored["status"] in FAILED:
        same += ("timeout_s", "memory_gb")
    return all(stored.get(k) == wanted[k] for k in same)


def point_spec(model: str, sweep: Sweep, n: int, dtype: str, settings: Settings) -> dict:
    """The :func:`tnpx.bench.measure` spec of one point (batch 1, dim_x = dim_y = 1)."""
    spec = {
        "model": model,
        "options": model_options(model),
        sweep.varied: n,
        sweep.fixed: FIXED_N,
        "batch": 1,
        "device": settings.device,
        "dtype": dtype,
        "stream": stream_for(model, settings.stream),
        "repeats": settings.repeats,
        "single_above_s": SLOW_CALL_S,
    }
    if settings.threads:
        spec["threads"] = settings.threads
    return spec


def measure_point(spec: dict, settings: Settings) -> dict:
    """Run one point; the bench result plus µs per sample and the wall time it took."""
    start = time.perf_counter()
    result = measure(spec, timeout_s=settings.timeout_s, memory_gb=settings.memory_gb)
    ok = result["status"] == OK
    return {
        **result,
        "us_per_sample": result["seconds"] * 1e6 / spec["batch"] if ok else None,
        "wall_s": time.perf_counter() - start,
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def skip_reason(failed: dict) -> str:
    return f"after {status_word(failed['status'])} at N = {failed['n']:,}"


def run_points(
    settings: Settings, label: str, commit: str, summary: RunSummary, progress: bool = True
) -> dict[str, dict]:
    """Run (or reuse, or skip) every point of ``settings``, smallest N first within each
    (dtype, sweep, model); each point is saved as soon as it is known. Counts go into
    ``summary`` (so they survive an interruption). Returns all stored points."""
    from tqdm.auto import tqdm

    points = load_points(settings.points_path)
    sizes = sorted(set(settings.sizes))
    groups = list(itertools.product(settings.dtypes, settings.sweeps, settings.models))
    provenance = {
        "command": command_line(),
        "commit": commit,
        "hardware": device_hardware(settings.device),
        "torch": torch.__version__,
    }
    start = time.perf_counter()
    bar = tqdm(total=len(groups) * len(sizes), desc="scaling", unit="point", disable=not progress)
    try:
        for dtype, sweep, model in groups:
            wanted = point_settings(settings, model)
            failed = None  # the first OOM/timeout of this (dtype, sweep, model)
            for n in sizes:
                bar.set_postfix_str(f"{model} {sweep} N={n:,} {dtype}")
                key = point_key(label, model, sweep, n, dtype)
                where = {"device": label, "model": model, "sweep": sweep, "n": n, "dtype": dtype}
                if failed is not None:
                    record = {**where, **wanted, "status": SKIPPED, "message": skip_reason(failed)}
                    summary.skipped += 1
                elif reusable(points.get(key), wanted):
                    record = points[key]
                    summary.reused += 1
                else:
                    spec = point_spec(model, SWEEPS[sweep], n, dtype, settings)
                    record = {**where, **wanted, **provenance, **measure_point(spec, settings)}
                    summary.measured += 1
                points[key] = record
                save_points(settings.points_path, points)
                if failed is None and record["status"] in FAILED:
                    failed = record
                bar.update()
        summary.complete = True
    finally:
        bar.close()
        summary.wall_s = time.perf_counter() - start
    return points


# ------------------------------------------------------------------------------ report


def status_word(status: str) -> str:
    """How a status is spelled in tables: ``OOM``, ``timeout``, ``skipped``, ``error``."""
    return "OOM" if status == OOM else status


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


def device_points(points: dict[str, dict], label: str) -> list[dict]:
    return [p for p in points.values() if p.get("device") == label]


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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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
tnpx bench scaling                                           # CPU, float32
tnpx bench scaling --device cuda --dtype float32 bfloat16    # GPU
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


def run_scaling(settings: Settings, progress: bool = True) -> Path | None:
    """Check the settings, run every point (resuming from ``points.json``) and write the
    reports, also when interrupted. Returns the device's markdown file (None if no point of
    this device was stored)."""
    check_settings(settings)
    commit = git_commit()
    label = device_label(settings.device)
    summary = RunSummary()
    try:
        run_points(settings, label, commit, summary, progress)
    finally:
        points = load_points(settings.points_path)
        report = None
        if device_points(points, label):
            report = write_reports(points, settings, label, commit, summary)
    return report
