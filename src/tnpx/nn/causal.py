"""A causal context stream with a key-value cache, and a causal buffer of sampled targets.

:class:`CausalStack` is a :class:`~tnpx.nn.TwoStreamStack` whose context tokens attend
*causally*: context point ``i`` reads points ``0..i`` only (incTNP). Targets read each layer's
context as in the two-stream stack. A layer's keys and values for point ``i`` then depend on
points ``<= i`` only, so the prepared keys of every layer can be appended to
(:meth:`CausalStack.extend`): adding ``m`` points to a cache of ``n`` costs ``O(m (n + m))``
attention per layer (and a copy of the ``O(n)`` cache), where re-encoding costs
``O((n + m)^2)``. Encoding a context is extending an empty cache, so a context encoded at once
and one grown point by point are the same computation.

The buffer (Hassan et al., ICLR 2026, "causal autoregressive buffer") continues the stream per
sample path: buffer tokens (sampled targets with their values) attend to the cached context
and causally to earlier buffer tokens, and targets read the context plus the buffer. The
context is shared by every path (:mod:`tnpx.nn.segments`), so ``n_paths`` paths cost their
buffers, not ``n_paths`` copies of the context. Training passes per-query masks instead
(:meth:`CausalStack.decode_with_buffer`: each target reads a prefix of the context and of the
buffer), so every prefix a target could be predicted from is supervised in one forward pass.

Only attention on the fused softmax kernel (no location-reading attention) is supported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .attention import ProjectedKeys
from .blocks import PreparedKeys
from .masking import safe_key_mask
from .segments import KeySegment, SegmentedKeys
from .stack import TwoStreamStack


class KeyStore:
    """The storage behind a stream's keys and values at one layer: ``k``, ``v`` ``[rows, h,
    capacity, dim_head]``, of which the first ``filled`` positions are written."""

    def __init__(self, k: torch.Tensor, v: torch.Tensor, filled: int):
        self.k, self.v, self.filled = k, v, filled

    @property
    def capacity(self) -> int:
        return self.k.shape[2]


@dataclass
class StoredKeys:
    """The first ``size`` keys and values of a :class:`KeyStore`; ``k``, ``v`` are views
    ``[rows, h, size, dim_head]``."""

    store: KeyStore
    size: int

    @property
    def k(self) -> torch.Tensor:
        return self.store.k[:, :, : self.size]

    @property
    def v(self) -> torch.Tensor:
        return self.store.v[:, :, : self.size]


def _append(old: StoredKeys | None, new: ProjectedKeys, reserve: int = 0) -> StoredKeys:
    """``old`` with ``new``'s keys and values after them. Written in place where ``old`` is
    the newest cache of its store and the store has room, so appending costs the new points
    only; otherwise copied into a store of twice the size (amortised doubling). A cache that
    was already extended (a fork) is copied, so every cache stays valid; so is one under
    autograd (an in-place write would break the graph of earlier attention). A first store
    holds exactly its points, or ``reserve`` where that is more (a buffer that knows how many
    entries it will take)."""
    m = new.k.shape[2]
    if old is None and reserve <= m:  # a fresh encoding: exactly its size, no slack
        return StoredKeys(KeyStore(new.k.contiguous(), new.v.contiguous(), m), m)
    size = 0 if old is None else old.size
    store = None if old is None else old.store
    graph = torch.is_grad_enabled() and new.k.requires_grad
    if store is None or graph or store.filled != size or size + m > store.capacity:
        rows, h, _, dim = new.k.shape
        capacity = max(reserve, 2 * (size + m)) if old is not None else reserve
        store = KeyStore(
            new.k.new_empty(rows, h, capacity, dim), new.v.new_empty(rows, h, capacity, dim), size
        )
        if old is not None:
            store.k[:, :, :size], store.v[:, :, :size] = old.k, old.v
    store.k[:, :, size : size + m], store.v[:, :, size : size + m] = new.k, new.v
    store.filled = size + m
    return StoredKeys(store, size + m)


@dataclass
class StreamCache:
    """Per layer, the keys and values (:class:`StoredKeys`) of a causal stream's tokens so
    far: ``own`` (what later tokens of the stream attend to; None at the last layer when
    targets read the layer input, where nothing reads it) and ``read`` (what targets read;
    the same object where one block serves both)."""

    own: list[StoredKeys | None]
    read: list[StoredKeys | None]
    size: int
    reserve: int = 0  # room to allocate at the first append (a buffer's known length)


@dataclass
class ContextCache(StreamCache):
    """A causally encoded context: :class:`StreamCache` over ``b`` tasks and which points are
    observed, ``key_mask [b, size]`` (None: all)."""

    key_mask: torch.Tensor | None = None

    @property
    def layers(self) -> list[PreparedKeys]:
        """What each layer's targets read, with the key mask (``TwoStreamStack.decode``)."""
        return [PreparedKeys(_with_key_mask(keys, self.key_mask)) for keys in self.read]


