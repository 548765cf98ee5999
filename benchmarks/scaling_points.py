"""KR-5, the TNP-KR paper's scaling measurement (Tables 1–2): µs per sample and peak memory
of one forward (batch 1) against the number of targets (100 context points) and against the
number of context points (100 targets), for N = 10^0 … 10^6.

Every point runs in its own process through :func:`benchmarks.bench.measure`, with a
time limit and a memory cap. Finished points are written to a JSON file (``points.json``) as
soon as they finish, keyed by device, model, sweep, N and dtype, so a stopped run resumes where
it stopped. Once a model runs out of memory or time at some N of a sweep, the larger N of that
sweep are recorded as ``skipped`` instead of being run. This module measures and stores the
points; :mod:`benchmarks.scaling_report` turns them into tables and plots, and
:func:`benchmarks.scaling.run_scaling` does both.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import torch

from benchmarks.bench import DTYPES, OK, OOM, TIMEOUT, measure
from tnpx.provenance import command_line, cpu_name, hardware

# The TNP-KR paper's model size (PROTOCOLS "TNP-KR model"), given to every model as far as
# it takes these options; the library defaults of tnp-kr-full/-fast are these sizes already.
KR_SIZES = {"dim_model": 64, "n_layers": 6, "n_heads": 4, "dim_head": 16, "dim_ff": 128}
MODELS = ("tnp-d", "tnp", "tnp-kr-full", "tnp-kr-fast", "linear-tnp", "te-tnp", "te-tnp-rope")
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


@dataclass
class Settings:
    """What ``python -m benchmarks.scaling`` runs; its command line's options."""

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
    from tnpx.models import list_models

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
    from tnpx.models import options_taken

    return options_taken(model, KR_SIZES)


def stream_for(model: str, stream: int | None) -> int | None:
    """The chunk size used for ``model``: none for a model that cannot stream (its targets
    interact or its prediction is joint, see ``NeuralProcess.streamable``)."""
    from tnpx.models import REGISTRY

    return stream if REGISTRY[model].streamable() else None


def parameter_count(model: str) -> int:
    from tnpx.models import build_model

    return sum(p.numel() for p in build_model(model, **model_options(model)).parameters())


def device_label(device: str) -> str:
    """A file-name-safe name of the hardware, e.g. ``cpu-amd-epyc``, ``cuda-nvidia-h100``:
    points from different machines never share a key."""
    name = torch.cuda.get_device_name(0) if device == "cuda" else cpu_name()
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return f"{device}-{slug}" if slug else device


def device_hardware(device: str) -> str:
    """``tnpx.provenance.hardware()``, plus the CPU when a CPU run happens on a
    GPU machine."""
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


# Shared with benchmarks.scaling_report: the points of one device file.
def device_points(points: dict[str, dict], label: str) -> list[dict]:
    return [p for p in points.values() if p.get("device") == label]


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
    """The :func:`benchmarks.bench.measure` spec of one point (batch 1, dim_x = dim_y = 1)."""
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


# Shared with benchmarks.scaling_report, which spells statuses the same way in its tables.
def status_word(status: str) -> str:
    """How a status is spelled in tables: ``OOM``, ``timeout``, ``skipped``, ``error``."""
    return "OOM" if status == OOM else status


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
