"""HyperMixer token mixing (Mai et al., 2023; thesis §7.4), in a self and a cross form.

HyperMixer mixes tokens with an MLP whose weights are generated per token by hypernetworks,
so it accepts any number of tokens (thesis Eq. 7.4.1-7.4.2): for tokens ``X [N, d]``,

    W_1 = h_1(X), W_2 = h_2(X)  in R^(N x p)      (one row per token, h an MLP on that token)
    TokenMixing(X) = W_2 sigma(W_1^T X)            (sigma = GELU)

``W_1^T X [p, d]`` sums over the tokens, so the cost is O(N p d). Position information enters
through the tokens themselves (an NP token already embeds its x), so no positional encoding
is added.

Cross form (what :class:`HyperMixing` computes). The left factor has one row per *output*
token and the right factor sums over *input* tokens, so with queries ``Z_q [n_q, d]`` (targets,
or the context itself) and keys ``Z_k [n_k, d]`` (context, also the values):

    H = h_q(Z_q) sigma(h_k(Z_k)^T Z_k),    h_q(Z_q) [n_q, p],  h_k(Z_k) [n_k, p]

which is Eq. 7.4.2 with ``W_k`` (the left, output-side factor) generated from the queries and
``W_q`` (the summed factor) from the keys; for ``Z_q = Z_k`` it is HyperMixer's token mixing.
Each query's output depends only on that query and the keys: targets stay independent.
Masked keys get zero hyper-weights, so they add nothing; no valid key gives ``H = 0``
(``GELU(0) = 0``). ``aggregate="mean"`` divides the sum by the number of valid keys (an option,
not in the paper, keeping the scale independent of ``n_k``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..input_checks import check_option
from .attention import Attention
from .mlp import MLP

AGGREGATES = ("sum", "mean")


@dataclass
class MixedKeys:
    """``GELU(h_k(Z_k)^T Z_k)`` ``[b, p, d]``: all a query needs from the keys."""

    mixed: torch.Tensor


class HyperMixing(Attention):
    """Hypernetwork token mixing ``[b, n_q, d] x [b, n_k, d] -> [b, n_q, d]`` with ``dim_mixing``
    (p) generated weights per token; ``h_q``, ``h_k`` are MLPs ``d -> dim_hidden -> p`` (GELU).

    Example:
        >>> mix = HyperMixing(32, dim_mixing=16, dim_hidden=32)
        >>> mix(torch.randn(2, 5, 32), torch.randn(2, 9, 32)).shape
        torch.Size([2, 5, 32])
    """

    def __init__(self, dim_model: int, dim_mixing: int, dim_hidden: int, aggregate: str = "sum"):
        super().__init__()
        check_option("aggregate", aggregate, AGGREGATES)
        self.aggregate = aggregate
        self.hyper_q = MLP(dim_model, dim_mixing, dim_hidden, n_hidden=1, activation="gelu")
        self.hyper_k = MLP(dim_model, dim_mixing, dim_hidden, n_hidden=1, activation="gelu")

    def prepare_keys(
        self,
        keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        *,
        x_keys: torch.Tensor | None = None,
    ) -> MixedKeys:
        """The sum over keys, done once for any number of query chunks."""
        w_k = self.hyper_k(keys)  # [b, n_k, p]
        if key_mask is not None:
            w_k = w_k * key_mask[..., None].to(w_k.dtype)
        mixed = w_k.transpose(1, 2) @ keys  # [b, p, d]: sum over keys of w_k v^T
        if self.aggregate == "mean":
            n_valid = keys.shape[1] if key_mask is None else key_mask.sum(-1)[:, None, None]
            mixed = mixed / torch.as_tensor(n_valid, dtype=mixed.dtype).clamp_min(1)
        return MixedKeys(F.gelu(mixed))

    def attend(
        self, queries: torch.Tensor, prepared: MixedKeys, *, x_queries: torch.Tensor | None = None
    ) -> torch.Tensor:
        """queries ``[b, n_q, d]`` -> ``[b, n_q, d]``."""
        return self.hyper_q(queries) @ prepared.mixed  # Eq. 7.4.2: [b, n_q, p] x [b, p, d]
