"""Translation-equivariant multi-head attention (TE paper, Eq. 7–10; thesis §4.3).

Tokens carry no input location. The logit of head ``h`` between query ``n`` and key ``m`` is
a function of the per-head scaled dot products and of the relative position
``x_n - x_m`` (or the distance ``|x_n - x_m|`` for rotation invariance), so shifting every
location by the same offset leaves the attention weights unchanged. Optionally the query
locations move too (Eq. 10): ``x_n <- x_n + 1/N sum_m (x_n - x_m) * phi(alpha_.nm)``. The
signature is every attention's (:mod:`tnpx.nn.attention`): calling the module returns the
output, ``located`` / ``attend_located`` also the moved query locations.

Per-pair features exist only per query chunk: peak memory is ``[batch, chunk, n_keys,
hidden]``, never ``[batch, n_queries, n_keys, hidden]``. When a call needs several chunks
and gradients are on, each chunk is recomputed in the backward pass (activation
checkpointing), so training memory is bounded by a chunk as well.

The per-pair MLPs (rho, kappa, phi) run through :func:`pair_mlp`: their ReLUs act in place,
and without gradients their hidden layers are written into buffers kept across the chunks of
a call (:class:`PairScratch`). A fresh ``[chunk, n_keys, hidden]`` tensor is new memory, and
on CPU its first touch (page faults, the kernel zeroing each page) cost more than the ReLU or
the bias copy that filled it: over half of a forward's time at N = 1,000 (``benchmarks/
te_redesign_ab.py``). The numbers are the same as ``mlp(x)``'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from ..input_checks import check_option
from .attention import (
    Attention,
    HeadProjections,
    masked_softmax,
    safe_key_mask,
    zero_where_no_key,
)
from .mlp import MLP

RELATIVE_KINDS = ("post", "pre", "rbf", "identity")
# How rho's input is laid out (``post``): dot products then relative positions (tnpx's
# default), or relative positions then dot products (the TE code, cambridge-mlg/tetnp
# ``tetnp/networks/teattention.py``: ``kernel(cat(diff, token_dots))``). The same family of
# functions (rho's first layer absorbs the permutation), not the same function of given weights.
RHO_ORDERS = ("dots-first", "rel-first")


class PairScratch:
    """Flat buffers for the hidden layers of the per-pair MLPs, reused by every query chunk
    of one call (no gradients: nothing keeps a chunk's features after it)."""

    def __init__(self):
        self.buffers: dict[int, torch.Tensor] = {}

    def take(self, slot: int, shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        """A tensor ``shape`` of ``like``'s dtype and device in buffer ``slot`` (grown if short)."""
        n = math.prod(shape)
        buffer = self.buffers.get(slot)
        if buffer is None or buffer.numel() < n:
            buffer = self.buffers[slot] = like.new_empty(n)
        return buffer[:n].view(shape)


def pair_mlp(mlp: MLP, x: torch.Tensor, scratch: PairScratch | None = None) -> torch.Tensor:
    """``mlp(x)`` for per-pair inputs ``x [..., dim_in]`` (the same numbers): ReLUs in place, and
    with ``scratch`` (no gradients) each hidden layer written into its buffer, not new memory."""
    # On rows [pairs, features]: a Linear's output is then no view, so an in-place ReLU on it
    # costs autograd no copy of the whole tensor in the backward pass.
    lead, h = x.shape[:-1], x.reshape(-1, x.shape[-1])
    last = len(mlp) - 1
    for i, layer in enumerate(mlp):
        if isinstance(layer, nn.ReLU):
            h = h.relu_()  # the Linear before it keeps its input, not its output, for backward
        elif isinstance(layer, nn.Linear) and scratch is not None and i < last:
            out = scratch.take(i, (h.shape[0], layer.out_features), h)
            h = torch.addmm(layer.bias, h, layer.weight.t(), out=out)
        else:
            h = layer(h)
    return h.view(*lead, h.shape[-1])


class RelativeLogits(nn.Module):
    """Maps dot products ``[..., H]`` and relative positions ``[..., dim_rel]`` to ``[..., H]``.

    - ``post`` (TE Eq. 8, thesis "post MLP"): ``rho(cat[dots, rel])`` (``rho_order=
      "dots-first"``) or ``rho(cat[rel, dots])`` (``"rel-first"``, the TE code), rho an MLP
      with two hidden layers taking all heads' dot products together.
    - ``pre`` (thesis "pre MLP"): ``dots + kappa(rel)``.
    - ``rbf``: ``dots + exp(-|rel|^2 / (2 sigma_h^2))`` with a learned width per head.
    - ``identity`` (thesis baseline): ``dots + sum_d rel_d`` (``F(Δ) = Δ`` in 1D).
    """

    def __init__(
        self,
        n_heads: int,
        dim_rel: int,
        kind: str = "post",
        dim_hidden: int = 128,
        rho_order: str = "dots-first",
    ):
        super().__init__()
        check_option("relative", kind, RELATIVE_KINDS)
        check_option("rho_order", rho_order, RHO_ORDERS)
        self.kind, self.rho_order = kind, rho_order
        if kind == "post":
            self.rho = MLP(n_heads + dim_rel, n_heads, dim_hidden, n_hidden=2)
        elif kind == "pre":
            self.kappa = MLP(dim_rel, n_heads, dim_hidden, n_hidden=2)
        elif kind == "rbf":
            self.log_width = nn.Parameter(torch.zeros(n_heads))

    def forward(
        self, dots: torch.Tensor, rel: torch.Tensor, scratch: PairScratch | None = None
    ) -> torch.Tensor:
        """dots ``[..., H]``, rel ``[..., dim_rel]`` -> logits ``[..., H]``; ``scratch``: see
        :func:`pair_mlp`."""
        if self.kind == "post":
            parts = [dots, rel] if self.rho_order == "dots-first" else [rel, dots]
            return pair_mlp(self.rho, torch.cat(parts, -1), scratch)  # TE Eq. 8
        if self.kind == "pre":
            return dots + pair_mlp(self.kappa, rel, scratch)
        if self.kind == "rbf":
            sq = rel.pow(2).sum(-1, keepdim=True)
            return dots + torch.exp(-0.5 * sq / torch.exp(2 * self.log_width))
        return dots + rel.sum(-1, keepdim=True)


@dataclass
class PositionalKeys:
    """Keys and values ``[b, h, n_k, dim_head]``, key locations ``[b, n_k, dim_x]``, the safe
    key mask ``[b, n_k]`` and which tasks have a valid key ``[b]``; ``k is None``: no keys."""

    k: torch.Tensor | None
    v: torch.Tensor | None = None
    x: torch.Tensor | None = None
    safe_mask: torch.Tensor | None = None
    has_key: torch.Tensor | None = None


class TEMultiHeadAttention(HeadProjections, Attention):
    """Translation-equivariant multi-head attention with an optional location update.

    Args:
        dim_model, n_heads, dim_head: token size and heads.
        dim_x: input-location dimension.
        relative: how logits combine dot products and positions (see :class:`RelativeLogits`).
        rotation_invariant: use the distance ``|x_n - x_m|`` instead of the difference.
        location_update: apply TE Eq. 10 to the query locations (needs the difference).
        dim_hidden: width of the rho / kappa / phi MLPs (default ``dim_model``).
        chunk_elements: bound on ``batch * chunk * n_keys * dim_hidden`` per query chunk.
        qkv_bias: biases on ``to_q``, ``to_k``, ``to_v`` (the TE code has none).
        rho_order: rho's input layout (``RHO_ORDERS``; ``"rel-first"`` is the TE code's).
    """

    uses_locations = True

    def __init__(
        self,
        dim_model: int,
        n_heads: int,
        dim_head: int,
        dim_x: int,
        relative: str = "post",
        rotation_invariant: bool = False,
        location_update: bool = False,
        dim_hidden: int | None = None,
        chunk_elements: int = 2**24,
        qkv_bias: bool = True,
        rho_order: str = "dots-first",
    ):
        if location_update and rotation_invariant:
            raise ValueError(
                "the location update (Eq. 10) needs x_n - x_m; it is not defined "
                "for the rotation-invariant distance form"
            )
        super().__init__(dim_model, n_heads, dim_head, qkv_bias=qkv_bias)
        hidden = dim_hidden or dim_model
        self.dim_x = dim_x
        self.rotation_invariant, self.chunk_elements = rotation_invariant, chunk_elements
        dim_rel = 1 if rotation_invariant else dim_x
        self.logits = RelativeLogits(n_heads, dim_rel, relative, hidden, rho_order)
        self.phi = MLP(n_heads, dim_x, hidden, n_hidden=2) if location_update else None
        self._hidden = hidden

    def chunk_size(self, batch: int, n_keys: int) -> int:
        """Queries per chunk so a chunk's pair features stay within ``chunk_elements``."""
        return max(1, self.chunk_elements // max(batch * n_keys * self._hidden, 1))

    def prepare_keys(
        self,
        keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        *,
        x_keys: torch.Tensor | None = None,
    ) -> PositionalKeys:
        """keys ``[b, n_k, d]``, key_mask ``[b, n_k]``, x_keys ``[b, n_k, dim_x]``: the
        key-side projections, done once for any number of query chunks."""
        if x_keys is None:
            raise ValueError("TE attention needs x_keys, the keys' locations")
        b, n_k = keys.shape[:2]
        if n_k == 0:
            return PositionalKeys(None)
        if key_mask is None:
            key_mask = torch.ones(b, n_k, dtype=torch.bool, device=keys.device)
        safe, has_key = safe_key_mask(key_mask)  # no valid key: attend to all, zeroed below
        k, v = self._split(self.to_k(keys)), self._split(self.to_v(keys))
        return PositionalKeys(k, v, x_keys, safe, has_key)

    def attend(
        self,
        queries: torch.Tensor,
        prepared: PositionalKeys,
        *,
        x_queries: torch.Tensor | None = None,
        chunk_size: int | None = None,
    ) -> torch.Tensor:
        """queries ``[b, n_q, d]``, x_queries ``[b, n_q, dim_x]`` -> ``[b, n_q, d]``."""
        return self.attend_located(queries, prepared, x_queries, chunk_size)[0]

    def attend_located(
        self,
        queries: torch.Tensor,
        prepared: PositionalKeys,
        x_queries: torch.Tensor | None,
        chunk_size: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """queries ``[b, n_q, d]``, x_queries ``[b, n_q, dim_x]`` -> the attention output
        ``[b, n_q, d]`` and the (moved, TE Eq. 10) query locations ``[b, n_q, dim_x]``;
        ``chunk_size`` queries at a time (default: :meth:`chunk_size`)."""
        if x_queries is None:
            raise ValueError("TE attention needs x_queries, the queries' locations")
        b, n_q, _ = queries.shape
        if prepared.k is None or n_q == 0:
            return self._no_keys(queries), x_queries
        q = self._split(self.to_q(queries))
        size = chunk_size or self.chunk_size(b, prepared.k.shape[2])
        grad = torch.is_grad_enabled() and size < n_q
        reuse = not (torch.is_grad_enabled() or torch.compiler.is_compiling())
        scratch = PairScratch() if reuse else None
        outs, moves = [], []
        # one chunk without range(): torch.compile then keeps n_q symbolic (train.compile)
        for part in [slice(None)] if size >= n_q else _chunks(n_q, size):
            args = (q[:, :, part], prepared.k, prepared.v, x_queries[:, part], prepared.x,
                    prepared.safe_mask)  # fmt: skip
            out, move = (
                checkpoint(self._chunk, *args, use_reentrant=False)
                if grad
                else self._chunk(*args, scratch=scratch)
            )
            outs.append(out)
            moves.append(move)
        out = zero_where_no_key(torch.cat(outs, 1), prepared.has_key)
        if self.phi is not None:
            x_queries = x_queries + zero_where_no_key(torch.cat(moves, 1), prepared.has_key)
        return self.to_out(out), x_queries

    def _chunk(self, q, k, v, xq, xk, key_mask, scratch: PairScratch | None = None):
        """One query chunk: q ``[b, H, c, dh]``, xq ``[b, c, dim_x]`` -> ``[b, c, H*dh]`` and the
        Eq. 10 location move ``[b, c, dim_x]`` (zeros when the update is off); ``scratch``
        holds the pair MLPs' hidden layers (:func:`pair_mlp`)."""
        dots = (q @ k.transpose(-1, -2)) / math.sqrt(self.dim_head)  # [b, H, c, n_k]
        diff = xq[:, :, None, :] - xk[:, None, :, :]  # [b, c, n_k, dim_x]
        rel = diff.norm(dim=-1, keepdim=True) if self.rotation_invariant else diff
        logits = self.logits(dots.permute(0, 2, 3, 1), rel, scratch).permute(0, 3, 1, 2)  # Eq. 7-8
        attn = masked_softmax(logits, key_mask)  # [b, H, c, n_k]
        out = (attn @ v).transpose(1, 2).flatten(2)
        if self.phi is None:
            return out, xq.new_zeros(xq.shape)
        # TE Eq. 10 with C = 1/N: mean over valid keys of (x_n - x_m) * phi(alpha_.nm).
        weight = pair_mlp(self.phi, attn.permute(0, 2, 3, 1), scratch) * key_mask[:, None, :, None]
        count = key_mask.sum(-1).clamp_min(1).to(diff.dtype)[:, None, None]
        return out, (diff * weight).sum(2) / count


def _chunks(n: int, size: int) -> list[slice]:
    """``[0, size), [size, 2 size), ...`` up to ``n``."""
    return [slice(start, start + size) for start in range(0, n, size)]
