"""Coherent function samples from a neural process: :func:`sample`.

A model with a per-target Gaussian head (CNP, TNP, TNP-KR, TE-TNP, ...) predicts each target's
*marginal*; drawing every target independently gives noise, not functions. The autoregressive
rollout (Bruinsma et al., 2023, "Autoregressive conditional neural processes") turns such a
model into a joint sampler: draw one target from its predictive, add the draw to the context,
predict the next target, and so on. Each sample path is then a draw from the joint
``p(y_1) p(y_2 | y_1) ... p(y_n | y_<n)`` the model implies.

Cost: ``n_tgt`` model calls, each on ``n_samples * batch`` tasks with a context that grows from
``n_ctx`` to ``n_ctx + n_tgt - 1`` points; for a transformer NP with exact attention a call costs
``O((n_ctx + k)^2)``, so a rollout costs ``O(n_tgt (n_ctx + n_tgt)^2)`` per sample. Memory is
``n_samples * batch`` contexts of up to ``n_ctx + n_tgt`` points. The samples are of ``y`` (the
model's predictive includes observation noise), which is also what the model was trained to
condition on.

Models whose prediction is already joint sample from it directly: TNP-ND (``JointGaussian``)
and the latent / bootstrap NPs (``LatentMixture``: one latent per sample path).

A model with a causal buffer (``buffered_sampling``: ``inc-tnp``; Hassan et al., ICLR 2026)
encodes the context once for every path; each draw enters its path's buffer, which attends to
the cached context and causally to earlier entries, and the next target reads both. A step
costs ``O(n_ctx + k)`` per path instead of re-encoding ``n_ctx + k`` points, and memory is
one context plus ``n_samples * batch`` buffers. It samples the joint the model was trained to
factorise this way (``model.joint_log_prob`` scores it), not the rollout's.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
from torch.distributions import Distribution, Normal

from ..input_checks import check_option
from ..likelihoods import EXPOSURE_FAMILIES, model_family
from ..models.base import NeuralProcess
from ..models.exposure import predict_with_exposures, refuse_exposures

METHODS = ("auto", "autoregressive", "buffer", "joint")


def sample(
    model: NeuralProcess,
    xc: torch.Tensor,
    yc: torch.Tensor,
    xt: torch.Tensor,
    n_samples: int = 16,
    *,
    mask_c: torch.Tensor | None = None,
    order: str | torch.Tensor = "random",
    method: str = "auto",
    seed: int | None = None,
    exposure_c: torch.Tensor | None = None,
    exposure_t: torch.Tensor | None = None,
) -> torch.Tensor:
    """Joint samples of ``y`` at ``xt`` given the context.

    Args:
        model: a trained model (put in eval mode by the caller if it has dropout).
        xc: ``[batch, n_ctx, dim_x]``; yc: ``[batch, n_ctx, dim_y]``; xt: ``[batch, n_tgt,
            dim_x]``; mask_c: ``[batch, n_ctx]`` (True = observed) or None.
        n_samples: sample paths per task.
        order: the autoregressive order over the targets: ``"random"`` (a fresh permutation per
            sample path, which averages out the order's effect), ``"given"`` (the order of
            ``xt``), or a permutation of ``range(n_tgt)`` as an integer tensor.
        method: ``"autoregressive"``, ``"joint"`` (the model's own joint prediction: TNP-ND,
            latent NPs), ``"buffer"`` (the causal buffer of a model that declares
            ``buffered_sampling``: ``inc-tnp``), or ``"auto"``: joint where the prediction is
            joint, the buffer where the model has one, else autoregressive.
        seed: seeds the draws (and the random order) without touching the global RNG state;
            None uses the global RNG.
        exposure_c: a count model's exposures ``[batch, n_ctx, 1]`` (> 0) and
        exposure_t: ``[batch, n_tgt, 1]`` (:mod:`tnpx.models.exposure`): the context is read
            as rates, each target's counts are drawn at its exposure, and each draw joins its
            path's context at its target's exposure. Autoregressive only; None: 1.

    Returns:
        ``[n_samples, batch, n_tgt, dim_y]``, in the order of ``xt`` whatever the rollout order.
    """
    if not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    check_option("method", method, METHODS)
    xc, yc, xt, mask_c = model._validate(xc, yc, xt, mask_c)
    n_tgt = xt.shape[1]
    perm = _order(order, n_tgt)
    exposed = exposure_c is not None or exposure_t is not None
    if exposed and method not in ("auto", "autoregressive"):
        raise ValueError(f"method={method!r} takes no exposures; use method='autoregressive'")
    with torch.no_grad(), _seeded(seed, xt.device):
        if exposed:
            refuse_exposures(model, exposure_c, exposure_t)
            if model_family(model) in EXPOSURE_FAMILIES:  # else every exposure is 1
                exposures = _exposures(model, xc, xt, exposure_c, exposure_t)
                return _autoregressive(model, xc, yc, xt, mask_c, n_samples, perm, exposures)
        if method == "joint" or (method == "auto" and model.predicts_jointly):
            return _joint_samples(model, xc, yc, xt, mask_c, n_samples)
        if method == "buffer" or (method == "auto" and model.buffered_sampling):
            if not model.buffered_sampling:
                raise ValueError(
                    f"{model.name} has no causal buffer (it does not declare buffered_sampling); "
                    "use method='autoregressive'"
                )
            return _buffered(model, xc, yc, xt, mask_c, n_samples, perm)
        if model.targets_interact:
            raise ValueError(
                f"{model.name}: targets interact, so its marginals depend on which targets are "
                "asked for together; use method='joint'"
            )
        return _autoregressive(model, xc, yc, xt, mask_c, n_samples, perm)


def _order(order: str | torch.Tensor, n_tgt: int) -> str | torch.Tensor:
    if isinstance(order, str):
        if order not in ("random", "given"):
            raise ValueError(f"order must be 'random', 'given' or a permutation, got {order!r}")
        return order
    perm = torch.as_tensor(order)
    if perm.dtype.is_floating_point or perm.shape != (n_tgt,):
        raise ValueError(f"order: expected an integer permutation of shape [{n_tgt}]")
    if not torch.equal(perm.sort().values.cpu(), torch.arange(n_tgt)):
        raise ValueError(f"order is not a permutation of range({n_tgt})")
    return perm


@contextmanager
def _seeded(seed: int | None, device: torch.device):
    if seed is None:
        yield
        return
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def _joint_samples(model, xc, yc, xt, mask_c, n_samples: int) -> torch.Tensor:
    if not model.predicts_jointly:
        raise ValueError(
            f"{model.name} predicts each target's marginal, not a joint distribution; "
            "use method='autoregressive'"
        )
    return model(xc, yc, xt, mask_c).sample((n_samples,))


def _draw(pred: Distribution) -> torch.Tensor:
    """One draw per task from a per-target prediction ``[tasks, 1, dim_y]``."""
    if isinstance(pred, Normal):  # reparameterised: the same draws on every device
        return pred.loc + pred.scale * torch.randn_like(pred.loc)
    return pred.sample()


def _paths(xt: torch.Tensor, n_samples: int, perm) -> tuple[torch.Tensor, torch.Tensor]:
    """Every sample path's targets in its draw order: ``(x_seq [n_samples * b, n_tgt, dim_x],
    idx [n_samples * b, n_tgt])``, rows sample-major, ``x_seq[:, k] = xt[:, idx[:, k]]``."""
    b, n_tgt, dim_x = xt.shape
    rows = n_samples * b
    if isinstance(perm, str) and perm == "random":
        idx = torch.rand(rows, n_tgt, device=xt.device).argsort(1)
    elif isinstance(perm, str):
        idx = torch.arange(n_tgt, device=xt.device).expand(rows, n_tgt)
    else:
        idx = perm.to(xt.device).expand(rows, n_tgt)
    x_seq = _tile(xt, n_samples).gather(1, idx[..., None].expand(-1, -1, dim_x))
    return x_seq, idx


def _tile(t: torch.Tensor, n_samples: int) -> torch.Tensor:
    """``[b, ...] -> [n_samples * b, ...]``, sample-major."""
    return t.unsqueeze(0).expand(n_samples, *t.shape).reshape(n_samples * t.shape[0], *t.shape[1:])


def _in_target_order(y_seq: torch.Tensor, idx: torch.Tensor, n_samples: int) -> torch.Tensor:
    """Draws in each path's order ``[n_samples * b, n_tgt, dim_y]`` -> ``[n_samples, b, n_tgt,
    dim_y]`` in the order of the targets."""
    rows, n_tgt, dim_y = y_seq.shape
    out = torch.empty_like(y_seq).scatter_(1, idx[..., None].expand(-1, -1, dim_y), y_seq)
    return out.reshape(n_samples, rows // n_samples, n_tgt, dim_y)


def _exposures(model, xc, xt, exposure_c, exposure_t) -> tuple[torch.Tensor, torch.Tensor]:
    """``(exposure_c [b, n_ctx, 1], exposure_t [b, n_tgt, 1])``, each checked (a count
    model's), 1 where None."""
    out = []
    for e, points, key in ((exposure_c, xc, "exposure_c"), (exposure_t, xt, "exposure_t")):
        if e is None:
            e = points.new_ones(*points.shape[:2], 1)
        elif not isinstance(e, torch.Tensor) or e.shape != (*points.shape[:2], 1):
            got = list(e.shape) if isinstance(e, torch.Tensor) else type(e).__name__
            raise ValueError(f"{key}: expected shape {[*points.shape[:2], 1]}, got {got}")
        elif not bool(((e > 0) & e.isfinite()).all()):
            raise ValueError(f"{key}: every exposure must be a finite number > 0")
        out.append(e.to(points))
    return out[0], out[1]


def _autoregressive(
    model, xc, yc, xt, mask_c, n_samples: int, perm, exposures=None
) -> torch.Tensor:
    """The rollout; ``exposures`` ``(exposure_c, exposure_t)`` for a count model (each draw
    joins its path's context with its target's exposure)."""
    x_seq, idx = _paths(xt, n_samples, perm)
    rows, n_tgt = idx.shape
    x_ctx, y_ctx = _tile(xc, n_samples), _tile(yc, n_samples)
    m_ctx = None if mask_c is None else _tile(mask_c, n_samples)
    if exposures is not None:
        e_ctx, e_seq = _tile(exposures[0], n_samples), _tile(exposures[1], n_samples)
        e_seq = e_seq.gather(1, idx[..., None])  # each path's targets in its draw order
    y_seq = xt.new_empty(rows, n_tgt, yc.shape[-1])
    for k in range(n_tgt):
        x_k = x_seq[:, k : k + 1]
        if exposures is None:
            pred = model(x_ctx, y_ctx, x_k, m_ctx)
        else:
            e_k = e_seq[:, k : k + 1]
            pred = predict_with_exposures(model, x_ctx, y_ctx, x_k, m_ctx, None, e_ctx, e_k)
            e_ctx = torch.cat([e_ctx, e_k], 1)
        draw = _draw(pred)  # [rows, 1, dim_y]
        y_seq[:, k : k + 1] = draw
        x_ctx = torch.cat([x_ctx, x_k], 1)
        y_ctx = torch.cat([y_ctx, draw], 1)
        if m_ctx is not None:
            m_ctx = torch.cat([m_ctx, m_ctx.new_ones(rows, 1)], 1)
    return _in_target_order(y_seq, idx, n_samples)


def _buffered(model, xc, yc, xt, mask_c, n_samples: int, perm) -> torch.Tensor:
    """The causal buffer: the context encoded once for all paths; each draw enters its path's
    buffer, which the next target reads beside the context."""
    x_seq, idx = _paths(xt, n_samples, perm)
    rows, n_tgt = idx.shape
    context = model.encode_context(xc, yc, mask_c)
    buffer = model.start_buffer(context, n_samples, capacity=n_tgt - 1)
    y_seq = xt.new_empty(rows, n_tgt, yc.shape[-1])
    for k in range(n_tgt):
        x = x_seq[:, k : k + 1]
        draw = _draw(model.predict_with_buffer(context, buffer, x))  # [rows, 1, dim_y]
        y_seq[:, k : k + 1] = draw
        if k + 1 < n_tgt:
            buffer = model.add_to_buffer(context, buffer, x, draw)
    return _in_target_order(y_seq, idx, n_samples)
