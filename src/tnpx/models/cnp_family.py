"""Shared bases of the CNP family (registers no model): the option sets of CNP and CANP,
the latent and bootstrap mixture machinery.

- :class:`CNPHyper`, :class:`CANPHyper`, :class:`LatentOptions`: option sets that several
  registered models combine (``bnp`` = bootstrap + CNP options, ``anp`` = latent + CANP, ...).
- :class:`MixtureNP`: a model predicting a :class:`~tnpx.distributions.LatentMixture` over
  ``K`` random components (latent samples, bootstrap contexts), with its LL estimators.
- :class:`LatentNP`: ``np`` and ``anp``; the latent-NP likelihood of KR §2.3::

    p(y_T | x_T, C) = ∫ p(z | C) prod_t N(y_t; mu(r_t, z, x_t), sigma^2(r_t, z, x_t)) dz

  with ``r_t`` a deterministic encoding of the context and ``p(z | C) = q(z | C)`` a diagonal
  Gaussian from a latent encoder; the prediction draws ``K`` samples ``z_k ~ p(z | C)``.

Randomness: the standard-normal draws behind the samples come from a ``torch.Generator``
seeded once per call from the global RNG (:func:`seeded_generator`) and are shared by the
tasks of a batch. So a call repeats under ``torch.manual_seed``, and a task's prediction does
not depend on its batch-mates, its padding or its targets (each task still sees ``K``
independent draws).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn
from torch.distributions import Normal, kl_divergence

from ..batch import Batch
from ..distributions import LatentMixture, logmeanexp
from ..input_checks import validate_inputs
from ..likelihoods import gaussian_only
from ..nn import (
    ATTENTION_LAYERS,
    MLP,
    AttentiveEncoder,
    AttentivePooling,
    ConcatEncoders,
    DeepSetEncoder,
    KeyedAttentiveEncoder,
    LatentEncoder,
    attention_layer,
    check_option,
)
from .base import HeadHyper, NeuralProcess, likelihood_head
from .sizes import zero_allowed

OBJECTIVES = ("ml", "elbo", "kr-code", "bnp-code")
DECODER_ORDERS = ("r-z-x", "x-r-z")
LL_ESTIMATES = ("joint", "marginal")


def seeded_generator() -> torch.Generator:
    """A CPU generator seeded from one draw of the global RNG (so ``torch.manual_seed`` repeats
    a call); draw on the CPU and move, so CPU and GPU runs see the same numbers."""
    return torch.Generator().manual_seed(int(torch.randint(0, 2**62, ()).item()))


@dataclass
class CNPHyper(HeadHyper):
    """CNP sizes (TE F.1), and the BNP code's encoder options (``docs/fidelity.md``)."""

    dim_model: int = 128
    n_encoder_hidden: int = 5
    n_decoder_hidden: int = 2
    # pooling encoders side by side, their outputs concatenated (the BNP code's CNP: 2)
    n_paths: int = 1
    # hidden layers of an MLP after the mean (None: none; the BNP code: 1)
    n_post_hidden: int | None = zero_allowed(None)
    # CANP's options, fixed for a CNP (the shared code reads every CNP-family hyper alike)
    pooled_path: ClassVar[bool] = False
    keys: ClassVar[str] = "tokens"


def pooling_encoder(dim_x: int, dim_y: int, hyper) -> nn.Module:
    """The CNP deterministic path: one :class:`DeepSetEncoder`, or ``n_paths`` side by side."""

    def one():
        return DeepSetEncoder(
            dim_x + dim_y, hyper.dim_model, hyper.n_encoder_hidden, hyper.n_post_hidden
        )

    n_paths = hyper.n_paths
    return one() if n_paths == 1 else ConcatEncoders([one() for _ in range(n_paths)])


