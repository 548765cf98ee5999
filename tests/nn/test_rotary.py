"""Rotary translation-equivariant attention (``tnpx.nn.RotaryAttention``): logits depend on
location differences only, a float64 re-derivation, the precision of the angles under large
shifts, options and errors. The ``te-tnp-rope`` model is tested with the TE models."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from tnpx.nn import RotaryAttention


def _attention(dim_x=1, seed=0, **kw) -> RotaryAttention:
    torch.manual_seed(seed)
    return RotaryAttention(8, n_heads=2, dim_head=6, dim_x=dim_x, **kw).double()


def _reference(attn: RotaryAttention, zq, zk, xq, xk, mask):
    """The attention written out in float64: per head, rotate each channel pair of q and k
    by omega_j x_d, softmax of the scaled dot products over valid keys, values, output map."""
    p = {k: v.double() for k, v in attn.state_dict().items()}
    h, dh, dx = attn.n_heads, attn.dim_head, attn.dim_x
    omega = p["log_frequencies"].exp()  # [P]

    def heads(name, z):
        return (z @ p[f"{name}.weight"].T + p[f"{name}.bias"]).view(*z.shape[:2], h, dh)

    def rotate(z, x):  # z [b, n, h, dh], x [b, n, dx]
        out = z.clone()
        for d in range(dx):
            for j in range(len(omega)):
                c = 2 * (d * len(omega) + j)
                angle = (omega[j] * x[..., d])[..., None]  # [b, n, 1]
                a, b = z[..., c], z[..., c + 1]
                out[..., c] = a * angle.cos() - b * angle.sin()
                out[..., c + 1] = a * angle.sin() + b * angle.cos()
        return out

    q, k, v = rotate(heads("to_q", zq), xq), rotate(heads("to_k", zk), xk), heads("to_v", zk)
    logits = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
    logits = logits.masked_fill(~mask[:, None, None, :], -math.inf)
    out = torch.einsum("bhqk,bkhd->bqhd", logits.softmax(-1), v).flatten(2)
    return out @ p["to_out.weight"].T + p["to_out.bias"]


@pytest.mark.parametrize("dim_x", [1, 2])
def test_matches_a_float64_re_derivation(dim_x):
    attn = _attention(dim_x)
    g = torch.Generator().manual_seed(1)
    zq, zk = torch.randn(2, 5, 8, generator=g).double(), torch.randn(2, 7, 8, generator=g).double()
    xq, xk = torch.randn(2, 5, dim_x, generator=g).double(), torch.randn(2, 7, dim_x, generator=g)
    mask = torch.tensor([[True] * 7, [True, True, False, True, False, True, True]])
    out, moved = attn.located(zq, zk, xq, xk.double(), mask)
    assert moved is xq  # locations do not move
    assert_close(out, _reference(attn, zq, zk, xq, xk.double(), mask), atol=1e-12, rtol=1e-12)


def test_logits_depend_on_location_differences_only():
    attn = _attention(2)
    g = torch.Generator().manual_seed(2)
    zq, zk = torch.randn(1, 4, 8, generator=g).double(), torch.randn(1, 6, 8, generator=g).double()
    xq, xk = torch.randn(1, 4, 2, generator=g).double(), torch.randn(1, 6, 2, generator=g).double()
    shift = torch.tensor([123.25, -7.5], dtype=torch.float64)
    assert_close(attn.located(zq, zk, xq + shift, xk + shift)[0], attn.located(zq, zk, xq, xk)[0])
    # ... but not on absolute positions of the keys alone
    assert not torch.allclose(
        attn.located(zq, zk, xq, xk + shift)[0], attn.located(zq, zk, xq, xk)[0]
    )


def test_float64_angles_keep_large_shifts_at_float32_rounding():
    """With angles computed in float32, a shift of 10^3 loses ~10^3 * omega * 6e-8 of phase;
    the float64 angles keep the rotated channels to one float32 rounding."""
    torch.manual_seed(0)
    attn = RotaryAttention(8, 2, 6, dim_x=1)
    x = torch.randint(-2048, 2048, (1, 50, 1)).float() / 1024
    z = torch.randn(1, 2, 50, 6)
    q0, q1 = attn.rotate(z, x), attn.rotate(z, x + 1000.0)
    k0, k1 = attn.rotate(z, x), attn.rotate(z, x + 1000.0)
    gap = ((q1 @ k1.mT) - (q0 @ k0.mT)).abs().max()
    assert gap < 1e-5
    omega = attn.log_frequencies.exp()  # the same rotation in float32 arithmetic
    theta = (x[..., None] * omega).flatten(-2)[:, None]
    theta_moved = ((x + 1000.0)[..., None] * omega).flatten(-2)[:, None]
    naive = (theta_moved - theta - 1000.0 * omega.repeat(1)).abs().max()
    assert naive > 1e-4  # float32 angles would be off by this much


def test_options_and_errors():
    with pytest.raises(ValueError, match="dim_head >= 2 \\* dim_x"):
        RotaryAttention(8, 2, 3, dim_x=2)
    with pytest.raises(ValueError, match="min_wavelength"):
        RotaryAttention(8, 2, 8, dim_x=1, min_wavelength=2.0, max_wavelength=1.0)
    fixed = RotaryAttention(8, 2, 8, dim_x=1)
    learned = RotaryAttention(8, 2, 8, dim_x=1, learn_frequencies=True)
    assert "log_frequencies" not in dict(fixed.named_parameters())
    assert "log_frequencies" in dict(learned.named_parameters())
    wavelengths = 2 * math.pi / fixed.log_frequencies.exp()
    assert_close(wavelengths[[0, -1]], torch.tensor([20.0, 0.05]), rtol=1e-5, atol=0)


@pytest.mark.parametrize("dim_x, dim_head", [(1, 8), (2, 6)])
def test_the_rotation_is_the_pairwise_formula_bit_for_bit(dim_x, dim_head):
    """``z cos + swap(z) sin`` on whole heads rounds as ``(a cos - b sin, a sin + b cos)``
    per pair does (the same products, and a + (-b) is a - b exactly); channels beyond the
    rotated pairs pass unchanged."""
    torch.manual_seed(0)
    attn = RotaryAttention(8, 2, dim_head, dim_x=dim_x)
    z, x = torch.randn(2, 2, 9, dim_head), torch.randn(2, 9, dim_x) * 30
    cos, sin = attn.rotation(x, z.dtype)
    n_rot = 2 * cos.shape[-1]
    even, odd = z[..., 0:n_rot:2], z[..., 1:n_rot:2]
    pairwise = torch.stack([even * cos - odd * sin, even * sin + odd * cos], -1).flatten(-2)
    turned = attn.rotate(z, x)
    assert torch.equal(turned[..., :n_rot], pairwise)
    assert torch.equal(turned[..., n_rot:], z[..., n_rot:])


def test_queries_at_the_keys_locations_reuse_their_rotation():
    """A set attending to itself (the same location tensor for queries and keys) reuses the
    keys' cosines and sines: the same numbers as rotating the queries anew, gradients too."""
    attn = _attention(2, learn_frequencies=True)
    g = torch.Generator().manual_seed(3)
    z, x = torch.randn(2, 6, 8, generator=g).double(), torch.randn(2, 6, 2, generator=g).double()
    shared = attn(z, z, x_queries=x, x_keys=x)
    (grad_shared,) = torch.autograd.grad(shared.sum(), attn.log_frequencies)
    apart = attn(z, z, x_queries=x.clone(), x_keys=x)
    (grad_apart,) = torch.autograd.grad(apart.sum(), attn.log_frequencies)
    assert torch.equal(shared, apart)
    assert_close(grad_shared, grad_apart, atol=1e-12, rtol=1e-12)
