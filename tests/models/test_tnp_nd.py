"""TNP-ND and ``JointGaussian``: the joint density equals torch's multivariate normal on the
same covariance, the marginals are its diagonal, samples have that covariance, and the model
reduces to ``tnp`` when its covariance factor is zero."""

from __future__ import annotations

import pytest
import torch
from torch.distributions import MultivariateNormal, Normal
from torch.testing import assert_close

import tnpx
from tests.helpers.small_models import make_task, predict, small_model
from tnpx.batch import Batch
from tnpx.distributions import JointGaussian

COVARIANCES = ["lowrank", "cholesky"]


def random_joint(covariance: str, b=2, n_tgt=3, dim_y=2, rank=4, seed=0) -> JointGaussian:
    g = torch.Generator().manual_seed(seed)
    n = n_tgt * dim_y
    loc = torch.randn(b, n_tgt, dim_y, generator=g, dtype=torch.float64)
    factor = torch.randn(b, n, rank, generator=g, dtype=torch.float64)
    diag = 0.1 + torch.rand(b, n, generator=g, dtype=torch.float64)
    if covariance == "lowrank":
        return JointGaussian.low_rank(loc, factor, diag)
    tril = torch.tril(torch.randn(b, n, n, generator=g, dtype=torch.float64), -1)
    return JointGaussian.cholesky(loc, tril + torch.diag_embed(diag))


def explicit_covariance(dist: JointGaussian) -> torch.Tensor:
    if dist.scale_tril is not None:
        return dist.scale_tril @ dist.scale_tril.mT
    return dist.cov_factor @ dist.cov_factor.mT + torch.diag_embed(dist.cov_diag)


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_joint_log_prob_is_the_multivariate_normal(covariance):
    dist = random_joint(covariance)
    cov = explicit_covariance(dist)
    y = torch.randn(dist.loc.shape, dtype=torch.float64)
    mvn = MultivariateNormal(dist.loc.flatten(1), covariance_matrix=cov)
    assert_close(dist.joint_log_prob(y), mvn.log_prob(y.flatten(1)))
    assert_close(dist.covariance_matrix, cov)


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_marginals_are_the_diagonal(covariance):
    dist = random_joint(covariance)
    variance = torch.diagonal(explicit_covariance(dist), dim1=-2, dim2=-1).reshape(dist.loc.shape)
    y = torch.randn(dist.loc.shape, dtype=torch.float64)
    assert_close(dist.mean, dist.loc)
    assert_close(dist.variance, variance)
    assert_close(dist.log_prob(y), Normal(dist.loc, variance.sqrt()).log_prob(y))


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_samples_have_the_covariance(covariance):
    dist = random_joint(covariance, b=1, n_tgt=2, dim_y=2, rank=2)
    torch.manual_seed(0)
    samples = dist.sample((40_000,))
    assert samples.shape == (40_000, 1, 2, 2)
    flat = samples[:, 0].flatten(1)
    cov = explicit_covariance(dist)[0]
    assert_close(flat.mean(0), dist.loc[0].flatten(), atol=0.05 * cov.diag().max().sqrt(), rtol=0)
    assert_close(torch.cov(flat.T), cov, atol=0.05 * cov.abs().max(), rtol=0)


def test_no_targets_give_zero_joint_log_density():
    dist = JointGaussian.low_rank(torch.zeros(2, 0, 1), torch.zeros(2, 0, 3), torch.zeros(2, 0))
    assert torch.equal(dist.joint_log_prob(torch.zeros(2, 0, 1)), torch.zeros(2))
    assert dist.sample((5,)).shape == (5, 2, 0, 1)


def test_joint_gaussian_needs_one_covariance_form():
    loc = torch.zeros(1, 2, 1)
    with pytest.raises(ValueError, match="either"):
        JointGaussian(loc)
    with pytest.raises(ValueError, match="either"):
        JointGaussian(loc, torch.zeros(1, 2, 1), torch.ones(1, 2), torch.eye(2)[None])


# --- the model --------------------------------------------------------------------------


