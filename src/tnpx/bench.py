"""Measuring one model forward in a fresh process: wall time and peak memory, with a time
limit and an address-space limit, so an out-of-memory point or a time-out is recorded as
such instead of taking the benchmark (or the machine) down.

``measure(spec)`` runs ``python -m tnpx.bench`` with a JSON ``spec`` and returns a dict:
``status`` (``ok`` | ``oom`` | ``timeout`` | ``error``), ``seconds`` (median forward time),
``peak_mb`` (peak resident memory above the process's level before the forward) and
``message``. A spec names the model, its options, the sizes and the device.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time

OK, OOM, TIMEOUT, ERROR = "ok", "oom", "timeout", "error"


def measure(spec: dict, timeout_s: float = 600, memory_gb: float = 16.0) -> dict:
    """Run one forward described by ``spec`` in a subprocess.

    spec keys: ``model`` (name), ``options`` (overrides), ``n_ctx``, ``n_tgt``, ``batch``
    (default 1), ``dim_x``/``dim_y`` (default 1), ``repeats`` (default 3), ``device``
    (default cpu), ``threads`` (torch threads, default: torch's choice).
    ``memory_gb`` caps the child's address space above its size at start-up.
    """
    env = {**os.environ, "TNPX_BENCH_MEMORY_GB": str(memory_gb)}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tnpx.bench", json.dumps(spec)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return {
            "status": TIMEOUT,
            "seconds": None,
            "peak_mb": None,
            "message": f"over {timeout_s:.0f} s",
        }
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode == 0 and lines:
        return json.loads(lines[-1])
    tail = (proc.stderr.strip().splitlines() or ["killed"])[-1]
    status = OOM if ("memory" in proc.stderr.lower() or proc.returncode in (-9, 137)) else ERROR
    return {"status": status, "seconds": None, "peak_mb": None, "message": tail[:200]}


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _vm_size_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _run(spec: dict) -> dict:
    import torch

    import tnpx

    if spec.get("threads"):
        torch.set_num_threads(int(spec["threads"]))
    device = torch.device(spec.get("device", "cpu"))
    torch.manual_seed(0)
    model = (
        tnpx.build_model(
            spec["model"], spec.get("dim_x", 1), spec.get("dim_y", 1), **spec.get("options", {})
        )
        .to(device)
        .eval()
    )
    b, dim_x, dim_y = spec.get("batch", 1), spec.get("dim_x", 1), spec.get("dim_y", 1)
    xc = torch.rand(b, spec["n_ctx"], dim_x, device=device) * 4 - 2
    yc = torch.randn(b, spec["n_ctx"], dim_y, device=device)
    xt = torch.rand(b, spec["n_tgt"], dim_x, device=device) * 4 - 2
    limit = float(os.environ.get("TNPX_BENCH_MEMORY_GB", "0"))
    if limit > 0 and device.type == "cpu":
        cap = _vm_size_bytes() + int(limit * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    before = _rss_mb()
    times = []
    with torch.no_grad():
        for _ in range(max(int(spec.get("repeats", 3)), 1)):
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            pred = model(xc, yc, xt)
            _ = pred.mean.sum().item()  # forces the computation (and a device sync)
            times.append(time.perf_counter() - start)
    peak = (
        torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else _peak_mb() - before
    )
    return {"status": OK, "seconds": statistics.median(times), "peak_mb": peak, "message": ""}


if __name__ == "__main__":
    try:
        print(json.dumps(_run(json.loads(sys.argv[1]))))
    except (MemoryError, RuntimeError) as err:
        text = str(err)
        kind = OOM if ("alloc" in text.lower() or "memory" in text.lower()) else ERROR
        print(
            json.dumps(
                {
                    "status": kind,
                    "seconds": None,
                    "peak_mb": None,
                    "message": text.splitlines()[0][:200] if text else type(err).__name__,
                }
            )
        )
