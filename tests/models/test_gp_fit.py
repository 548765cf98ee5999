"""The fitted GP baselines ``gp`` and ``mt-gp`` (``tnpx.models.gp_fit``): hyper-parameter
recovery, agreement with a plain GPyTorch fit, padding, empty contexts, determinism,
translation equivariance, and what the multi-task kernel buys. Few Adam steps, tiny sets."""

from __future__ import annotations

import math

import gpytorch
import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.small_models import make_task, predict
from tnpx.models import gp_fit

ITERS = 50
# (name, dim_x, dim_y) covering independent outputs and the multi-task kernel
CASES = [("gp", 1, 1), ("gp", 2, 2), ("mt-gp", 1, 2)]
IDS = ["-".join(map(str, c)) for c in CASES]


def build(name, dim_x=1, dim_y=1, **hyper):
    return tnpx.build_model(name, dim_x, dim_y, **{"n_iterations": ITERS, **hyper})


def sample_rbf(n, lengthscale, noise_std, n_out=1, seed=0, corr_noise=None):
    """One task ``x [1, n, 1]`` in [-2, 2] and ``y [1, n, n_out]``: ``n_out`` noisy copies of
    one RBF-GP draw (unit variance), float32."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 1, generator=g, dtype=torch.float64) * 4 - 2
    k = torch.exp(-0.5 * (x - x.T) ** 2 / lengthscale**2) + 1e-8 * torch.eye(n)
    f = torch.linalg.cholesky(k) @ torch.randn(n, 1, generator=g, dtype=torch.float64)
    y = f + noise_std * torch.randn(n, n_out, generator=g, dtype=torch.float64)
    return x[None].float(), y[None].float()


def test_shapes_and_flags():
    for name, dx, dy in [("gp", 1, 1), ("gp", 2, 2), ("mt-gp", 1, 2), ("mt-gp", 2, 3)]:
        model = build(name, dx, dy)
        xc, yc, xt = make_task(2, 6, 4, dx, dy)
        pred = predict(model, xc, yc, xt)
        assert pred.mean.shape == pred.stddev.shape == (2, 4, dy)
        assert torch.isfinite(pred.mean).all() and (pred.stddev > 0).all()
        assert model.translation_equivariant and not model.rotation_equivariant
        assert not list(model.parameters())


def test_bad_builds_rejected():
    with pytest.raises(ValueError, match="dim_y"):
        tnpx.build_model("mt-gp", 1, 1)
    with pytest.raises(ValueError, match="n_iterations"):
        tnpx.build_model("gp", 1, 1, n_iterations=-1)
    with pytest.raises(ValueError, match="lr"):
        tnpx.build_model("gp", 1, 1, lr=0.0)


def test_mt_gp_validates_inputs():
    """The shared validation suite runs with dim_y = 1, which mt-gp does not take."""
    model = build("mt-gp", 2, 2)
    xc, yc, xt = make_task(2, 5, 4, 2, 2)
    nan_y = yc.clone()
    nan_y[0, 1, 0] = float("nan")
    for args, arg in [
        ((xc, yc[..., :1], xt), "yc"),
        ((xc[..., :1], yc, xt), "xc"),
        ((xc, yc, xt.double()), "xt"),
        ((xc, nan_y, xt), "yc"),
    ]:
        with pytest.raises(ValueError, match=f"^{arg}:"):
            model(*args)
    with pytest.raises(ValueError, match="^yc:"):  # NaN in an entry marked observed
        model.predict_partial(xc, nan_y, xt, torch.ones(2, 5, 2, dtype=torch.bool))


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_gp_recovers_lengthscale_and_noise():
    x, y = sample_rbf(200, lengthscale=0.5, noise_std=0.1)
    gp, _ = build("gp", n_iterations=200).fit(x, y)
    lengthscale = gp.covar_module.x_kernel.base_kernel.lengthscale.item()
    noise_std = gp.likelihood.noise_covar.noise.sqrt().item()
    assert 0.5 / 1.5 < lengthscale < 0.5 * 1.5
    assert 0.1 / 1.5 < noise_std < 0.1 * 1.5


class PlainGP(gpytorch.models.ExactGP):
    """The textbook GPyTorch model, one task, no batch: what ``gp`` must agree with."""

    def __init__(self, x, y, likelihood):
        super().__init__(x, y, likelihood)
        self.mean_module = gpytorch.means.ZeroMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(
            gpytorch.kernels.RBFKernel(ard_num_dims=x.shape[-1])
        )

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def test_gp_matches_plain_gpytorch_fit():
    xc, yc, xt = make_task(1, 12, 6, dim_x=2, seed=3)
    iters = 80
    pred = predict(build("gp", 2, 1, n_iterations=iters), xc, yc, xt)
    x, y = xc[0].double(), yc[0, :, 0].double()
    likelihood = gpytorch.likelihoods.GaussianLikelihood().double()
    ref = PlainGP(x, y, likelihood).double()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, ref)
    opt = torch.optim.Adam(ref.parameters(), lr=0.1)
    ref.train()
    for _ in range(iters):
        opt.zero_grad()
        (-mll(ref(x), y)).backward()
        opt.step()
    ref.eval()
    with torch.no_grad():
        out = likelihood(ref(xt[0].double()))
    assert_close(pred.mean[0, :, 0], out.mean.float(), atol=1e-5, rtol=1e-4)
    assert_close(pred.stddev[0, :, 0], out.stddev.float(), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_padded_context_equals_unpadded(case):
    name, dx, dy = case
    model = build(name, dx, dy)
    xc, yc, xt = make_task(3, 5, 4, dx, dy, seed=4)
    n_real = [1, 5, 3]
    xp = torch.full((3, 8, dx), float("nan"))
    yp = torch.full((3, 8, dy), float("nan"))
    mask = torch.zeros(3, 8, dtype=torch.bool)
    for i, n in enumerate(n_real):
        slots = torch.randperm(8, generator=torch.Generator().manual_seed(i))[:n]
        xp[i, slots], yp[i, slots], mask[i, slots] = xc[i, :n], yc[i, :n], True
    padded = predict(model, xp, yp, xt, mask_c=mask)
    for i, n in enumerate(n_real):
        alone = predict(model, xc[i : i + 1, :n], yc[i : i + 1, :n], xt[i : i + 1])
        assert_close(padded.mean[i : i + 1], alone.mean, atol=1e-5, rtol=1e-4)
        assert_close(padded.stddev[i : i + 1], alone.stddev, atol=1e-5, rtol=1e-4)


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
@pytest.mark.parametrize("name", ["gp", "mt-gp"])
def test_partially_observed_points(name):
    """An output marked unobserved is ignored (NaN allowed); all observed = a plain call."""
    model = build(name, 1, 2)
    xc, yc, xt = make_task(2, 6, 4, 1, 2, seed=5)
    everything = torch.ones(2, 6, 2, dtype=torch.bool)
    assert_close(
        model.predict_partial(xc, yc, xt, everything).mean, predict(model, xc, yc, xt).mean
    )
    observed = everything.clone()
    observed[:, 1, 0] = False  # point 1: output 0 missing
    observed[:, 3] = False  # point 3: both missing
    a = model.predict_partial(xc, torch.where(observed, yc, float("nan")), xt, observed)
    b = model.predict_partial(xc, torch.where(observed, yc, 9.0), xt, observed)
    assert_close(a.mean, b.mean, atol=1e-5, rtol=1e-4)
    keep = [0, 1, 2, 4, 5]  # dropping the wholly missing point changes nothing
    c = model.predict_partial(xc[:, keep], yc[:, keep], xt, observed[:, keep])
    assert_close(a.mean, c.mean, atol=1e-5, rtol=1e-4)
    assert_close(a.stddev, c.stddev, atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="observed"):
        model.predict_partial(xc, yc, xt, everything[..., :1])


@pytest.mark.parametrize("name, dim_y", [("gp", 1), ("mt-gp", 3)])
@pytest.mark.parametrize("predict_noise", [True, False])
def test_empty_context_is_the_prior_at_initial_hyperparameters(name, dim_y, predict_noise):
    """GPyTorch's initial values: output scale (mt-gp: B = ln 2 I) ln 2, noise ln 2 + 1e-4."""
    model = build(name, 2, dim_y, predict_noise=predict_noise)
    _, _, xt = make_task(2, 0, 5, dim_x=2)
    empty = predict(model, torch.zeros(2, 0, 2), torch.zeros(2, 0, dim_y), xt)
    var = math.log(2) + (math.log(2) + 1e-4 if predict_noise else 0.0)
    assert_close(empty.mean, torch.zeros(2, 5, dim_y))
    assert_close(empty.stddev, torch.full((2, 5, dim_y), math.sqrt(var)))
    masked = predict(
        model,
        torch.full((2, 3, 2), float("nan")),
        torch.zeros(2, 3, dim_y),
        xt,
        mask_c=torch.zeros(2, 3, dtype=torch.bool),
    )
    assert_close(masked.mean, empty.mean, atol=0, rtol=0)
    assert_close(masked.stddev, empty.stddev, atol=0, rtol=0)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fit_is_deterministic(case):
    name, dx, dy = case
    xc, yc, xt = make_task(2, 7, 5, dx, dy, seed=6)
    torch.manual_seed(1)
    a = build(name, dx, dy)(xc, yc, xt)  # outside no_grad: the fit must not care
    torch.manual_seed(2)
    with torch.no_grad():
        b = build(name, dx, dy)(xc, yc, xt)
    assert torch.equal(a.mean, b.mean) and torch.equal(a.stddev, b.stddev)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_translation_equivariance(case):
    """The optimiser path is shift-invariant in exact arithmetic; the model centres inputs on
    the context, so a shift only moves float32 rounding of the inputs (~1e-6 at |x| ~ 12)."""
    name, dx, dy = case
    model = build(name, dx, dy)
    xc, yc, xt = make_task(2, 7, 5, dx, dy, seed=7)
    base = predict(model, xc, yc, xt)
    moved = predict(model, xc + 10.0, yc, xt + 10.0)
    assert_close(moved.mean, base.mean, atol=1e-3, rtol=1e-3)
    assert_close(moved.stddev, base.stddev, atol=1e-3, rtol=1e-3)


