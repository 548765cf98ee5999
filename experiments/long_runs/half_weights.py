"""Store a finished long run's ``model.pt`` with half-precision weights, to keep the repository
within its budget (a fresh clone's ``.git`` may grow by under 30 MB a phase; the TE-1
transformer rows' float32 weights alone would take ~17 MB of what was left).

    python -m experiments.long_runs.half_weights long-runs/te1-te-pt-tnp/model.pt

Every floating-point tensor of the checkpoint's ``state_dict`` becomes float16 (each weight
to ~3 significant digits; checked to be finite); the record says so (``stored_as:
float16``) and keeps everything else. :func:`tnpx.load` builds the model in its own dtype
(``record["dtype"]``, float32) and ``load_state_dict`` casts the weights up, so the file
loads and predicts as any other; what it predicts is the rounded weights' prediction, and a
run's scores are computed from the file as stored. Applied to the runs in
:data:`HALF_WEIGHT_RUNS` only (those finished after the budget was short), never to a
checkpoint another commit already stored: a committed ``model.pt`` keeps predicting the
numbers it did.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

from tnpx.checkpoint import read_checkpoint

# the runs whose model.pt is stored at half precision (experiments/long_runs/plans/te1-kr3.md)
HALF_WEIGHT_RUNS = ("te1-te-pt-tnp", "te1-pt-tnp-ist", "te1-te-tnp-rope")


def store_half(path: str | os.PathLike) -> tuple[int, int]:
    """Rewrite the checkpoint at ``path`` with float16 weights; returns its size in bytes
    before and after. A checkpoint already stored so is left as it is.

    Raises:
        ValueError: a weight that float16 cannot hold (it would become inf).
    """
    path = Path(path)
    before = path.stat().st_size
    record = read_checkpoint(path)
    if record.get("stored_as") == "float16":
        return before, before
    state = {}
    for key, value in record["state_dict"].items():
        if value.is_floating_point():
            value = value.to(torch.float16)
            if not bool(torch.isfinite(value).all()):
                raise ValueError(f"{path}: weight {key} exceeds float16's range")
        state[key] = value
    record = {**record, "state_dict": state, "stored_as": "float16"}
    part = path.with_suffix(".part")
    torch.save(record, part)
    part.replace(path)  # whole or not at all
    return before, path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="model.pt files")
    for path in parser.parse_args(argv).paths:
        before, after = store_half(path)
        print(f"{path}: {before / 2**20:.2f} MiB -> {after / 2**20:.2f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
