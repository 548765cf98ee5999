"""Performer attention: FAVOR+ (Choromanski et al., 2021), as TNP-KR-Fast uses it (KR §3.2).

The softmax kernel is estimated with positive random features (KR §3.2):

    exp(q.k) = E_w[exp(w.q - |q|^2/2) exp(w.k - |k|^2/2)],   w ~ N(0, I),
    phi(x) = exp(x W^T - |x|^2/2) / sqrt(m),

with ``W [m, d]`` stacked blocks of orthogonal rows, each block the ``Q^T`` of a QR
decomposition of a ``d x d`` standard Gaussian matrix (sign-corrected so that ``Q`` is
Haar-distributed), every row then scaled to norm exactly ``sqrt(d)`` (``feature_norm="sqrt_d"``:
the Performer and TNP-KR codes' ``scaling=1``, lower error at small m but biased) or to the norm
of a Gaussian vector (``"chi"``: unbiased). Queries and keys are scaled by ``d^(-1/4)`` first,
so ``phi(q).phi(k)`` estimates ``exp(q.k / sqrt(d))``, the kernel of
``scaled_dot_product_attention``. Masked keys are zeroed after ``phi``; the normaliser is
clamped at ``eps = 1e-6``. ``m = n_features`` features per head, drawn independently per
head (``feature_heads="per-head"``) or one draw shared by every head of the layer
(``"shared"``: the TNP-KR code, whose ``FastAttention`` holds one ``[m, d]`` projection and
applies it to every head).

Stabiliser (``stabilise=True``, the default here): as in the Performer authors' code and
performer-pytorch, the exponent is reduced by its maximum, per query row for queries and over
all valid keys and features for keys (per task and head), so the largest feature is exactly
``1/sqrt(m)``; the normaliser clamp then applies in these shifted units. The shifts cancel
between numerator and normaliser, so wherever the clamp is inactive (any normally scaled
input) this is the unstabilised function up to rounding. Without it the exponent ``w.x -
|x|^2/2`` cannot overflow (it is at most ``|w|^2/2``) but it can underflow: for large tokens
(``|q| d^(-1/4)`` beyond ~15 in float32) every feature of a query is 0 and its attention
silently returns 0. ``stabilise=False`` is the literal form of PROTOCOLS' "FAVOR+" paragraph.

The features are drawn once from ``seed`` and stored as a buffer (a checkpoint reproduces
predictions exactly); with ``redraw_every = K > 0`` each set serves K training-mode calls and
the next one is drawn (from the same seed, draw counter saved too) at the start of call K + 1;
evaluation never redraws.
"""

from __future__ import annotations

import math

import torch

from ..input_checks import check_option
from .linear_attention import KernelAttention, KeySums

DRAW_SEED_STRIDE = 1_000_003  # draw n of a layer seeded s uses seed s + n * stride
FEATURE_NORMS = ("sqrt_d", "chi")
FEATURE_QR = ("haar", "plain")
FEATURE_HEADS = ("per-head", "shared")


def orthogonal_features(
    n_features: int,
    dim: int,
    generator: torch.Generator | None = None,
    norm: str = "sqrt_d",
    qr: str = "haar",
) -> torch.Tensor:
    """Orthogonal random features ``[n_features, dim]``: blocks of ``Q^T`` from the QR of
    ``dim x dim`` Gaussian matrices, the last block truncated to make ``n_features`` rows.

    Rows within a block are orthonormal directions; ``Q`` has its columns multiplied by the
    signs of ``diag(R)``, which makes it Haar-distributed (LAPACK's QR alone biases the
    directions). ``norm="sqrt_d"`` then scales every row to norm ``sqrt(dim)`` (the Performer
    and TNP-KR codes' ``scaling=1``); ``norm="chi"`` gives each row the norm of an independent
    Gaussian vector, so every row is marginally ``N(0, I)`` and the softmax-kernel estimate is
    unbiased. ``qr="plain"`` takes LAPACK's ``Q`` as it comes, without the sign correction (the
    TNP-KR code's ``gaussian_orf``: ``jnp.linalg.qr``), so the directions are not Haar.
    """
    check_option("norm", norm, FEATURE_NORMS)
    check_option("qr", qr, FEATURE_QR)
    blocks = []
    for _ in range(math.ceil(n_features / dim)):
        q, r = torch.linalg.qr(torch.randn(dim, dim, generator=generator))
        blocks.append((q * torch.sign(torch.diagonal(r))).T if qr == "haar" else q.T)
    directions = torch.cat(blocks)[:n_features]
    if norm == "sqrt_d":
        return directions * math.sqrt(dim)
    return directions * torch.randn(n_features, dim, generator=generator).norm(dim=1, keepdim=True)


