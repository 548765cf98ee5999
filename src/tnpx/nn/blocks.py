"""Transformer blocks: the pre-norm KRBlock (two streams, one set of weights), its one-stream
form, and the translation-equivariant block."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .attention import MultiHeadAttention
from .mlp import MLP
from .te_attention import TEMultiHeadAttention


class KRBlock(nn.Module):
    """Pre-norm block updating queries (targets) and keys (context) in separate residual streams.

    KR Algorithm 2, with ``LN1``, ``LN2``, ``MHA`` and ``FF`` one set of weights for both::

        qs1, ks1 = LN1(qs0), LN1(ks0)
        qs3 = qs0 + MHA(qs1, ks1, ks1)      # queries: cross-attention to the keys
        ks3 = ks0 + MHA(ks1, ks1, ks1)      # keys: self-attention
        qs6 = qs3 + FF(LN2(qs3));  ks6 = ks3 + FF(LN2(ks3))

    Both streams read the block's *input* keys ``ks1``: the queries do not see this block's
    key update. That is Algorithm 2 as printed and as the authors' code runs it, it keeps the
    two attentions independent (one call serves both), and it makes a stack of blocks the same
    function as TNP-D's masked attention layer by layer. The queries of both streams go through
    the attention module in one call, so key-side work (FAVOR+ / linear-attention sums over
    keys) is done once per block and a Performer counts one step per block call.

    ``attention`` is any module ``(queries [b, n_q, d], keys [b, n_k, d], key_mask [b, n_k]) ->
    [b, n_q, d]`` giving a zero update to queries with no valid key: exact softmax
    (:class:`~tnpx.nn.MultiHeadAttention`, on SDPA), FAVOR+, linear attention, HyperMixer.
    Cost is that of ``attention`` on ``n_q + n_k`` queries and ``n_k`` keys: with SDPA,
    O(n_k^2 + n_q n_k) time and linear memory, never forming target-target scores.
    """

    def __init__(self, dim_model: int, dim_ff: int, attention: nn.Module):
        super().__init__()
        self.norm_attn = nn.LayerNorm(dim_model)
        self.attn = attention
        self.norm_ff = nn.LayerNorm(dim_model)
        self.ff = MLP(dim_model, dim_model, dim_ff, n_hidden=1)

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        update_keys: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """queries ``[b, n_q, d]``, keys ``[b, n_k, d]``, key_mask ``[b, n_k]`` (True = valid).

        Returns the updated ``(queries, keys)``; with ``update_keys=False`` (the last block of a
        stack) the keys are returned unchanged and their self-attention is skipped."""
        keys_normed = self.norm_attn(keys)
        if update_keys:
            z = torch.cat([queries, keys], 1)
            z_normed = torch.cat([self.norm_attn(queries), keys_normed], 1)
        else:
            z, z_normed = queries, self.norm_attn(queries)
        z = z + self.attn(z_normed, keys_normed, key_mask)
        z = z + self.ff(self.norm_ff(z))
        if not update_keys:
            return z, keys
        return z[:, : queries.shape[1]], z[:, queries.shape[1] :]

    def key_state(self, keys: torch.Tensor, key_mask: torch.Tensor | None = None):
        """The key-side work of the query stream, done once: the attention's prepared keys
        (projections, or FAVOR+ / linear-attention sums) where it offers ``prepare_keys``."""
        normed = self.norm_attn(keys)
        prepare = getattr(self.attn, "prepare_keys", None)
        return ("prepared", prepare(normed, key_mask)) if prepare else ("raw", normed, key_mask)

    def decode(self, queries: torch.Tensor, state) -> torch.Tensor:
        """The query stream only, against :meth:`key_state`: ``[b, n_q, d] -> [b, n_q, d]``."""
        normed = self.norm_attn(queries)
        if state[0] == "prepared":
            z = queries + self.attn.attend(normed, state[1])
        else:
            z = queries + self.attn(normed, state[1], state[2])
        return z + self.ff(self.norm_ff(z))


def kr_stack(
    blocks: Sequence[KRBlock],
    queries: torch.Tensor,
    keys: torch.Tensor,
    key_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Run queries ``[b, n_q, d]`` and keys ``[b, n_k, d]`` through ``blocks`` in turn; returns the
    final queries ``[b, n_q, d]`` (the last block does not update the keys: nothing reads them)."""
    for i, block in enumerate(blocks):
        queries, keys = block(queries, keys, key_mask, update_keys=i < len(blocks) - 1)
    return queries


