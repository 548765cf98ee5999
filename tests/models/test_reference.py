"""The ``context-moments`` reference model: its moments, the N(0, 1) shrinkage, and errors.
(The shared suite in test_models.py covers shapes, masks, permutations and equivariance.)"""

from __future__ import annotations

import pytest
import torch

import tnpx


def test_moments_are_the_context_moments_shrunk_towards_the_standard_normal():
    yc = torch.tensor([[[1.0, -2.0], [3.0, 0.0], [5.0, 2.0]]])  # [1, 3, 2]
    xc, xt = torch.randn(1, 3, 1), torch.randn(1, 4, 1)
    model = tnpx.build_model("context-moments", 1, 2, prior_weight=1.0)
    pred = model(xc, yc, xt)
    # y1: sum 9, sum of squares 35 -> mean 9/4, second moment 36/4 = 9, variance 9 - 81/16
    # y2: sum 0, sum of squares 8 -> mean 0, second moment 9/4
    want_mean = torch.tensor([9 / 4, 0.0])
    want_std = torch.tensor([9 - 81 / 16, 9 / 4]).sqrt()
    torch.testing.assert_close(pred.mean, want_mean.expand(1, 4, 2))
    torch.testing.assert_close(pred.stddev, want_std.expand(1, 4, 2))


def test_large_context_approaches_the_plain_moments():
    g = torch.Generator().manual_seed(0)
    yc = 3 + 0.5 * torch.randn(2, 20_000, 1, generator=g)
    model = tnpx.build_model("context-moments", 1, 1)
    pred = model(torch.zeros(2, 20_000, 1), yc, torch.zeros(2, 3, 1))
    torch.testing.assert_close(pred.mean[:, 0], yc.mean(1), atol=1e-3, rtol=0)
    torch.testing.assert_close(pred.stddev[:, 0], yc.std(1), atol=1e-3, rtol=0)


def test_empty_or_constant_context_keeps_a_positive_variance():
    model = tnpx.build_model("context-moments", 1, 1, prior_weight=2.0)
    empty = model(torch.zeros(1, 0, 1), torch.zeros(1, 0, 1), torch.zeros(1, 2, 1))
    torch.testing.assert_close(empty.mean, torch.zeros(1, 2, 1))
    torch.testing.assert_close(empty.stddev, torch.ones(1, 2, 1))
    constant = model(torch.zeros(1, 5, 1), torch.full((1, 5, 1), 4.0), torch.zeros(1, 1, 1))
    # mean 20/7, second moment (80 + 2)/7
    torch.testing.assert_close(
        constant.stddev, torch.tensor(82 / 7 - 400 / 49).sqrt().view(1, 1, 1)
    )


def test_masked_points_do_not_count():
    model = tnpx.build_model("context-moments", 1, 1)
    yc = torch.tensor([[[1.0], [100.0], [3.0]]])
    mask = torch.tensor([[True, False, True]])
    masked = model(torch.zeros(1, 3, 1), yc, torch.zeros(1, 2, 1), mask_c=mask)
    kept = model(torch.zeros(1, 2, 1), yc[:, [0, 2]], torch.zeros(1, 2, 1))
    torch.testing.assert_close(masked.mean, kept.mean)
    torch.testing.assert_close(masked.stddev, kept.stddev)


@pytest.mark.parametrize("option", [{"prior_weight": 0.0}, {"min_std": -1.0}])
def test_bad_options_fail_clearly(option):
    with pytest.raises(ValueError, match=next(iter(option))):
        tnpx.build_model("context-moments", 1, 1, **option)


def test_training_it_fails_clearly(tmp_path):
    from tnpx.config import load_config
    from tnpx.training.loop import fit

    overrides = ["model.name=context-moments", f"train.out_dir={tmp_path}", "train.progress=false"]
    with pytest.warns(UserWarning, match="ignoring the config file's model options"):
        cfg = load_config("configs/kr1-rbf-tnpx-budget.yaml", overrides)
    with pytest.raises(ValueError, match="no trainable parameters"):
        fit(cfg)
