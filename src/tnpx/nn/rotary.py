"""Rotary translation-equivariant attention: RoPE over input locations (Su et al., 2021;
STRING, Schenck et al., ICML 2025, for several input dimensions).

Each head's query and key channels are rotated, pair by pair, by angles proportional to the
token's input location: for input dimension ``d`` and frequency ``omega_j`` the pair
``(2p, 2p + 1)`` of a query at ``x_n`` turns by ``theta = omega_j x_nd``. A rotation is
orthogonal, so

    <R(theta_n) q, R(theta_m) k> = <q, R(theta_m - theta_n) k>,

and the logit of query ``n`` and key ``m`` depends on the locations only through
``x_m - x_n``: the attention weights are exactly translation invariant. Tokens and values carry
no location (as in TE-TNP, tokens come from ``y`` only), so a model built from this attention is
translation equivariant, while the attention itself is an ordinary scaled dot product that runs
on the fused SDPA kernel with linear memory (unlike TE attention's per-pair MLP, TE Eq. 8).

Frequencies: per input dimension a band of ``n_pairs = dim_head // (2 dim_x)`` frequencies,
log-spaced between ``2 pi / max_wavelength`` and ``2 pi / min_wavelength`` (fixed by default;
``learn_frequencies`` makes their logarithms parameters). Fixed bands are the default because
equivariance does not need learning them and a band that spans the data's length scales lets
each head pick its scale through its projections; channels beyond ``2 dim_x n_pairs`` are not
rotated (pure content attention).

Precision: the angles are computed in float64 from the (exactly representable) float32
locations and only their cosines and sines are rounded to the model's dtype. A shift of
``10^3`` therefore changes each rotated channel by one rounding of a number of unit size, not
by the ``10^3 omega eps`` a float32 angle would lose, and predictions stay equal to float32
rounding (tested at shifts of 1 to 10^3).

Cost: the rotation is a transform of the projected queries and keys inside
:class:`~tnpx.nn.MultiHeadAttention`'s one path (its ``_keys_at`` / ``_queries_at``), applied
once per key set (when the keys are prepared) and once per query set, as
``z * cos + swap(z) * sin`` on whole heads (``swap`` exchanges the channels of each pair,
``sin`` carries the pair's signs): two products, a sum and one copy that swaps the pairs, where
the pairwise form split and re-joined each pair, and bit for bit the pairwise formula. Queries
at the key set's own locations (a context attending to itself) reuse the keys' cosines and
sines. Nothing grows with the number of keys times the number of queries, so streamed targets
stay bounded by their chunk. A model whose locations never move (``te-pt-tnp-rope``: context,
pseudo-tokens and targets each keep theirs through every layer) passes them as
:class:`TurnedLocations`, so each set is turned once per forward, not once per attention call
(a training step of ``te-pt-tnp-rope`` at 3 layers turned 16 location sets, now 3): every
attention with fixed frequencies computes the same rotation of the same locations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from .attention import MultiHeadAttention, ProjectedKeys


@dataclass
class Rotation:
    """The turn of each channel of a head at some locations: ``cos`` and signed ``sin``, each
    ``[b, 1, n, 2 R]`` for the ``R`` rotated pairs (``sin`` is ``-sin, sin`` per pair)."""

    cos: torch.Tensor
    sin: torch.Tensor

    def apply(self, z: torch.Tensor) -> torch.Tensor:
        """Heads ``z [b, h, n, dim_head]`` turned: per pair ``(a, b) -> (a cos - b sin,
        a sin + b cos)``; channels beyond the ``2 R`` rotated ones unchanged."""
        n_rot = self.cos.shape[-1]
        turned = z[..., :n_rot]
        pairs = turned.unflatten(-1, (-1, 2))
        # (b, a) per pair: one stack of the two strided halves, cheaper on CPU than flip
        swapped = torch.stack([pairs[..., 1], pairs[..., 0]], -1).flatten(-2)
        out = turned * self.cos + swapped * self.sin
        return out if n_rot == z.shape[-1] else torch.cat([out, z[..., n_rot:]], -1)


@dataclass
class TurnedLocations:
    """Locations ``x [b, n, dim_x]`` with their :class:`Rotation` per dtype, computed by the
    first rotary attention that reads them and reused by every later one. Only attention with
    fixed frequencies takes them: its frequencies are a function of its band alone, the same
    in every layer of a model."""

    x: torch.Tensor
    rotations: dict[torch.dtype, Rotation] = field(default_factory=dict)


Locations = torch.Tensor | TurnedLocations


@dataclass
class RotaryKeys(ProjectedKeys):
    """:class:`ProjectedKeys` whose keys are turned by their locations ``x [b, n_k, dim_x]``,
    with that ``rotation``: queries at the same locations reuse it."""

    x: Locations | None = None
    rotation: Rotation | None = None


class RotaryAttention(MultiHeadAttention):
    """Multi-head softmax attention whose queries and keys are rotated by their locations.

    Args:
        dim_model, n_heads, dim_head: token width and heads (``dim_head >= 2 dim_x``).
        dim_x: input-location dimension.
        min_wavelength, max_wavelength: the band of wavelengths per input dimension.
        learn_frequencies: make the (log) frequencies parameters.
    """

    uses_locations = True

    def __init__(
        self,
        dim_model: int,
        n_heads: int,
        dim_head: int,
        dim_x: int,
        min_wavelength: float = 0.05,
        max_wavelength: float = 20.0,
        learn_frequencies: bool = False,
    ):
        super().__init__(dim_model, n_heads, dim_head)
        self.n_pairs = dim_head // (2 * dim_x)
        if self.n_pairs < 1:
            raise ValueError(
                f"rotary attention needs dim_head >= 2 * dim_x, got dim_head={dim_head}, "
                f"dim_x={dim_x}"
            )
        if not 0 < min_wavelength <= max_wavelength:
            raise ValueError(
                f"need 0 < min_wavelength <= max_wavelength, got {min_wavelength}, {max_wavelength}"
            )
        self.dim_x = dim_x
        self.learn_frequencies = learn_frequencies
        wavelengths = torch.logspace(
            math.log10(max_wavelength), math.log10(min_wavelength), self.n_pairs
        )
        log_freqs = torch.log(2 * math.pi / wavelengths)  # [n_pairs]
        if learn_frequencies:
            self.log_frequencies = nn.Parameter(log_freqs)
        else:
            self.register_buffer("log_frequencies", log_freqs)

    def rotation(self, x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """Cosines and sines ``[b, 1, n, dim_x * n_pairs]`` of the angles of locations
        ``x [b, n, dim_x]``, computed in float64 (see the module docstring)."""
        omega = self.log_frequencies.double().exp()  # [n_pairs]
        theta = (x.double()[..., None] * omega).flatten(-2)  # [b, n, dim_x * n_pairs]
        return theta.cos().to(dtype)[:, None], theta.sin().to(dtype)[:, None]

    def turn(self, x: Locations, dtype: torch.dtype) -> Rotation:
        """The :class:`Rotation` of heads at locations ``x [b, n, dim_x]``; for
        :class:`TurnedLocations`, theirs (computed here on first use)."""
        if isinstance(x, TurnedLocations):
            if self.learn_frequencies:
                raise ValueError(
                    "TurnedLocations share one rotation between layers: they need fixed "
                    "frequencies (learn_frequencies=False); pass the location tensor instead"
                )
            if dtype not in x.rotations:
                x.rotations[dtype] = self.turn(x.x, dtype)
            return x.rotations[dtype]
        cos, sin = self.rotation(x, dtype)
        return Rotation(cos.repeat_interleave(2, -1), torch.stack([-sin, sin], -1).flatten(-2))

    def rotate(self, z: torch.Tensor, x: Locations) -> torch.Tensor:
        """Heads ``z [b, h, n, dim_head]`` at locations ``x [b, n, dim_x]``: each channel pair
        ``(2p, 2p + 1)`` of the rotated part turned by its angle."""
        return self.turn(x, z.dtype).apply(z)

    def _keys_at(self, k: torch.Tensor, v: torch.Tensor, x_keys: Locations | None) -> RotaryKeys:
        if x_keys is None:
            raise ValueError("rotary attention needs x_keys, the keys' locations")
        rotation = self.turn(x_keys, k.dtype)
        return RotaryKeys(rotation.apply(k), v, x=x_keys, rotation=rotation)

    def _queries_at(
        self, q: torch.Tensor, x_queries: Locations | None, prepared: ProjectedKeys
    ) -> torch.Tensor:
        if x_queries is None:
            raise ValueError("rotary attention needs x_queries, the queries' locations")
        reuse = isinstance(prepared, RotaryKeys) and x_queries is prepared.x
        if reuse and prepared.rotation is not None:  # a set attending to itself
            return prepared.rotation.apply(q)
        return self.rotate(q, x_queries)
