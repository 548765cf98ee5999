"""The contract, input validation at the model boundary, for every registered model (the
``model_name`` fixture): every bad input is a ``ValueError`` naming the argument and what was
received; valid inputs pass, and a NaN is refused unless its entry is masked out. The messages
themselves and ``validate_inputs`` are tested in ``tests/primitives/test_input_checks.py``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.helpers.small_models import predict, small_model
from tests.helpers.valid_inputs import DX, DY, NC, NT, B, good

# --- input validation (from tests/test_validation.py) -----------------------------------


def with_value(name, index, value):
    def make():
        args = good()
        args[name] = args[name].clone()
        args[name][index] = value
        return args

    return make


def replaced(**new):
    def make():
        return {**good(), **new}

    return make


# (id, inputs, the argument named, substrings the message must contain)
CASES = [
    ("xc-rank2", replaced(xc=torch.randn(NC, DX)), "xc", ["[5, 2]"]),
    ("xc-rank4", replaced(xc=torch.randn(B, NC, DX, 1)), "xc", ["[2, 5, 2, 1]"]),
    ("yc-rank2", replaced(yc=torch.randn(B, NC)), "yc", ["[2, 5]"]),
    ("xt-rank2", replaced(xt=torch.randn(NT, DX)), "xt", ["[4, 2]"]),
    ("yc-batch", replaced(yc=torch.randn(3, NC, DY)), "yc", ["[3, 5, 1]"]),
    ("xt-batch", replaced(xt=torch.randn(3, NT, DX)), "xt", ["[3, 4, 2]"]),
    ("yc-n_ctx", replaced(yc=torch.randn(B, NC + 1, DY)), "yc", ["[2, 6, 1]"]),
    ("xc-dim_x", replaced(xc=torch.randn(B, NC, 3)), "xc", ["[2, 5, 3]"]),
    ("xt-dim_x", replaced(xt=torch.randn(B, NT, 1)), "xt", ["[2, 4, 1]"]),
    ("yc-dim_y", replaced(yc=torch.randn(B, NC, 2)), "yc", ["[2, 5, 2]"]),
    ("xc-nan", with_value("xc", (1, 2, 0), float("nan")), "xc", ["NaN"]),
    ("yc-nan", with_value("yc", (0, 0, 0), float("nan")), "yc", ["NaN"]),
    ("xt-nan", with_value("xt", (1, 3, 1), float("nan")), "xt", ["NaN"]),
    ("xc-inf", with_value("xc", (0, 1, 1), float("inf")), "xc", ["Inf"]),
    ("yc-inf", with_value("yc", (1, 4, 0), float("-inf")), "yc", ["Inf"]),
    ("xt-inf", with_value("xt", (0, 0, 0), float("inf")), "xt", ["Inf"]),
    ("mask-float", replaced(mask_c=torch.ones(B, NC)), "mask_c", ["float32"]),
    ("mask-int", replaced(mask_c=torch.ones(B, NC, dtype=torch.long)), "mask_c", ["int64"]),
    ("mask-shape", replaced(mask_c=torch.ones(B, NC - 1, dtype=torch.bool)), "mask_c", ["[2, 4]"]),
    (
        "mask-rank3",
        replaced(mask_c=torch.ones(B, NC, 1, dtype=torch.bool)),
        "mask_c",
        ["[2, 5, 1]"],
    ),
    ("mask-list", replaced(mask_c=[[True] * NC] * B), "mask_c", ["list"]),
    ("xc-numpy", replaced(xc=np.zeros((B, NC, DX), dtype=np.float32)), "xc", ["ndarray"]),
    ("yc-list", replaced(yc=[[[0.0]] * NC] * B), "yc", ["list"]),
    ("xt-int", replaced(xt=torch.zeros(B, NT, DX, dtype=torch.long)), "xt", ["int64"]),
    (
        "all-float64",
        lambda: {k: (v.double() if v is not None else None) for k, v in good().items()},
        "xc",
        ["float64"],
    ),
    ("yc-float64", lambda: {**good(), "yc": good()["yc"].double()}, "yc", ["float64"]),
    ("xt-float16", lambda: {**good(), "xt": good()["xt"].half()}, "xt", ["float16"]),
    (
        "xc-meta-device",
        lambda: {**good(), "xc": torch.empty(B, NC, DX, device="meta")},
        "xc",
        ["meta"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_value_error_naming_argument(model_name, case):
    _, make, arg, needles = case
    model = small_model(model_name, DX, DY)
    args = make()
    with pytest.raises(ValueError) as err:
        model(args["xc"], args["yc"], args["xt"], mask_c=args["mask_c"])
    msg = str(err.value)
    assert msg.startswith(f"{arg}:"), msg
    for needle in needles:
        assert needle in msg, msg


def test_valid_inputs_pass(model_name):
    model = small_model(model_name, DX, DY)
    args = good()
    pred = predict(
        model, args["xc"], args["yc"], args["xt"], mask_c=torch.ones(B, NC, dtype=torch.bool)
    )
    assert pred.mean.shape == (B, NT, DY)


def test_nan_in_an_observed_entry_still_raises(model_name):
    model = small_model(model_name, DX, DY)
    args = good()
    yc = args["yc"].clone()
    yc[0, 1] = float("nan")
    mask = torch.ones(B, NC, dtype=torch.bool)
    mask[0, 3] = False  # a different entry is masked
    with pytest.raises(ValueError, match="yc"):
        model(args["xc"], yc, args["xt"], mask_c=mask)
    mask[0, 1] = False  # now the NaN is masked out: valid
    assert torch.isfinite(predict(model, args["xc"], yc, args["xt"], mask_c=mask).mean).all()
