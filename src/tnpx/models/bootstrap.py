"""Bootstrapping neural processes (Lee et al., 2020): ``bnp`` on the CNP encoder, ``banp`` on
the CANP encoder.

For a context ``C = (X, Y)`` of ``n`` points, each of ``K`` bootstrap samples is built as in the
BNP paper's residual bootstrap, following the authors' code (``juho-lee/bnp``,
``regression/models/bnp.py``), without gradients:

1. paired bootstrap: ``C_k = (X, Y)[i]``, ``n`` indices ``i`` drawn with replacement;
2. the base model's prediction at the context inputs from ``C_k``:
   ``(mu_k, sigma_k) = dec(enc(C_k; X), X, 0)``;
3. standardised residuals ``e_k = (Y - mu_k) / sigma_k``, resampled with replacement
   (``n`` fresh indices ``j``) and centred: ``e*_k = e_k[j] - mean(e_k[j])``;
4. the bootstrap context ``C~_k = (X, mu_k + sigma_k e*_k)``.

The prediction is the mixture over ``k`` of ``N(dec(enc(C; x_t), x_t, enc(C~_k; x_t)))``. The
decoder's first layer acts on ``[r, x, r~]``: its ``r~`` block is the paper's adaptation layer
(a bias-free linear map of the bootstrap encoding added to the first hidden layer), and the
base model is the same decoder with ``r~ = 0``. Training minimises ``-(LL_base + LL_boot)``
per target point (BNP's objective, base model and bootstrapped model together).

Options for the TNP-KR code's BNP / BANP (MLGlobalHealth/dl4bi ``meta_regression/{bnp,banp}.py``,
preset ``kr-code``): ``boot_adapter="dense"`` decodes ``MLP(Dense([r, x]) + Dense(r~))``, the
adaptation layer with its own bias and a linear map before the MLP; ``bootstrap_loss="mean"``
halves the loss; ``bootstrap_grad=True`` lets gradients flow through steps 2-4 (the code stops
them only at the data); ``pair_keys="original"`` keys the paired bootstrap's cross-attention
with the original context inputs in slot order, as that code's BANP does (keys ``="x"`` only).

Resampling is per task and skips padded points. Each task's context is first put in a canonical
order (lexicographic in ``(x, y)``, padding last), and the uniform draws behind the indices come
from a generator seeded per call from the global RNG and shared by the tasks of a batch: so the
bootstrap samples depend on the context as a set, repeat under ``torch.manual_seed``, and do not
depend on padding or batch-mates.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.distributions import Normal

from ..distributions import LatentMixture
from ..nn import MLP, check_option, masked_mean
from .base import likelihood_head
from .cnp_family import (
    CANPHyper,
    CNPHyper,
    MixtureNP,
    attentive_encoder,
    deterministic_width,
    pooling_encoder,
    seeded_generator,
)
from .registry import register


def take(t: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``t[..., index, :]`` per leading index: t ``[..., n, f]``, index ``[..., m]`` ->
    ``[..., m, f]``."""
    return t.gather(-2, index[..., None].expand(*index.shape, t.shape[-1]))


def canonical_order(xc: torch.Tensor, yc: torch.Tensor, mask_c: torch.Tensor | None):
    """Indices ``[b, n_ctx]`` sorting each task's points lexicographically by ``(x, y)``, padded
    points last (equal points are interchangeable, so ties do not matter)."""
    feats = torch.cat([xc, yc], -1)
    b, n = feats.shape[:2]
    order = torch.arange(n, device=feats.device).expand(b, n)
    for f in reversed(range(feats.shape[-1])):  # stable sorts, least significant key first
        order = order.gather(1, feats[..., f].gather(1, order).argsort(dim=1, stable=True))
    if mask_c is not None:
        padded = (~mask_c).gather(1, order).to(torch.uint8)
        order = order.gather(1, padded.argsort(dim=1, stable=True))
    return order