def test_works_under_inference_mode():
    model = build("mt-gp", 1, 2)
    xc, yc, xt = make_task(2, 5, 3, 1, 2, seed=8)
    with torch.inference_mode():
        a = model(xc, yc, xt)
    assert_close(a.mean, predict(model, xc, yc, xt).mean, atol=0, rtol=0)


def test_targets_are_streamed_in_chunks(monkeypatch):
    model = build("mt-gp", 1, 2)
    xc, yc, xt = make_task(2, 5, 9, 1, 2, seed=9)
    whole = predict(model, xc, yc, xt)
    monkeypatch.setattr(gp_fit, "_MAX_ELEMENTS", 40)  # 2 tasks x 10 rows: 2 target rows a chunk
    chunked = predict(model, xc, yc, xt)
    assert_close(chunked.mean, whole.mean, atol=1e-6, rtol=1e-5)
    assert_close(chunked.stddev, whole.stddev, atol=1e-6, rtol=1e-5)


def test_predict_noise_adds_the_fitted_noise():
    xc, yc, xt = make_task(2, 6, 4, 1, 2, seed=10)
    model = build("mt-gp", 1, 2)
    gp, _ = model.fit(xc, yc)
    noise = gp.likelihood.noise_covar.noise.detach()  # [2, dim_y]
    with_noise = predict(model, xc, yc, xt)
    latent = predict(build("mt-gp", 1, 2, predict_noise=False), xc, yc, xt)
    assert_close(with_noise.mean, latent.mean)
    assert_close(with_noise.variance - latent.variance, noise[:, None, :].float().expand(2, 4, 2))


