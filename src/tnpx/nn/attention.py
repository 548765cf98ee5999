"""The attention protocol, softmax multi-head attention on ``scaled_dot_product_attention``,
and the pieces every attention module shares: per-head projections and the "no valid key"
rule.

Every attention module is an :class:`Attention`, with one signature, so that a block stack
encodes a context once and decodes any number of query chunks against it:

- ``prepare_keys(keys [b, n_k, d], key_mask [b, n_k] | None, *, x_keys=None)`` does the
  key-side work once (projections; for kernel attention the sums over keys) and returns a
  typed state;
- ``attend(queries [b, n_q, d], prepared, *, x_queries=None) -> [b, n_q, d]`` answers queries
  against it;
- ``forward(queries, keys, key_mask, *, x_queries=None, x_keys=None) = attend(queries,
  prepare_keys(keys, key_mask, x_keys=x_keys), x_queries=x_queries)``.

``x_queries`` / ``x_keys`` ``[b, n, dim_x]`` are the input locations of queries and keys, read
only by attention with ``uses_locations = True`` (and ignored by the rest): rotary attention
(:mod:`tnpx.nn.rotary`) turns the projected queries and keys by their locations, a transform
inside this module's one path (:meth:`MultiHeadAttention._keys_at`, ``_queries_at``);
translation-equivariant attention (:mod:`tnpx.nn.te_attention`) reads relative locations in
its logits and may move the query locations (TE Eq. 10), which
:meth:`Attention.attend_located` returns (``located`` is the one-call form).

Keys can be masked per task (True = may attend). The mask is passed to SDPA as a broadcast
``[batch, 1, 1, n_keys]`` tensor, which keeps the fused CPU/GPU kernels (a dense ``[n_q, n_k]``
mask would be materialised as floats). A query with no valid key (empty or fully masked
context) receives a zero vector before the output projection, so an empty context and a
fully padded one give the same result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from .masking import masked_softmax, safe_key_mask, zero_where_no_key  # noqa: F401 (shared)
from .segments import SegmentedKeys, segmented_attention


class Attention(nn.Module):
    """The attention protocol (module docstring): a subclass implements :meth:`prepare_keys`
    and :meth:`attend`; :meth:`forward` and :meth:`located` compose them."""

    uses_locations: ClassVar[bool] = False  # reads the input locations of queries and keys

    def prepare_keys(
        self,
        keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        *,
        x_keys: torch.Tensor | None = None,
    ) -> Any:
        """keys ``[b, n_k, d]``, key_mask ``[b, n_k]`` (True = may attend), x_keys ``[b, n_k,
        dim_x]``: the key-side work, done once for any number of query chunks."""
        raise NotImplementedError

    def attend(
        self, queries: torch.Tensor, prepared: Any, *, x_queries: torch.Tensor | None = None
    ) -> torch.Tensor:
        """queries ``[b, n_q, d]`` (at ``x_queries [b, n_q, dim_x]``) against
        :meth:`prepare_keys`' state -> ``[b, n_q, d]``."""
        raise NotImplementedError

    def attend_located(
        self, queries: torch.Tensor, prepared: Any, x_queries: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """:meth:`attend` and the query locations after it: ``x_queries`` itself, unless the
        attention moves them (TE Eq. 10)."""
        return self.attend(queries, prepared, x_queries=x_queries), x_queries

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        *,
        x_queries: torch.Tensor | None = None,
        x_keys: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """queries ``[b, n_q, d]``, keys (also the values) ``[b, n_k, d]``, key_mask ``[b,
        n_k]``, locations ``x_queries [b, n_q, dim_x]``, ``x_keys [b, n_k, dim_x]``. Returns
        ``[b, n_q, d]``."""
        prepared = self.prepare_keys(keys, key_mask, x_keys=x_keys)
        return self.attend(queries, prepared, x_queries=x_queries)

    def located(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        x_queries: torch.Tensor,
        x_keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`forward` with locations, also returning the query locations after it
        (moved by TE Eq. 10 where the attention moves them): ``([b, n_q, d], [b, n_q,
        dim_x])``."""
        prepared = self.prepare_keys(keys, key_mask, x_keys=x_keys)
        out, x_queries = self.attend_located(queries, prepared, x_queries)
        return out, x_queries


class HeadProjections(nn.Module):
    """The linear maps of multi-head attention: ``to_q``, ``to_k`` (and ``to_v``, ``to_out``
    unless ``values=False``), ``dim_model -> n_heads * dim_head``, and the head split.
    ``qkv_bias=False`` drops the biases of ``to_q``, ``to_k``, ``to_v`` (``to_out`` keeps its
    own), as cambridge-mlg/tnp's attention does."""

    def __init__(
        self,
        dim_model: int,
        n_heads: int,
        dim_head: int,
        values: bool = True,
        qkv_bias: bool = True,
    ):
        super().__init__()
        if n_heads < 1 or dim_head < 1:
            raise ValueError(f"need n_heads >= 1 and dim_head >= 1, got {n_heads}, {dim_head}")
        inner = n_heads * dim_head
        self.n_heads, self.dim_head, self.inner = n_heads, dim_head, inner
        self.to_q = nn.Linear(dim_model, inner, bias=qkv_bias)
        self.to_k = nn.Linear(dim_model, inner, bias=qkv_bias)
        if values:
            self.to_v = nn.Linear(dim_model, inner, bias=qkv_bias)
            self.to_out = nn.Linear(inner, dim_model)

    def _split(self, z: torch.Tensor) -> torch.Tensor:
        """``[b, n, n_heads * dim_head] -> [b, n_heads, n, dim_head]``."""
        b, n, _ = z.shape
        return z.view(b, n, self.n_heads, self.dim_head).transpose(1, 2)

    def _merge(self, z: torch.Tensor) -> torch.Tensor:
        """``[b, n_heads, n, dim_head] -> [b, n, n_heads * dim_head]``."""
        return z.transpose(1, 2).reshape(z.shape[0], z.shape[2], self.inner)

    def _no_keys(self, queries: torch.Tensor) -> torch.Tensor:
        """The output for queries ``[b, n_q, d]`` with no key at all: ``to_out(0)``."""
        return self.to_out(queries.new_zeros(*queries.shape[:2], self.inner))


@dataclass
class ProjectedKeys:
    """Keys and values ``[b, h, n_k, dim_head]``, the SDPA mask ``[b, 1, 1, n_k]`` and which
    tasks have a valid key ``[b]`` (None without a mask); ``k is None``: no keys at all.
    Causal attention (:mod:`tnpx.nn.causal`) puts a per-query mask ``[b, 1, n_q, n_k]`` here
    with ``has_key [b, n_q]``, or sets ``is_causal`` (query i reads keys 0..i) without one."""

    k: torch.Tensor | None
    v: torch.Tensor | None = None
    attn_mask: torch.Tensor | None = None
    has_key: torch.Tensor | None = None
    is_causal: bool = False


class MultiHeadAttention(HeadProjections, Attention):
    """Multi-head attention ``[batch, n_q, dim_model] x [batch, n_k, dim_model] -> [batch, n_q,
    dim_model]`` with ``n_heads`` heads of size ``dim_head``. Reads no locations; a subclass
    that does transforms the projected queries and keys in :meth:`_keys_at` and
    :meth:`_queries_at` (rotary attention)."""

    def prepare_keys(
        self,
        keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        *,
        x_keys: torch.Tensor | None = None,
    ) -> ProjectedKeys:
        """The key-side work, done once for any number of query chunks."""
        return self._prepare(keys, keys, key_mask, x_keys)

    def _prepare(
        self,
        keys: torch.Tensor,
        values: torch.Tensor,
        key_mask: torch.Tensor | None,
        x_keys: torch.Tensor | None,
    ) -> ProjectedKeys:
        """Keys and values ``[b, n_k, d]`` projected, at ``x_keys``, with the SDPA mask."""
        if keys.shape[1] == 0:
            return ProjectedKeys(None)
        k, v = self._split(self.to_k(keys)), self._split(self.to_v(values))
        prepared = self._keys_at(k, v, x_keys)
        if key_mask is not None:
            safe, has_key = safe_key_mask(key_mask)
            prepared.attn_mask, prepared.has_key = safe[:, None, None, :], has_key
        return prepared

    def attend(
        self,
        queries: torch.Tensor,
        prepared: ProjectedKeys | SegmentedKeys,
        *,
        x_queries: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """queries ``[b, n_q, d]`` against keys from :meth:`prepare_keys` -> ``[b, n_q, d]``."""
        if isinstance(prepared, SegmentedKeys):  # a shared context and each path's own keys
            out, has_key = segmented_attention(self._split(self.to_q(queries)), prepared)
            return self.to_out(zero_where_no_key(self._merge(out), has_key))
        if prepared.k is None:
            return self._no_keys(queries)
        q = self._queries_at(self._split(self.to_q(queries)), x_queries, prepared)
        return self._attend_heads(q, prepared)

    def _keys_at(
        self, k: torch.Tensor, v: torch.Tensor, x_keys: torch.Tensor | None
    ) -> ProjectedKeys:
        """Projected keys and values ``[b, h, n_k, dim_head]`` at ``x_keys`` -> their state
        (here the locations are not read)."""
        return ProjectedKeys(k, v)

    def _queries_at(
        self, q: torch.Tensor, x_queries: torch.Tensor | None, prepared: ProjectedKeys
    ) -> torch.Tensor:
        """Projected queries ``[b, h, n_q, dim_head]`` at ``x_queries`` (here unchanged)."""
        return q

    def _attend_heads(self, q: torch.Tensor, prepared: ProjectedKeys) -> torch.Tensor:
        """Projected queries ``[b, h, n_q, dim_head]`` against prepared keys -> ``[b, n_q, d]``."""
        out = F.scaled_dot_product_attention(
            q, prepared.k, prepared.v, prepared.attn_mask, is_causal=prepared.is_causal
        )
        return self.to_out(zero_where_no_key(self._merge(out), prepared.has_key))
