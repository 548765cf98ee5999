"""The v3 options of ``gp-composite`` (issue 33, item 2): polynomial trends, locally periodic
components, near noise-free tasks, many context points; and v2 configs drawing as before."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from torch.testing import assert_close

from tnpx.data import batch_at, build_sampler
from tnpx.data.synthetic.gp import JITTER
from tnpx.gp.kernels import ALL_KERNELS, TREND_KERNELS, kernel_matrix, kernel_matrix_mixed

ROOT = Path(__file__).resolve().parents[2]
V2_CONFIG = ROOT / "configs" / "pretrained-gp1d-v2-tnp.yaml"
# Two batches of 3 tasks drawn from V2_CONFIG's prior (seed 0, steps 0 and 7) by the code before
# the v3 options existed, in float64 (xc, yc, xt, yt, info).
V2_DRAWS = ROOT / "tests" / "fixtures" / "gp_composite_v2_draws.pt"
V3 = dict(polynomial_prob=0.7, locally_periodic_prob=0.6, quiet_prob=0.5, min_ctx=3, max_ctx=300)


def v2_options() -> dict:
    data = yaml.safe_load(V2_CONFIG.read_text())["data"]
    return {k: v for k, v in data.items() if k not in ("name", "batch_size")}


def sampler(batch_size: int = 8, seed: int = 0, **options):
    return build_sampler("gp-composite", batch_size, seed, **{**v2_options(), **options})


# --- v2 draws unchanged --------------------------------------------------------------------
@pytest.mark.parametrize("step", [0, 7])
def test_v2_config_draws_the_saved_tasks_bit_for_bit(step):
    saved = torch.load(V2_DRAWS)[f"step{step}"]
    batch = batch_at(sampler(batch_size=3), step)
    for name in ("xc", "yc", "xt", "yt"):
        assert torch.equal(getattr(batch, name).double(), saved[name]), name
    assert sorted(batch.info) == sorted(saved["info"])
    for name, value in saved["info"].items():
        # The task hyper-parameters in float64, to one rounding: the share of each kernel's
        # variance is a float64 quotient whose last bit differs between CPUs' vector paths
        # (AVX-512 against AVX2: 5.6e-17 on an Intel Xeon against the AMD EPYC that saved
        # them), while every drawn value above is bit for bit.
        assert_close(batch.info[name], value, rtol=1e-15, atol=1e-16, msg=name)


# --- the new kernels against their formulas -------------------------------------------------
@pytest.mark.parametrize("name", TREND_KERNELS)
@pytest.mark.parametrize("dim_x", [1, 2])
def test_polynomial_kernels_match_the_formula(name, dim_x):
    g = torch.Generator().manual_seed(0)
    x1 = torch.rand(2, 7, dim_x, generator=g, dtype=torch.float64) * 8 - 4
    x2 = torch.rand(2, 5, dim_x, generator=g, dtype=torch.float64) * 8 - 4
    ls, var = torch.tensor([0.7, 3.0], dtype=torch.float64), torch.tensor([0.5, 2.0])
    k = kernel_matrix(name, x1, x2, ls, variance=var.double())
    degree = TREND_KERNELS.index(name) + 1
    for i in range(2):
        a, b = x1[i].numpy(), x2[i].numpy()
        want = float(var[i]) * ((1 + a @ b.T / float(ls[i]) ** 2) / 2) ** degree
        np.testing.assert_allclose(k[i].numpy(), want, rtol=1e-12)


def test_envelope_multiplies_by_an_rbf():
    g = torch.Generator().manual_seed(1)
    x = torch.rand(2, 9, 1, generator=g, dtype=torch.float64) * 6 - 3
    ls, period = torch.tensor([0.6, 1.2], dtype=torch.float64), torch.tensor([0.4, 1.7])
    envelope = torch.tensor([0.8, math.inf], dtype=torch.float64)
    k = kernel_matrix("periodic", x, x, ls, period=period.double(), envelope=envelope)
    for i in range(2):
        d = np.abs(x[i, :, 0].numpy()[:, None] - x[i, :, 0].numpy()[None, :])
        periodic = np.exp(-2 * np.sin(math.pi * d / float(period[i])) ** 2 / float(ls[i]) ** 2)
        rbf = np.exp(-0.5 * d**2 / float(envelope[i]) ** 2)  # inf: 1
        np.testing.assert_allclose(k[i].numpy(), periodic * rbf, rtol=1e-12)


def test_unknown_polynomial_name_is_rejected_with_the_choices():
    x = torch.zeros(1, 2, 1)
    with pytest.raises(ValueError, match="quartic.*cubic"):
        kernel_matrix("quartic", x, x, torch.ones(1))


# --- v3 tasks -------------------------------------------------------------------------------
def test_v3_shapes_and_info_keys():
    batch = batch_at(sampler(batch_size=16, **V3), 0)
    b, n_ctx = batch.xc.shape[:2]
    assert 3 <= n_ctx <= 300 and batch.xt.shape == (16, 100, 1)
    assert batch.yc.shape == (16, n_ctx, 1) and batch.yt.shape == (16, 100, 1)
    for key in ("kernel", "lengthscale", "period", "variance", "envelope"):
        assert batch.info[key].shape == (16, 4), key  # trend, periodic, rough, polynomial
    for key in ("noise_ctx", "noise_tgt", "composite", "quiet"):
        assert batch.info[key].shape == (16,), key
    assert torch.isfinite(batch.yc).all() and torch.isfinite(batch.yt).all()


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_v3_task_covariances_are_psd():
    batch = batch_at(sampler(batch_size=64, **V3), 3)
    params = {k: batch.info[k] for k in ("lengthscale", "period", "variance", "envelope")}
    x = torch.cat([batch.xc, batch.xt], 1).double()
    k = kernel_matrix_mixed(batch.info["kernel"], x, x, **params)
    assert_close(k, k.transpose(1, 2))
    eigenvalues = torch.linalg.eigvalsh(k)
    assert (eigenvalues >= -1e-9 * eigenvalues[:, -1:].abs()).all()


def test_v3_mixture_frequencies():
    """Polynomial trends in ``polynomial_prob`` of the composites (last slot, the degrees
    drawn evenly), envelopes on ``locally_periodic_prob`` of them, ``quiet_prob`` tasks quiet."""
    info = batch_at(sampler(batch_size=2000, **{**V3, "n_tgt": 2, "max_ctx": 3}), 0).info
    composite, n = info["composite"], int(info["composite"].sum())
    has_poly = info["variance"][composite, 3] > 0
    assert abs(has_poly.double().mean().item() - 0.7) < 4 * math.sqrt(0.21 / n)
    degrees = info["kernel"][composite, 3]
    for name in TREND_KERNELS:
        share = (degrees == ALL_KERNELS.index(name)).double().mean().item()
        assert abs(share - 1 / 3) < 4 * math.sqrt(2 / 9 / n)
    enveloped = torch.isfinite(info["envelope"][composite, 1]).double().mean().item()
    assert abs(enveloped - 0.6) < 4 * math.sqrt(0.24 / n)
    assert torch.isinf(info["envelope"][~composite]).all()  # single kernels: none
    assert torch.isinf(info["envelope"][:, [0, 2, 3]]).all()  # only the periodic slot
    assert abs(info["quiet"].double().mean().item() - 0.5) < 4 * math.sqrt(0.25 / 2000)
    assert (info["variance"][~composite, 1:] == 0).all()  # singles keep one slot


def test_quiet_tasks_noise_is_the_set_fraction_of_their_scale():
    info = batch_at(sampler(batch_size=200, **{**V3, "n_tgt": 2, "max_ctx": 3}), 1).info
    quiet, scale = info["quiet"], info["variance"].sum(1).sqrt()
    assert_close(info["noise_ctx"][quiet], 1e-3 * scale[quiet])
    assert_close(info["noise_tgt"][quiet], (1e-6 * scale[quiet] ** 2 + JITTER).sqrt())
    assert (info["noise_ctx"][~quiet] >= 0.01 * 0.5 * (1 - 1e-9)).all()  # the v2 noise floors


def test_zero_quiet_noise_is_allowed():
    info = batch_at(sampler(batch_size=50, quiet_prob=1.0, quiet_noise=0.0), 0).info
    assert (info["noise_ctx"] == 0).all()
    assert_close(info["noise_tgt"], torch.full((50,), math.sqrt(JITTER), dtype=torch.float64))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"polynomial_prob": 1.5}, "polynomial_prob must lie in"),
        ({"quiet_prob": -0.1}, "quiet_prob must lie in"),
        ({"locally_periodic_prob": 2.0}, "locally_periodic_prob must lie in"),
        ({"polynomial_degrees": [4]}, "polynomial_degrees"),
        ({"polynomial_degrees": []}, "polynomial_degrees"),
        ({"quiet_noise": -1e-3}, "quiet_noise"),
        ({"envelope_lengthscale": [2.0, 1.0]}, "envelope_lengthscale"),
        ({"polynomial_lengthscale": [0.0, 1.0]}, "polynomial_lengthscale"),
    ],
)
def test_bad_v3_options_fail_clearly(options, message):
    with pytest.raises(ValueError, match=message):
        sampler(**options)
