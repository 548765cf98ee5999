"""Every registered model runs its forward, training loss and backward on a device other than
the CPU, with nothing created on the wrong device or in the wrong dtype (issue 53, item 1).

The device is ``meta``: tensors with a shape, dtype and device but no values. An op that mixes
a ``meta`` tensor with a CPU tensor of one or more dimensions fails ("Tensor on device cpu is not
on the expected device meta"), as it would on a GPU; a 0-d CPU tensor mixes with both, as CUDA
allows. So a forward that builds ``torch.arange(n)`` or ``torch.tensor([...])`` on the CPU fails
here (:func:`test_the_check_fails_on_a_cpu_tensor`), and every output and gradient must come
back on ``meta`` in the model's dtype (float32 and float64).

Why not ``FakeTensorMode`` with a CUDA device: this torch is a CPU-only wheel, where a fake CUDA
tensor can be made but a module cannot be initialised on it (``uniform_`` needs the CUDA
generator) and autograd through it fails ("PyTorch is not linked with support for cuda
devices"). ``meta`` catches the same mixing of devices.

What it cannot catch: anything that depends on values (a wrong number, a NaN), a CPU round
trip that comes back to the right device (``.cpu()`` then ``.to(x)``: a host sync, counted by
``tests/training/test_no_host_syncs.py``), 0-d CPU tensors (legal on a GPU too), kernels or
precision that exist only on a GPU (TF32, fused attention), and code that reads values to
choose shapes (it raises here; such models are the exceptions below, each with its reason).
"""

from __future__ import annotations

import pytest
import torch
from torch.distributions import Normal

import tnpx
from tests.helpers.devices import CUDA_ONLY, DEVICES
from tests.helpers.small_models import small_overrides
from tnpx.batch import Batch
from tnpx.models.registry import REGISTRY

META = torch.device("meta")

# Models that cannot run on values-free tensors, and why (each is a real need for values).
EXCEPTIONS = {
    "gp": "fits its kernel per call with Adam and a Cholesky solve (gpytorch): it needs values",
    "mt-gp": "fits a multi-task kernel per call with Adam (gpytorch): it needs values",
    "gp-oracle": "picks each task's kernel formula from the kernel ids the batch carries "
    "(tnpx.gp.kernels.is_stationary reads them): it needs values",
}
# Models whose training loss, not their forward, needs values.
LOSS_EXCEPTIONS = {
    "inc-tnp": "its training loss seeds the order of the targets from the batch's values, so "
    "that a resumed run is exact: it needs values (its forward and likelihood run on meta)",
}
# Options under which a model runs on meta (the default reads values to size its grid).
META_OPTIONS = {
    # "context" and "union" size each task's grid from its inputs (a value-dependent shape)
    "convcnp": {"grid": "fixed", "grid_min": -2.0, "grid_max": 2.0},
}


def meta_model(name: str, dtype: torch.dtype):
    """Small model ``name`` at its smallest dims, moved to ``meta`` in ``dtype``."""
    cls = REGISTRY[name]
    dim_x, dim_y = cls.dim_x_range[0], cls.dim_y_range[0]
    torch.manual_seed(0)
    options = {**small_overrides(name), **META_OPTIONS.get(name, {})}
    model = tnpx.build_model(name, dim_x, dim_y, **options)
    return model.to(device=META, dtype=dtype)


def meta_batch(model, dtype: torch.dtype, b: int = 2, n_ctx: int = 5, n_tgt: int = 4) -> Batch:
    """A batch of ``meta`` tensors for ``model``."""

    def t(n: int, d: int) -> torch.Tensor:
        return torch.empty(b, n, d, device=META, dtype=dtype)

    dx, dy = model.dim_x, model.dim_y
    return Batch(t(n_ctx, dx), t(n_ctx, dy), t(n_tgt, dx), t(n_tgt, dy))


def assert_on(t: torch.Tensor, dtype: torch.dtype, what: str) -> None:
    assert t.device == META, f"{what} on {t.device}, expected meta"
    assert t.dtype == dtype, f"{what} in {t.dtype}, expected {dtype}"


