"""nn/attention.py: every attention has the one signature of the ``Attention`` protocol (keys
prepared once, queries answered against them, locations as keywords), ``forward`` and
``located`` are that composition, and attention that reads no locations ignores them."""

from __future__ import annotations

import inspect

import pytest
import torch

from tnpx.nn import (
    Attention,
    HyperMixing,
    KeyValueAttention,
    LinearAttention,
    MultiHeadAttention,
    PerformerAttention,
    RotaryAttention,
    TEMultiHeadAttention,
)

D, DIM_X = 16, 2
ATTENTIONS = {
    "softmax": lambda: MultiHeadAttention(D, 2, 8),
    "key-value": lambda: KeyValueAttention(D, 2, 8),
    "linear": lambda: LinearAttention(D, 2, 8),
    "performer": lambda: PerformerAttention(D, 2, 8, n_features=8, seed=0),
    "hypermixer": lambda: HyperMixing(D, dim_mixing=8, dim_hidden=16),
    "rotary": lambda: RotaryAttention(D, 2, 8, dim_x=DIM_X),
    "te": lambda: TEMultiHeadAttention(D, 2, 8, dim_x=DIM_X),
    "te-moving": lambda: TEMultiHeadAttention(D, 2, 8, dim_x=DIM_X, location_update=True),
}
# (method, the protocol's leading parameters, its keyword-only locations)
PROTOCOL = (
    ("prepare_keys", ["self", "keys", "key_mask"], "x_keys"),
    ("attend", ["self", "queries", "prepared"], "x_queries"),
)


def _attention(kind: str) -> Attention:
    torch.manual_seed(0)
    return ATTENTIONS[kind]().eval()


def _inputs(seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    zq, zk = torch.randn(2, 5, D, generator=g), torch.randn(2, 7, D, generator=g)
    xq, xk = torch.randn(2, 5, DIM_X, generator=g), torch.randn(2, 7, DIM_X, generator=g)
    mask = torch.tensor([[True] * 7, [True, False, True, True, False, True, False]])
    return zq, zk, xq, xk, mask


@pytest.mark.parametrize("kind", ATTENTIONS)
def test_every_attention_has_the_one_signature(kind):
    attn = _attention(kind)
    assert isinstance(attn, Attention)
    for method, leading, location in PROTOCOL:
        params = inspect.signature(getattr(type(attn), method)).parameters
        assert list(params)[: len(leading)] == leading
        assert params[location].kind is inspect.Parameter.KEYWORD_ONLY
        assert params[location].default is None
        extra = [p for p in list(params)[len(leading) :] if p != location]
        assert all(params[p].default is not inspect.Parameter.empty for p in extra)


@pytest.mark.parametrize("kind", ATTENTIONS)
def test_forward_and_located_are_prepare_then_attend(kind):
    attn = _attention(kind)
    zq, zk, xq, xk, mask = _inputs()
    with torch.no_grad():
        out = attn(zq, zk, mask, x_queries=xq, x_keys=xk)
        prepared = attn.prepare_keys(zk, mask, x_keys=xk)
        assert torch.equal(out, attn.attend(zq, prepared, x_queries=xq))
        located, moved = attn.located(zq, zk, xq, xk, mask)
    assert torch.equal(located, out) and out.shape == zq.shape
    assert moved.shape == xq.shape
    if kind != "te-moving":
        assert moved is xq  # only TE Eq. 10 moves query locations


@pytest.mark.parametrize("kind", [k for k in ATTENTIONS if not ATTENTIONS[k]().uses_locations])
def test_attention_that_reads_no_locations_ignores_them(kind):
    attn = _attention(kind)
    zq, zk, xq, xk, mask = _inputs()
    with torch.no_grad():
        without = attn(zq, zk, mask)
        assert torch.equal(attn(zq, zk, mask, x_queries=xq, x_keys=xk), without)
        assert torch.equal(attn(zq, zk, mask, x_queries=xq + 5.0, x_keys=xk), without)


@pytest.mark.parametrize("kind", ["rotary", "te"])
def test_location_reading_attention_needs_the_locations(kind):
    attn = _attention(kind)
    zq, zk, xq, xk, _ = _inputs()
    assert attn.uses_locations
    with pytest.raises(ValueError, match="needs x_keys"):
        attn(zq, zk, x_queries=xq)
    with pytest.raises(ValueError, match="needs x_queries"):
        attn(zq, zk, x_keys=xk)


@pytest.mark.parametrize("kind", ["rotary", "te"])
def test_location_reading_attention_depends_on_the_locations(kind):
    attn = _attention(kind)
    zq, zk, xq, xk, mask = _inputs()
    with torch.no_grad():
        out = attn(zq, zk, mask, x_queries=xq, x_keys=xk)
        moved = attn(zq, zk, mask, x_queries=xq, x_keys=xk + 0.5)
    assert not torch.allclose(out, moved)
