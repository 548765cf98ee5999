"""Presets of the TE paper's text (Ashman et al., 2024), not of its code: its ablations.
Registers presets only."""

from __future__ import annotations

from ..registry import register_preset

# TE Table 7 ablation: no input adjustment (psi = 1/N in Eq. 11, no Eq. 10 updates).
register_preset("te-pt-tnp", "no-input-adjustment", location_update=False, pseudo_init="mean")
