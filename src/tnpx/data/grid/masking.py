"""Context and targets of windows that hold missing cells (land in a sea field): the ``grid``
source's draw when a window keeps its valid cells.

One job: :func:`masked_order` orders each window's cells so that its context is valid cells
only and every missing cell is a masked target, from the same uniform draws the complete-field
rule uses (``order = rand.argsort()``): a window without a missing cell gets exactly that
order, so a complete field's batches are unchanged bit for bit.

Per window ``b`` with ``V_b`` valid cells of ``N`` and the batch's ``n_ctx``: the valid cells
come first in random order, then the missing ones; the context is the first ``c_b = min(n_ctx,
V_b - 1)`` valid cells (at least one valid target stays), the context slots past ``c_b``
hold missing cells masked out (``mask_c`` False), and the targets are the other valid cells
then the remaining missing ones (``mask_t`` False).
"""

from __future__ import annotations

import torch


def masked_order(
    rand: torch.Tensor, missing: torch.Tensor, n_ctx: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(order [b, N], mask_c [b, n_ctx], mask_t [b, N - n_ctx])`` from the draws ``rand [b,
    N]`` in ``[0, 1)`` and ``missing [b, N]`` bool (each window at least two valid cells):
    the cells in ``order`` split into context (the first ``n_ctx``) and targets, the masks
    True at valid cells."""
    b, n = rand.shape
    base = (rand + 2.0 * missing).argsort(dim=1)  # valid first (rand < 1), each part shuffled
    valid = (n - missing.sum(1, keepdim=True)).long()  # V_b, [b, 1]
    own = torch.minimum(torch.full_like(valid, n_ctx), valid - 1)  # c_b
    p = torch.arange(n).expand(b, n)
    # the position in ``base`` each slot takes: valid context, missing padding to n_ctx, the
    # valid cells left, then the missing ones left (the identity where c_b = n_ctx)
    source = torch.where(p < own, p, valid + p - own)
    source = torch.where(p >= n_ctx, own + p - n_ctx, source)
    source = torch.where(p >= n_ctx + valid - own, p, source)
    order = base.gather(1, source)
    mask_c = p[:, :n_ctx] < own
    mask_t = p[:, : n - n_ctx] < valid - own
    return order, mask_c, mask_t
