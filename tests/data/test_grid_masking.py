"""The ``grid`` source's missing cells: masked, never context or target, windows drawn while
``min_valid`` of their cells are valid, one warning counting what is dropped; and a complete
field (or ``min_valid: 1.0``) draws the very batches it drew before masking existed."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest

from tests.helpers.small_grids import grid, make_dataset
from tnpx.data import batch_at


def _digest(batch) -> str:
    h = hashlib.sha256()
    for name in ("xc", "yc", "xt", "yt"):
        h.update(getattr(batch, name).numpy().tobytes())
    return h.hexdigest()[:16]


# Batches drawn by the sampler before missing cells were masked (commit 1d58530), pinned:
# (step, split, n_ctx, digest of xc, yc, xt, yt).
PINNED = {
    "full": [
        (0, "train", 17, "d2b0cad3cf1bfacd"),
        (5, "train", 19, "44a3168aac04abfe"),
        (1, "val", 10, "68e7d950a2aa084c"),
        (2, "test", 13, "70abbe7a3aaa1079"),
    ],
    "holes": [
        (0, "train", 17, "cd6e1f7fe50a5ac7"),
        (5, "train", 19, "d9387fbe94e7a79c"),
        (1, "val", 10, "f0bda3a1d755e370"),
        (2, "test", 13, "ca0d50af300e53f2"),
    ],
}


def _holes():
    data = make_dataset()
    data["t2m"][3:9, 0:5, 0:6] = np.nan
    data["z"][10, 12] = np.nan
    return data


@pytest.mark.parametrize(("name", "options"), [("full", {}), ("holes", {"min_valid": 1.0})])
def test_batches_are_those_drawn_before_masking(tmp_path, name, options):
    """A complete field draws the same batches bit for bit; ``min_valid: 1.0`` gives the old
    rule (a window with a missing cell is never drawn) and its batches."""
    (make_dataset() if name == "full" else _holes()).to_netcdf(tmp_path / "t2m.nc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sampler = grid(tmp_path / "t2m.nc", static=["z"], **options)
    for step, split, n_ctx, digest in PINNED[name]:
        batch = batch_at(sampler, step, split=split)
        assert batch.xc.shape[1] == n_ctx and batch.mask_c is None and batch.mask_t is None
        assert _digest(batch) == digest, (step, split)
