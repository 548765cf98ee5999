"""Translation-equivariant TNPs (Ashman et al., 2024; thesis §4.3): ``te-tnp``, ``re-te-tnp``.

The transformer skeleton with y-only tokens (context ``MLP([y, 0])``, every target
``MLP([0, 1])``: no x in a token) and TE attention, whose logits see locations only through
relative positions ``x_n - x_m`` (or distances, for ``re-te-tnp``) and which may move the query
locations (TE Eq. 10). So predictions are unchanged when context and targets are shifted
together (and, for ``re-te-tnp``, rotated). As in the TE paper's Figure 2, each stream has its
own weights and the targets of a layer read the context after that layer's self-attention
(``share_weights=False``, ``targets_read="updated"``: the skeleton's options, with TE-TNP's
defaults). The preset ``released-code`` (:mod:`tnpx.models.presets.te_code`) is the TE code's
model exactly (cambridge-mlg/tetnp ``tetnp.yml``: shared weights, no location update, no q/k/v
biases, rho reading ``[x_n - x_m, dots]``, the ``sqrt(softplus) + 0`` head;
``docs/fidelity.md``). ``update_order``
(``"sequential"`` = ``targets_read="updated"``, ``"parallel"`` = ``"input"``) is the option's
earlier name, still accepted (saved configs and checkpoints hold it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..nn import RotaryAttention, TEMultiHeadAttention, check_option
from .registry import register
from .rotary_options import rotary_attention
from .transformer import TransformerHyper, TransformerNP, te_attention

# The earlier name of `targets_read`: sequential: targets read the context after the layer's
# self-attention; parallel: its input.
UPDATE_ORDERS = {"sequential": "updated", "parallel": "input"}


@dataclass
class TETNPHyper(TransformerHyper):
    tokens: ClassVar[str] = "y-only"  # context [y, 0], targets [0, 1]: no x in a token
    share_weights: bool = False  # one block for context MHSA and target MHCA (released code)
    targets_read: str = "updated"  # targets attend to the updated context, or the layer input
    relative: str = "post"  # post (TE Eq. 8) | pre | rbf | identity (thesis variants)
    location_update: bool = True  # TE Eq. 10 (the paper's model)
    update_order: str | None = None  # earlier name of targets_read (mapped, then None)
    dim_relative_hidden: int | None = None  # width of the rho / phi MLPs (None: dim_model)
    chunk_elements: int = 2**24  # bound on pair features per query chunk
    qkv_bias: bool = True  # biases on the query, key and value projections (TE code: none)
    rho_order: str = "dots-first"  # rho(cat[dots, x_n - x_m]) | "rel-first" (the TE code)

    def __post_init__(self):
        super().__post_init__()
        if self.update_order is None:
            return
        check_option("update_order", self.update_order, UPDATE_ORDERS)
        mapped = UPDATE_ORDERS[self.update_order]
        default = type(self).__dataclass_fields__["targets_read"].default
        if self.targets_read not in (mapped, default):
            raise ValueError(
                f"update_order={self.update_order!r} (targets_read={mapped!r}) contradicts "
                f"targets_read={self.targets_read!r}; give targets_read only"
            )
        self.targets_read, self.update_order = mapped, None


class _TETNPBase(TransformerNP):
    Hyper = TETNPHyper
    translation_equivariant = True
    rotation_invariant_logits = False

    def legacy_renames(self, version: int) -> tuple[tuple[str, str | None], ...]:
        if version != 1:
            return ()
        # Format 1 kept shared weights under both names; the stack holds them once.
        targets = None if self.hyper.share_weights else "stack.target_blocks."
        return (
            ("embed.", "embed.mlp."),
            ("context_layers.", "stack.blocks."),
            ("target_layers.", targets),
        )

    def _attention(self, layer: int) -> TEMultiHeadAttention:
        return te_attention(self.hyper, self.dim_x, self.rotation_invariant_logits)


@register("te-tnp")
class TETNP(_TETNPBase):
    """TE-TNP: TE-MHSA over the context and TE-MHCA from the targets (TE Eq. 7-10)."""

    summary = "Translation-equivariant TNP: attention logits from rho(q.k, x_n - x_m) (TE Eq. 7-10)"


@dataclass
class RETETNPHyper(TETNPHyper):
    location_update: bool = False  # Eq. 10 needs x_n - x_m; undefined for distances


@register("re-te-tnp")
class RETETNP(_TETNPBase):
    """RE-TE-TNP (thesis §6.3): TE-TNP with the distance |x_n - x_m| in place of the difference."""

    Hyper = RETETNPHyper
    rotation_equivariant = True
    rotation_invariant_logits = True
    summary = "Rotation- and translation-equivariant TE-TNP: logits use |x_n - x_m| (thesis)"


@dataclass
class RopeTNPHyper(TransformerHyper):
    tokens: ClassVar[str] = "y-only"  # as TE-TNP: no x in a token
    share_weights: bool = False  # as TE-TNP: one block per stream
    targets_read: str = "updated"  # as TE-TNP: targets read the context after self-attention
    min_wavelength: float = 0.05  # the band of rotation wavelengths per input dimension
    max_wavelength: float = 20.0
    learn_frequencies: bool = False


@register("te-tnp-rope")
class TETNPRope(_TETNPBase):
    """TE-TNP's structure with rotary attention: queries and keys rotated by their locations
    (RoPE / STRING), so logits depend on ``x_m - x_n`` only and attention runs on SDPA."""

    Hyper = RopeTNPHyper
    summary = "TE-TNP structure with rotary (RoPE) attention: exactly translation equivariant, SDPA"

    def _attention(self, layer: int) -> RotaryAttention:
        return rotary_attention(self.hyper, self.dim_x)
