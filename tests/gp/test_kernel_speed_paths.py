"""The kernel matrices computed one input dimension at a time (tnpx.gp.kernels) against the former
``[batch, n, m, dim_x]`` path (kept in benchmarks/gp_sampling.py as the reference), and the GP
sampler's context-size rule (``ctx_size``)."""

from __future__ import annotations

import math

import pytest
import torch

from benchmarks.gp_sampling import old_kernel_matrix, old_kernels
from tnpx.config.experiment import load_config
from tnpx.data import GPConfig, GPSampler, batch_at, build_sampler
from tnpx.data.base import randint, task_generator
from tnpx.gp.kernels import ALL_KERNELS, KERNELS, kernel_matrix, kernel_matrix_sum
from tnpx.gp.kernels_anisotropic import anisotropic_kernel_matrix, transform_matrix

F64 = torch.float64


def _inputs(dim_x: int, seed: int = 0):
    """``x [3, 12, d]`` and ``y [3, 9, d]`` whose first 4 points are ``x``'s (exact repeats),
    and per-task parameters ``[3]``."""
    g = torch.Generator().manual_seed(seed)
    x = 2 * torch.randn(3, 12, dim_x, generator=g, dtype=F64)
    y = torch.cat([x[:, :4], 2 * torch.randn(3, 5, dim_x, generator=g, dtype=F64)], 1)
    params = {k: 0.3 + torch.rand(3, generator=g, dtype=F64) for k in ("ls", "p", "v", "e")}
    return x, y, params


@pytest.mark.parametrize("dim_x", [1, 2])
@pytest.mark.parametrize("name", ALL_KERNELS)
@pytest.mark.parametrize("with_envelope", [False, True])
def test_kernel_matrix_equals_the_former_path(name, dim_x, with_envelope):
    x, y, p = _inputs(dim_x)
    kw = {"lengthscale": p["ls"], "period": p["p"], "variance": p["v"]}
    kw["envelope"] = p["e"] if with_envelope else None
    for a, b in ((x, y), (x, x)):
        before = (a.clone(), b.clone())
        old = old_kernel_matrix(name, a, b, **kw)
        assert torch.equal(kernel_matrix(name, a, b, **kw), old)  # bit for bit
        assert torch.equal(a, before[0]) and torch.equal(b, before[1])  # inputs untouched
        # Under autograd (no in-place updates) the values are the same too.
        tracked = a.clone().requires_grad_()
        k = kernel_matrix(name, tracked, b, **kw)
        assert torch.equal(k.detach(), old)
        k.sum().backward()
        assert torch.isfinite(tracked.grad).all()


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_mixed_dtypes_promote_as_before(name):
    """float32 inputs with float64 parameters (and the reverse) give the former path's dtype
    and values: the in-place updates are used only where no promotion happens."""
    x, _, p = _inputs(2, seed=4)
    for xs, ps in ((x.float(), p), (x, {k: v.float() for k, v in p.items()})):
        kw = {"lengthscale": ps["ls"], "period": ps["p"], "variance": ps["v"], "envelope": ps["e"]}
        old = old_kernel_matrix(name, xs, xs, **kw)
        new = kernel_matrix(name, xs, xs, **kw)
        assert new.dtype == old.dtype and torch.equal(new, old)


@pytest.mark.parametrize("name", KERNELS)
def test_repeated_points_are_at_distance_exactly_zero(name):
    """A context point among the targets (and the diagonal of k(x, x)) gets k(0) exactly."""
    x, y, p = _inputs(2, seed=1)
    kw = {"lengthscale": p["ls"], "period": p["p"], "variance": p["v"]}
    k_xy = kernel_matrix(name, x, y, **kw)
    k_xx = kernel_matrix(name, x, x, **kw)
    v = p["v"].view(-1, 1).expand(-1, 4)
    assert torch.equal(k_xy[:, :4, :4].diagonal(dim1=1, dim2=2), v)
    assert torch.equal(k_xx.diagonal(dim1=1, dim2=2), p["v"].view(-1, 1).expand(-1, 12))


def test_kernel_sums_equal_the_former_path():
    x, y, _ = _inputs(2, seed=2)
    g = torch.Generator().manual_seed(3)
    ids = torch.tensor([[0, 4, 1], [5, 2, 3], [7, 0, 6]])
    params = {k: 0.3 + torch.rand(3, 3, generator=g, dtype=F64) for k in ("lengthscale", "period")}
    params["variance"] = torch.tensor(
        [[1.0, 0.0, 0.5], [0.2, 0.3, 0.4], [0.0, 0.7, 0.1]], dtype=F64
    )
    new = kernel_matrix_sum(ids, x, y, **params)
    with old_kernels():
        old = kernel_matrix_sum(ids, x, y, **params)
    assert torch.equal(new, old)
    transform = transform_matrix(
        params["lengthscale"][:, :2, None].expand(-1, -1, 2), params["period"][:, :2]
    )
    kinds = torch.tensor([[0, 1], [2, 3], [1, 0]])
    new = anisotropic_kernel_matrix(kinds, transform, params["variance"][:, :2], x, x)
    with old_kernels():
        old = anisotropic_kernel_matrix(kinds, transform, params["variance"][:, :2], x, x)
    assert torch.equal(new, old)