@dataclass
class BufferCache(StreamCache):
    """A buffer of ``size`` tokens per sample path: :class:`StreamCache` over ``n_paths * b``
    rows (path-major)."""

    n_paths: int = 1


def _with_key_mask(keys: StoredKeys | None, key_mask: torch.Tensor | None) -> ProjectedKeys:
    if keys is None:
        return ProjectedKeys(None)
    if key_mask is None:
        return ProjectedKeys(keys.k, keys.v)
    safe, has_key = safe_key_mask(key_mask)
    return ProjectedKeys(keys.k, keys.v, safe[:, None, None, :], has_key)


def causal_mask(n_q: int, n_k: int, device: torch.device) -> torch.Tensor:
    """``[n_q, n_k]`` bool: the last ``n_q`` of ``n_k`` tokens, query ``i`` reading keys
    ``0 .. n_k - n_q + i`` (the earlier tokens and itself)."""
    return torch.ones(n_q, n_k, dtype=torch.bool, device=device).tril(n_k - n_q)


def causal_keys(keys: StoredKeys, key_mask: torch.Tensor | None, n_q: int) -> ProjectedKeys:
    """The self-attention keys of the last ``n_q`` tokens of a causal stream: SDPA's own causal
    kernel when all keys are new and observed, else a per-query mask (rows of padded queries
    that see no observed key may read any key: finite, never read, zeroed)."""
    n_k = keys.k.shape[2]
    if key_mask is None and n_q == 1:  # one new point reads every key: no mask at all
        return ProjectedKeys(keys.k, keys.v)
    if key_mask is None and n_k == n_q:
        return ProjectedKeys(keys.k, keys.v, is_causal=True)
    mask = causal_mask(n_q, n_k, keys.k.device)[None]
    if key_mask is None:
        return ProjectedKeys(keys.k, keys.v, mask[:, None])
    safe, has_key = safe_key_mask(mask & key_mask[:, None, :])
    return ProjectedKeys(keys.k, keys.v, safe[:, None], has_key)


def join_masks(
    old: torch.Tensor | None, n_old: int, new: torch.Tensor | None, like: torch.Tensor
) -> torch.Tensor | None:
    """The mask of ``n_old`` points (``old [b, n_old]``, None = all observed) followed by
    ``like.shape[1]`` new ones (``new``), or None when every point is observed."""
    if old is None and new is None:
        return None
    b, m = like.shape[:2]
    old = torch.ones(b, n_old, dtype=torch.bool, device=like.device) if old is None else old
    new = torch.ones(b, m, dtype=torch.bool, device=like.device) if new is None else new
    return torch.cat([old, new], 1)


def _segment(keys: StoredKeys | None, mask: torch.Tensor | None) -> KeySegment | None:
    return None if keys is None else KeySegment(keys.k, keys.v, mask)


