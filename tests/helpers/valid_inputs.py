"""Valid model inputs for the input-validation tests
(``tests/contract/test_contract_validation.py``, ``tests/primitives/test_input_checks.py``):
batch 2, 5 context points, 4 targets."""

from __future__ import annotations

import torch

B, NC, NT, DX, DY = 2, 5, 4, 2, 1


def good():
    g = torch.Generator().manual_seed(0)
    return {
        "xc": torch.randn(B, NC, DX, generator=g),
        "yc": torch.randn(B, NC, DY, generator=g),
        "xt": torch.randn(B, NT, DX, generator=g),
        "mask_c": None,
    }
