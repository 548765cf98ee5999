"""The prepared GPU check: ``benchmarks/gpu_check.sh`` (its dry run on the CPU) and the page
``benchmarks/gpu_check_report.py`` fills in."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import gpu_check_report as report

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"


def write_metrics(folder: Path, val: dict[int, float]) -> None:
    folder.mkdir(parents=True)
    rows = ["step,loss,lr,steps_per_s,val_ll"]
    rows += [f"{s},1.0,0.001,2.0,{v}" for s, v in val.items()]
    rows.insert(1, "5,1.2,0.001,2.0,")  # a row that did not validate
    (folder / "metrics.csv").write_text("\n".join(rows) + "\n")


def test_every_device_parametrised_test_file_is_in_the_script():
    """A test file that parametrises over devices runs in the check: the script's
    ``CUDA_TESTS`` lists every file that imports ``tests.helpers.devices``."""
    listed = set(re.findall(r"^\s+(tests/\S+\.py)$", SCRIPT.read_text(), re.M))
    using = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("test_*.py")
        if re.search(r"^from tests\.helpers\.devices import", p.read_text(), re.M)
    }
    assert using and listed == using


def test_the_curves_are_compared_at_the_steps_both_validated(tmp_path):
    write_metrics(tmp_path / "kr1-cpu", {50: -1.0, 100: -0.5})
    write_metrics(tmp_path / "kr1-gpu", {50: -1.01, 100: -0.4, 150: 0.0})
    rows, gap = report.compare_curves(
        report.val_curve(tmp_path / "kr1-cpu/metrics.csv"),
        report.val_curve(tmp_path / "kr1-gpu/metrics.csv"),
    )
    assert rows == ["| 50 | -1.0000 | -1.0100 | -0.0100 |", "| 100 | -0.5000 | -0.4000 | +0.1000 |"]
    assert gap == pytest.approx(0.1)
    assert "beyond the tolerance" in report.verdict(gap, {"kr1-gpu": 0})
    assert "agree within 0.0100" in report.verdict(0.01, {"kr1-gpu": 0})
    assert "Steps that failed: scaling" in report.verdict(0.01, {"scaling": 124})


def test_the_page_fills_every_field_of_the_template(tmp_path):
    write_metrics(tmp_path / "kr1-cpu", {50: -1.0})
    (tmp_path / "status.txt").write_text("cuda-tests 0\nkr1-cpu 0\nkr1-gpu 1\n")
    (tmp_path / "cuda-tests.txt").write_text("....\n===== 40 passed, 3 skipped in 9.1s =====\n")
    text = report.page(tmp_path, dry_run=False, command="bash benchmarks/gpu_check.sh")
    assert "$" not in text.replace("$$", "")  # no placeholder left
    assert "40 passed, 3 skipped in 9.1s" in text and "| kr1-gpu | 1 |" in text
    assert "Steps that failed: kr1-gpu" in text and "nvidia-smi: not run" in text


@pytest.mark.slow
def test_the_dry_run_runs_every_step_on_the_cpu(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    command = ["bash", str(SCRIPT), "--dry-run", "--out", str(tmp_path)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    page = (tmp_path / "gpu-check.md").read_text()
    assert page.startswith("# Dry run (CPU, tiny sizes)")
    for step in ("cuda-tests", "scaling", "kr1-cpu", "kr1-gpu"):
        assert f"| {step} | 0 |" in page
    assert "| 5 |" in page and "| 10 |" in page  # both curves, compared step by step
    assert list((tmp_path / "scaling").glob("cpu-*.md"))  # the KR-5 report, not results/
