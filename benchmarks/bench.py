"""Measuring one model forward in a fresh process: wall time and peak memory, with a time
limit and a memory limit, so an out-of-memory point or a time-out is recorded as such instead
of taking the benchmark (or the machine) down.

``measure(spec)`` runs ``python -m benchmarks.bench`` with a JSON ``spec`` and returns a dict:
``status`` (``ok`` | ``oom`` | ``timeout`` | ``error``), ``seconds`` (median forward time),
``peak_mb`` (CPU: peak resident memory above the process's level before the forward; CUDA:
peak memory allocated by torch during the timed calls, weights and inputs included),
``message``, and for a finished point ``streamed`` (whether ``predict_streamed`` ran) and
``timed_calls`` (how many calls the median is over). A spec names the model, its options,
the sizes, the device and the dtype.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

OK, OOM, TIMEOUT, ERROR = "ok", "oom", "timeout", "error"
DTYPES = ("float32", "bfloat16", "float16", "float64")
ROOT = Path(__file__).resolve().parents[1]  # the child runs `-m benchmarks.bench` from here


def measure(spec: dict, timeout_s: float = 600, memory_gb: float = 16.0) -> dict:
    """Run one forward described by ``spec`` in a subprocess.

    spec keys: ``model`` (name), ``options`` (overrides), ``n_ctx``, ``n_tgt``, ``batch``
    (default 1), ``dim_x``/``dim_y`` (default 1), ``repeats`` (timed calls, default 3),
    ``device`` (default cpu), ``threads`` (torch threads, default: torch's choice),
    ``dtype`` (one of ``DTYPES``, default float32; model and inputs are cast), ``stream``
    (chunk size: the forward is ``model.predict_streamed(..., chunk_size=stream)`` for a
    model that is ``streamable()``; default None, the plain call),
    ``single_above_s`` (when the first call takes longer than this, it is the only timed
    call; default None: always ``repeats`` calls), ``compile`` (a ``torch.compile`` mode, or
    true for the device's default: the plain forward through
    :func:`tnpx.compile_for_inference`, its compiling first call never timed).

    One untimed warm-up call precedes the timed ones when ``repeats > 1`` and always on CUDA.
    ``memory_gb`` caps the child's address space above its size at start-up (CPU) or the
    memory torch's CUDA allocator may hold (CUDA, as a fraction of the device's memory).
    """
    env = {**os.environ, "TNPX_BENCH_MEMORY_GB": str(memory_gb)}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench", json.dumps(spec)],
            cwd=ROOT,
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
    # An allocation failure in C++ code aborts with std::bad_alloc rather than raising.
    text = proc.stderr.lower()
    out_of_memory = "memory" in text or "bad_alloc" in text or proc.returncode in (-9, 137)
    status = OOM if out_of_memory else ERROR
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


def _build(spec: dict, device, dtype):
    """The spec's model on ``device`` in ``dtype``, in eval mode, seeded."""
    import torch

    import tnpx

    torch.manual_seed(0)
    model = tnpx.build_model(
        spec["model"], spec.get("dim_x", 1), spec.get("dim_y", 1), **spec.get("options", {})
    )
    return model.to(device=device, dtype=dtype).eval()


def _inputs(spec: dict, device, dtype):
    """Random ``xc [b, n_ctx, dim_x]``, ``yc [b, n_ctx, dim_y]``, ``xt [b, n_tgt, dim_x]``."""
    import torch

    b, dim_x, dim_y = spec.get("batch", 1), spec.get("dim_x", 1), spec.get("dim_y", 1)
    xc = torch.rand(b, spec["n_ctx"], dim_x, device=device) * 4 - 2
    yc = torch.randn(b, spec["n_ctx"], dim_y, device=device)
    xt = torch.rand(b, spec["n_tgt"], dim_x, device=device) * 4 - 2
    return xc.to(dtype), yc.to(dtype), xt.to(dtype)


