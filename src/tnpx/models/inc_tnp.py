"""incTNP: a TNP whose context is causal, so that it is encoded once and grown point by point
(incremental updates), with a causal buffer of drawn targets for joint samples.

The :class:`~tnpx.models.transformer.TransformerNP` skeleton with ``tnp``'s defaults (softmax
attention, pre-norm, one block per layer for both streams, targets reading each layer's input
context) and a :class:`~tnpx.nn.CausalStack`: context point ``i`` attends to points ``0..i``.

- **Incremental context** (incTNP): ``update(context, x_new, y_new)`` appends each layer's keys
  and values of the new points to the encoded context, ``O(N)`` per point and layer where
  re-encoding costs ``O(N^2)``; an updated context equals the longer context encoded at once.
- **Causal buffer** (Hassan et al., ICLR 2026): ``tnpx.sample`` encodes the context once and
  puts each drawn target, with its value, into a per-path buffer that attends to the cached
  context and causally to earlier entries; a target reads the context and the buffer. One
  step costs ``O(N + K)`` per path, where the rollout re-encodes ``N + k`` points;
  :meth:`IncTNP.joint_log_prob` scores a target set under the same factorisation in one pass.
  Buffer entries have their own token flag (:class:`~tnpx.nn.BufferTokens`).

A causal context is not permutation invariant. Training puts every task's context in a random
order, so the model learns to predict the same whatever the order; ``benchmarks/
incremental.py`` measures how far from invariant a trained model is.

**Training** (one pass per batch; :meth:`IncTNP.training_loss`). After the random context
order, ``K ~ U{0 .. min(n_buffer, n_tgt // 2)}`` targets (a random subset, in random
order) are teacher-forced into the buffer and buffer target ``k`` is predicted from the whole
context and buffer entries ``< k`` (the joint factorisation the sampler draws from). Each other
target reads, with probability ``prefix_fraction``, a random prefix of ``0 .. n_ctx - 1``
context points (incTNP's dense supervision: every context prefix is supervised, one random
prefix per target, instead of one pass per prefix); with probability ``buffer_fraction`` the
whole context and a random prefix ``1 .. K`` of the buffer; else the whole context (the
plain prediction, as scored). The prefixes are per-target masks on one cross-attention, so a
step costs one TNP forward plus the buffer's ``K`` tokens. The plan is drawn from a
generator seeded by the batch, so a resumed run draws what an uninterrupted one drew.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.distributions import Normal

from ..likelihoods import gaussian_only
from ..nn import BufferCache, BufferTokens, CausalStack, ContextCache
from .base import ContextEncoding
from .registry import register
from .transformer import TransformerHyper, TransformerNP


@dataclass
class IncTNPHyper(TransformerHyper):
    prefix_fraction: float = 0.25  # training: share of targets that read a context prefix
    buffer_fraction: float = 0.25  # training: share of targets that read a buffer prefix
    n_buffer: int = 64  # training: at most this many targets per task in the buffer


@dataclass
class TrainingPlan:
    """What each target of a training batch reads (targets in the plan's order): ``order [b,
    n_tgt]`` (the first ``n_buffer`` are the buffer), ``context_reads [b, n_tgt]`` and
    ``buffer_reads [b, n_tgt]`` (how many context points / buffer entries it reads)."""

    order: torch.Tensor
    n_buffer: int
    context_reads: torch.Tensor
    buffer_reads: torch.Tensor


@register("inc-tnp")
class IncTNP(TransformerNP):
    """incTNP with a causal buffer (module docstring)."""

    summary = "incTNP: causal context, KV cache (O(N) updates), causal buffer for joint samples"
    Hyper = IncTNPHyper
    stack_class = CausalStack
    permutation_invariant = False
    incremental = True
    buffered_sampling = True

    def __init__(self, dim_x: int, dim_y: int, hyper: IncTNPHyper):
        shares = (hyper.prefix_fraction, hyper.buffer_fraction)
        if min(shares) < 0 or sum(shares) > 1:
            raise ValueError(
                "prefix_fraction and buffer_fraction must be >= 0 and sum to at most 1, got "
                f"{hyper.prefix_fraction} and {hyper.buffer_fraction}"
            )
        why = "its causal buffer samples and scores Gaussian targets; use tnp for other families"
        gaussian_only(hyper.likelihood, "inc-tnp", why)
        super().__init__(dim_x, dim_y, hyper)

    def _embedder(self) -> BufferTokens:
        h = self.hyper
        return BufferTokens(self.dim_x, self.dim_y, h.dim_model, h.dim_model, h.n_embed_hidden)

    # -- the incremental context -------------------------------------------------------------
    def _encode_context(self, xc, yc, mask_c) -> ContextCache:
        return self.stack.extend(self.stack.empty(), self.embed.context(xc, yc), mask_c)

    def update(
        self,
        context: ContextEncoding,
        x_new: torch.Tensor,
        y_new: torch.Tensor,
        mask_new: torch.Tensor | None = None,
    ) -> ContextEncoding:
        """``context`` (from :meth:`encode_context` or ``update``) with points ``x_new [batch,
        m, dim_x]``, ``y_new [batch, m, dim_y]`` (observed: ``mask_new [batch, m]``) appended
        after its own: the same encoding as the longer context encoded at once. ``O(m (N +
        m))`` per layer for a context of ``N`` points. The given encoding stays valid."""
        self._check_encoding(context)
        x_new, y_new, _, mask_new = self._validate(x_new, y_new, x_new[:, :0], mask_new)
        if x_new.shape[0] != context.batch:
            raise ValueError(
                f"x_new: expected batch {context.batch} (the encoded context's), got "
                f"{list(x_new.shape)}"
            )
        state = self.stack.extend(context.state, self.embed.context(x_new, y_new), mask_new)
        return ContextEncoding(self.name, context.batch, state)

    # -- the causal buffer ----------------------------------------------------------------------
    def start_buffer(
        self, context: ContextEncoding, n_paths: int, capacity: int = 0
    ) -> BufferCache:
        """An empty buffer for ``n_paths`` sample paths of each task of ``context``, with room
        for ``capacity`` entries (more grow it); rows of the buffer's calls are path-major
        (row ``s * batch + i``: path ``s`` of task ``i``)."""
        self._check_encoding(context)
        return self.stack.empty_buffer(n_paths, capacity)

    def predict_with_buffer(
        self, context: ContextEncoding, buffer: BufferCache, xt: torch.Tensor
    ) -> Normal:
        """Targets ``xt [n_paths * batch, m, dim_x]`` given the context and each path's buffer
        -> per-target Normals ``[n_paths * batch, m, dim_y]``."""
        zt = self.embed.targets(xt)
        return self.head(self.stack.decode_with_buffer(zt, context.state, buffer))

    def add_to_buffer(
        self, context: ContextEncoding, buffer: BufferCache, x: torch.Tensor, y: torch.Tensor
    ) -> BufferCache:
        """``buffer`` with entries ``x [n_paths * batch, m, dim_x]``, ``y [.., m, dim_y]``."""
        return self.stack.extend_buffer(context.state, buffer, self.embed.buffer(x, y))

    def joint_log_prob(
        self,
        xc: torch.Tensor,
        yc: torch.Tensor,
        xt: torch.Tensor,
        yt: torch.Tensor,
        mask_c: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``log p(yt | context)`` per task ``[batch]`` under the buffer's factorisation
        ``prod_k p(y_k | context, (x_j, y_j)_{j < k})`` in the order of ``xt``: what
        :func:`tnpx.sample` draws from, in one pass (``yt [batch, n_tgt, dim_y]``)."""
        xc, yc, xt, mask_c = self._validate(xc, yc, xt, mask_c)
        if not isinstance(yt, torch.Tensor) or yt.shape != (*xt.shape[:2], self.dim_y):
            got = list(yt.shape) if isinstance(yt, torch.Tensor) else type(yt).__name__
            raise ValueError(f"yt: expected shape {[*xt.shape[:2], self.dim_y]}, got {got}")
        yt = yt.to(xt)
        b, n_tgt = xt.shape[:2]
        everything = xt.new_full((b, n_tgt), xc.shape[1], dtype=torch.long)
        earlier = torch.arange(n_tgt, device=xt.device).expand(b, n_tgt)
        pred = self._read_prefixes(xc, yc, mask_c, xt, everything, xt, yt, earlier)
        return pred.log_prob(yt).sum((-2, -1))

    # -- training ---------------------------------------------------------------------------------
    def _read_prefixes(self, xc, yc, mask_c, xt, context_reads, xb, yb, buffer_reads) -> Normal:
        """Targets ``xt [b, n_tgt]`` each reading its first ``context_reads [b, n_tgt]`` context
        points and first ``buffer_reads [b, n_tgt]`` buffer entries ``(xb, yb) [b, n_buffer]``,
        in one pass. Buffer entries read the whole context (as in sampling), so a target that
        reads a buffer entry should read the whole context."""
        context = self._encode_context(xc, yc, mask_c)
        buffer = self.stack.extend_buffer(
            context, self.stack.empty_buffer(1), self.embed.buffer(xb, yb)
        )
        n_ctx, n_buffer = xc.shape[1], xb.shape[1]
        ctx_mask = torch.arange(n_ctx, device=xt.device) < context_reads[..., None]
        buf_mask = torch.arange(n_buffer, device=xt.device) < buffer_reads[..., None]
        zt = self.stack.decode_with_buffer(
            self.embed.targets(xt), context, buffer, ctx_mask, buf_mask
        )
        return self.head(zt)

    def training_plan(self, b: int, n_ctx: int, n_tgt: int, generator: torch.Generator):
        """The random reads of a training batch (module docstring), on the CPU."""
        h = self.hyper
        cap = min(h.n_buffer, n_tgt // 2)
        n_buffer = int(torch.randint(0, cap + 1, (), generator=generator))
        order = torch.rand(b, n_tgt, generator=generator).argsort(1)
        kind = torch.rand(b, n_tgt, generator=generator)
        prefix = kind < h.prefix_fraction
        reads_buffer = ~prefix & (kind < h.prefix_fraction + h.buffer_fraction)
        u = torch.rand(2, b, n_tgt, generator=generator)
        context_reads = torch.where(prefix, (u[0] * n_ctx).long(), n_ctx)
        buffer_reads = torch.where(reads_buffer, 1 + (u[1] * n_buffer).long(), 0)
        buffer_reads = buffer_reads.clamp_max(n_buffer)
        position = torch.arange(n_tgt).expand(b, n_tgt)
        in_buffer = position < n_buffer  # buffer target k reads the whole context, buffer < k
        context_reads = torch.where(in_buffer, n_ctx, context_reads)
        buffer_reads = torch.where(in_buffer, position, buffer_reads)
        return TrainingPlan(order, n_buffer, context_reads, buffer_reads)

    def training_loss(self, batch) -> torch.Tensor:
        if batch.yt is None:
            raise ValueError("batch.yt is None: training needs target outputs")
        self.refuse_target_mask(batch)  # a padded target could enter the buffer others read
        xc, yc, xt, mask_c = self._validate(batch.xc, batch.yc, batch.xt, batch.mask_c)
        b, n_ctx, n_tgt = xc.shape[0], xc.shape[1], xt.shape[1]
        # seeded by the batch (a pure function of seed and step), so resuming is exact
        seed = int(xt.detach().double().abs().sum().mul(1e6).item()) % (2**62)
        g = torch.Generator().manual_seed(seed)
        shuffle = torch.rand(b, n_ctx, generator=g).argsort(1).to(xc.device)
        xc, yc = _gather(xc, shuffle), _gather(yc, shuffle)
        mask_c = None if mask_c is None else mask_c.gather(1, shuffle)
        plan = self.training_plan(b, n_ctx, n_tgt, g)
        order = plan.order.to(xt.device)
        xt, yt = _gather(xt, order), _gather(batch.yt.to(xt), order)
        k = plan.n_buffer
        reads = plan.context_reads.to(xt.device), plan.buffer_reads.to(xt.device)
        pred = self._read_prefixes(xc, yc, mask_c, xt, reads[0], xt[:, :k], yt[:, :k], reads[1])
        return -pred.log_prob(yt).sum(-1).mean()


def _gather(t: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Rows ``index [b, n]`` of ``t [b, n, f]`` along its second axis."""
    return t.gather(1, index[..., None].expand(-1, -1, t.shape[-1]))
