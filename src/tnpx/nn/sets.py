"""Set encoders shared by the CNP family: masked mean pooling, the DeepSet encoder, the
attentive (ANP) encoder, attentive pooling, the latent encoder ``q(z | S)``, and several
encoders side by side (:class:`ConcatEncoders`).

Every deterministic encoder is called ``encoder(xc, yc, xq, mask_c) -> [b, n_q, dim_out]``.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn
from torch.distributions import Normal

from .blocks import softmax_block
from .mlp import MLP


def masked_mean(z: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Mean over the set dimension of ``z [b, n, d]`` counting only ``mask [b, n]`` entries;
    an empty set gives zeros."""
    if mask is None:
        return z.sum(1) / max(z.shape[1], 1)
    w = mask.to(z.dtype)[..., None]
    return (z * w).sum(1) / w.sum(1).clamp_min(1.0)


class GlobalEncoder(nn.Module):
    """An encoder of the context into one vector, the same for every query (``pooled``)."""

    def pooled(self, xc, yc, mask_c) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, xc, yc, xq, mask_c, x_keys=None) -> torch.Tensor:
        """:meth:`pooled` repeated for every query ``xq [b, n_q, dim_x]`` -> ``[b, n_q,
        dim_out]`` (``x_keys``, for attentive encoders, has no use here)."""
        return self.pooled(xc, yc, mask_c)[:, None, :].expand(-1, xq.shape[1], -1)


class DeepSetEncoder(GlobalEncoder):
    """The CNP encoder: ``r = mean_n MLP([x_n, y_n])``, the same for every query; with
    ``n_post_hidden`` set, ``r = MLP_post(mean_n MLP([x_n, y_n]))`` (the BNP code's
    ``PoolingEncoder``, juho-lee/bnp ``regression/models/modules.py``)."""

    def __init__(
        self, dim_in: int, dim_model: int, n_hidden: int, n_post_hidden: int | None = None
    ):
        super().__init__()
        self.dim_out = dim_model
        self.mlp = MLP(dim_in, dim_model, dim_model, n_hidden)
        if n_post_hidden is not None:
            self.post = MLP(dim_model, dim_model, dim_model, n_post_hidden)

    def pooled(self, xc, yc, mask_c) -> torch.Tensor:
        """xc ``[b, n_ctx, dim_x]``, yc ``[b, n_ctx, dim_y]``, mask_c ``[b, n_ctx]`` or None
        -> ``r [b, dim_model]``."""
        r = masked_mean(self.mlp(torch.cat([xc, yc], -1)), mask_c)
        return self.post(r) if hasattr(self, "post") else r


class ConcatEncoders(nn.ModuleList):
    """Encoders side by side, their outputs concatenated: ``[r_1, r_2, ...]`` (the BNP code's
    CNP has two pooling encoders, its CANP a cross-attention and a pooling encoder)."""

    def __init__(self, encoders):
        super().__init__(encoders)
        self.dim_out = sum(e.dim_out for e in self)

    def pooled(self, xc, yc, mask_c) -> torch.Tensor:
        """For global encoders: ``[b, dim_out]``."""
        return torch.cat([e.pooled(xc, yc, mask_c) for e in self], -1)

    def forward(self, xc, yc, xq, mask_c, x_keys=None) -> torch.Tensor:
        """``[b, n_q, dim_out]``; ``x_keys`` goes to every encoder."""
        kwargs = {} if x_keys is None else {"x_keys": x_keys}
        return torch.cat([e(xc, yc, xq, mask_c, **kwargs) for e in self], -1)