def _forward(model, xc, yc, xt, stream: int | None) -> tuple[Callable[[], object], bool]:
    """The call to time and whether it streams. Streaming needs a model that declares it
    (``streamable()``: targets that do not interact, a prediction that is not joint);
    otherwise the plain forward."""
    if stream and model.streamable():
        return (lambda: model.predict_streamed(xc, yc, xt, chunk_size=int(stream))), True
    return (lambda: model(xc, yc, xt)), False


def _compiled_forward(model, xc, yc, xt, mode):
    """The plain forward through :func:`tnpx.compile_for_inference` (``mode``: a
    ``torch.compile`` mode, or ``True`` for the device's default) and the compiled model
    (its ``fallback_reason`` says whether compiled code ran)."""
    from tnpx.apply import compile_for_inference

    compiled = compile_for_inference(model, mode=mode if isinstance(mode, str) else None)
    return (lambda: compiled(xc, yc, xt)), compiled


def _limit_memory(device) -> None:
    """Apply ``TNPX_BENCH_MEMORY_GB``: an address-space cap above the current size on CPU
    (RLIMIT_AS breaks the CUDA runtime, which reserves address space freely), a cap on the
    caching allocator on CUDA."""
    import torch

    limit = float(os.environ.get("TNPX_BENCH_MEMORY_GB", "0"))
    if limit <= 0:
        return
    if device.type == "cpu":
        cap = _vm_size_bytes() + int(limit * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    elif device.type == "cuda":
        total = torch.cuda.get_device_properties(device).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, limit * 2**30 / total), device)


def _time_one(call: Callable[[], object], device) -> float:
    """Seconds of one call, forced to finish (``.item()`` syncs the device)."""
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    pred = call()
    _ = pred.mean.sum().item()
    return time.perf_counter() - start


def _reset_peak(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def _timed_calls(call, device, repeats: int, single_above_s: float | None) -> list[float]:
    """Seconds of the timed calls: a warm-up first when ``repeats > 1`` or on CUDA; a warm-up
    slower than ``single_above_s`` is itself the one timed call (warm-up effects are small
    beside a call that long, and repeating it would multiply the point's time)."""
    warm = repeats > 1 or device.type == "cuda"
    if warm:
        _reset_peak(device)
        first = _time_one(call, device)
        if single_above_s is not None and first > single_above_s:
            return [first]
    _reset_peak(device)  # the peak of the timed calls, not of the warm-up's one-off buffers
    return [_time_one(call, device) for _ in range(repeats)]


def _run(spec: dict) -> dict:
    import torch

    if spec.get("threads"):
        torch.set_num_threads(int(spec["threads"]))
    device = torch.device(spec.get("device", "cpu"))
    dtype_name = spec.get("dtype", "float32")
    if dtype_name not in DTYPES:
        raise ValueError(f"dtype {dtype_name!r} is not one of {', '.join(DTYPES)}")
    dtype = getattr(torch, dtype_name)
    model = _build(spec, device, dtype)
    xc, yc, xt = _inputs(spec, device, dtype)
    compiled = None
    if spec.get("compile"):
        call, compiled = _compiled_forward(model, xc, yc, xt, spec["compile"])
        streamed = False
    else:
        call, streamed = _forward(model, xc, yc, xt, spec.get("stream"))
    _limit_memory(device)
    before = _rss_mb()
    with torch.no_grad():
        if compiled is not None:  # the first call compiles: never time it
            _time_one(call, device)
        times = _timed_calls(
            call, device, max(int(spec.get("repeats", 3)), 1), spec.get("single_above_s")
        )
    peak = (
        torch.cuda.max_memory_allocated(device) / 2**20
        if device.type == "cuda"
        else _peak_mb() - before
    )
    return {
        "status": OK,
        "seconds": statistics.median(times),
        "peak_mb": peak,
        "message": "",
        "streamed": streamed,
        "timed_calls": len(times),
        **(
            {"compiled": compiled.fallback_reason is None, "mode": compiled.mode}
            if compiled is not None
            else {}
        ),
    }


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