def test_no_batch_n_m_dim_tensor_is_made():
    """No op of a kernel sum sees a ``[batch, n, m, dim_x]`` tensor (the former path did)."""
    x, y, p = _inputs(2)
    ids = torch.tensor([[0, 4, 7]]).expand(3, -1)
    params = {
        "lengthscale": p["ls"][:, None].expand(-1, 3),
        "period": p["p"][:, None].expand(-1, 3),
    }
    with torch.profiler.profile(record_shapes=True) as prof:
        kernel_matrix_sum(ids, x, y, envelope=p["e"][:, None].expand(-1, 3), **params)
    shapes = [s for e in prof.events() for s in e.input_shapes if isinstance(s, list)]
    assert shapes and [3, 12, 1] in shapes  # the profiler saw the ops and their shapes
    assert [3, 12, 9, 2] not in shapes
    with torch.profiler.profile(record_shapes=True) as prof:
        old_kernel_matrix("rbf", x, y, p["ls"])
    assert [3, 12, 9, 2] in [s for e in prof.events() for s in e.input_shapes]


SAMPLERS = {  # (sampler name, config whose data section it uses, overrides to keep it small)
    "gp": ("configs/kr1-rbf.yaml", {}),
    "gp-kr1-periodic": ("configs/kr1-periodic.yaml", {}),
    "gp-composite-v2": ("configs/pretrained-gp1d-v2-tnp.yaml", {}),
    "gp-composite-v3": ("configs/pretrained-gp1d-v3-tnp.yaml", {"max_ctx": 40}),
    "gp2d-composite": ("configs/pretrained-gp2d-te-tnp-rope.yaml", {"max_ctx": 60}),
}


@pytest.mark.parametrize("which", SAMPLERS)
def test_sampled_batches_equal_the_former_path(which):
    path, small = SAMPLERS[which]
    cfg = load_config(path)
    sampler = build_sampler(cfg.data["name"], 4, seed=7, **{**cfg.data_options(), **small})
    for step in (0, 1):
        new = batch_at(sampler, step)
        with old_kernels():
            old = batch_at(sampler, step)
        for field in ("xc", "yc", "xt", "yt"):
            assert torch.equal(getattr(new, field), getattr(old, field)), field


# --- the context-size rule ---------------------------------------------------------------


@pytest.mark.parametrize("path", ["configs/kr1-rbf.yaml", "configs/pretrained-gp1d-v2-tnp.yaml"])
def test_uniform_context_size_is_the_former_draw(path):
    """Default ``ctx_size``: ``n_ctx`` is the generator's first draw, ``randint(min, max)``, as
    before the option (so every later draw of the batch is as before too)."""
    cfg = load_config(path)
    sampler = build_sampler(cfg.data["name"], 2, seed=3, **cfg.data_options())
    assert sampler.config.ctx_size == "uniform"
    explicit = build_sampler(cfg.data["name"], 2, seed=3, ctx_size="uniform", **cfg.data_options())
    c = sampler.config
    for step in range(5):
        batch = batch_at(sampler, step)
        assert batch.xc.shape[1] == randint(
            task_generator(3, "train", step, 0), c.min_ctx, c.max_ctx
        )
        assert torch.equal(batch.yt, batch_at(explicit, step).yt)


def test_log_uniform_context_size_weights_each_octave_alike():
    sampler = GPSampler(GPConfig(layout="uniform", min_ctx=3, max_ctx=256, ctx_size="log-uniform"))
    g = torch.Generator().manual_seed(0)
    sizes = torch.tensor([sampler._context_size(g) for _ in range(4000)])
    assert sizes.min() >= 3 and sizes.max() <= 256
    for k in (3, 15, 60):  # P(n <= k) = log((k + 1) / 3) / log(257 / 3)
        expected = math.log((k + 1) / 3) / math.log(257 / 3)
        assert abs((sizes <= k).double().mean().item() - expected) < 0.03
    one = GPSampler(GPConfig(min_ctx=5, max_ctx=5, ctx_size="log-uniform"))
    assert batch_at(one, 0).xc.shape[1] == 5


def test_v3_configs_draw_log_uniform_context_sizes():
    for path in (
        "configs/pretrained-gp1d-v3-tnp.yaml",
        "configs/pretrained-gp1d-v3-te-tnp-rope.yaml",
    ):
        cfg = load_config(path)
        sampler = build_sampler(cfg.data["name"], 2, **cfg.data_options())
        assert sampler.config.ctx_size == "log-uniform"


def test_bad_context_size_rule_is_rejected():
    with pytest.raises(ValueError, match="ctx_size must be one of"):
        GPSampler(GPConfig(ctx_size="loguniform"))
    with pytest.raises(ValueError, match="needs min_ctx >= 1"):
        GPSampler(GPConfig(min_ctx=0, ctx_size="log-uniform"))