def run_on_meta(name: str, dtype: torch.dtype) -> None:
    """Forward (eval), log-likelihood and training loss with backward (train) on ``meta``."""
    model = meta_model(name, dtype).eval()
    batch = meta_batch(model, dtype)
    with torch.no_grad():
        pred = model(batch.xc, batch.yc, batch.xt)
        assert_on(pred.mean, dtype, f"{name}: mean")
        assert_on(pred.stddev, dtype, f"{name}: stddev")
        assert_on(model.log_likelihood(batch), dtype, f"{name}: log_likelihood")
    model.train()
    if name in LOSS_EXCEPTIONS:
        loss = -model.log_likelihood(batch).mean()
    else:
        loss = model.training_loss(batch)
    assert_on(loss, dtype, f"{name}: training loss")
    if loss.requires_grad:  # context-moments has no parameters
        loss.backward()
    for pname, p in model.named_parameters():
        if p.grad is not None:
            assert_on(p.grad, dtype, f"{name}: gradient of {pname}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_model_runs_on_meta(name: str, dtype: torch.dtype):
    if name in EXCEPTIONS:
        pytest.skip(EXCEPTIONS[name])
    run_on_meta(name, dtype)


@pytest.mark.parametrize("name", sorted(EXCEPTIONS))
def test_exceptions_do_need_values(name: str):
    """Each exception is real: the model fails on meta because it reads values."""
    with pytest.raises((RuntimeError, NotImplementedError), match="meta"):
        run_on_meta(name, torch.float32)


def test_exceptions_name_registered_models():
    for names in (EXCEPTIONS, LOSS_EXCEPTIONS, META_OPTIONS):
        assert set(names) <= set(REGISTRY)


def test_the_check_fails_on_a_cpu_tensor(monkeypatch):
    """A forward that adds a CPU tensor (``torch.arange`` without ``device=``) fails here."""
    cls = REGISTRY["tnp"]
    original = cls._predict

    def on_the_cpu(self, xc, yc, xt, mask_c):
        pred = original(self, xc, yc, xt, mask_c)
        offset = torch.arange(xt.shape[1], dtype=xt.dtype)[None, :, None]  # the mistake
        return Normal(pred.mean + offset, pred.stddev, validate_args=False)

    monkeypatch.setattr(cls, "_predict", on_the_cpu)
    with pytest.raises(RuntimeError, match="not on the expected device"):
        run_on_meta("tnp", torch.float32)


def test_the_check_fails_on_a_wrong_dtype(monkeypatch):
    """A forward whose output leaves the model's dtype fails here."""
    cls = REGISTRY["tnp"]
    original = cls._predict

    def in_float64(self, xc, yc, xt, mask_c):
        pred = original(self, xc, yc, xt, mask_c)
        return Normal(pred.mean.double(), pred.stddev.double(), validate_args=False)

    monkeypatch.setattr(cls, "_predict", in_float64)
    with pytest.raises(AssertionError, match="expected torch.float32"):
        run_on_meta("tnp", torch.float32)


def eval_on_meta(name: str, dtype: torch.dtype = torch.float32):
    """``(model, batch)`` on meta, the model in eval mode; skips an exception."""
    if name in EXCEPTIONS:
        pytest.skip(EXCEPTIONS[name])
    model = meta_model(name, dtype).eval()
    return model, meta_batch(model, dtype)


@pytest.mark.parametrize("name", sorted(n for n in REGISTRY if REGISTRY[n].streamable()))
def test_streamed_prediction_runs_on_meta(name: str):
    """``predict``'s model path (``predict_arrays``: the context encoded once, the targets
    decoded in chunks); its last step, ``.cpu().numpy()``, needs values."""
    model, batch = eval_on_meta(name)
    with torch.no_grad():
        pred = model.predict_streamed(batch.xc, batch.yc, batch.xt, chunk_size=3)
    assert_on(pred.mean, torch.float32, f"{name}: streamed mean")
    assert_on(pred.stddev, torch.float32, f"{name}: streamed stddev")


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_sampling_runs_on_meta(name: str):
    """``tnpx.sample`` (joint, autoregressive or the causal buffer, as the model takes)."""
    model, batch = eval_on_meta(name)
    if model.targets_interact and not model.predicts_jointly:
        pytest.skip(f"{name}: its targets interact; it has no sampling method of its own")
    draws = tnpx.sample(model, batch.xc, batch.yc, batch.xt, n_samples=2)
    assert_on(draws, torch.float32, f"{name}: samples")
    assert draws.shape == (2, *batch.xt.shape[:2], model.dim_y)


@pytest.mark.parametrize("name", sorted(n for n in REGISTRY if REGISTRY[n].incremental))
def test_incremental_context_runs_on_meta(name: str):
    """``update``: points appended to an encoded context, then targets decoded from it."""
    model, batch = eval_on_meta(name)
    with torch.no_grad():
        context = model.encode_context(batch.xc[:, :3], batch.yc[:, :3])
        context = model.update(context, batch.xc[:, 3:], batch.yc[:, 3:])
        pred = model.decode_targets(context, batch.xt)
    assert_on(pred.mean, torch.float32, f"{name}: mean after update")


def real_batch(model, device: str, b: int = 2, n_ctx: int = 5, n_tgt: int = 4) -> Batch:
    """A batch of values for ``model`` on ``device`` (seeded)."""
    g = torch.Generator().manual_seed(0)

    def t(n: int, d: int) -> torch.Tensor:
        return torch.randn(b, n, d, generator=g).to(device)

    return Batch(t(n_ctx, model.dim_x), t(n_ctx, model.dim_y), t(n_tgt, model.dim_x),
                 t(n_tgt, model.dim_y))  # fmt: skip


def device_model(name: str, device: str):
    cls = REGISTRY[name]
    torch.manual_seed(0)
    model = tnpx.build_model(name, cls.dim_x_range[0], cls.dim_y_range[0], **small_overrides(name))
    return model.to(device)


@pytest.mark.parametrize("device", CUDA_ONLY)
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_model_runs_on_a_device(name: str, device: str):
    """The meta test's counterpart on a real device (its CPU case is the rest of the suite):
    forward, training loss and backward with values, every output and gradient on the
    device and finite (what ``meta`` cannot see: kernels, values, GPU-only precision)."""
    model = device_model(name, device).eval()
    batch = real_batch(model, device)
    with torch.no_grad():
        pred = model(batch.xc, batch.yc, batch.xt)
    for what, t in (("mean", pred.mean), ("stddev", pred.stddev)):
        assert t.device.type == device and bool(t.isfinite().all()), (name, what)
    model.train()
    loss = model.training_loss(batch)
    assert loss.device.type == device and bool(loss.isfinite())
    if loss.requires_grad:  # context-moments has no parameters
        loss.backward()
    for pname, p in model.named_parameters():
        if p.grad is not None:
            assert p.grad.device.type == device and bool(p.grad.isfinite().all()), pname


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bf16-mixed", "16-mixed"])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_model_trains_under_autocast(name: str, device: str, precision: str):
    """Every model's training loss and backward under ``train.precision``'s autocast
    (:mod:`tnpx.training.precision`): the loss float32 and finite, the gradients float32.
    float16 may overflow in a model (then 16-mixed's scaler skips the step, or the run stops
    with a hint to use bf16-mixed): only bfloat16 must give a finite loss."""
    from tnpx.input_checks import trusted_values
    from tnpx.training.precision import StepPrecision

    model = device_model(name, device).train()
    batch = real_batch(model, device)
    step = StepPrecision(precision, torch.device(device))
    with trusted_values(), step.autocast(batch.xc.device):
        loss = model.training_loss(batch)
    assert loss.dtype == torch.float32
    if precision == "bf16-mixed":
        assert bool(loss.isfinite()), name
    if loss.requires_grad:
        step.backward(loss)
    assert {p.grad.dtype for p in model.parameters() if p.grad is not None} <= {torch.float32}
