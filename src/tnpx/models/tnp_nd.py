"""TNP-ND (Nguyen & Grover, 2022): a TNP whose targets share one Gaussian with a full
covariance.

The ``tnp`` skeleton (flagged tokens, softmax attention, shared weights, targets reading each
layer's input context) encodes the targets and its Gaussian head gives each output a mean
``mu`` and a scale ``s``. As in TNP-ND, the target tokens
then self-attend (``n_cov_layers`` pre-norm blocks, targets to targets) and an MLP projects each
to ``rank`` numbers per output dimension: ``F [b, n, rank]`` with ``n = n_tgt * dim_y``, flattened
target-major (one covariance over every output of every target). The covariance is

- ``"lowrank"``: ``Sigma = F F^T + diag(s^2)``;
- ``"cholesky"``: ``Sigma = L L^T`` with ``L = tril(F F^T, -1) + diag(s)``: TNP-ND's
  ``tril(F F^T)`` with the diagonal taken from the head, so it stays >= ``min_std``.

With ``F = 0`` both are the ``tnp`` model's diagonal Gaussian. The prediction is a
:class:`~tnpx.distributions.JointGaussian`; the LL (and the training loss) is its joint
log-density divided by ``n_tgt``.

Options for TNP-ND's code (tung-nd/TNP-pytorch ``regression/models/tnpnd.py``; defaults as
above): ``tokens`` (``flagged`` | ``target-flagged`` | ``plain``, as ``tnp``); ``diagonal``:
where the covariance's diagonal comes from,

- ``"head"`` (default): the Gaussian head's scale ``s``, as above;
- ``"factor"`` (cholesky): ``L = tril(F F^T)``, its diagonal included (the code's, no minimum);
  ``"factor-tanh"``: that diagonal ``d`` replaced by ``0.05 + 0.95 tanh(d)`` (``bound_std``,
  the code's EMNIST config);
- ``"net"`` (lowrank): ``Sigma = F F^T + diag(exp(g))``, ``g`` from a separate MLP on the
  target tokens before the covariance blocks (the code's ``diag_net``);

with ``"factor"``, ``"factor-tanh"`` and ``"net"`` the decoder predicts the mean only (the
code's ``mean_net``) and the head's ``scale_transform`` and ``min_std`` are unused.
``dim_cov_hidden`` is the width of the projection (and ``diag_net``) MLP (None: ``dim_model``;
the code: ``dim_feedforward``). Preset ``tnpd-code`` (:mod:`tnpx.models.presets.tnpd_code`):
the code with ``regression/configs/gp/tnpnd.yaml`` (``docs/fidelity.md``).

Targets interact: the target self-attention makes every target's marginal depend on the other
targets of the call, and the Cholesky form on their order as well (``targets_interact``). Only
``"lowrank"`` with ``n_cov_layers=0`` has marginals independent of the other targets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from ..batch import Batch
from ..distributions import JointGaussian
from ..likelihoods import gaussian_only
from ..nn import MLP, check_option, softmax_block
from .registry import register
from .transformer import XY_TOKENS, TransformerHyper, TransformerNP

COVARIANCES = ("cholesky", "lowrank")
DIAGONALS = {"head": COVARIANCES, "factor": ("cholesky",), "factor-tanh": ("cholesky",),
             "net": ("lowrank",)}  # fmt: skip


@dataclass
class TNPNDHyper(TransformerHyper):
    covariance: str = "cholesky"  # cholesky | lowrank
    rank: int = 20  # columns of F per output dimension (TNP-KR code: 20)
    n_cov_layers: int = 2  # target self-attention blocks before the projection
    n_cov_hidden: int = 3  # hidden layers of the projection MLP
    dim_cov_hidden: int | None = None  # width of the projection MLP; None: dim_model
    diagonal: str = "head"  # head | factor | factor-tanh (cholesky) | net (lowrank)
    tokens: str = "flagged"  # flagged | target-flagged | plain (as tnp)


@register("tnp-nd")
class TNPND(TransformerNP):
    """TNP-ND: ``tnp`` encoder and head for the mean and diagonal, a low-rank or Cholesky
    covariance over all targets from target self-attention and a projection."""

    Hyper = TNPNDHyper
    hyper: TNPNDHyper
    token_kinds = XY_TOKENS
    summary = "TNP-ND: TNP with a joint Gaussian over all targets (low-rank or Cholesky covariance)"
    targets_interact: ClassVar[bool] = True
    # Format 1 held a `tnp` model by composition.
    renamed_parameters = {
        1: (
            ("tnp.embed.", "embed.mlp."),
            ("tnp.layers.", "stack.blocks."),
            ("tnp.decoder.", "decoder."),
            ("tnp.likelihood.", "likelihood."),
        )
    }
    predicts_jointly: ClassVar[bool] = True

    def __init__(self, dim_x: int, dim_y: int, hyper: TNPNDHyper):
        check_option("covariance", hyper.covariance, COVARIANCES)
        check_option("diagonal", hyper.diagonal, DIAGONALS)
        if hyper.covariance not in DIAGONALS[hyper.diagonal]:
            raise ValueError(
                f"diagonal={hyper.diagonal!r} needs covariance in "
                f"{list(DIAGONALS[hyper.diagonal])}, got {hyper.covariance!r}"
            )
        if hyper.rank < 1:
            raise ValueError(f"rank must be >= 1, got {hyper.rank}")
        gaussian_only(hyper.likelihood, "tnp-nd", "its prediction is one joint Gaussian")
        super().__init__(dim_x, dim_y, hyper)
        d = hyper.dim_model
        self.cov_layers = nn.ModuleList(
            softmax_block(d, hyper.n_heads, hyper.dim_head, hyper.dim_ff, self.norm_first)
            for _ in range(hyper.n_cov_layers)
        )
        width = hyper.dim_cov_hidden or d
        self.projector = MLP(d, hyper.rank * dim_y, width, hyper.n_cov_hidden)
        if hyper.diagonal == "net":  # tnpnd.py diag_net: build_mlp(d, dim_feedforward, dy, depth)
            self.diag_net = MLP(d, dim_y, width, hyper.n_cov_hidden)

    def _decoder(self) -> MLP:
        if self.hyper.diagonal == "head":
            return super()._decoder()
        return self._decoder_mlp(self.dim_y)  # the mean only (tnpnd.py mean_net)

    def _decode_targets(self, state, xt) -> JointGaussian:
        """One joint Gaussian over the targets ``xt [b, n_tgt, dim_x]`` decoded together."""
        zt = self._decoded(state, xt)  # [b, n_tgt, d]
        h = zt
        for block in self.cov_layers:
            h = block(h, h)  # targets attend to targets
        b, n = xt.shape[0], xt.shape[1] * self.dim_y
        factor = self.projector(h).reshape(b, n, self.hyper.rank)  # target-major rows
        diagonal = self.hyper.diagonal
        if diagonal != "head":
            mean = self.decoder(zt if self.norm is None else self.norm(zt))
            if diagonal == "net":  # tnpnd.py: cov = F F^T + diag(exp(diag_net(z)))
                return JointGaussian.low_rank(mean, factor, self.diag_net(zt).exp().reshape(b, n))
            tril = torch.tril(factor @ factor.mT)  # tnpnd.py: tril(F F^T), diagonal included
            if diagonal == "factor-tanh":  # bound_std: 0.05 + 0.95 tanh(diagonal)
                d = torch.diagonal(tril, dim1=-2, dim2=-1)
                tril = tril - torch.diag_embed(d) + torch.diag_embed(0.05 + 0.95 * torch.tanh(d))
            return JointGaussian.cholesky(mean, tril)
        head = self.head(zt)  # mean, scale [b, n_tgt, dim_y]
        scale = head.stddev.reshape(b, n)
        if self.hyper.covariance == "lowrank":
            return JointGaussian.low_rank(head.mean, factor, scale.square())
        strict = torch.tril(factor @ factor.mT, diagonal=-1)
        return JointGaussian.cholesky(head.mean, strict + torch.diag_embed(scale))

    def log_likelihood(self, batch: Batch, pred: JointGaussian | None = None) -> torch.Tensor:
        """Joint log-density of all targets divided by ``n_tgt``, ``[batch]``."""
        if batch.yt is None:
            raise ValueError("batch.yt is None: the log-likelihood needs target outputs")
        self.refuse_target_mask(batch)  # targets attend to targets: padding would enter
        pred = self.predict_batch(batch) if pred is None else pred
        return pred.joint_log_prob(batch.yt) / max(batch.yt.shape[1], 1)
