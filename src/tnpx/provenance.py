"""What every results file states: the command, commit, hardware and software.

``tnpx demo`` writes them into its report, and the lab (``experiments/`` and ``benchmarks/`` in
the repository) into every results file it writes.
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys

import torch


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def hardware() -> str:
    """E.g. ``AMD EPYC, 2 cores (torch threads 2); torch 2.13.0+cpu; Python 3.11.7``."""
    if torch.cuda.is_available():
        device = f"GPU {torch.cuda.get_device_name(0)}"
    else:
        device = (
            f"CPU {cpu_name()}, {os.cpu_count()} cores (torch threads {torch.get_num_threads()})"
        )
    return f"{device}; torch {torch.__version__}; Python {platform.python_version()}"


# Paths whose uncommitted changes say nothing about the code that produced a result: the long
# runs' logs and checkpoints grow while they train beside every other measurement.
NOT_CODE = ("long-runs/", "results/")


def git_commit() -> str:
    """Short commit hash of the working tree (``+dirty`` when it has uncommitted changes
    outside :data:`NOT_CODE`)."""
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.splitlines()
        dirty = [line for line in status if not line[3:].startswith(NOT_CODE)]
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (rev + ("+dirty" if dirty else "")) if rev else "unknown"


def command_line() -> str:
    """The command that is running, as typed: ``tnpx ...`` for the console script,
    ``python -m experiments.paper_tables.build ...`` for a module run with ``-m``,
    ``python path/to/script.py ...`` for a file."""
    argv = list(sys.argv)
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if argv and os.path.basename(argv[0]) == "tnpx":
        argv[0] = "tnpx"
    elif argv and main_spec is not None and argv[0].endswith(".py"):
        # `python -m NAME`: argv[0] is the module's file, which would not run as a file
        argv = ["python", "-m", main_spec.name.removesuffix(".__main__")] + argv[1:]
    elif argv and argv[0].endswith(".py"):
        argv = ["python", os.path.relpath(argv[0])] + argv[1:]
    return " ".join(shlex.quote(a) for a in argv)


__all__ = [
    "command_line",
    "cpu_name",
    "git_commit",
    "hardware",
]
