"""tnpx.compile_for_inference: compiled predictions equal eager ones, inputs are validated as
by the model, and a backend that fails falls back to eager with one warning."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.small_models import make_task, small_model
from tnpx.apply.compiled import CompiledModel, default_mode


def _task(n_ctx: int = 7, n_tgt: int = 5):
    return make_task(b=2, n_ctx=n_ctx, n_tgt=n_tgt, seed=1)


def test_default_mode_uses_cuda_graphs_only_on_cuda():
    assert default_mode(torch.device("cuda")) == "reduce-overhead"
    assert default_mode(torch.device("cpu")) == "default"


@pytest.mark.slow
def test_inductor_compiled_prediction_equals_eager():
    """The real CPU path (inductor's C++ kernels): same mean and std as the eager model."""
    model = small_model("tnp-kr-full")
    xc, yc, xt = _task()
    compiled = tnpx.compile_for_inference(model)
    assert compiled.mode == "default"
    with torch.no_grad():
        eager = model(xc, yc, xt)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no fallback here
        pred = compiled(xc, yc, xt)
        again = compiled(xc, yc, xt)  # the cached compiled code
    assert compiled.fallback_reason is None
    assert_close(pred.mean, eager.mean, atol=1e-5, rtol=1e-5)
    assert_close(pred.stddev, eager.stddev, atol=1e-5, rtol=1e-5)
    assert_close(again.mean, pred.mean)


# The latent and joint cases take ~3 s each: `make test-slow` runs them (the default suite's time).
@pytest.mark.parametrize(
    "name",
    [
        "tnp",
        pytest.param("np", marks=pytest.mark.slow),
        pytest.param("tnp-nd", marks=pytest.mark.slow),
    ],
)
def test_compiled_keeps_each_models_prediction(name):
    """Latent (mixture) and joint (TNP-ND) predictions pass through too (traced, eager
    backend: the wrapper's plumbing, fast)."""
    model = small_model(name)
    xc, yc, xt = _task()
    compiled = tnpx.compile_for_inference(model, backend="eager")
    torch.manual_seed(0)
    with torch.no_grad():
        eager = model(xc, yc, xt)
    torch.manual_seed(0)
    pred = compiled(xc, yc, xt)
    assert type(pred) is type(eager)
    assert_close(pred.mean, eager.mean, atol=1e-6, rtol=1e-6)


def test_failing_backend_falls_back_to_eager_with_one_warning():
    def broken_backend(graph_module, example_inputs):
        raise RuntimeError("no C compiler on this machine")

    model = small_model("tnp")
    xc, yc, xt = _task()
    compiled = CompiledModel(model, backend=broken_backend)
    with pytest.warns(RuntimeWarning, match="running eagerly"):
        pred = compiled(xc, yc, xt)
    assert "no C compiler" in compiled.fallback_reason
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # warned once, not on every call
        again = compiled(xc, yc, xt)
    with torch.no_grad():
        eager = model(xc, yc, xt)
    assert_close(pred.mean, eager.mean)
    assert_close(again.stddev, eager.stddev)


def test_bad_input_fails_as_the_model_does():
    compiled = tnpx.compile_for_inference(small_model("tnp"), backend="eager")
    xc, yc, xt = _task()
    with pytest.raises(ValueError, match=r"xt: expected shape \[2, n_tgt, 1\]"):
        compiled(xc, yc, xt.repeat(1, 1, 2))
    with pytest.raises(TypeError, match="tnpx model"):
        tnpx.compile_for_inference(torch.nn.Linear(1, 1))
