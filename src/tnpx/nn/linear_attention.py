"""Kernelised multi-head attention at linear cost (Katharopoulos et al., 2020; thesis §7.3).

Softmax attention weights ``exp(q.k)`` are replaced by a kernel ``phi(q).phi(k)`` with a
positive feature map ``phi``, so the sums over keys are taken once for all queries (thesis
Eq. 7.3.1):

    H_i = phi(q_i)^T (sum_j phi(k_j) v_j^T) / (phi(q_i)^T sum_j phi(k_j))

Time and memory are O((n_q + n_k) m d) for m features: no ``n_q x n_k`` matrix is formed.
:class:`KernelAttention` holds what every such attention shares (projections, masking, the
sums); :class:`LinearAttention` uses ``phi = elu + 1``, and :mod:`tnpx.nn.performer` FAVOR+.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .attention import Attention, HeadProjections


def kernel_attention(
    phi_q: torch.Tensor,
    phi_k: torch.Tensor,
    v: torch.Tensor,
    min_normaliser: float,
) -> torch.Tensor:
    """Thesis Eq. 7.3.1 / Performer ``D^-1 Q'((K')^T V)`` with the normaliser clamped below.

    Args:
        phi_q: query features ``[b, h, n_q, m]``.
        phi_k: key features ``[b, h, n_k, m]``, zero for masked keys.
        v: values ``[b, h, n_k, d_v]``.
        min_normaliser: lower bound of the normaliser.

    Returns:
        ``[b, h, n_q, d_v]``; a query with no valid key gets a zero vector.
    """
    return kernel_attention_from_sums(phi_q, *key_sums(phi_k, v), min_normaliser)


def key_sums(phi_k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The sums over keys of kernel attention: ``sum_j phi(k_j) v_j^T`` ``[b, h, m, d_v]`` and
    ``sum_j phi(k_j)`` ``[b, h, m, 1]``; computed once, they serve any number of queries."""
    return phi_k.transpose(-2, -1) @ v, phi_k.sum(-2).unsqueeze(-1)


def kernel_attention_from_sums(
    phi_q: torch.Tensor, kv: torch.Tensor, k_sum: torch.Tensor, min_normaliser: float
) -> torch.Tensor:
    """:func:`kernel_attention` from :func:`key_sums`: ``[b, h, n_q, d_v]``."""
    normaliser = (phi_q @ k_sum).squeeze(-1)  # [b, h, n_q]
    return (phi_q @ kv) / normaliser.clamp_min(min_normaliser).unsqueeze(-1)


@dataclass
class KeySums:
    """:func:`key_sums` of a key set: ``kv [b, h, m, d_v]``, ``k_sum [b, h, m, 1]``; None
    for an empty key set."""

    kv: torch.Tensor | None
    k_sum: torch.Tensor | None = None


class KernelAttention(HeadProjections, Attention):
    """Multi-head attention ``[b, n_q, dim_model] x [b, n_k, dim_model] -> [b, n_q, dim_model]``
    whose weights come from a feature map (:meth:`query_features`, :meth:`key_features`,
    defined by subclasses). Reads no locations.

    Same projections and call as :class:`~tnpx.nn.MultiHeadAttention`; masked keys
    (``key_mask [b, n_k]``, True = valid) have their features zeroed, so they add nothing to
    the sums, and a query with no valid key receives a zero vector before ``to_out``.
    """

    min_normaliser: float = 1e-6

    def query_features(self, q: torch.Tensor) -> torch.Tensor:
        """``q [b, h, n_q, dim_head]`` -> ``phi_q [b, h, n_q, m]``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def key_features(self, k: torch.Tensor, key_mask: torch.Tensor | None) -> torch.Tensor:
        """``k [b, h, n_k, dim_head]`` -> ``phi_k [b, h, n_k, m]`` (masked keys may be
        anything: they are zeroed afterwards)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def prepare_keys(
        self,
        keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        *,
        x_keys: torch.Tensor | None = None,
    ) -> KeySums:
        """The sums over keys (:func:`key_sums`): all a query needs, so streamed query chunks
        cost O(chunk m d) each, independent of ``n_k``."""
        if keys.shape[1] == 0:
            return KeySums(None)
        k, v = self._split(self.to_k(keys)), self._split(self.to_v(keys))
        phi_k = self.key_features(k, key_mask)
        if key_mask is not None:  # masked keys are zeroed after phi
            phi_k = phi_k.masked_fill(~key_mask[:, None, :, None], 0.0)
        return KeySums(*key_sums(phi_k, v))

    def attend(
        self, queries: torch.Tensor, prepared: KeySums, *, x_queries: torch.Tensor | None = None
    ) -> torch.Tensor:
        """queries ``[b, n_q, d]`` against :meth:`prepare_keys`' sums -> ``[b, n_q, d]``."""
        if prepared.kv is None:
            return self._no_keys(queries)
        phi_q = self.query_features(self._split(self.to_q(queries)))
        out = kernel_attention_from_sums(phi_q, prepared.kv, prepared.k_sum, self.min_normaliser)
        return self.to_out(self._merge(out))


class LinearAttention(KernelAttention):
    """Linear attention with ``phi(x) = elu(x) + 1`` (Katharopoulos et al., 2020), the
    LinearTNP's attention (thesis Eq. 7.3.1); the normaliser is clamped at ``eps``."""

    def __init__(self, dim_model: int, n_heads: int, dim_head: int, eps: float = 1e-6):
        super().__init__(dim_model, n_heads, dim_head)
        self.eps = self.min_normaliser = eps

    def query_features(self, q):  # noqa: D102
        return F.elu(q) + 1

    def key_features(self, k, key_mask):  # noqa: D102
        return F.elu(k) + 1
