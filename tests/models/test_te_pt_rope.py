"""te-pt-tnp-rope (models/pseudo_token.py): TE-PT-TNP's pseudo-tokens and Eq. 11
pseudo-locations with rotary attention. Exact translation equivariance at shifts 1 to 10^3 is in
``test_te.py`` (``TE_VARIANTS``); the contract suite checks what every model must do. Here: the
float64 pseudo-locations that keep it exact, context order, padding, streaming, fixed
pseudo-locations, training, options."""

from __future__ import annotations

import pytest
import torch

import tnpx
from tnpx.models.pseudo_token import PseudoLocationInit
from tnpx.nn import RotaryAttention, TurnedLocations

SMALL = {"dim_model": 32, "n_layers": 2, "n_heads": 2, "dim_head": 8, "dim_ff": 32, "n_pseudo": 4}
INITS = ["attention", "mean"]
SHIFT = 1000.0


def dyadic(shape, generator):
    """Inputs on a 2^-10 grid in [-2, 2), so a shift by 10^3 is exact in float32."""
    return torch.randint(-2048, 2048, shape, generator=generator).float() / 1024


def task(dim_x=1, n_ctx=12, n_tgt=9, seed=0, batch=2):
    g = torch.Generator().manual_seed(seed)
    return (
        dyadic((batch, n_ctx, dim_x), g) + SHIFT,  # far from the origin: rounding would show
        torch.randn(batch, n_ctx, 1, generator=g),
        dyadic((batch, n_tgt, dim_x), g) + SHIFT,
    )


def build(dim_x=1, **kw):
    torch.manual_seed(0)
    return tnpx.build_model("te-pt-tnp-rope", dim_x, 1, **{**SMALL, **kw}).eval()


def assert_same(p, q, atol=1e-5, rtol=1e-5):
    torch.testing.assert_close(p.mean, q.mean, atol=atol, rtol=rtol)
    torch.testing.assert_close(p.stddev, q.stddev, atol=atol, rtol=rtol)


def test_declared_flags():
    model = build()
    assert model.translation_equivariant and not model.rotation_equivariant
    assert type(model).streamable()
    assert "te-pt-tnp-rope" in tnpx.list_models()


def test_float64_pseudo_locations_shift_exactly():
    """Eq. 11's average in float64 with rows renormalised moves by the shift up to float64
    rounding; the float32 average (te-pt-tnp's) is off by far more at 10^3."""
    torch.manual_seed(0)
    init = PseudoLocationInit(16, 2, 8)
    u, zc = torch.randn(3, 5, 16), torch.randn(3, 40, 16)
    xc = dyadic((3, 40, 2), torch.Generator().manual_seed(1))
    with torch.no_grad():
        init.float64 = True
        exact = init(u, zc, xc + SHIFT, None) - init(u, zc, xc, None)
        init.float64 = False
        rounded = init(u, zc, xc + SHIFT, None).double() - init(u, zc, xc, None).double()
    assert exact.dtype == torch.float64
    assert (exact - SHIFT).abs().max() < 1e-10
    assert (rounded - SHIFT).abs().max() > 1e-6


@pytest.mark.parametrize("pseudo_init", INITS)
def test_pseudo_locations_are_fixed_and_move_with_the_context(pseudo_init):
    """No Eq. 10 update: every layer's pseudo-locations are the Eq. 11 ones, and shifting the
    context shifts them by exactly the shift."""
    model = build(2, pseudo_init=pseudo_init)
    xc, yc, _ = task(2)
    shift = torch.tensor([7.0, -3.0])
    with torch.no_grad():
        base = model.encode_context(xc, yc)
        moved = model.encode_context(xc + shift, yc)
    turned0, turned1 = base.state.locations  # one per layer: the same, turned once
    assert turned0 is turned1 and isinstance(turned0, TurnedLocations)
    v0 = turned0.x
    assert v0.dtype == torch.float64
    w0 = moved.state.locations[0].x
    torch.testing.assert_close(w0 - v0, shift.double().expand_as(v0), atol=1e-10, rtol=0)


