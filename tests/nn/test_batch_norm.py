"""GridBatchNorm (tnpx/nn/batch_norm.py) and the ResNet grid CNN (tnpx/nn/cnn.py): batch
statistics as torch's BatchNorm over the valid grid points only, frozen statistics, and boxes of
different sizes in one batch computing what each computes alone."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from tnpx.nn import GridBatchNorm, ResNetCNN, build_grid_cnn


def test_batch_statistics_are_torch_batch_norm():
    torch.manual_seed(0)
    z = torch.randn(3, 4, 10)
    ours, theirs = GridBatchNorm(4), torch.nn.BatchNorm1d(4)
    with torch.no_grad():
        ours.weight.normal_(), ours.bias.normal_()
        theirs.load_state_dict(ours.state_dict())
    assert_close(ours.train()(z), theirs.train()(z))
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert_close(getattr(ours, name), getattr(theirs, name))
    assert_close(ours.eval()(z), theirs.eval()(z))


@pytest.mark.parametrize("dim", [1, 2])
def test_batch_statistics_count_only_valid_points(dim):
    torch.manual_seed(1)
    shape = (6,) * dim
    box4 = (slice(0, 4),) * dim
    z = torch.randn(2, 3, *shape)
    valid = torch.zeros(2, 1, *shape)
    valid[(0, slice(None)) + box4] = 1  # a 4-point box
    valid[1] = 1  # a full box
    padded = z.masked_fill(valid == 0, 100.0)  # padding must not count
    norm = GridBatchNorm(3).train()
    out = norm(padded, valid)
    points = torch.cat([z[(0, slice(None)) + box4].flatten(1), z[1].flatten(1)], 1)  # [3, n]
    reference = torch.nn.BatchNorm1d(3).train()
    expected = reference(points.T[None].transpose(1, 2))[0]
    got = torch.cat([out[(0, slice(None)) + box4].flatten(1), out[1].flatten(1)], 1)
    assert_close(got, expected)
    assert_close(norm.running_var, reference.running_var)


def test_frozen_statistics_never_move():
    norm = GridBatchNorm(2, "frozen").train()
    z = torch.randn(4, 2, 8) * 3 + 1
    out = norm(z)
    assert_close(out, z / (1 + 1e-5) ** 0.5)  # mean 0, variance 1, weight 1, bias 0
    assert torch.equal(norm.running_mean, torch.zeros(2)) and int(norm.num_batches_tracked) == 0


def test_bad_statistics_fail_clearly():
    with pytest.raises(ValueError, match="batch_norm must be"):
        GridBatchNorm(2, "group")
    with pytest.raises(ValueError, match="cnn must be"):
        build_grid_cnn("resnext", 1, 2, 4, 2, 3)


@pytest.mark.parametrize("dim", [1, 2])
@pytest.mark.parametrize("statistics", ["batch", "frozen"])
def test_resnet_boxes_share_a_batch(dim, statistics):
    """In eval mode each box computes what it computes alone (zero padding at its own edge)."""
    torch.manual_seed(2)
    net = ResNetCNN(dim, 2, 4, 2, 5, statistics)
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0, 0.5)
    net.eval()
    z = torch.randn(2, 2, *(9,) * dim)
    box6 = (slice(0, 6),) * dim
    valid = torch.ones(2, 1, *(9,) * dim)
    valid[1] = 0
    valid[(1, slice(None)) + box6] = 1  # task 1's box is 6 points per axis
    out = net(z, valid)
    alone = net(z[(slice(1, 2), slice(None)) + box6])
    assert_close(out[(slice(1, 2), slice(None)) + box6], alone, atol=1e-5, rtol=1e-5)
    assert (out[1] * (1 - valid[1])).abs().max() == 0  # zero outside the box
    assert_close(out[0:1], net(z[0:1]), atol=1e-5, rtol=1e-5)