def test_mt_gp_round_trip(tmp_path):
    model = build("mt-gp", 2, 2, n_iterations=20, predict_noise=False)
    tnpx.save(model, tmp_path / "m.pt")
    loaded = tnpx.load(tmp_path / "m.pt")
    assert loaded.hyper == model.hyper
    xc, yc, xt = make_task(2, 5, 3, 2, 2, seed=11)
    assert torch.equal(predict(model, xc, yc, xt).mean, predict(loaded, xc, yc, xt).mean)


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_mt_gp_transfers_between_correlated_outputs():
    """y2 = y1 + small noise; output 2 is observed only for x < 0. At x > 0, mt-gp predicts
    output 2 from output 1 (learning a strong positive inter-output correlation); independent
    GPs cannot."""
    x, y = sample_rbf(60, lengthscale=0.5, noise_std=0.05, n_out=2, seed=12)
    ctx, tgt = slice(0, 40), slice(40, 60)
    xc, yc, xt, yt = x[:, ctx], y[:, ctx], x[:, tgt], y[:, tgt]
    observed = torch.ones_like(yc, dtype=torch.bool)
    observed[..., 1] = xc[..., 0] < 0
    mt, ind = build("mt-gp", 1, 2, n_iterations=100), build("gp", 1, 2, n_iterations=100)
    right = xt[0, :, 0] > 0.2
    assert right.sum() >= 3
    ll = {}
    for name, model in (("mt", mt), ("ind", ind)):
        pred = model.predict_partial(xc, yc, xt, observed)
        ll[name] = pred.log_prob(yt)[0, right, 1].mean().item()
    assert ll["mt"] > ll["ind"] + 0.5, ll
    gp, _ = mt.fit(xc, yc, observed)
    b = gp.covar_module.task_kernel.covar_matrix.to_dense()[0]
    assert b[0, 1] / (b[0, 0] * b[1, 1]).sqrt() > 0.8