def resample_indices(n_valid: torch.Tensor, n_ctx: int, k: int) -> torch.Tensor:
    """Indices ``[2, k, b, n_ctx]`` drawn uniformly from ``0..n_valid[b] - 1`` (two independent
    sets: pairs and residuals). Slot ``j`` uses the draws ``u[j]`` of a ``[n_ctx, 2, k]`` tensor
    whose leading rows do not depend on ``n_ctx``, so a task padded to more slots gets the same
    indices for its real points."""
    u = torch.rand(n_ctx, 2, k, generator=seeded_generator()).permute(1, 2, 0)
    n = n_valid[None, None, :, None]
    index = (u.to(n_valid.device)[:, :, None, :] * n).long()
    return torch.minimum(index, (n - 1).clamp_min(0))


@dataclass
class BootstrapOptions:
    n_bootstrap: int = 16  # K at evaluation
    n_train_bootstrap: int = 4  # K in training
    ll_estimate: str = "joint"  # joint | marginal
    boot_adapter: str = "concat"  # concat: MLP([r, x, r~]) | dense: MLP(Dense([r, x]) + Dense(r~))
    bootstrap_loss: str = "sum"  # sum: -(LL_base + LL_boot) | mean: half that (TNP-KR code)
    bootstrap_grad: bool = False  # gradients through the bootstrap contexts (TNP-KR code)
    pair_keys: str = "resampled"  # resampled | original (TNP-KR code's BANP; keys="x" only)