@pytest.mark.parametrize("pseudo_init", INITS)
@pytest.mark.parametrize("dim_x", [1, 2])
def test_context_order_does_not_matter(pseudo_init, dim_x):
    model = build(dim_x, pseudo_init=pseudo_init)
    xc, yc, xt = task(dim_x)
    perm = torch.randperm(xc.shape[1], generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        assert_same(model(xc[:, perm], yc[:, perm], xt), model(xc, yc, xt))


@pytest.mark.parametrize("pseudo_init", INITS)
def test_padded_context_equals_unpadded(pseudo_init):
    model = build(2, pseudo_init=pseudo_init)
    xc, yc, xt = task(2, n_ctx=10, batch=1)
    n_real = 6
    mask = torch.zeros(1, 10, dtype=torch.bool)
    mask[0, [0, 2, 3, 5, 7, 9]] = True
    xp, yp = xc.clone(), yc.clone()
    xp[~mask], yp[~mask] = 5e3, -7.0  # padding far away must not move the pseudo-locations
    with torch.no_grad():
        padded = model(xp, yp, xt, mask_c=mask)
        alone = model(xc[mask][None], yc[mask][None], xt)
    assert mask.sum() == n_real
    assert_same(padded, alone)


@pytest.mark.parametrize("masked", [False, True])
def test_streamed_prediction_equals_one_shot(masked):
    model = build(2)
    xc, yc, xt = task(2, n_tgt=23)
    mask = None
    if masked:
        mask = torch.ones(2, 12, dtype=torch.bool)
        mask[1, 4:] = False
    with torch.no_grad():
        full = model(xc, yc, xt, mask_c=mask)
        streamed = model.predict_streamed(xc, yc, xt, mask, chunk_size=5)
    assert_same(streamed, full)


def count_turns(monkeypatch) -> list[int]:
    """The number of location sets rotary attention turns (angles, cosines, sines) from now on,
    as a one-item list that grows."""
    calls, rotation = [0], RotaryAttention.rotation

    def counted(self, x, dtype):
        calls[0] += 1
        return rotation(self, x, dtype)

    monkeypatch.setattr(RotaryAttention, "rotation", counted)
    return calls


@pytest.mark.parametrize("learn", [False, True])
def test_each_location_set_is_turned_once_per_step(monkeypatch, learn):
    """Context, pseudo-tokens and targets keep their locations through every layer: with fixed
    frequencies each set is turned once in a training step (3), not once per attention call
    (16 at 3 layers), and the step's loss and gradients are those of turning per call (the
    same numbers up to the order in which the gradient's terms add)."""
    model = build(n_layers=3, learn_frequencies=learn).train()
    xc, yc, xt = task()
    yt = torch.randn(2, xt.shape[1], 1, generator=torch.Generator().manual_seed(1))

    def step():
        model.zero_grad()
        loss = -model(xc, yc, xt).log_prob(yt).mean()
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]

    turns = count_turns(monkeypatch)
    loss, grads = step()
    assert turns[0] == (16 if learn else 3)
    monkeypatch.setattr(type(model), "_located", lambda self, x: x)  # turn per call
    per_call, per_call_grads = step()
    assert turns[0] == (32 if learn else 19)
    assert torch.equal(loss, per_call)  # the forward is the same, op for op
    for g, h in zip(grads, per_call_grads, strict=True):
        torch.testing.assert_close(g, h, atol=1e-6, rtol=1e-5)


def test_turned_locations_refuse_learned_frequencies():
    attention = RotaryAttention(16, 2, 8, dim_x=1, learn_frequencies=True)
    with pytest.raises(ValueError, match="fixed frequencies"):
        attention.turn(TurnedLocations(torch.zeros(1, 3, 1)), torch.float32)


def test_turned_locations_turn_as_their_tensor_does():
    """A rotation reused from TurnedLocations is the one the tensor gets, per dtype."""
    attention = RotaryAttention(16, 2, 8, dim_x=2)
    x = dyadic((2, 5, 2), torch.Generator().manual_seed(2)).double() + SHIFT
    turned = TurnedLocations(x)
    for dtype in (torch.float32, torch.bfloat16, torch.float32):
        got, want = attention.turn(turned, dtype), attention.turn(x, dtype)
        assert torch.equal(got.cos, want.cos) and torch.equal(got.sin, want.sin)
    assert sorted(map(str, turned.rotations)) == ["torch.bfloat16", "torch.float32"]


def test_rotary_is_not_te_pt_tnp():
    """The rotary attention changes the function: same seed and sizes, other predictions."""
    xc, yc, xt = task()
    with torch.no_grad():
        rope = build()(xc, yc, xt).mean
        torch.manual_seed(0)
        te = tnpx.build_model("te-pt-tnp", 1, 1, **SMALL).eval()(xc, yc, xt).mean
    assert (rope - te).abs().max() > 1e-4


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_trains_and_its_gradients_are_finite():
    torch.manual_seed(0)
    model = tnpx.build_model("te-pt-tnp-rope", 1, 1, dim_model=16, n_layers=2, n_heads=2,
                             dim_head=8, dim_ff=16, n_pseudo=4, learn_frequencies=True)  # fmt: skip
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
        assert model.pseudo_loc.grad.abs().sum() > 0  # the pseudo-locations are learned
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.3


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"pseudo_init": "zeros"}, "pseudo_init must be one of"),
        ({"tokens": "flagged"}, "tokens must be one of"),
        ({"qkv_bias": False}, "qkv_bias=True only"),
        ({"relative": "post"}, "relative"),
    ],
)
def test_bad_options_fail_clearly(kw, message):
    with pytest.raises(ValueError, match=message):
        tnpx.build_model("te-pt-tnp-rope", 2, 1, **kw)