@dataclass
class CANPHyper(HeadHyper):
    """CANP sizes: ``n_layers`` self-attention layers over the context (ANP: 2), and the
    reference codes' structures (``docs/fidelity.md``):

    - ``layer``: ``"block"`` (pre-norm residual blocks with a feed-forward MLP), ``"bare"``
      (attention alone: the TNP-KR code) or ``"bnp"`` (the BNP code's post-norm attention);
      see :mod:`tnpx.nn.set_attention`.
    - ``keys``: ``"tokens"`` (cross-attention keys = values = the self-attended context
      tokens) or ``"x"`` (keys ``MLP_k(x_c)`` and queries ``MLP_k(x_t)`` from one MLP of
      ``n_key_hidden`` hidden layers, values the tokens: both reference codes); ``"x"`` needs
      ``layer`` ``"bare"`` or ``"bnp"``.
    - ``pooled_path``: a second, mean-pooled path ``MLP(mean(SelfAttn(relu(MLP([x, y])))))``
      concatenated to the cross-attention output (the BNP code's CANP and BANP).
    """

    dim_model: int = 128
    n_layers: int = zero_allowed(2)  # 0: no self-attention, the cross-attention remains
    n_heads: int = 8
    dim_head: int = 16
    dim_ff: int = 128
    n_embed_hidden: int = 2
    n_decoder_hidden: int = 2
    layer: str = "block"  # block | bare | bnp
    keys: str = "tokens"  # tokens | x
    n_key_hidden: int | None = zero_allowed(None)  # None: n_embed_hidden
    pooled_path: bool = False
    n_paths: ClassVar[int] = 1  # CNP's option, fixed for a CANP


def attentive_encoder(dim_x: int, dim_y: int, hyper: CANPHyper) -> nn.Module:
    """The CANP deterministic path for ``hyper``'s sizes and structure."""
    h = hyper
    check_option("layer", h.layer, ATTENTION_LAYERS)
    check_option("keys", h.keys, ("tokens", "x"))
    if h.layer == "block":
        if h.keys != "tokens":
            raise ValueError("keys='x' needs layer 'bare' or 'bnp' (blocks take keys = values)")
        cross = AttentiveEncoder(
            dim_x, dim_y, h.dim_model, h.n_layers, h.n_heads, h.dim_head, h.dim_ff,
            h.n_embed_hidden,
        )  # fmt: skip
    else:
        n_key = h.n_embed_hidden if h.n_key_hidden is None else h.n_key_hidden
        cross = KeyedAttentiveEncoder(
            dim_x, dim_y, h.dim_model, h.n_layers, h.n_heads, h.dim_head, h.n_embed_hidden,
            n_key, h.layer, h.keys,
        )  # fmt: skip
    if not h.pooled_path:
        return cross
    return ConcatEncoders([cross, attentive_pooling(dim_x + dim_y, h.dim_model, h)])


def self_attention_layers(hyper: CANPHyper) -> list[nn.Module]:
    """``n_layers`` self-attention layers of kind ``hyper.layer``."""
    h = hyper
    return [
        attention_layer(h.layer, h.dim_model, h.n_heads, h.dim_head, h.dim_ff)
        for _ in range(h.n_layers)
    ]


def attentive_pooling(dim_in: int, dim_out: int, hyper: CANPHyper, cls=AttentivePooling):
    """A pooling path with ``hyper``'s self-attention layers (``cls``: :class:`AttentivePooling`
    or :class:`LatentEncoder`, whose ``dim_out`` is ``dim_latent``). The BNP code's has a ReLU
    before its attention (``layer="bnp"``)."""
    h = hyper
    return cls(
        dim_in, h.dim_model, dim_out, h.n_embed_hidden, self_attention_layers(h),
        relu_embed=h.layer == "bnp",
    )  # fmt: skip


def deterministic_width(hyper) -> int:
    """The width of the deterministic path's output ``r`` (the decoder's input before ``x``):
    ``dim_model`` times the number of paths side by side."""
    return hyper.dim_model * hyper.n_paths * (2 if hyper.pooled_path else 1)


