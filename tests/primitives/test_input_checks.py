"""tnpx.input_checks: the messages of input validation at the model boundary, ``validate_inputs``
itself, and the error types. The per-model cases (every bad input is a ``ValueError`` that names
the argument and what was received, for every registered model) are in
``tests/contract/test_contract_validation.py``."""

from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import tnpx
from tests.helpers.small_models import predict, small_model
from tests.helpers.valid_inputs import DX, DY, NC, B, good
from tnpx.input_checks import has_values, trusted_values, validate_inputs, values_checked


def test_shape_errors_state_the_expected_shape():
    model = small_model("cnp", DX, DY)
    args = good()
    with pytest.raises(ValueError) as err:
        model(args["xc"], torch.randn(B, NC, 3), args["xt"])
    assert f"[{B}, {NC}, {DY}]" in str(err.value)  # expected
    assert f"[{B}, {NC}, 3]" in str(err.value)  # received


def test_float64_model_accepts_float64_inputs():
    model = small_model("tnp", DX, DY).double()
    args = good()
    pred = predict(model, args["xc"].double(), args["yc"].double(), args["xt"].double())
    assert pred.mean.dtype == torch.float64
    with pytest.raises(ValueError, match="float32"):
        model(args["xc"], args["yc"], args["xt"])


def test_validate_inputs_zeroes_masked_entries():
    args = good()
    xc, yc = args["xc"].clone(), args["yc"].clone()
    xc[1, 2] = float("nan")
    yc[1, 2] = float("inf")
    mask = torch.ones(B, NC, dtype=torch.bool)
    mask[1, 2] = False
    xc2, yc2, xt2, mask2 = validate_inputs(xc, yc, args["xt"], mask, DX, DY, torch.float32, None)
    assert (xc2[1, 2] == 0).all() and (yc2[1, 2] == 0).all()
    torch.testing.assert_close(xc2[0], xc[0])
    assert mask2 is mask and xt2 is args["xt"]


def test_checkpoint_error_is_a_value_error():
    assert issubclass(tnpx.CheckpointError, ValueError)


def _nan_inputs(device: str = "cpu"):
    args = good()
    xc = args["xc"].clone()
    xc[0, 1, 0] = float("nan")
    return xc.to(device), args["yc"].to(device), args["xt"].to(device)


def test_value_checks_run_outside_trusted_values():
    assert values_checked(*_nan_inputs())
    with pytest.raises(ValueError, match=r"xc: contains NaN or Inf \(first at index \[0, 1, 0\]"):
        validate_inputs(*_nan_inputs(), None, DX, DY, torch.float32, None)


def test_trusted_values_skip_the_value_checks_only():
    """Inside ``trusted_values`` a NaN passes (the training step's batches), a wrong shape
    does not; outside it the NaN is refused again."""
    with trusted_values():
        assert not values_checked(*_nan_inputs())
        validate_inputs(*_nan_inputs(), None, DX, DY, torch.float32, None)
        xc, yc, xt = _nan_inputs()
        with pytest.raises(ValueError, match="yc: expected shape"):
            validate_inputs(xc, yc[:, :-1], xt, None, DX, DY, torch.float32, None)
    with pytest.raises(ValueError, match="contains NaN or Inf"):
        validate_inputs(*_nan_inputs(), None, DX, DY, torch.float32, None)


def test_no_value_checks_without_values():
    """``meta`` and fake tensors carry no values: their value checks are skipped, their
    shape, dtype and device checks are not."""
    xc, yc, xt = _nan_inputs("meta")
    assert not has_values(xc) and not values_checked(xc, yc, xt)
    validate_inputs(xc, yc, xt, None, DX, DY, torch.float32, torch.device("meta"))
    with pytest.raises(ValueError, match="expected dtype torch.float64"):
        validate_inputs(xc, yc, xt, None, DX, DY, torch.float64, None)
    with pytest.raises(ValueError, match="expected device cpu"):
        validate_inputs(xc, yc, xt, None, DX, DY, torch.float32, torch.device("cpu"))
    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(t) for t in _nan_inputs()]
        assert not has_values(fake[0])
        validate_inputs(*fake, None, DX, DY, torch.float32, None)


def test_a_trusted_forward_traces_as_one_graph():
    """Inside ``trusted_values`` no value check reads a tensor back, so ``torch.compile``
    traces a whole forward without a graph break (outside it, each check breaks the graph)."""
    model = small_model("tnp", DX, DY)
    args = good()

    def mean(xc, yc, xt):
        return model(xc, yc, xt).mean

    torch._dynamo.reset()
    with trusted_values():
        trusted = torch._dynamo.explain(mean)(args["xc"], args["yc"], args["xt"])
    torch._dynamo.reset()
    checked = torch._dynamo.explain(mean)(args["xc"], args["yc"], args["xt"])
    torch._dynamo.reset()
    assert trusted.graph_break_count == 0 and trusted.graph_count == 1
    assert checked.graph_break_count > 0
