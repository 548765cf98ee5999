"""KR-5, the TNP-KR paper's scaling measurement (Tables 1–2), and its command line.

:func:`run_scaling` measures every point (:mod:`benchmarks.scaling_points`, resuming from
``points.json``) and writes the reports (:mod:`benchmarks.scaling_report`).

    python -m benchmarks.scaling [--models ...] [--sizes ...]
    python -m benchmarks.scaling --device cuda --dtype float32 bfloat16    # a GPU
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.bench import DTYPES

# Re-exported: what the command line and the other benchmarks configure a run with.
from benchmarks.scaling_points import (
    DEFAULT_CHUNK,
    FIXED_N,
    MODELS,
    SIZES,
    SLOW_CALL_S,
    SWEEPS,
    RunSummary,
    Settings,
    check_settings,
    device_hardware,
    device_label,
    device_points,
    load_points,
    model_options,
    run_points,
)
from benchmarks.scaling_report import write_reports
from tnpx.extras import require
from tnpx.provenance import git_commit

__all__ = [
    "DEFAULT_CHUNK",
    "FIXED_N",
    "MODELS",
    "SIZES",
    "SLOW_CALL_S",
    "SWEEPS",
    "Settings",
    "device_hardware",
    "model_options",
    "run_scaling",
]


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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.scaling",
        description="KR-5, TNP-KR Tables 1-2 on this machine: µs per sample and peak memory "
        "against the number of targets / context. One forward (batch 1) per point, in its own "
        "process with a time limit and memory cap, (a) 100 context points and N targets, (b) "
        "100 targets and N context points. Resumes from OUT/points.json; writes "
        "OUT/<device>.md, OUT/<device>.png and OUT/README.md. A point is timed REPEATS times "
        f"after a warm-up, or once if its first call takes over {SLOW_CALL_S:.0f} s.",
    )
    p.add_argument(
        "--models", nargs="+", default=list(MODELS), metavar="MODEL", help=" ".join(MODELS)
    )
    p.add_argument("--sizes", nargs="+", type=int, default=list(SIZES), metavar="N")
    p.add_argument(
        "--sweeps",
        nargs="+",
        choices=list(SWEEPS),
        default=list(SWEEPS),
        help="targets: 100 context, N targets; context: 100 targets, N context (default both)",
    )
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--dtype", nargs="+", choices=list(DTYPES), default=["float32"])
    stream = p.add_mutually_exclusive_group()
    stream.add_argument(
        "--stream",
        type=int,
        default=DEFAULT_CHUNK,
        metavar="CHUNK",
        help=f"decode targets CHUNK at a time with predict_streamed (default {DEFAULT_CHUNK})",
    )
    stream.add_argument(
        "--no-stream", dest="stream", action="store_const", const=None, help="plain forward"
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per point")
    p.add_argument("--memory-gb", type=float, default=20.0, help="memory cap per point")
    p.add_argument("--repeats", type=int, default=3, help="timed calls per point")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    p.add_argument("--out", default="results/scaling", help="results folder")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    require("matplotlib", "plot", "plotting")  # its report plots: say so before measuring
    settings = Settings(
        models=args.models,
        sizes=args.sizes,
        sweeps=args.sweeps,
        device=args.device,
        dtypes=args.dtype,
        stream=args.stream,
        timeout_s=args.timeout,
        memory_gb=args.memory_gb,
        repeats=args.repeats,
        threads=args.threads,
        out=Path(args.out),
    )
    try:
        check_settings(settings)
    except ValueError as err:  # a bad option: one line and exit 2, as argparse says it
        print(f"python -m benchmarks.scaling: error: {err}", file=sys.stderr)
        return 2
    report = run_scaling(settings)
    print(f"wrote {report}" if report else "no points were measured")
    return 0


if __name__ == "__main__":
    sys.exit(main())
