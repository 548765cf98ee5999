"""Checkpoints saved by an earlier commit still load and predict the same numbers.

``tests/fixtures/checkpoints-v1/`` holds one small checkpoint per model and preset, written by
``tests/fixtures/make_checkpoints.py`` at the commit each file names (``saved_by``), before the
skeleton refactor renamed parameters; ``tnpx.load`` must migrate their keys."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import tnpx
from tnpx.checkpoint import read_checkpoint

FIXTURES = Path(__file__).parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
from make_checkpoints import fixture_task  # noqa: E402

FILES = sorted((FIXTURES / "checkpoints-v1").glob("*.pt"))
CHECKPOINTS = [f for f in FILES if f.name != "zoo-predictions.pt"]
# The expected predictions were recorded in float32 on another machine: CPUs differ in the
# vector width of their matmul kernels, so sums are rounded in another order (the CI machine
# differs from the recording one by up to 1.05e-6 absolute, 1e-5 relative, on the zoo's
# gp1d-tnp). A missing or wrongly migrated weight moves a prediction by orders of magnitude more.
SAME = {"atol": 1e-5, "rtol": 1e-5}


def test_every_model_of_format_1_has_a_fixture_and_still_exists():
    """The fixtures cover the 24 models tnpx had when they were written; models added since
    (e.g. ``te-tnp-rope``) never had a format-1 checkpoint."""
    names = {f.stem.split("@")[0] for f in CHECKPOINTS}
    assert len(names) == 24 and names <= set(tnpx.list_models())


@pytest.mark.parametrize("path", CHECKPOINTS, ids=lambda p: p.stem)
def test_old_checkpoint_loads_and_predicts_the_same(path):
    record = read_checkpoint(path)
    model = tnpx.load(path)
    xc, yc, xt, mask_c = fixture_task(model.dim_x, model.dim_y)
    torch.manual_seed(7)
    with torch.no_grad():
        pred = model(xc, yc, xt, mask_c=mask_c)
    torch.testing.assert_close(pred.mean, record["expected_mean"], **SAME)
    torch.testing.assert_close(pred.stddev, record["expected_stddev"], **SAME)


def test_shipped_zoo_predicts_what_it_did():
    recorded = torch.load(FIXTURES / "checkpoints-v1" / "zoo-predictions.pt", weights_only=True)
    for name, expected in recorded["predictions"].items():
        model = tnpx.pretrained(name)
        xc, yc, xt, mask_c = fixture_task(model.dim_x, model.dim_y)
        with torch.no_grad():
            pred = model(xc, yc, xt, mask_c=mask_c)
        torch.testing.assert_close(pred.mean, expected["mean"], **SAME)
        torch.testing.assert_close(pred.stddev, expected["stddev"], **SAME)
