"""The translation- and rotation-equivariant models (te-tnp, re-te-tnp from models/te_tnp.py;
te-pt-tnp, te-pt-tnp-rope from models/pseudo_token.py): exact equivariance, chunking, options.
The TE attention they are built on is tested in ``tests/nn/test_te_attention.py``; the rest of
te-pt-tnp-rope in ``test_te_pt_rope.py``."""

from __future__ import annotations

import math

import pytest
import torch

import tnpx
from tests.helpers.small_models import loss_and_grads

SMALL = {"dim_model": 32, "n_layers": 2, "n_heads": 2, "dim_head": 8, "dim_ff": 32}
TE_VARIANTS = [
    ("te-tnp", {}),
    ("te-tnp", {"relative": "pre"}),
    ("te-tnp", {"relative": "rbf"}),
    ("te-tnp", {"relative": "identity"}),
    ("te-tnp", {"update_order": "parallel"}),
    ("te-tnp", {"preset": "released-code"}),
    ("re-te-tnp", {}),
    ("te-pt-tnp", {"n_pseudo": 4}),
    ("te-pt-tnp", {"n_pseudo": 4, "preset": "no-input-adjustment"}),
    ("te-tnp-rope", {}),
    ("te-tnp-rope", {"learn_frequencies": True}),
    ("te-tnp-rope", {"share_weights": True, "targets_read": "input"}),
    ("te-pt-tnp-rope", {"n_pseudo": 4}),
    ("te-pt-tnp-rope", {"n_pseudo": 4, "pseudo_init": "mean", "learn_frequencies": True}),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}" for n, kw in TE_VARIANTS]


def dyadic(shape, generator):
    """Inputs on a 2^-10 grid in [-2, 2): a shift by an integer up to 10^3 is exact in float32,
    so any difference in the predictions comes from the model, not from rounding the inputs."""
    return torch.randint(-2048, 2048, shape, generator=generator).float() / 1024


def task(dim_x, n_ctx=12, n_tgt=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        dyadic((2, n_ctx, dim_x), g),
        torch.randn(2, n_ctx, 1, generator=g),
        dyadic((2, n_tgt, dim_x), g),
    )


def build(name, dim_x, **kw):
    torch.manual_seed(0)
    return tnpx.build_model(name, dim_x, 1, **{**SMALL, **kw}).eval()


@pytest.mark.parametrize("name, kw", TE_VARIANTS, ids=IDS)
@pytest.mark.parametrize("offset", [1.0, 10.0, 100.0, 1000.0])
@pytest.mark.parametrize("dim_x", [1, 2])
def test_translation_equivariance_is_exact(name, kw, offset, dim_x):
    model = build(name, dim_x, **kw)
    assert model.translation_equivariant
    xc, yc, xt = task(dim_x)
    shift = torch.tensor([offset, -offset])[:dim_x]
    with torch.no_grad():
        base, moved = model(xc, yc, xt), model(xc + shift, yc, xt + shift)
    torch.testing.assert_close(moved.mean, base.mean, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(moved.stddev, base.stddev, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("angle", [math.pi / 2, math.pi / 4, 2.0])
def test_re_te_tnp_is_rotation_and_translation_equivariant(angle):
    model = build("re-te-tnp", 2)
    assert model.rotation_equivariant and model.translation_equivariant
    xc, yc, xt = task(2)
    c, s = math.cos(angle), math.sin(angle)
    rot = torch.tensor([[c, -s], [s, c]])
    shift = torch.tensor([5.0, -3.0])
    with torch.no_grad():
        base = model(xc, yc, xt)
        moved = model(xc @ rot.T + shift, yc, xt @ rot.T + shift)
    torch.testing.assert_close(moved.mean, base.mean, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(moved.stddev, base.stddev, atol=1e-5, rtol=1e-5)


def test_te_tnp_is_not_rotation_equivariant():
    model = build("te-tnp", 2)
    assert not model.rotation_equivariant
    xc, yc, xt = task(2)
    rot = torch.tensor([[0.0, -1.0], [1.0, 0.0]])
    with torch.no_grad():
        base, moved = model(xc, yc, xt), model(xc @ rot.T, yc, xt @ rot.T)
    assert (base.mean - moved.mean).abs().max() > 1e-4


@pytest.mark.parametrize("name", ["te-tnp", "te-pt-tnp"])
def test_chunked_and_unchunked_agree_forward_and_backward(name):
    xc, yc, xt = task(1, n_ctx=20, n_tgt=17)
    yt = torch.randn(2, 17, 1)
    results = []
    for chunk_elements in (2**30, 1):  # one chunk vs one query per chunk (+ checkpointing)
        model = build(name, 1, chunk_elements=chunk_elements).train()
        results.append(loss_and_grads(model, xc, yc, xt, yt))
    (loss_a, grads_a), (loss_b, grads_b) = results
    torch.testing.assert_close(loss_a, loss_b, atol=1e-6, rtol=1e-6)
    for ga, gb in zip(grads_a, grads_b):
        torch.testing.assert_close(ga, gb, atol=1e-5, rtol=1e-4)


def test_share_weights_uses_one_block_per_layer():
    shared = build("te-tnp", 1, share_weights=True)
    separate = build("te-tnp", 1, share_weights=False)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(shared) < count(separate)


def test_update_order_changes_the_function():
    xc, yc, xt = task(1)
    with torch.no_grad():
        a = build("te-tnp", 1, update_order="sequential")(xc, yc, xt).mean
        b = build("te-tnp", 1, update_order="parallel")(xc, yc, xt).mean
    assert (a - b).abs().max() > 1e-6


def test_presets_set_the_ablation():
    model = tnpx.build_model("te-pt-tnp", preset="no-input-adjustment")
    assert model.hyper.location_update is False and model.hyper.pseudo_init == "mean"
    assert model.loc_init is None
    default = tnpx.build_model("te-pt-tnp")
    assert default.hyper.location_update and default.hyper.pseudo_init == "attention"
    with pytest.raises(ValueError, match="has no preset 'nope'; presets: no-input-adjustment"):
        tnpx.build_model("te-pt-tnp", preset="nope")


@pytest.mark.parametrize(
    "name, kw, message",
    [
        ("re-te-tnp", {"location_update": True}, "not defined for the rotation-invariant"),
        ("te-tnp", {"relative": "cosine"}, "relative must be one of"),
        ("te-tnp", {"update_order": "random"}, "update_order must be one of"),
        ("te-pt-tnp", {"pseudo_init": "zeros"}, "pseudo_init must be one of"),
    ],
)
def test_bad_options_fail_clearly(name, kw, message):
    with pytest.raises(ValueError, match=message):
        tnpx.build_model(name, 2, 1, **kw)


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_te_tnp_rope_trains_and_its_gradients_are_finite():
    torch.manual_seed(0)
    model = tnpx.build_model("te-tnp-rope", 1, 1, dim_model=16, n_layers=2, n_heads=2,
                             dim_head=8, dim_ff=16, learn_frequencies=True)  # fmt: skip
    g = torch.Generator().manual_seed(3)
    xc, xt = torch.rand(4, 10, 1, generator=g) * 4 - 2, torch.rand(4, 8, 1, generator=g) * 4 - 2
    yc, yt = torch.sin(3 * xc), torch.sin(3 * xt)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(60):
        loss = -model(xc, yc, xt).log_prob(yt).mean()
        opt.zero_grad()
        loss.backward()
        assert all(p.grad is None or p.grad.isfinite().all() for p in model.parameters())
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.3