@pytest.mark.parametrize("covariance", COVARIANCES)
@pytest.mark.parametrize("dim_y", [1, 2])
def test_model_joint_density_and_log_likelihood(covariance, dim_y):
    model = small_model("tnp-nd", 1, dim_y, covariance=covariance, rank=3)
    xc, yc, xt = make_task(2, 6, 5, 1, dim_y, seed=1)
    yt = torch.randn(2, 5, dim_y)
    pred = predict(model, xc, yc, xt)
    assert isinstance(pred, JointGaussian)
    cov = pred.covariance_matrix
    assert cov.shape == (2, 5 * dim_y, 5 * dim_y)
    mvn = MultivariateNormal(pred.mean.flatten(1), covariance_matrix=cov.double())
    assert_close(
        pred.joint_log_prob(yt).double(), mvn.log_prob(yt.flatten(1).double()), rtol=1e-4, atol=1e-3
    )
    with torch.no_grad():
        ll = model.log_likelihood(Batch(xc, yc, xt, yt), pred)
    assert_close(ll, pred.joint_log_prob(yt) / 5)
    assert_close(pred.variance, torch.diagonal(cov, dim1=-2, dim2=-1).reshape(2, 5, dim_y))


def test_cholesky_diagonal_stays_above_min_std():
    model = small_model("tnp-nd", covariance="cholesky", min_std=0.05)
    pred = predict(model, *make_task(2, 6, 7, seed=2))
    assert (torch.diagonal(pred.scale_tril, dim1=-2, dim2=-1) >= 0.05).all()


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_zero_factor_is_the_tnp(covariance):
    tnp_nd = small_model("tnp-nd", covariance=covariance)
    tnp = small_model("tnp", seed=1)
    missing = tnp_nd.load_state_dict(tnp.state_dict(), strict=False).missing_keys
    assert {k.split(".")[0] for k in missing} == {"cov_layers", "projector"}
    torch.nn.init.zeros_(tnp_nd.projector[-1].weight)
    torch.nn.init.zeros_(tnp_nd.projector[-1].bias)
    xc, yc, xt = make_task(2, 6, 5, seed=3)
    a, b = predict(tnp_nd, xc, yc, xt), predict(tnp, xc, yc, xt)
    assert_close(a.mean, b.mean)
    assert_close(a.stddev, b.stddev)
    yt = torch.randn(2, 5, 1)
    assert_close(a.joint_log_prob(yt), b.log_prob(yt).sum((-1, -2)))


def test_marginals_depend_on_other_targets_unless_lowrank_without_target_attention():
    xc, yc, xt = make_task(2, 6, 8, seed=4)
    subset = torch.tensor([5, 1, 6])
    for options, interact in [
        ({"covariance": "lowrank", "n_cov_layers": 0}, False),
        ({"covariance": "lowrank"}, True),
        ({"covariance": "cholesky", "n_cov_layers": 0}, True),
    ]:
        model = small_model("tnp-nd", **options)
        full, part = predict(model, xc, yc, xt), predict(model, xc, yc, xt[:, subset])
        assert_close(part.mean, full.mean[:, subset])  # the mean is TNP's: per target
        same = torch.allclose(part.stddev, full.stddev[:, subset], atol=1e-5, rtol=1e-4)
        assert same != interact, options
    assert tnpx.build_model("tnp-nd", 1, 1).targets_interact


def test_training_lowers_the_joint_loss():
    torch.manual_seed(0)
    model = small_model("tnp-nd", rank=2).train()
    g = torch.Generator().manual_seed(0)
    x = torch.rand(4, 20, 1, generator=g) * 4 - 2
    y = torch.sin(3 * x) * torch.randn(4, 1, 1, generator=g)
    batch = Batch(x[:, :8], y[:, :8], x[:, 8:], y[:, 8:])
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    start = model.training_loss(batch).item()
    for _ in range(30):
        optimiser.zero_grad()
        model.training_loss(batch).backward()
        optimiser.step()
    assert model.training_loss(batch).item() < start - 0.1


def test_bad_covariance_is_rejected():
    with pytest.raises(ValueError, match="covariance"):
        tnpx.build_model("tnp-nd", 1, 1, covariance="full")
    with pytest.raises(ValueError, match="rank"):
        tnpx.build_model("tnp-nd", 1, 1, rank=0)