class MixtureNP(NeuralProcess):
    """A model predicting a :class:`LatentMixture` over ``K`` components: ``K`` is the hyper
    field ``eval_samples`` names in eval mode and ``train_samples`` in training mode.

    ``log_likelihood`` is ``joint_log_prob / n_tgt`` (``ll_estimate="joint"``, the default) or
    the mean over targets of each target's marginal mixture log-density
    (``ll_estimate="marginal"``, what the BNP and TNP-KR code report);
    :attr:`ll_estimator` names the estimate in words.
    """

    predicts_jointly = True  # a mixture over latents (or bootstrap contexts)
    stochastic = True
    joint_estimate: ClassVar[str] = "importance-sampled joint estimate"
    mixture_of: ClassVar[str] = "latent samples z_k ~ p(z | C)"
    eval_samples: ClassVar[str] = "n_samples"
    train_samples: ClassVar[str] = "n_train_samples"

    def __init__(self, dim_x: int, dim_y: int, hyper):
        super().__init__(dim_x, dim_y, hyper)
        why = "its prediction is a mixture of Normal components"
        gaussian_only(hyper.likelihood, self.name, why)
        check_option("ll_estimate", hyper.ll_estimate, LL_ESTIMATES)
        for field in (self.eval_samples, self.train_samples):
            if getattr(hyper, field) < 1:
                raise ValueError(f"{field} must be >= 1, got {getattr(hyper, field)}")

    @property
    def n_components(self) -> int:
        """``K`` for a call in the current mode."""
        return getattr(self.hyper, self.train_samples if self.training else self.eval_samples)

    @property
    def ll_estimator(self) -> str:
        """What :meth:`log_likelihood` estimates, for results tables."""
        k = getattr(self.hyper, self.eval_samples)
        if self.hyper.ll_estimate == "joint":
            return (
                f"{self.joint_estimate}: logmeanexp over K={k} {self.mixture_of} "
                "of log p(y_T | .), divided by n_tgt"
            )
        return (
            f"per-target marginal estimate: mean over targets of logmeanexp over K={k} "
            f"{self.mixture_of} of log p(y_t | .)"
        )

    def mixture_ll(self, pred: LatentMixture, yt: torch.Tensor) -> torch.Tensor:
        """Per-task LL per target point ``[batch]`` under ``ll_estimate``."""
        if self.hyper.ll_estimate == "joint":
            return pred.joint_log_prob(yt) / max(yt.shape[1], 1)
        return pred.target_log_prob(yt).mean(-1)

    def log_likelihood(self, batch: Batch, pred: LatentMixture | None = None) -> torch.Tensor:
        if batch.yt is None:
            raise ValueError("batch.yt is None: the log-likelihood needs target outputs")
        self.refuse_target_mask(batch)  # a joint estimate over every target of the call
        pred = self.predict_batch(batch) if pred is None else pred
        return self.mixture_ll(pred, batch.yt)

    def validated(self, batch: Batch):
        """``(xc, yc, xt, mask_c)`` of ``batch``, checked as a model call checks them."""
        if batch.yt is None:
            raise ValueError("batch.yt is None: training needs target outputs")
        ref = self._reference()
        return validate_inputs(
            batch.xc, batch.yc, batch.xt, batch.mask_c, self.dim_x, self.dim_y,
            ref.dtype, ref.device,
        )  # fmt: skip


@dataclass
class LatentOptions:
    """Options of every latent-variable model."""

    dim_latent: int = 128
    n_samples: int = 16  # K at evaluation
    n_train_samples: int = 4  # K in training
    objective: str = "ml"  # ml | elbo | kr-code | bnp-code
    ll_estimate: str = "joint"  # joint | marginal
    decoder_order: str = "r-z-x"  # the decoder's input: [r, z, x] | [x, r, z] (TNP-KR's ANP)


