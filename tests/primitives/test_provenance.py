"""tnpx.provenance: what every results file states (the demo's report and the lab's files):
the command as typed and the commit, dirty only for uncommitted code."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

from tnpx import provenance


def test_git_commit_ignores_logs_and_results_but_not_code(monkeypatch):
    """A results file's commit is ``+dirty`` only for uncommitted code, not for the long runs'
    growing logs or other results."""

    def fake(status):
        def run(args, **kw):
            out = "abc1234\n" if "rev-parse" in args else status
            return SimpleNamespace(stdout=out)

        return run

    monkeypatch.setattr(subprocess, "run", fake(" M long-runs/x/metrics.csv\n M results/a.md\n"))
    assert provenance.git_commit() == "abc1234"
    monkeypatch.setattr(subprocess, "run", fake(" M long-runs/x/metrics.csv\n M src/tnpx/a.py\n"))
    assert provenance.git_commit() == "abc1234+dirty"


def _main_module(monkeypatch, spec_name: str | None) -> None:
    """Stand in for ``__main__``: run with ``-m spec_name``, or as a file or script (None)."""
    spec = SimpleNamespace(name=spec_name) if spec_name else None
    monkeypatch.setitem(sys.modules, "__main__", SimpleNamespace(__spec__=spec))


def test_command_line_names_a_module_run_with_dash_m(monkeypatch, tmp_path):
    """``python -m experiments.kr_tables`` puts the module's file in argv[0]; recorded as a
    file it would not run (its imports need the package), so it is recorded as typed."""
    _main_module(monkeypatch, "experiments.kr_tables")
    file = str(tmp_path / "experiments" / "kr_tables.py")
    monkeypatch.setattr(sys, "argv", [file, "--tables", "kr 1"])
    assert provenance.command_line() == "python -m experiments.kr_tables --tables 'kr 1'"
    _main_module(monkeypatch, "benchmarks.__main__")  # a package run with -m
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "benchmarks" / "__main__.py")])
    assert provenance.command_line() == "python -m benchmarks"


def test_command_line_of_the_console_script_and_of_a_file(monkeypatch, tmp_path):
    _main_module(monkeypatch, None)
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "bin" / "tnpx"), "demo", "--quick"])
    assert provenance.command_line() == "tnpx demo --quick"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "examples" / "run.py"), "--fast"])
    assert provenance.command_line() == "python examples/run.py --fast"
