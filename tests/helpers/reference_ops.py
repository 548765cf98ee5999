"""Float64 operations for re-deriving an authors' code's forward pass (the fidelity tests).

Every fidelity test writes its reference out of these explicit operations, reading the tnpx
model's ``state_dict()`` by parameter name and never calling the model's layers, so that a
refactor that changes a model's function fails loudly (``docs/fidelity.md``). The references
take no context mask (their tasks share a context size, or use a prefix mask), so each task is
computed on its own valid context points: that is what tnpx's key mask must reproduce.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

TOL = dict(atol=1e-10, rtol=0)
FLAX_EPS = 1e-6  # flax.linen.LayerNorm's default epsilon
TORCH_EPS = 1e-5  # torch.nn.LayerNorm's default epsilon

State = dict[str, torch.Tensor]


def linear(x: torch.Tensor, sd: State, name: str, bias: bool = True) -> torch.Tensor:
    """torch ``nn.Linear`` / flax ``nn.Dense`` (torch stores the kernel transposed)."""
    out = x @ sd[f"{name}.weight"].T
    if bias:
        return out + sd[f"{name}.bias"]
    assert f"{name}.bias" not in sd, f"{name} must have no bias"
    return out


def layer_norm(x: torch.Tensor, sd: State, name: str, eps: float = TORCH_EPS) -> torch.Tensor:
    """LayerNorm over the last axis with the biased variance (torch and flax alike)."""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * sd[f"{name}.weight"] + sd[f"{name}.bias"]


def relu(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x > 0, x, torch.zeros_like(x))


def softplus(r: torch.Tensor) -> torch.Tensor:
    return torch.clamp_min(r, 0) + torch.log1p(torch.exp(-r.abs()))


def sigmoid(r: torch.Tensor) -> torch.Tensor:
    return 1 / (1 + torch.exp(-r))


def mlp(x: torch.Tensor, sd: State, prefix: str, n_linear: int) -> torch.Tensor:
    """``Linear, ReLU, ..., Linear`` (torch ``nn.Sequential`` indices 0, 2, 4, ...)."""
    for i in range(n_linear):
        x = linear(x, sd, f"{prefix}.{2 * i}")
        if i < n_linear - 1:
            x = relu(x)
    return x


def head_columns(x: torch.Tensor, h: int, n_heads: int) -> torch.Tensor:
    """Head ``h`` of a ``[n, n_heads * d_head]`` projection: columns ``h d_head : (h+1) d_head``
    (``reshape(n, n_heads, d_head)`` in every reference read so far)."""
    width = x.shape[-1] // n_heads
    return x[:, h * width : (h + 1) * width]


def softmax(scores: torch.Tensor) -> torch.Tensor:
    weights = torch.exp(scores - scores.max(-1, keepdim=True).values)
    return weights / weights.sum(-1, keepdim=True)


def softmax_attention(
    xq: torch.Tensor,
    xkv: torch.Tensor,
    sd: State,
    prefix: str,
    n_heads: int,
    qkv_bias: bool = True,
    xv: torch.Tensor | None = None,
) -> torch.Tensor:
    """Multi-head attention of one task, xq ``[n_q, d]``, xkv ``[n_k, d]`` (keys, and values
    unless ``xv [n_k, d]`` is given): projections ``to_q``/``to_k``/``to_v``, per-head scores
    ``q.k / sqrt(d_head)``, softmax over the keys, output projection ``to_out`` with bias."""
    q = linear(xq, sd, f"{prefix}.to_q", qkv_bias)
    k = linear(xkv, sd, f"{prefix}.to_k", qkv_bias)
    v = linear(xkv if xv is None else xv, sd, f"{prefix}.to_v", qkv_bias)
    out = []
    for h in range(n_heads):
        qh, kh, vh = (head_columns(t, h, n_heads) for t in (q, k, v))
        out.append(softmax(qh @ kh.T / math.sqrt(qh.shape[-1])) @ vh)
    return linear(torch.cat(out, -1), sd, f"{prefix}.to_out")


def normal_log_prob(y: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """Elementwise ``log N(y; mean, std^2)``."""
    return -0.5 * ((y - mean) / std) ** 2 - torch.log(std) - 0.5 * math.log(2 * math.pi)


def normal_kl(mu_p, std_p, mu_q, std_q) -> torch.Tensor:
    """Elementwise ``KL(N(mu_p, std_p^2) || N(mu_q, std_q^2))``."""
    return torch.log(std_q / std_p) + (std_p**2 + (mu_p - mu_q) ** 2) / (2 * std_q**2) - 0.5


def logmeanexp(x: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """``log mean exp`` over ``dim``, with the maximum taken out."""
    top = x.max(dim, keepdim=True).values
    return (top + torch.log(torch.exp(x - top).mean(dim, keepdim=True))).squeeze(dim)


def flag(n: int, value: float, like: torch.Tensor) -> torch.Tensor:
    """A ``[n, 1]`` column of ``value`` (the context/target flag channel)."""
    return torch.full((n, 1), float(value), dtype=like.dtype)


# --- tiny models and tasks -----------------------------------------------------------------


def randomise(model: torch.nn.Module, scale: float = 0.4, seed: int = 1) -> torch.nn.Module:
    """``model`` in float64 with every parameter (LayerNorms included) drawn N(0, scale²), so
    that no parameter sits at an initial value that would hide a difference; eval mode."""
    model = model.double()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(scale * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    return model.eval()


def masked_task(dim_x: int = 2, dim_y: int = 2, seed: int = 2):
    """Three float64 tasks of 6 context slots with 6, 3 and 1 valid (padding scattered: tnpx's
    mask is any pattern) and 5 targets: ``xc [3, 6, dim_x]``, ``yc [3, 6, dim_y]``,
    ``xt [3, 5, dim_x]``, ``mask [3, 6]``."""
    gen = torch.Generator().manual_seed(seed)
    xc = torch.randn(3, 6, dim_x, generator=gen, dtype=torch.float64)
    yc = torch.randn(3, 6, dim_y, generator=gen, dtype=torch.float64)
    xt = torch.randn(3, 5, dim_x, generator=gen, dtype=torch.float64)
    mask = torch.tensor(
        [[1, 1, 1, 1, 1, 1], [1, 0, 1, 0, 0, 1], [0, 0, 0, 1, 0, 0]], dtype=torch.bool
    )
    return xc, yc, xt, mask


def assert_reloads_identically(model, path, dim_x: int = 2, dim_y: int = 2):
    """``tnpx.save`` then ``tnpx.load``: the same hyper-parameters and, on :func:`masked_task`
    in float32, bitwise the same prediction (latent models with the same seed). Returns the
    loaded model."""
    import tnpx

    tnpx.save(model, path)
    loaded = tnpx.load(path)
    assert loaded.hyper == model.hyper
    task = masked_task(dim_x, dim_y)
    xc, yc, xt, mask = (t.float() if t.is_floating_point() else t for t in task)
    with torch.no_grad():
        torch.manual_seed(0)
        a = model(xc, yc, xt, mask_c=mask)
        torch.manual_seed(0)
        b = loaded(xc, yc, xt, mask_c=mask)
    assert torch.equal(a.mean, b.mean)
    spread = "covariance_matrix" if hasattr(a, "covariance_matrix") else "stddev"
    assert torch.equal(getattr(a, spread), getattr(b, spread))
    return loaded


Reference = Callable[..., tuple[torch.Tensor, torch.Tensor]]


def reference_prediction(model, reference: Reference, xc, yc, xt, mask):
    """The reference's ``(mean, std)`` per task on its valid context points, stacked:
    ``reference(state_dict, xc [n_valid, dim_x], yc, xt [n_tgt, dim_x], hyper_dict)``."""
    sd, hyper = model.state_dict(), vars(model.hyper)
    out = [reference(sd, xc[i, mask[i]], yc[i, mask[i]], xt[i], hyper) for i in range(len(xc))]
    return torch.stack([m for m, _ in out]), torch.stack([s for _, s in out])


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# --- the draws of stochastic models, fixed ---------------------------------------------------


def fix_latent_draw(monkeypatch, model, eps: torch.Tensor) -> None:
    """A latent model's ``z_k ~ q`` from the standard-normal draws ``eps [K, d_z]`` given
    here, shared by the tasks (as the model shares its own)."""
    monkeypatch.setattr(model, "draw", lambda q, k: q.loc + q.scale * eps[:k, None, :])


def fix_bootstrap(monkeypatch, mask: torch.Tensor, k: int, seed: int = 8) -> torch.Tensor:
    """The bootstrap models' resampling indices ``[2, K, b, n_ctx]`` (pairs, residuals) drawn
    here, each below its task's number of valid points, with the context left in slot order
    (valid points first, ``mask [b, n_ctx]``); returns the indices."""
    import tnpx.models.bootstrap as bootstrap

    n_valid = mask.sum(1)
    u = torch.rand(2, k, *mask.shape, generator=torch.Generator().manual_seed(seed))
    index = (u * n_valid[None, None, :, None]).long()
    monkeypatch.setattr(bootstrap, "resample_indices", lambda n, n_ctx, kk: index[:, :kk])
    monkeypatch.setattr(
        bootstrap,
        "canonical_order",
        lambda xc, yc, m: (~m).to(torch.uint8).argsort(dim=1, stable=True),
    )
    return index
