"""The results page of ``benchmarks/gpu_check.sh`` (issue 53, item 5): what the check measured,
filled into ``benchmarks/gpu_check_template.md``.

The script leaves its raw outputs in a work folder: ``nvidia-smi.txt``, ``cuda-tests.txt``
(pytest's output for ``-m cuda``), ``scaling.txt`` (the KR-5 points' log), and the KR-1 runs
``kr1-cpu/`` and ``kr1-gpu/`` (each a ``tnpx train`` run folder, ``metrics.csv`` in it), plus
``status.txt`` (``step exit-code`` per line). This module reads them, compares the two
validation curves step by step, and writes the page.

    python -m benchmarks.gpu_check_report --work DIR --out PAGE.md [--dry-run]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from pathlib import Path
from string import Template

from tnpx.provenance import git_commit, hardware

TEMPLATE = Path(__file__).with_name("gpu_check_template.md")
# Two validation curves of the same seed agree when every point is this close (nats per
# target point): float sums in another order change the weights' last bits, and 300 steps
# grow that into differences of ~1e-3..1e-2; a device bug (a wrong kernel, a lost mask)
# costs tenths.
CURVE_TOLERANCE = 0.05


def val_curve(metrics: Path) -> dict[int, float]:
    """``{step: validation LL}`` from a run's ``metrics.csv`` (rows that validated)."""
    if not metrics.is_file():
        return {}
    with metrics.open(newline="") as f:
        return {int(r["step"]): float(r["val_ll"]) for r in csv.DictReader(f) if r.get("val_ll")}


def compare_curves(cpu: dict[int, float], gpu: dict[int, float]) -> tuple[list[str], float]:
    """Markdown rows ``| step | CPU | GPU | GPU - CPU |`` at the steps both validated, and the
    largest absolute difference (NaN if they share no step)."""
    rows, gaps = [], []
    for step in sorted(set(cpu) & set(gpu)):
        gap = gpu[step] - cpu[step]
        gaps.append(abs(gap))
        rows.append(f"| {step} | {cpu[step]:.4f} | {gpu[step]:.4f} | {gap:+.4f} |")
    return rows, max(gaps) if gaps else float("nan")


def pytest_summary(text: str) -> str:
    """pytest's last summary line (``== 40 passed, 3 skipped in 12.3s ==``), without the
    ``=`` rule; ``"no pytest output"`` where there is none."""
    lines = [
        ln.strip("= ").strip()
        for ln in text.splitlines()
        if re.search(r"\d+ (passed|failed|skipped|deselected|error)", ln)
    ]
    return lines[-1] if lines else "no pytest output"


def statuses(work: Path) -> dict[str, int]:
    """``{step: exit code}`` from ``status.txt``."""
    path = work / "status.txt"
    if not path.is_file():
        return {}
    return {
        k: int(v) for k, v in (ln.split() for ln in path.read_text().splitlines() if ln.strip())
    }


def _read(path: Path, missing: str) -> str:
    return path.read_text().strip() if path.is_file() else missing


def _trained_seconds(run: Path) -> str:
    """A run's training seconds, from its ``model.pt``'s record or the metrics' speeds."""
    metrics = run / "metrics.csv"
    if not metrics.is_file():
        return "not run"
    with metrics.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("steps_per_s")]
    if not rows:
        return "unknown"
    total, previous = 0.0, 0
    for r in rows:
        total += (int(r["step"]) - previous) / float(r["steps_per_s"])
        previous = int(r["step"])
    return f"{total:.0f} s for {previous} steps"


def verdict(gap: float, codes: dict[str, int], dry_run: bool = False) -> str:
    """The page's reading, from the curves' largest gap and each step's exit code."""
    failed = [step for step, code in codes.items() if code != 0]
    parts = [f"Steps that failed: {', '.join(failed)}." if failed else "Every step ran."]
    if dry_run:
        return " ".join(
            parts
            + [
                "A dry run: both KR-1 runs were on the CPU, so the curves "
                "match by construction; nothing here is a GPU result."
            ]
        )
    if gap != gap:  # NaN
        parts.append("The KR-1 curves could not be compared (a run wrote no validation).")
    elif gap <= CURVE_TOLERANCE:
        parts.append(
            f"The KR-1 validation curves of the CPU and the GPU agree within {gap:.4f} nats "
            f"(tolerance {CURVE_TOLERANCE}): training on the GPU computes what it does on "
            "the CPU."
        )
    else:
        parts.append(
            f"The KR-1 validation curves differ by up to {gap:.4f} nats, beyond the "
            f"tolerance of {CURVE_TOLERANCE}: look for a device-dependent difference."
        )
    return " ".join(parts)


def page(work: Path, dry_run: bool, command: str) -> str:
    """The filled template for the outputs in ``work``."""
    rows, gap = compare_curves(val_curve(work / "kr1-cpu/metrics.csv"),
                               val_curve(work / "kr1-gpu/metrics.csv"))  # fmt: skip
    codes = statuses(work)
    values = {
        "title": "Dry run (CPU, tiny sizes): not a GPU measurement" if dry_run else "GPU check",
        "command": command,
        "commit": git_commit(),
        "hardware": hardware(),
        "status": "\n".join(f"| {k} | {v} |" for k, v in codes.items()) or "| (none) | |",
        "cuda_tests": pytest_summary(_read(work / "cuda-tests.txt", "")),
        "scaling": _read(work / "scaling.txt", "not run").splitlines()[-1],
        "curve_rows": "\n".join(rows) or "| not run | | | |",
        "max_gap": f"{gap:.4f}",
        "tolerance": f"{CURVE_TOLERANCE}",
        "cpu_time": _trained_seconds(work / "kr1-cpu"),
        "gpu_time": _trained_seconds(work / "kr1-gpu"),
        "nvidia_smi": _read(work / "nvidia-smi.txt", "nvidia-smi: not run"),
        "reading": verdict(gap, codes, dry_run),
    }
    return Template(TEMPLATE.read_text()).substitute(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, help="the script's work folder")
    parser.add_argument("--out", required=True, help="the page to write (.md; .json beside)")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--command", default="bash benchmarks/gpu_check.sh")
    args = parser.parse_args(argv)
    work, out = Path(args.work), Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(work, args.dry_run, args.command))
    curves = {d: val_curve(work / f"kr1-{d}/metrics.csv") for d in ("cpu", "gpu")}
    out.with_suffix(".json").write_text(
        json.dumps({"status": statuses(work), "val_ll": curves}, indent=2)
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
