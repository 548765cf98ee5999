"""The largest input magnitude every registered model stays finite under (issue 23).

For each model (its default sizes and the test-suite's small sizes), each dtype and each
magnitude ``M`` (powers of ten from ``1e2``), it calls the model on tasks whose values reach ``M``:

- ``shifted``: context and targets near ``+M`` (a task moved far along x);
- ``opposite``: context near ``+M``, targets near ``-M`` (relative positions of ``2M``);
- ``far-target``: context near 0, targets at ``+-M``;
- ``big-y``: inputs near 0, context outputs of size ``M``.

Magnitudes: every power of ten up to the dtype's largest value (every fifth for float64).

and records the smallest ``M`` at which a mean or std is not finite (or the call raises).
Written to ``results/perf/input_bound.md`` / ``.json``; the bound in
:mod:`tnpx.input_checks` (``MAX_ABS_INPUT``) is chosen from it with a margin.

    python -m benchmarks.input_bound [--dtypes float32 float64] [--sizes default small]
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import torch

import tnpx
from benchmarks.harness import write_results
from tnpx.models import (
    REGISTRY,
    SMALL_SIZES,  # the test suite's small sizes
    options_taken,
)
from tnpx.provenance import command_line

PATTERNS = ("shifted", "opposite", "far-target", "big-y")


def magnitudes(dtype) -> list[float]:
    """Powers of ten up to the dtype's largest finite value: every one for 32 bits or fewer,
    every fifth for float64 (each is a model call per pattern, and there are 300 of them)."""
    top = int(torch.finfo(dtype).max.__float__().__format__(".0e").split("e")[1])
    return [10.0**k for k in range(2, top + 1, 1 if torch.finfo(dtype).bits <= 32 else 5)]


def task(pattern: str, m: float, dim_x: int, dim_y: int, dtype) -> tuple:
    """``(xc, yc, xt)`` of one task, batch 1, 8 context points and 8 targets."""
    g = torch.Generator().manual_seed(0)
    xc = torch.rand(1, 8, dim_x, generator=g, dtype=torch.float64) * 4 - 2
    yc = torch.randn(1, 8, dim_y, generator=g, dtype=torch.float64)
    xt = torch.rand(1, 8, dim_x, generator=g, dtype=torch.float64) * 4 - 2
    if pattern == "shifted":
        xc, xt = xc + m, xt + m
    elif pattern == "opposite":
        xc, xt = xc + m, xt - m
    elif pattern == "far-target":
        xt = torch.where(xt > 0, xt.new_tensor(m), xt.new_tensor(-m))
    else:
        yc = yc * m
    return xc.to(dtype), yc.to(dtype), xt.to(dtype)


def finite_at(model, pattern: str, m: float, dtype) -> str | None:
    """None where the prediction is finite, else why not."""
    dim_y = max(1, model.dim_y)
    xc, yc, xt = task(pattern, m, model.dim_x, dim_y, dtype)
    try:
        torch.manual_seed(0)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pred = tnpx.NeuralProcess.forward(model, xc, yc, xt)  # past any input bound
            ok = torch.isfinite(pred.mean).all() and torch.isfinite(pred.stddev).all()
    except Exception as err:  # an overflow may also surface as an error (Cholesky, OOM)
        return f"{type(err).__name__}: {str(err).splitlines()[0][:80]}"
    return None if ok else "non-finite"


def _raw_validate(model):
    """Bypass the model's input bound so the probe sees what the arithmetic does."""
    from tnpx.input_checks import validate_inputs

    def validate(xc, yc, xt, mask_c):
        ref = model._reference()
        return validate_inputs(
            xc, yc, xt, mask_c, model.dim_x, model.dim_y, ref.dtype, ref.device, bounded=False
        )

    return validate


def first_failure(name: str, sizes: str, dtype) -> dict:
    dim_y = 2 if name == "mt-gp" else 1
    overrides = options_taken(name, SMALL_SIZES) if sizes == "small" else {}
    if name in ("gp", "mt-gp") and sizes == "default":
        overrides = {"n_iterations": 200}  # the fit's length does not change the arithmetic
    torch.manual_seed(0)
    model = tnpx.build_model(name, 1, dim_y, **overrides).to(dtype).eval()
    model._validate = _raw_validate(model)
    out = {}
    for pattern in PATTERNS:
        out[pattern] = None
        for m in magnitudes(dtype):
            why = finite_at(model, pattern, m, dtype)
            if why:
                out[pattern] = {"magnitude": m, "why": why}
                break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    parser.add_argument("--sizes", nargs="+", default=["default", "small"])
    parser.add_argument("--models", nargs="+", default=tnpx.list_models())
    parser.add_argument("--out", default="results/perf/input_bound")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for dtype_name in args.dtypes:
        dtype = getattr(torch, dtype_name)
        for sizes in args.sizes:
            for name in args.models:
                if name not in REGISTRY:
                    raise SystemExit(f"unknown model {name!r}")
                failures = first_failure(name, sizes, dtype)
                rows.append({"model": name, "sizes": sizes, "dtype": dtype_name, **failures})
                print(json.dumps(rows[-1]), flush=True)
    write_results(Path(args.out), rows, report(rows), indent=1)
    print(report(rows))


def report(rows: list[dict]) -> str:
    head = "| model | sizes | dtype | " + " | ".join(PATTERNS) + " |"
    lines = [head, "|" + " --- |" * (3 + len(PATTERNS))]
    for r in rows:
        cells = []
        for p in PATTERNS:
            f = r[p]
            cells.append("finite" if f is None else f"{f['magnitude']:.0e} ({f['why']})")
        lines.append(f"| {r['model']} | {r['sizes']} | {r['dtype']} | " + " | ".join(cells) + " |")
    fails = [r[p]["magnitude"] for r in rows for p in PATTERNS if r[p] is not None]
    by_dtype = {}
    for r in rows:
        for p in PATTERNS:
            if r[p] is not None:
                m = r[p]["magnitude"]
                by_dtype[r["dtype"]] = min(by_dtype.get(r["dtype"], m), m)
    smallest = ", ".join(f"{d}: {m:.0e}" for d, m in by_dtype.items()) or "none"
    return f"""# Input magnitudes at which each model's prediction stops being finite

**What**: the smallest magnitude ``M`` (powers of 10) at which a model's predictive mean or
std is not finite (or the call fails) when its inputs reach ``M``, per input pattern (see
`benchmarks/input_bound.py`); "finite" means it never failed. The model's own input
bound is bypassed. Batch 1, 8 context points, 8 targets, dim_x 1.

**Command**: `{command_line()}`

Smallest failing magnitude per dtype: {smallest} (of {len(fails)} failures).

{chr(10).join(lines)}
"""


if __name__ == "__main__":
    main()
