"""models/tnp_kr.py: TNP-KR, exact (``tnp-kr-full``) and FAVOR+ (``tnp-kr-fast``).

A hand-written reference for ``tnp-kr-full`` (KR Algorithm 2), the protocol's defaults, and the
FAVOR+ features inside the model: saved and loaded exactly, fixed at evaluation, redrawn only
when asked, and close to the exact model with many features.

Split from ``tests/test_scaling_models.py``: the KR block (a shared-weight two-stream stack) is
tested in ``tests/nn/test_stack.py``, FAVOR+ attention itself in ``tests/nn/test_performer.py``,
and the linear cost of TNP-KR and the linear models in ``test_linear.py``."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import tnpx
from tests.helpers.small_models import make_task, predict, small_model


def count(module) -> int:
    return sum(p.numel() for p in module.parameters())


def masked_task(b=2, n_ctx=7, n_tgt=5, seed=0):
    xc, yc, xt = make_task(b, n_ctx, n_tgt, seed=seed)
    mask = torch.rand(b, n_ctx, generator=torch.Generator().manual_seed(seed)) > 0.3
    mask[:, 0] = True
    return xc, yc, xt, mask


# --- the exact model ----------------------------------------------------------------------


def _reference_tnp_kr(model, xc, yc, xt, mask):
    """KR Algorithm 2 written out with explicit softmax weights (float64)."""
    p = {name: t.double() for name, t in model.state_dict().items()}
    h, dh = model.hyper.n_heads, model.hyper.dim_head

    def mlp(prefix, x):
        return F.linear(F.relu(F.linear(x, p[f"{prefix}.0.weight"], p[f"{prefix}.0.bias"])),
                        p[f"{prefix}.2.weight"], p[f"{prefix}.2.bias"])  # fmt: skip

    def norm(prefix, x):
        return F.layer_norm(x, x.shape[-1:], p[f"{prefix}.weight"], p[f"{prefix}.bias"])

    def attend(prefix, queries, keys):
        def proj(name, x):
            y = F.linear(x, p[f"{prefix}.{name}.weight"], p[f"{prefix}.{name}.bias"])
            return y.view(*x.shape[:2], h, dh)

        q, k, v = proj("to_q", queries), proj("to_k", keys), proj("to_v", keys)
        logits = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
        logits = logits.masked_fill(~mask[:, None, None, :], -math.inf)
        out = torch.einsum("bhqk,bkhd->bqhd", logits.softmax(-1), v).reshape(*queries.shape[:2], -1)
        return F.linear(out, p[f"{prefix}.to_out.weight"], p[f"{prefix}.to_out.bias"])

    zc = mlp("embed.mlp", torch.cat([xc, yc], -1).double())
    zt = mlp("embed.mlp", torch.cat([xt, torch.zeros_like(xt)], -1).double())
    for i in range(len(model.stack.blocks)):
        b = f"stack.blocks.{i}"
        qs1, ks1 = norm(f"{b}.norm_attn", zt), norm(f"{b}.norm_attn", zc)
        qs3 = zt + attend(f"{b}.attn", qs1, ks1)
        ks3 = zc + attend(f"{b}.attn", ks1, ks1)
        zt = qs3 + mlp(f"{b}.ff", norm(f"{b}.norm_ff", qs3))
        zc = ks3 + mlp(f"{b}.ff", norm(f"{b}.norm_ff", ks3))
    mean, raw = mlp("decoder", norm("norm", zt)).split(1, -1)
    return mean, torch.exp(raw / 2)


def test_tnp_kr_full_matches_hand_written_algorithm_2():
    model = small_model("tnp-kr-full", n_layers=3)
    xc, yc, xt, mask = masked_task()
    mean, std = _reference_tnp_kr(model, xc, yc, xt, mask)
    pred = predict(model, xc, yc, xt, mask)
    assert_close(pred.mean, mean.float(), atol=1e-5, rtol=1e-4)
    assert_close(pred.stddev, std.float(), atol=1e-5, rtol=1e-4)


def test_tnp_kr_defaults_follow_the_protocol():
    model = tnpx.build_model("tnp-kr-full", 2, 1)
    h = model.hyper
    assert (h.dim_model, h.n_layers, h.n_heads, h.dim_head, h.dim_ff) == (64, 6, 4, 16, 128)
    assert (h.scale_transform, h.min_std) == ("exp", 0.0)
    assert model.embed.mlp[0].in_features == 3 and model.embed.mlp[0].out_features == 256
    assert model.decoder[0].out_features == 128 and model.decoder[-1].out_features == 2
    assert len(model.stack.blocks) == 6 and isinstance(model.norm, torch.nn.LayerNorm)
    fast = tnpx.build_model("tnp-kr-fast", 2, 1)
    assert count(fast) == count(model)  # FAVOR+ adds no parameters
    assert fast.stack.blocks[0].attn.projection.shape == (4, 64, 16)
    with pytest.raises(ValueError, match="n_features"):
        tnpx.build_model("tnp-kr-full", 1, 1, n_features=8)


# --- FAVOR+ in the model ---------------------------------------------------------------


def _features(model):
    return [block.attn.projection.clone() for block in model.stack.blocks]


def _train_forward(model, seed=0):
    xc, yc, xt = make_task(2, 6, 4, seed=seed)
    model.train()(xc, yc, xt)


def test_performer_features_saved_and_loaded_exactly(tmp_path):
    model = small_model("tnp-kr-fast", feature_seed=3, redraw_every=1)
    _train_forward(model)
    _train_forward(model)  # second call redraws: features no longer those of the seed
    model.eval()
    assert not torch.equal(_features(model)[0], _features(small_model("tnp-kr-fast"))[0])
    tnpx.save(model, tmp_path / "fast.pt")
    loaded = tnpx.load(tmp_path / "fast.pt")
    for a, b in zip(_features(model), _features(loaded)):
        assert torch.equal(a, b)
    assert int(loaded.stack.blocks[0].attn.n_draws) == 2
    xc, yc, xt, mask = masked_task(seed=1)
    a, b = predict(model, xc, yc, xt, mask), predict(loaded, xc, yc, xt, mask)
    assert torch.equal(a.mean, b.mean) and torch.equal(a.stddev, b.stddev)


def test_performer_is_deterministic_at_evaluation():
    model = small_model("tnp-kr-fast", redraw_every=1)
    before = _features(model)
    xc, yc, xt, mask = masked_task(seed=2)
    first = predict(model, xc, yc, xt, mask)
    second = predict(model, xc, yc, xt, mask)
    assert torch.equal(first.mean, second.mean)
    assert all(torch.equal(a, b) for a, b in zip(before, _features(model)))


def test_performer_redraws_only_when_asked():
    fixed = small_model("tnp-kr-fast")  # redraw_every = 0: the paper's fixed features
    start = _features(fixed)
    for i in range(3):
        _train_forward(fixed, i)
    assert all(torch.equal(a, b) for a, b in zip(start, _features(fixed)))

    every_two = small_model("tnp-kr-fast", redraw_every=2)
    start = _features(every_two)
    _train_forward(every_two)
    _train_forward(every_two)
    assert all(torch.equal(a, b) for a, b in zip(start, _features(every_two)))
    _train_forward(every_two)  # third training call: a new draw before use
    redrawn = _features(every_two)
    assert not any(torch.equal(a, b) for a, b in zip(start, redrawn))
    twin = small_model("tnp-kr-fast", redraw_every=2)  # same seed, same steps: same draw
    for i in range(3):
        _train_forward(twin, i)
    assert all(torch.equal(a, b) for a, b in zip(redrawn, _features(twin)))
    assert not torch.equal(redrawn[0], redrawn[1])  # layers draw different features
    other_seed = small_model("tnp-kr-fast", feature_seed=1)
    assert not torch.equal(_features(other_seed)[0], start[0])


def test_fast_with_many_features_approaches_full():
    full = small_model("tnp-kr-full", seed=5)
    xc, yc, xt, mask = masked_task(seed=3)
    target = predict(full, xc, yc, xt, mask).mean
    errors = []
    for n_features in (8, 4096):
        error = 0.0
        for seed in range(3):
            fast = small_model(
                "tnp-kr-fast", n_features=n_features, feature_norm="chi", feature_seed=seed
            )
            fast.load_state_dict(full.state_dict(), strict=False)  # all but the features
            error += (predict(fast, xc, yc, xt, mask).mean - target).abs().mean() / 3
        errors.append(error)
    assert errors[1] < errors[0] / 4 and errors[1] < 0.05 * target.abs().mean(), errors