class AttentiveEncoder(nn.Module):
    """``r(x_q) = CrossAttn(MLP(x_q), SelfAttn^L(MLP([x_c, y_c])))`` (KR §2.3.1); padded
    context points are masked out of every attention. Blocks are pre-norm softmax blocks."""

    def __init__(
        self,
        dim_x: int,
        dim_y: int,
        dim_model: int,
        n_layers: int,
        n_heads: int,
        dim_head: int,
        dim_ff: int,
        n_embed_hidden: int,
    ):
        super().__init__()
        d = self.dim_out = dim_model
        self.embed_context = MLP(dim_x + dim_y, d, d, n_embed_hidden)
        self.embed_query = MLP(dim_x, d, d, n_embed_hidden)
        self.self_attention = nn.ModuleList(
            softmax_block(d, n_heads, dim_head, dim_ff) for _ in range(n_layers)
        )
        self.cross_attention = softmax_block(d, n_heads, dim_head, dim_ff)

    def forward(self, xc, yc, xq, mask_c) -> torch.Tensor:
        """xc ``[b, n_ctx, dim_x]``, yc ``[b, n_ctx, dim_y]``, xq ``[b, n_q, dim_x]``,
        mask_c ``[b, n_ctx]`` or None -> ``[b, n_q, dim_model]``."""
        h = self.embed_context(torch.cat([xc, yc], -1))
        for block in self.self_attention:
            h = block(h, h, mask_c)
        return self.cross_attention(self.embed_query(xq), h, mask_c)


class AttentivePooling(GlobalEncoder):
    """``r = head(mean_n blocks(act(MLP([x_n, y_n]))))``: ``blocks`` are self-attention layers
    called ``block(h, h, mask)``; ``act`` is a ReLU where ``relu_embed`` (the BNP code's
    ``PoolingEncoder(self_attn=True)`` puts one between its MLP and ``SelfAttn``), else the
    identity; ``head = MLP(dim_model -> dim_out)`` with one hidden layer, or ``n_head_hidden``."""

    def __init__(
        self,
        dim_in: int,
        dim_model: int,
        dim_out: int,
        n_hidden: int,
        blocks: Iterable[nn.Module] = (),
        relu_embed: bool = False,
        n_head_hidden: int = 1,
    ):
        super().__init__()
        self.dim_out, self.relu_embed = dim_out, relu_embed
        self.embed = MLP(dim_in, dim_model, dim_model, n_hidden)
        self.blocks = nn.ModuleList(blocks)
        self.head = MLP(dim_model, dim_out, dim_model, n_head_hidden)

    def pooled(self, xc, yc, mask_c) -> torch.Tensor:
        """x ``[b, n, dim_x]``, y ``[b, n, dim_y]``, mask ``[b, n]`` or None -> ``[b,
        dim_out]``."""
        h = self.embed(torch.cat([xc, yc], -1))
        h = torch.relu(h) if self.relu_embed else h
        for block in self.blocks:
            h = block(h, h, mask_c)
        return self.head(masked_mean(h, mask_c))


class LatentEncoder(AttentivePooling):
    """``q(z | S) = N(mu, diag(sigma^2))`` from a set ``S`` of ``(x, y)`` pairs:
    ``(mu, s) = AttentivePooling(S)`` (``dim_out = 2 dim_latent``), ``sigma = 0.1 + 0.9
    sigmoid(s)`` (the parametrisation of the ANP and BNP reference codes). ``blocks`` are
    self-attention layers (ANP's latent path); none for the NP."""

    def __init__(
        self,
        dim_in: int,
        dim_model: int,
        dim_latent: int,
        n_hidden: int,
        blocks: Iterable[nn.Module] = (),
        relu_embed: bool = False,
    ):
        super().__init__(dim_in, dim_model, 2 * dim_latent, n_hidden, blocks, relu_embed)

    def forward(self, x, y, mask) -> Normal:
        """x ``[b, n, dim_x]``, y ``[b, n, dim_y]``, mask ``[b, n]`` or None -> ``Normal``
        with batch shape ``[b, dim_latent]``."""
        mu, s = self.pooled(x, y, mask).chunk(2, -1)
        return Normal(mu, 0.1 + 0.9 * torch.sigmoid(s), validate_args=False)