class BootstrapNP(MixtureNP):
    """A base encoder ``(xc, yc, xq, mask) -> r [b, n_q, d]`` and the decoder
    ``MLP([r, x, r~])`` -> Gaussian head, bootstrapped as described in the module docstring."""

    joint_estimate = "joint log-density of the bootstrap mixture"
    mixture_of = "residual-bootstrap contexts"
    eval_samples = "n_bootstrap"
    train_samples = "n_train_bootstrap"

    encoder: nn.Module  # set by the subclass

    def __init__(self, dim_x: int, dim_y: int, hyper):
        super().__init__(dim_x, dim_y, hyper)
        check_option("boot_adapter", hyper.boot_adapter, ("concat", "dense"))
        check_option("bootstrap_loss", hyper.bootstrap_loss, ("sum", "mean"))
        check_option("pair_keys", hyper.pair_keys, ("resampled", "original"))
        if hyper.pair_keys == "original" and hyper.keys != "x":
            raise ValueError("pair_keys='original' needs keys='x' (keys embedded from inputs)")
        d, dim_r = hyper.dim_model, deterministic_width(hyper)
        self.likelihood = likelihood_head(hyper, dim_y)
        n_out = self.likelihood.n_params
        if hyper.boot_adapter == "concat":
            self.decoder = MLP(2 * dim_r + dim_x, n_out, d, hyper.n_decoder_hidden)
        else:  # dl4bi bnp.py: dec_hid, dec_boot (each Dense with bias), dec_dist
            self.adapter_base = nn.Linear(dim_r + dim_x, d)
            self.adapter_boot = nn.Linear(dim_r, d)
            self.decoder = MLP(d, n_out, d, hyper.n_decoder_hidden)

    def decode(self, r, xq, r_boot=None) -> Normal:
        """r, r_boot ``[..., n_q, dim_r]``, xq ``[..., n_q, dim_x]`` -> ``Normal [..., n_q,
        dim_y]``; ``r_boot=None`` is the base model."""
        if self.hyper.boot_adapter == "dense":
            h = self.adapter_base(torch.cat([r, xq], -1))
            h = h if r_boot is None else h + self.adapter_boot(r_boot)
            return self.likelihood(self.decoder(h))
        r_boot = torch.zeros_like(r) if r_boot is None else r_boot
        return self.likelihood(self.decoder(torch.cat([r, xq, r_boot], -1)))

    def bootstrap_contexts(self, xc, yc, mask_c, k: int):
        """``k`` residual-bootstrap contexts (steps 1-4): ``(x, y, mask)``, each
        ``[k, b, n_ctx, .]`` (mask ``[k, b, n_ctx]``), in canonical order, real points first;
        without gradients unless ``bootstrap_grad``."""
        with torch.set_grad_enabled(self.hyper.bootstrap_grad and torch.is_grad_enabled()):
            return self._bootstrap_contexts(xc, yc, mask_c, k)

    def _bootstrap_contexts(self, xc, yc, mask_c, k: int):
        b, n = xc.shape[:2]
        order = canonical_order(xc, yc, mask_c)
        xs, ys = take(xc, order), take(yc, order)
        n_valid = mask_c.sum(1) if mask_c is not None else xc.new_full((b,), n, dtype=torch.long)
        valid = torch.arange(n, device=xc.device) < n_valid[:, None]
        pairs, residuals = resample_indices(n_valid, n, k)
        xs, ys, valid = (t.expand(k, *t.shape) for t in (xs, ys, valid))
        # Steps 1-2: encode the paired bootstrap, predict at the context inputs.
        x_pairs, y_pairs = take(xs, pairs).flatten(0, 1), take(ys, pairs).flatten(0, 1)
        keys = {"x_keys": xs.flatten(0, 1)} if self.hyper.pair_keys == "original" else {}
        r = self.encoder(x_pairs, y_pairs, xs.flatten(0, 1), valid.flatten(0, 1), **keys)
        fit = self.decode(r, xs.flatten(0, 1))
        mu, sigma = (t.unflatten(0, (k, b)) for t in (fit.mean, fit.stddev))
        # Step 3: resample the standardised residuals and centre them over the real points.
        eps = take((ys - mu) / sigma, residuals)
        eps = (
            eps
            - masked_mean(eps.flatten(0, 1), valid.flatten(0, 1)).unflatten(0, (k, b))[:, :, None]
        )
        return xs, mu + sigma * eps, valid

    def mixture(self, xc, yc, xt, mask_c, r: torch.Tensor) -> LatentMixture:
        """The bootstrap mixture given the base encoding ``r [b, n_tgt, d]`` of the context."""
        k, b = self.n_components, xt.shape[0]
        x_boot, y_boot, mask_boot = self.bootstrap_contexts(xc, yc, mask_c, k)
        xt_k = xt.expand(k, *xt.shape)
        r_boot = self.encoder(
            x_boot.flatten(0, 1), y_boot.flatten(0, 1), xt_k.flatten(0, 1), mask_boot.flatten(0, 1)
        ).unflatten(0, (k, b))
        return LatentMixture(self.decode(r.expand(k, *r.shape), xt_k, r_boot))

    def _predict(self, xc, yc, xt, mask_c) -> LatentMixture:
        return self.mixture(xc, yc, xt, mask_c, self.encoder(xc, yc, xt, mask_c))

    def training_loss(self, batch) -> torch.Tensor:
        xc, yc, xt, mask_c = self.validated(batch)
        self.refuse_target_mask(batch)  # the bootstrap term is a mixture over all targets
        r = self.encoder(xc, yc, xt, mask_c)
        base = self.decode(r, xt).log_prob(batch.yt).sum(-1).mean(-1)
        boot = self.mixture_ll(self.mixture(xc, yc, xt, mask_c, r), batch.yt)
        loss = -(base + boot).mean()
        return loss / 2 if self.hyper.bootstrap_loss == "mean" else loss


@dataclass
class BNPHyper(BootstrapOptions, CNPHyper):
    pass


@register("bnp")
class BNP(BootstrapNP):
    """BNP on the CNP encoder ``r = mean_n MLP([x_n, y_n])`` (the CNP options: ``n_paths``,
    ``n_post_hidden``)."""

    Hyper = BNPHyper
    summary = "Bootstrapping NP: CNP with residual-bootstrapped contexts; K-sample mixture"

    def __init__(self, dim_x: int, dim_y: int, hyper: BNPHyper):
        super().__init__(dim_x, dim_y, hyper)
        self.encoder = pooling_encoder(dim_x, dim_y, hyper)


@dataclass
class BANPHyper(BootstrapOptions, CANPHyper):
    pass


@register("banp")
class BANP(BootstrapNP):
    """BNP on the CANP encoder (context self-attention, target cross-attention)."""

    Hyper = BANPHyper
    summary = (
        "Bootstrapping attentive NP: CANP with residual-bootstrapped contexts; K-sample mixture"
    )

    def __init__(self, dim_x: int, dim_y: int, hyper: BANPHyper):
        super().__init__(dim_x, dim_y, hyper)
        self.encoder = attentive_encoder(dim_x, dim_y, hyper)
