"""The context as a model receives and encodes it: the context mask of a model that reads
missing outputs (:func:`per_output_mask`), the encoding :meth:`NeuralProcess.encode_context
<tnpx.models.base.NeuralProcess.encode_context>` returns (:class:`ContextEncoding`), and the
state of a model that cannot encode a context on its own (:class:`RawContext`), and the
targets decoded from it in chunks joined again (:func:`joined_chunks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.distributions import Distribution, Normal


@dataclass
class ContextEncoding:
    """A model's representation of a context set, from ``NeuralProcess.encode_context``.

    ``state`` is model-specific (a dataclass of the tensors the decoder reads); ``batch`` is
    the number of tasks, so that targets for the wrong number of tasks are rejected with a
    clear message; ``shift`` ``[batch, 1, dim_y]`` is the context's output mean taken out
    before encoding (``centre_outputs``; None otherwise), put back on every decoded target."""

    model: str
    batch: int
    state: Any
    shift: torch.Tensor | None = None


@dataclass
class RawContext:
    """The context state of a model that cannot encode a context on its own: the inputs,
    kept for decoding (which recomputes the context per call)."""

    xc: torch.Tensor
    yc: torch.Tensor
    mask_c: torch.Tensor | None


def per_output_mask(
    mask_c: torch.Tensor | None, mask_yc: torch.Tensor | None, yc: torch.Tensor
) -> torch.Tensor | None:
    """The context mask a model reading missing outputs receives: ``mask_c [batch, n_ctx]``
    where nothing is missing, else ``[batch, n_ctx, dim_y]``, False at missing outputs and
    at padding."""
    if mask_yc is None:
        return mask_c
    mask_yc = mask_yc.to(yc.device)
    return mask_yc if mask_c is None else mask_yc & mask_c[..., None]


def joined_chunks(parts: list[Distribution], model: str) -> Distribution:
    """One prediction from the per-chunk predictions of targets decoded in chunks, in order
    (each ``[batch, n_chunk, dim_y]``): per-target Normals joined along the targets."""
    if len(parts) == 1:
        return parts[0]
    if not isinstance(parts[0], Normal):  # the families' distributions: not joined yet
        n_tgt = sum(p.batch_shape[1] for p in parts)
        raise ValueError(
            f"{model}: a {type(parts[0]).__name__} prediction cannot be "
            f"decoded in chunks yet; use chunk_size >= n_tgt ({n_tgt})"
        )
    return Normal(
        torch.cat([p.loc for p in parts], 1),
        torch.cat([p.scale for p in parts], 1),
        validate_args=False,
    )