class CausalStack(TwoStreamStack):
    """A :class:`~tnpx.nn.TwoStreamStack` with a causal context stream and a causal buffer
    (module docstring); the same parameters and options."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.blocks[0].uses_locations:
            raise ValueError("a causal stack takes attention without locations")

    def empty(self) -> ContextCache:
        """The cache of an empty context."""
        none = [None] * len(self.blocks)
        return ContextCache(list(none), list(none), 0)

    def encode(self, zc, mask_c=None, xc=None) -> list[PreparedKeys]:
        """The two-stream stack's ``encode``, causally: :meth:`extend` of an empty cache."""
        return self.extend(self.empty(), zc, mask_c).layers

    def extend(
        self, cache: ContextCache, z: torch.Tensor, mask: torch.Tensor | None = None
    ) -> ContextCache:
        """``cache`` with ``m`` more context tokens ``z [b, m, d]`` (observed: ``mask [b, m]``,
        None = all), each reading the cached points and the new points before it."""
        if z.shape[1] == 0:
            return cache
        key_mask = join_masks(cache.key_mask, cache.size, mask, z)
        m = z.shape[1]
        own, read = self._grow(cache, z, lambda layer, keys: causal_keys(keys, key_mask, m))
        return ContextCache(own, read, cache.size + m, key_mask=key_mask)

    def empty_buffer(self, n_paths: int, capacity: int = 0) -> BufferCache:
        """An empty buffer for ``n_paths`` sample paths of every task, with room for
        ``capacity`` entries (it grows beyond them by doubling)."""
        none = [None] * len(self.blocks)
        return BufferCache(list(none), list(none), 0, capacity, n_paths)

    def extend_buffer(
        self, context: ContextCache, buffer: BufferCache, z: torch.Tensor
    ) -> BufferCache:
        """``buffer`` with ``m`` more tokens per path, ``z [n_paths * b, m, d]``: each reads the
        context (shared by the paths) and, causally, the buffer."""
        if z.shape[1] == 0:
            return buffer
        m, n_paths = z.shape[1], buffer.n_paths
        ctx_mask = None if context.key_mask is None else context.key_mask[:, None, :]

        def keys(layer: int, own: StoredKeys) -> SegmentedKeys:
            causal = causal_mask(m, own.k.shape[2], z.device)[None]
            shared = _segment(context.own[layer], ctx_mask)
            return SegmentedKeys(shared, KeySegment(own.k, own.v, causal), n_paths)

        own, read = self._grow(buffer, z, keys)
        return BufferCache(own, read, buffer.size + m, buffer.reserve, n_paths)

    def decode_with_buffer(
        self,
        zt: torch.Tensor,
        context: ContextCache,
        buffer: BufferCache,
        context_mask: torch.Tensor | None = None,
        buffer_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Target tokens ``zt [n_paths * b, n_tgt, d]`` through every layer, reading the
        context and the buffer. By default every target reads the whole of both; a prefix per
        target (one path only) is ``context_mask [b, n_tgt, n_ctx]`` (True = may read; the
        context's own key mask is applied too) and ``buffer_mask [b, n_tgt, n_buffer]``."""
        ctx_mask = context_mask
        if context.key_mask is not None:
            observed = context.key_mask[:, None, :]
            ctx_mask = observed if ctx_mask is None else ctx_mask & observed
        for layer in range(len(self.blocks)):
            keys = SegmentedKeys(
                _segment(context.read[layer], ctx_mask),
                _segment(buffer.read[layer], buffer_mask),
                buffer.n_paths,
            )
            zt = self.target_block(layer).attend(zt, PreparedKeys(keys))[0]
        return zt

    def _grow(
        self,
        cache: StreamCache,
        z: torch.Tensor,
        self_keys: Callable[[int, StoredKeys], ProjectedKeys | SegmentedKeys],
    ) -> tuple[list, list]:
        """The ``own`` and ``read`` lists of ``cache`` with tokens ``z`` appended, layer by
        layer: each layer's keys of the new tokens are appended, then the new tokens are
        updated by attending to ``self_keys(layer, own keys including theirs)``."""
        own, read = [], []
        updated = self.targets_read == "updated"
        last = len(self.blocks) - 1
        for layer, block in enumerate(self.blocks):
            reader = self.target_block(layer)
            mine = None
            if updated or layer < last:  # the last layer's "input" update is read by no one
                mine = _append(cache.own[layer], block.prepare(z).attention, cache.reserve)
            if not updated:
                same = reader is block and mine is not None
                new = None if same else reader.prepare(z).attention
                yours = mine if same else _append(cache.read[layer], new, cache.reserve)
            if mine is not None:
                z = block.attend(z, PreparedKeys(self_keys(layer, mine)))[0]
            if updated:
                yours = _append(cache.read[layer], reader.prepare(z).attention, cache.reserve)
            own.append(mine)
            read.append(yours)
        return own, read
