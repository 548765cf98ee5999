"""The contract: behaviour every registered model must have, through the public API, each test
parametrised over ``tnpx.list_models()`` (the ``model_name`` fixture) so that a newly registered
model is checked without editing the tests. This file: the registry, shapes, set behaviour,
equivariance flags and declared capabilities. The rest of the contract is beside it: padding and
empty inputs (``test_contract_padding.py``), input validation at the model boundary
(``test_contract_validation.py``) and streamed prediction, incremental updates and buffered
sampling (``test_contract_streaming.py``).

Gathered from ``tests/test_models.py``, ``tests/test_validation.py`` and
``tests/test_streaming.py``; their tests of one family or one module are in that family's file
(``test_tnp.py``, ``test_gp.py``), in ``test_base.py`` and in
``tests/primitives/test_input_checks.py``."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import Distribution
from torch.testing import assert_close

import tnpx
from tests.helpers.contract_checks import ATOL, RTOL, assert_same_prediction
from tests.helpers.small_models import ALL_MODELS, make_task, predict, small_model
from tnpx.batch import Batch
from tnpx.models.registry import REGISTRY, hyper_names

# --- registry ---------------------------------------------------------------------------


def test_list_models_sorted_and_contains_core_models():
    names = tnpx.list_models()
    assert names == sorted(names)
    for name in ("cnp", "tnp", "tnp-d", "gp-oracle"):
        assert name in names


def test_every_model_is_a_neural_process(model_name):
    model = small_model(model_name)
    assert isinstance(model, tnpx.NeuralProcess)
    assert isinstance(model, torch.nn.Module)
    assert model.name == model_name


def test_unknown_model_name_lists_valid_names():
    with pytest.raises(ValueError) as err:
        tnpx.build_model("no-such-model", 1, 1)
    msg = str(err.value)
    assert "no-such-model" in msg
    for name in tnpx.list_models():
        assert name in msg


def test_unknown_override_lists_valid_names(model_name):
    with pytest.raises(ValueError) as err:
        tnpx.build_model(model_name, 1, 1, not_a_hyperparameter=3)
    msg = str(err.value)
    assert "not_a_hyperparameter" in msg
    for name in hyper_names(REGISTRY[model_name]):
        assert name in msg


@pytest.mark.parametrize("dims", [(0, 1), (1, 0)])
def test_nonpositive_dims_rejected(model_name, dims):
    with pytest.raises(ValueError):
        tnpx.build_model(model_name, *dims)


# --- shapes -----------------------------------------------------------------------------


@pytest.mark.parametrize("dim_x", [1, 2])
@pytest.mark.parametrize("dim_y", [1, 2])
def test_prediction_shapes(model_name, dim_x, dim_y):
    model = small_model(model_name, dim_x, dim_y)
    xc, yc, xt = make_task(3, 7, 5, dim_x, dim_y)
    pred = predict(model, xc, yc, xt)
    assert isinstance(pred, Distribution)
    assert pred.mean.shape == (3, 5, dim_y)
    assert pred.stddev.shape == (3, 5, dim_y)
    assert torch.isfinite(pred.mean).all()
    assert (pred.stddev > 0).all()
    yt = torch.randn(3, 5, dim_y)
    assert pred.log_prob(yt).shape == (3, 5, dim_y)
    assert torch.isfinite(pred.log_prob(yt)).all()


def test_log_likelihood_per_task(model_name):
    model = small_model(model_name)
    xc, yc, xt = make_task(3, 7, 5)
    batch = Batch(xc, yc, xt, torch.randn(3, 5, 1))
    with torch.no_grad():
        ll = model.log_likelihood(batch)
    assert ll.shape == (3,)
    assert torch.isfinite(ll).all()
    with pytest.raises(ValueError, match="yt"):
        model.log_likelihood(Batch(xc, yc, xt))


def test_gradients_flow(model_name):
    model = small_model(model_name).train()
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        pytest.skip(f"{model_name} has no trainable parameters")
    xc, yc, xt = make_task(2, 6, 4)
    loss = -model(xc, yc, xt).log_prob(torch.randn(2, 4, 1)).mean()
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in params)


# --- set behaviour ----------------------------------------------------------------------


@pytest.mark.parametrize("dim_x", [1, 2])
def test_context_permutation_invariance(model_name, dim_x):
    model = small_model(model_name, dim_x, 1)
    xc, yc, xt = make_task(3, 9, 6, dim_x, 1, seed=1)
    perm = torch.randperm(9, generator=torch.Generator().manual_seed(3))
    base, permuted = predict(model, xc, yc, xt), predict(model, xc[:, perm], yc[:, perm], xt)
    if model.permutation_invariant:
        assert_same_prediction(base, permuted)
    else:  # a causal context (inc-tnp): the order matters, as declared
        assert not torch.allclose(base.mean, permuted.mean, atol=1e-4)


def test_targets_predicted_independently(model_name):
    if REGISTRY[model_name].targets_interact:
        pytest.skip(f"{model_name}: a target's marginal depends on the other targets")
    model = small_model(model_name)
    xc, yc, xt = make_task(3, 8, 10, seed=2)
    full = predict(model, xc, yc, xt)
    subset = torch.tensor([7, 2, 5])
    part = predict(model, xc, yc, xt[:, subset])
    assert_close(part.mean, full.mean[:, subset], atol=ATOL, rtol=RTOL)
    assert_close(part.stddev, full.stddev[:, subset], atol=ATOL, rtol=RTOL)
    single = predict(model, xc, yc, xt[:, 4:5])
    assert_close(single.mean, full.mean[:, 4:5], atol=ATOL, rtol=RTOL)


def test_tasks_in_a_batch_are_independent(model_name):
    model = small_model(model_name)
    xc, yc, xt = make_task(4, 6, 5, seed=4)
    full = predict(model, xc, yc, xt)
    one = predict(model, xc[2:3], yc[2:3], xt[2:3])
    assert_close(one.mean, full.mean[2:3], atol=ATOL, rtol=RTOL)
    assert_close(one.stddev, full.stddev[2:3], atol=ATOL, rtol=RTOL)


def test_prediction_depends_on_context(model_name):
    model = small_model(model_name)
    xc, yc, xt = make_task(2, 6, 5, seed=5)
    a = predict(model, xc, yc, xt)
    b = predict(model, xc, yc + 3.0, xt)
    assert not torch.allclose(a.mean, b.mean, atol=1e-4)


# --- equivariance -----------------------------------------------------------------------


def test_equivariance_flags_are_bools(model_name):
    cls = REGISTRY[model_name]
    for flag in ("translation_equivariant", "rotation_equivariant"):
        assert isinstance(getattr(cls, flag), bool)
        assert isinstance(getattr(small_model(model_name), flag), bool)


@pytest.mark.parametrize("dim_x", [1, 2])
def test_translation_equivariance_flag_holds(model_name, dim_x):
    model = small_model(model_name, dim_x, 1)
    xc, yc, xt = make_task(2, 8, 6, dim_x, 1, seed=16)
    shift = torch.tensor([3.0, -1.5])[:dim_x]
    base = predict(model, xc, yc, xt)
    moved = predict(model, xc + shift, yc, xt + shift)
    if model.translation_equivariant:
        assert_same_prediction(base, moved, atol=1e-4, rtol=1e-3)
    else:  # a randomly initialised non-equivariant model does change under a shift
        assert not torch.allclose(base.mean, moved.mean, atol=1e-4)


def test_rotation_equivariance_flag_holds(model_name):
    cls = REGISTRY[model_name]
    if not cls.rotation_equivariant:
        pytest.skip(f"{model_name} does not claim rotation equivariance")
    model = small_model(model_name, 2, 1)
    xc, yc, xt = make_task(2, 8, 6, 2, 1, seed=17)
    a = 0.7
    rot = torch.tensor([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    assert_same_prediction(
        predict(model, xc, yc, xt), predict(model, xc @ rot.T, yc, xt @ rot.T), atol=1e-4, rtol=1e-3
    )


def test_known_equivariance_flags():
    assert REGISTRY["gp-oracle"].translation_equivariant is True
    for name in ("cnp", "tnp", "tnp-d"):
        assert REGISTRY[name].translation_equivariant is False
        assert REGISTRY[name].rotation_equivariant is False


# -- declared capabilities hold -----------------------------------------------------------------
def test_declared_capabilities_hold(model_name, task):
    """What a model class declares (``stochastic``, ``predicts_jointly``, ``streamable``)
    is what its predictions do."""
    from torch.distributions import Normal

    cls = REGISTRY[model_name]
    dim_y = cls.dim_y_range[0]
    model = small_model(model_name, dim_y=dim_y)
    xc, _, xt = task
    yc = torch.randn(*xc.shape[:2], dim_y, generator=torch.Generator().manual_seed(3))
    first, again, other = (predict(model, xc, yc, xt, seed=s) for s in (0, 0, 1))
    assert torch.equal(first.mean, again.mean)  # a seed repeats any model's call
    if cls.stochastic:
        assert not torch.equal(first.mean, other.mean)
    else:
        assert torch.equal(first.mean, other.mean)
    if cls.predicts_jointly:
        assert hasattr(first, "joint_log_prob") and hasattr(first, "sample")
    else:
        assert isinstance(first, Normal)
    assert cls.streamable() == (isinstance(first, Normal) and not cls.targets_interact)
    assert model.dtype == torch.float32 and model.device == torch.device("cpu")


@pytest.mark.parametrize("name", ALL_MODELS)
def test_unsupported_dims_fail_naming_the_range(name):
    cls = REGISTRY[name]
    lo, hi = cls.dim_y_range
    assert cls.supports(1, lo)
    with pytest.raises(ValueError, match="dim_y"):
        tnpx.build_model(name, 1, 0)
    if hi is not None:
        with pytest.raises(ValueError, match=f"{name} takes dim_y"):
            tnpx.build_model(name, 1, hi + 1)