def kr_context_states(
    blocks: Sequence[KRBlock], keys: torch.Tensor, key_mask: torch.Tensor | None = None
) -> list:
    """What each block's query stream reads from its input keys ``[b, n_k, d]`` (see
    :meth:`KRBlock.key_state`), for every block of a stack. The key stream of a KR stack never
    reads the queries, so this is computed once for any number of query chunks."""
    states = []
    for i, block in enumerate(blocks):
        states.append(block.key_state(keys, key_mask))
        if i < len(blocks) - 1:
            # Rows of a block are independent given the keys: a key's self-attention update
            # is the block applied to the keys as queries.
            keys = block.decode(keys, states[-1])
    return states


def kr_decode(blocks: Sequence[KRBlock], queries: torch.Tensor, states: Sequence) -> torch.Tensor:
    """Queries ``[b, n_q, d]`` through a stack whose key states came from
    :func:`kr_context_states`; equal to :func:`kr_stack` on the same inputs."""
    for block, state in zip(blocks, states, strict=True):
        queries = block.decode(queries, state)
    return queries


class PreNormAttentionBlock(KRBlock):
    """Pre-norm residual attention block: ``z <- z + MHA(LN(z), LN(keys)); z <- z + FF(LN(z))``.

    A :class:`KRBlock` with softmax attention that updates one stream: the same LayerNorm
    normalises queries and keys, as in the TNP reference code, so a TNP layer can apply it to
    the context (MHSA) and to the targets (MHCA) with one set of weights.
    """

    def __init__(self, dim_model: int, n_heads: int, dim_head: int, dim_ff: int):
        super().__init__(dim_model, dim_ff, MultiHeadAttention(dim_model, n_heads, dim_head))

    def forward(  # type: ignore[override]
        self, z: torch.Tensor, keys: torch.Tensor, key_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """z ``[b, n_q, d]``, keys ``[b, n_k, d]``, key_mask ``[b, n_k]`` -> ``[b, n_q, d]``."""
        return super().forward(z, keys, key_mask, update_keys=False)[0]


class TEAttentionBlock(nn.Module):
    """Pre-norm residual block around :class:`TEMultiHeadAttention`:
    ``z <- z + TE-MHA(LN(z), LN(keys); x, x_keys); z <- z + FF(LN(z))``, and ``x`` moves by the
    attention's location update (TE Eq. 10) when it is on. One block serves self-attention
    (``keys = z``) and cross-attention with one LayerNorm for queries and keys."""

    def __init__(self, dim_model: int, n_heads: int, dim_head: int, dim_ff: int, **te_options):
        super().__init__()
        self.norm_attn = nn.LayerNorm(dim_model)
        self.attn = TEMultiHeadAttention(dim_model, n_heads, dim_head, **te_options)
        self.norm_ff = nn.LayerNorm(dim_model)
        self.ff = MLP(dim_model, dim_model, dim_ff, n_hidden=1)

    def forward(
        self,
        z: torch.Tensor,
        keys: torch.Tensor,
        x: torch.Tensor,
        x_keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """z ``[b, n_q, d]``, keys ``[b, n_k, d]``, x ``[b, n_q, dim_x]``, x_keys ``[b, n_k,
        dim_x]`` -> updated ``(z, x)``."""
        update, x = self.attn(self.norm_attn(z), self.norm_attn(keys), x, x_keys, key_mask)
        z = z + update
        return z + self.ff(self.norm_ff(z)), x
