"""The block stack of every transformer NP: a context stream and a target stream.

Each of ``n_layers`` layers updates the context tokens by self-attention and the target tokens
by cross-attention to the context. Two structural choices cover the papers:

- ``share_weights``: one block per layer serves both streams (TNP-KR Algorithm 2, the TNP-KR
  and cambridge-mlg ``tnp_kr`` code) or each stream has its own (TE paper, Figure 2);
- ``targets_read``: the targets of layer ``l`` read the context *input* to layer ``l``
  (``"input"``: TNP-D's masked attention and KR Algorithm 2, where both streams read the same
  keys) or the context *after* layer ``l``'s self-attention (``"updated"``: the TE paper's
  Figure 2 and cambridge-mlg/tnp's ``TNPTransformerEncoder``).

The context stream never reads the targets, so :meth:`TwoStreamStack.encode` computes what
every layer's targets read once, and :meth:`TwoStreamStack.decode` answers any chunk of
targets against it; the plain forward is the two in sequence, so streaming and the one-shot
call are one implementation. A key set prepared for the targets is reused for the context's
own self-attention where both read the same keys with the same block (shared weights,
``"input"``), so the key-side work is done once per layer.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..input_checks import check_option
from .blocks import PreparedKeys, ResidualBlock

TARGETS_READ = ("input", "updated")


class TwoStreamStack(nn.Module):
    """``n_layers`` layers of :class:`ResidualBlock` over a context and a target stream.

    Args:
        make_block: ``layer index -> ResidualBlock``; called once per layer (twice with
            separate stream weights: context blocks first, then target blocks).
        n_layers: number of layers.
        share_weights: one block per layer for both streams.
        targets_read: ``"input"`` or ``"updated"`` (see the module docstring).

    Parameters live in ``blocks`` (the shared blocks, or the context stream's) and, with
    separate weights, ``target_blocks``.
    """

    def __init__(
        self,
        make_block: Callable[[int], ResidualBlock],
        n_layers: int,
        share_weights: bool = True,
        targets_read: str = "input",
    ):
        super().__init__()
        check_option("targets_read", targets_read, TARGETS_READ)
        if n_layers < 1:
            raise ValueError(f"n_layers must be >= 1, got {n_layers}")
        self.share_weights, self.targets_read = share_weights, targets_read
        self.blocks = nn.ModuleList(make_block(i) for i in range(n_layers))
        if not share_weights:
            self.target_blocks = nn.ModuleList(make_block(i) for i in range(n_layers))

    def target_block(self, layer: int) -> ResidualBlock:
        """The block that updates the targets in ``layer``."""
        return self.blocks[layer] if self.share_weights else self.target_blocks[layer]

    def encode(
        self,
        zc: torch.Tensor,
        mask_c: torch.Tensor | None = None,
        xc: torch.Tensor | None = None,
    ) -> list[PreparedKeys]:
        """Context tokens ``zc [b, n_ctx, d]`` (locations ``xc [b, n_ctx, dim_x]`` for
        location-reading attention), ``mask_c [b, n_ctx]`` -> what the targets of each layer
        read: the context's prepared keys, one per layer."""
        states: list[PreparedKeys] = []
        last = len(self.blocks) - 1
        for layer, block in enumerate(self.blocks):
            reader = self.target_block(layer)
            if self.targets_read == "input":
                states.append(reader.prepare(zc, mask_c, xc))
                if layer < last:  # the last layer's context update is read by no one
                    own = states[-1] if reader is block else block.prepare(zc, mask_c, xc)
                    zc, xc = block.attend(zc, own, xc)
            else:
                zc, xc = block.attend(zc, block.prepare(zc, mask_c, xc), xc)
                states.append(reader.prepare(zc, mask_c, xc))
        return states

    def decode(
        self, zt: torch.Tensor, states: list[PreparedKeys], xt: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Target tokens ``zt [b, n_tgt, d]`` (locations ``xt``) through every layer against
        :meth:`encode`'s states -> ``[b, n_tgt, d]``. Targets never attend to each other."""
        for layer, state in enumerate(states):
            zt, xt = self.target_block(layer).attend(zt, state, xt)
        return zt

    def forward(
        self,
        zc: torch.Tensor,
        zt: torch.Tensor,
        mask_c: torch.Tensor | None = None,
        xc: torch.Tensor | None = None,
        xt: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The target tokens after the stack, ``[b, n_tgt, d]``."""
        return self.decode(zt, self.encode(zc, mask_c, xc), xt)

    def masked_joint(
        self, zc: torch.Tensor, zt: torch.Tensor, mask_c: torch.Tensor | None = None
    ) -> torch.Tensor:
        """TNP-D's computation of the same function (shared weights, ``"input"``, no
        locations): masked self-attention over ``[context; targets]`` whose keys are the
        context tokens only. O((n_ctx + n_tgt)^2) compute, as in TNP-D; the key mask is a
        broadcast ``[b, 1, 1, n]`` mask, so memory stays linear on the fused SDPA kernels."""
        if not self.share_weights or self.targets_read != "input":
            raise ValueError("masked_joint needs shared weights and targets_read='input'")
        b, n_ctx, n_tgt = zc.shape[0], zc.shape[1], zt.shape[1]
        ctx_keys = mask_c if mask_c is not None else zc.new_ones(b, n_ctx, dtype=torch.bool)
        key_mask = torch.cat([ctx_keys, zt.new_zeros(b, n_tgt, dtype=torch.bool)], 1)
        z = torch.cat([zc, zt], 1)
        for block in self.blocks:
            z = block.attend(z, block.prepare(z, key_mask))[0]
        return z[:, n_ctx:]