def positive_features(
    x: torch.Tensor, projection: torch.Tensor, shift_dims: tuple[int, ...] | None, mask=None
) -> torch.Tensor:
    """FAVOR+ features ``phi(x) = exp(x W^T - |x|^2/2 - shift) / sqrt(m)``.

    Args:
        x: ``[b, h, n, d]``, already scaled by ``d^(-1/4)``.
        projection: ``W [h, m, d]``, one set of features per head.
        shift_dims: dimensions of the exponent ``[b, h, n, m]`` to take the maximum over
            (``(-1,)``: per row; ``(-2, -1)``: over all rows), or None for no shift.
        mask: ``[b, n]`` bool, True = valid; other rows get zero features and are left out
            of the maximum (they may hold anything: exp is never taken of them).

    Returns:
        ``phi [b, h, n, m]``; the shift is a constant (no gradient), it cancels in attention.
    """
    exponent = torch.einsum("bhnd,hmd->bhnm", x, projection) - x.square().sum(-1, True) / 2
    if mask is not None:  # masked rows zeroed: exp(-inf) = 0
        exponent = exponent.masked_fill(~mask[:, None, :, None], -math.inf)
    shift = exponent.new_zeros(())
    if shift_dims is not None:
        shift = exponent.detach().amax(dim=shift_dims, keepdim=True)
        shift = torch.where(shift.isfinite(), shift, torch.zeros_like(shift))  # no valid row
    return torch.exp(exponent - shift) / math.sqrt(projection.shape[-2])


class PerformerAttention(KernelAttention):
    """Multi-head FAVOR+ attention ``[b, n_q, dim_model] x [b, n_k, dim_model] -> [b, n_q,
    dim_model]``, linear in ``n_q`` and ``n_k``; ``n_features`` random features per head.

    Example:
        >>> attn = PerformerAttention(64, n_heads=4, dim_head=16, n_features=64, seed=0)
        >>> attn(torch.randn(2, 10, 64), torch.randn(2, 7, 64)).shape
        torch.Size([2, 10, 64])
    """

    def __init__(
        self,
        dim_model: int,
        n_heads: int,
        dim_head: int,
        n_features: int = 64,
        seed: int = 0,
        redraw_every: int = 0,
        stabilise: bool = True,
        feature_norm: str = "sqrt_d",
        eps: float = 1e-6,
        feature_qr: str = "haar",
        feature_heads: str = "per-head",
    ):
        super().__init__(dim_model, n_heads, dim_head)
        check_option("feature_qr", feature_qr, FEATURE_QR)
        check_option("feature_heads", feature_heads, FEATURE_HEADS)
        if n_features < 1 or redraw_every < 0:
            raise ValueError(
                f"need n_features >= 1 and redraw_every >= 0, got {n_features}, {redraw_every}"
            )
        self.n_features, self.seed, self.redraw_every = n_features, seed, redraw_every
        self.stabilise, self.feature_norm = stabilise, feature_norm
        self.feature_qr, self.feature_heads = feature_qr, feature_heads
        self.eps = self.min_normaliser = eps
        self.register_buffer("projection", self._draw(0))  # [n_heads, n_features, dim_head]
        self.register_buffer("n_draws", torch.tensor(1))
        self.register_buffer("steps_since_draw", torch.tensor(0))

    def _draw(self, draw: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.seed + draw * DRAW_SEED_STRIDE)
        n_draws = 1 if self.feature_heads == "shared" else self.n_heads
        heads = [
            orthogonal_features(
                self.n_features, self.dim_head, g, self.feature_norm, self.feature_qr
            )
            for _ in range(n_draws)
        ]
        return torch.stack(heads).expand(self.n_heads, -1, -1).clone()

    @torch.no_grad()
    def redraw(self) -> None:
        """Replace the features by the next draw from this layer's seed."""
        new = self._draw(int(self.n_draws))
        self.projection.copy_(new.to(self.projection))
        self.n_draws += 1
        self.steps_since_draw.zero_()

    def _count_training_step(self) -> None:
        if not (self.training and self.redraw_every > 0):
            return
        if int(self.steps_since_draw) >= self.redraw_every:
            self.redraw()  # before use: the features of a finished step are never modified
        self.steps_since_draw += 1

    def prepare_keys(
        self,
        keys: torch.Tensor,
        key_mask: torch.Tensor | None = None,
        *,
        x_keys: torch.Tensor | None = None,
    ) -> KeySums:
        """As :meth:`KernelAttention.prepare_keys`; in training mode each call (one per block
        per forward pass: the key side is prepared once for both streams) counts one step
        towards the next redraw, and a due redraw happens before the features are used."""
        self._count_training_step()
        return super().prepare_keys(keys, key_mask)

    def query_features(self, q):  # noqa: D102
        scale = self.dim_head**-0.25
        return positive_features(q * scale, self.projection, (-1,) if self.stabilise else None)

    def key_features(self, k, key_mask):  # noqa: D102
        scale = self.dim_head**-0.25
        shift = (-2, -1) if self.stabilise else None
        return positive_features(k * scale, self.projection, shift, key_mask)
