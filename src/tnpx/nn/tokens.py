"""Token embedders: how a transformer NP turns context points and target inputs into tokens.

One MLP embeds both kinds of token; what it is given decides the model family:

- ``"flagged"`` (TNP, TNP-D, PT-TNP, LinearTNP): context ``[x, y, 1]``, targets ``[x, 0, 0]``;
  the last channel flags an observation.
- ``"target-flagged"`` (cambridge-mlg/tnp's ``preprocess_observations``): context
  ``[x, y, 0]``, targets ``[x, 0, 1]``; the last channel flags a target. The same family of
  functions as ``"flagged"`` (the first layer absorbs ``f -> 1 - f``), not the same function
  of given weights.
- ``"plain"`` (TNP-KR, the TNP-D code): context ``[x, y]``, targets ``[x, 0]``, no flag.
- ``"y-only"`` (TE-TNP, TE-PT-TNP): context ``[y, 0]``, every target ``[0, 1]``: no input
  location enters a token, so locations reach the model only through relative positions
  (translation equivariance).

With ``missing_outputs`` (a context whose points may miss some outputs: a user's table with
gaps), a context point's ``y`` becomes ``[y * m, m]``, ``m`` its observed mask as floats (the
density channel of ConvCNP's set convolution), and a target's zeros widen to match: a missing
value enters as "not observed", never as a value of 0. Without it, the tokens are as above.
"""

from __future__ import annotations

import torch
from torch import nn

from ..input_checks import check_option
from .mlp import MLP

TOKEN_KINDS = ("flagged", "target-flagged", "plain", "y-only")


class TokenEmbedder(nn.Module):
    """``mlp`` maps a point's features to a token ``[.., dim_model]``.

    Args:
        kind: ``"flagged"``, ``"target-flagged"``, ``"plain"`` or ``"y-only"`` (module
            docstring).
        dim_x, dim_y: input and output dimensions.
        dim_model: token width.
        dim_hidden, n_hidden: the MLP's hidden width and number of hidden layers.
        missing_outputs: context values as ``[y * m, m]`` (module docstring).
    """

    def __init__(
        self,
        kind: str,
        dim_x: int,
        dim_y: int,
        dim_model: int,
        dim_hidden: int,
        n_hidden: int,
        missing_outputs: bool = False,
    ):
        super().__init__()
        check_option("tokens", kind, TOKEN_KINDS)
        self.kind, self.dim_x, self.dim_y = kind, dim_x, dim_y
        self.missing_outputs = missing_outputs
        self.dim_values = 2 * dim_y if missing_outputs else dim_y  # [y * m, m] or y
        has_flag = kind != "plain"
        dim_in = (0 if kind == "y-only" else dim_x) + self.dim_values + int(has_flag)
        self.mlp = MLP(dim_in, dim_model, dim_hidden, n_hidden)

    def context(
        self, xc: torch.Tensor, yc: torch.Tensor, observed: torch.Tensor | None = None
    ) -> torch.Tensor:
        """xc ``[b, n_ctx, dim_x]``, yc ``[b, n_ctx, dim_y]`` -> ``[b, n_ctx, dim_model]``;
        ``observed [b, n_ctx, dim_y]`` (bool, True = observed; None: all are) needs
        ``missing_outputs``."""
        yc = self._values(yc, observed)
        if self.kind == "y-only":
            return self.mlp(torch.cat([yc, yc.new_zeros(*yc.shape[:2], 1)], -1))
        if self.kind == "plain":
            return self.mlp(torch.cat([xc, yc], -1))
        flag = yc.new_full((*yc.shape[:2], 1), float(self.kind == "flagged"))
        return self.mlp(torch.cat([xc, yc, flag], -1))

    def targets(self, xt: torch.Tensor) -> torch.Tensor:
        """xt ``[b, n_tgt, dim_x]`` -> ``[b, n_tgt, dim_model]``."""
        b, n_tgt, _ = xt.shape
        if self.kind == "y-only":  # one token for every target: computed once, expanded
            flag = torch.cat([xt.new_zeros(1, 1, self.dim_values), xt.new_ones(1, 1, 1)], -1)
            return self.mlp(flag).expand(b, n_tgt, -1)
        parts = [xt, xt.new_zeros(b, n_tgt, self.dim_values)]
        if self.kind != "plain":
            parts.append(xt.new_full((b, n_tgt, 1), float(self.kind == "target-flagged")))
        return self.mlp(torch.cat(parts, -1))

    def _values(self, yc: torch.Tensor, observed: torch.Tensor | None) -> torch.Tensor:
        """What a context token reads of ``yc``: ``[y * m, m]`` with ``missing_outputs``."""
        if not self.missing_outputs:
            if observed is not None:
                raise ValueError(
                    "observed: this TokenEmbedder reads every output (build it with "
                    "missing_outputs=True to pass an observed mask)"
                )
            return yc
        if observed is None:
            return torch.cat([yc, torch.ones_like(yc)], -1)
        # where, not a product: a missing value may be anything, NaN included
        values = torch.where(observed, yc, torch.zeros((), dtype=yc.dtype, device=yc.device))
        return torch.cat([values, observed.to(yc.dtype)], -1)


class BufferTokens(nn.Module):
    """Tokens of a model with a causal buffer (:mod:`tnpx.nn.causal`): context ``[x, y, 1, 0]``,
    targets ``[x, 0, 0, 0]``, buffer entries ``[x, y, 0, 1]`` through one MLP. A buffer entry is
    a target's value (drawn, or known in training), not an observation, so it has its own flag:
    where targets are noiseless and observations noisy, the two must be told apart."""

    missing_outputs = False  # no observed-mask channels (TokenEmbedder's option)

    def __init__(self, dim_x: int, dim_y: int, dim_model: int, dim_hidden: int, n_hidden: int):
        super().__init__()
        self.dim_x, self.dim_y = dim_x, dim_y
        self.mlp = MLP(dim_x + dim_y + 2, dim_model, dim_hidden, n_hidden)

    def _tokens(self, x: torch.Tensor, y: torch.Tensor | None, flags: tuple[float, float]):
        b, n, _ = x.shape
        y = x.new_zeros(b, n, self.dim_y) if y is None else y
        return self.mlp(torch.cat([x, y, x.new_tensor(flags).expand(b, n, 2)], -1))

    def context(self, xc: torch.Tensor, yc: torch.Tensor) -> torch.Tensor:
        """xc ``[b, n, dim_x]``, yc ``[b, n, dim_y]`` -> ``[b, n, dim_model]``."""
        return self._tokens(xc, yc, (1.0, 0.0))

    def targets(self, xt: torch.Tensor) -> torch.Tensor:
        """xt ``[b, n, dim_x]`` -> ``[b, n, dim_model]``."""
        return self._tokens(xt, None, (0.0, 0.0))

    def buffer(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Buffer entries ``x [b, n, dim_x]``, ``y [b, n, dim_y]`` -> ``[b, n, dim_model]``."""
        return self._tokens(x, y, (0.0, 1.0))