class LatentNP(MixtureNP):
    """``np`` and ``anp``: a deterministic encoder ``(xc, yc, xt, mask) -> r [b, n_tgt, d]``, a
    :class:`LatentEncoder`, and the decoder ``MLP([r_t, z, x_t])`` -> Gaussian head.

    Training objectives (``objective``), each divided by ``n_tgt`` and averaged over tasks:

    - ``"ml"``: ``-logmeanexp_k sum_t log p(y_t | z_k)``, ``z_k ~ q(z | C)`` (the
      maximum-likelihood / prior-proposal importance-weighted objective; the same estimate
      ``joint_log_prob`` reports at evaluation).
    - ``"elbo"``: ``-(E_{q(z | C ∪ T)}[sum_t log p(y_t | z)] - KL(q(z | C ∪ T) || q(z | C)))``
      (the conditional ELBO of Garnelo et al.), ``K`` reparameterised samples. ``C ∪ T`` is the
      concatenation: where the targets include the context (KR-1 data) those points count twice
      in ``q``; any ``q`` keeps the bound valid.
    - ``"kr-code"``: what the TNP-KR code trains its NP/ANP with:
      ``-(E_{q(z | C)}[sum_t log p(y_t | z)] - KL(q(z | T) || q(z | C)))``, reconstruction under
      context samples, ``q`` from the targets alone. Not a bound; kept to reproduce KR.
    - ``"bnp-code"``: what the BNP code (juho-lee/bnp, tung-nd/TNP-pytorch ``np.py``,
      ``anp.py``) trains with, ``q(z | T)`` from the targets alone (its targets are all
      points, the context included) and ``z_k ~ q(z | T)``: for ``K > 1`` the importance-
      weighted bound ``-logmeanexp_k(sum_t log p(y_t | z_k) + log q(z_k | C) - log q(z_k |
      T))``; for ``K = 1`` ``-(sum_t log p(y_t | z) - KL(q(z | T) || q(z | C)))``.
    """

    deterministic: nn.Module  # set by the subclass
    latent: LatentEncoder

    def __init__(self, dim_x: int, dim_y: int, hyper):
        super().__init__(dim_x, dim_y, hyper)
        check_option("objective", hyper.objective, OBJECTIVES)
        check_option("decoder_order", hyper.decoder_order, DECODER_ORDERS)
        d = hyper.dim_model
        self.likelihood = likelihood_head(hyper, dim_y)
        n_in = deterministic_width(hyper) + hyper.dim_latent + dim_x
        self.decoder = MLP(n_in, self.likelihood.n_params, d, hyper.n_decoder_hidden)

    def draw(self, q: Normal, k: int) -> torch.Tensor:
        """``k`` reparameterised samples ``[k, b, dim_latent]`` of ``q`` (batch ``[b,
        dim_latent]``), one set of standard-normal draws for all tasks."""
        eps = torch.randn(k, 1, q.loc.shape[-1], generator=seeded_generator())
        return q.loc + q.scale * eps.to(q.loc)

    def decode(self, r: torch.Tensor, z: torch.Tensor, xt: torch.Tensor) -> Normal:
        """r ``[b, n_tgt, d]``, z ``[k, b, dim_latent]``, xt ``[b, n_tgt, dim_x]`` -> ``Normal``
        with batch shape ``[k, b, n_tgt, dim_y]``."""
        k, n_tgt = z.shape[0], xt.shape[1]
        z = z[:, :, None, :].expand(-1, -1, n_tgt, -1)
        r, xt = r.expand(k, *r.shape), xt.expand(k, *xt.shape)
        parts = [r, z, xt] if self.hyper.decoder_order == "r-z-x" else [xt, r, z]
        return self.likelihood(self.decoder(torch.cat(parts, -1)))

    def _predict(self, xc, yc, xt, mask_c) -> LatentMixture:
        r = self.deterministic(xc, yc, xt, mask_c)
        z = self.draw(self.latent(xc, yc, mask_c), self.n_components)
        return LatentMixture(self.decode(r, z, xt))

    def training_loss(self, batch: Batch) -> torch.Tensor:
        xc, yc, xt, mask_c = self.validated(batch)
        self.refuse_target_mask(batch)  # joint scores, and q(z | T) would read padding
        yt, n_tgt = batch.yt, max(batch.yt.shape[1], 1)
        if self.hyper.objective == "ml":
            return -(self(xc, yc, xt, mask_c).joint_log_prob(yt) / n_tgt).mean()
        prior = self.latent(xc, yc, mask_c)
        if self.hyper.objective == "elbo":
            both = None if mask_c is None else torch.cat([mask_c, mask_c.new_ones(yt.shape[:2])], 1)
            posterior = self.latent(torch.cat([xc, xt], 1), torch.cat([yc, yt], 1), both)
            z = self.draw(posterior, self.n_components)
        elif self.hyper.objective == "kr-code":
            posterior = self.latent(xt, yt, None)
            z = self.draw(prior, self.n_components)
        else:  # bnp-code
            posterior = self.latent(xt, yt, None)
            z = self.draw(posterior, self.n_components)
        pred = self.decode(self.deterministic(xc, yc, xt, mask_c), z, xt)
        log_lik = pred.log_prob(yt).sum((-1, -2))  # [k, b]
        if self.hyper.objective == "bnp-code" and z.shape[0] > 1:  # np.py: log_w, logmeanexp
            log_w = log_lik + prior.log_prob(z).sum(-1) - posterior.log_prob(z).sum(-1)
            return -(logmeanexp(log_w, 0) / n_tgt).mean()
        kl = kl_divergence(posterior, prior).sum(-1)  # [b]
        return -((log_lik.mean(0) - kl) / n_tgt).mean()
