"""What the rotary models (``te-tnp-rope``, ``te-pt-tnp-rope``) share; registers no model.

Their rotary attention (:class:`~tnpx.nn.RotaryAttention`) is built from the hyper-parameters
``min_wavelength``, ``max_wavelength`` and ``learn_frequencies`` that both models' hypers hold.
"""

from __future__ import annotations

from ..nn import RotaryAttention


def rotary_attention(hyper, dim_x: int) -> RotaryAttention:
    """Rotary attention with a rotary model's sizes and frequency band (``hyper``)."""
    h = hyper
    return RotaryAttention(
        h.dim_model,
        h.n_heads,
        h.dim_head,
        dim_x=dim_x,
        min_wavelength=h.min_wavelength,
        max_wavelength=h.max_wavelength,
        learn_frequencies=h.learn_frequencies,
    )
