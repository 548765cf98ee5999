"""``train.precision`` (issue 53, item 3): float32, and bf16-mixed / 16-mixed autocast with
16-mixed's gradient scaler (:mod:`tnpx.training.precision`)."""

from __future__ import annotations

import warnings

import pytest
import torch

from tests.helpers.tiny import tiny_overrides, write_tiny
from tnpx.config import ConfigError, load_config
from tnpx.data import batch_at
from tnpx.training.loop import TrainingDiverged, fit
from tnpx.training.optim import clip_gradients
from tnpx.training.precision import StepPrecision
from tnpx.training.session import open_session
from tnpx.training.step import train_step

SMOOTH = ["data.lengthscale_prior=fixed", "data.lengthscale_a=1.0"]  # learnt in seconds
# bf16-mixed / 16-mixed against float32, the mean training loss of steps 200-299 (same seed,
# same batches): measured 0.007 (bf16) and 0.004 (fp16) apart, while training lowers it by
# ~0.7 nats over those steps. 0.05 nats is a tenth of what the model learns.
TOLERANCE = 0.05


def session(tmp_path, *options: str, **train):
    cfg = load_config(write_tiny(tmp_path), [*tiny_overrides(tmp_path, **train), *options])
    run = open_session(cfg, False, None)
    run.model.train()
    return run


def losses(run, steps: int) -> torch.Tensor:
    return torch.tensor(
        [train_step(run, batch_at(run.sampler, s, 0), s).item() for s in range(steps)]
    )


@pytest.mark.parametrize(
    "precision", ["bf16-mixed", pytest.param("16-mixed", marks=pytest.mark.slow)]
)
def test_mixed_precision_trains_like_float32(precision: str, tmp_path):
    full = losses(session(tmp_path / "32", *SMOOTH, steps=300), 300)
    mixed = losses(session(tmp_path / precision, *SMOOTH, steps=300, precision=precision), 300)
    assert mixed[:50].mean() - mixed[-100:].mean() > 0.4  # it learns
    gap = (mixed[-100:].mean() - full[-100:].mean()).abs().item()
    assert gap < TOLERANCE, (precision, gap)
    assert not torch.equal(mixed, full)  # autocast did change the arithmetic


def test_the_forward_runs_in_the_autocast_dtype(tmp_path):
    """Under bf16-mixed the model's linear layers compute in bfloat16; the weights, the
    gradients and the loss stay float32."""
    run = session(tmp_path, precision="bf16-mixed")
    seen = []
    layer = next(m for m in run.model.modules() if isinstance(m, torch.nn.Linear))
    layer.register_forward_hook(lambda m, i, out: seen.append(out.dtype))
    loss = train_step(run, batch_at(run.sampler, 0, 0), 0)
    assert seen and set(seen) == {torch.bfloat16}
    assert loss.dtype == torch.float32
    assert {p.dtype for p in run.params} == {p.grad.dtype for p in run.params} == {torch.float32}


def test_float32_is_the_plain_step(tmp_path):
    """``32`` (the default) is the step without autocast or scaler, bit for bit."""
    run = session(tmp_path)
    assert run.cfg.train.precision == "32" and run.precision.scaler is None
    plain = session(tmp_path / "plain")
    for s in range(5):
        batch = batch_at(run.sampler, s, 0)
        train_step(run, batch, s)
        loss = plain.model.training_loss(batch)
        plain.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip_gradients(plain.params, None, plain.cfg.train.clip_norm)
        plain.optimizer.step()
        plain.schedule.step()
    for a, b in zip(run.params, plain.params):
        assert torch.equal(a, b)


def test_an_unknown_precision_names_the_choices(tmp_path):
    with pytest.raises(
        ConfigError, match=r"train.precision = 'fp8': must be one of 32, bf16-mixed, 16-mixed"
    ):
        load_config(write_tiny(tmp_path), ["train.precision=fp8"])
    with pytest.raises(ConfigError, match="train.precision = 16: must be one of 32"):
        load_config(write_tiny(tmp_path), ["train.precision=16"])
    assert load_config(write_tiny(tmp_path), ["train.precision=32"]).train.precision == "32"


def test_a_device_without_autocast_is_refused():
    with pytest.raises(ValueError, match="no support for.*use train.precision=32"):
        StepPrecision("bf16-mixed", torch.device("meta"))
    StepPrecision("32", torch.device("meta"))  # float32 needs nothing


def test_the_scaler_skips_a_step_whose_gradients_overflow(tmp_path):
    """A scale so large that float16 gradients overflow: the step is skipped (the weights do
    not move), the scale backs off, and the run goes on, as Lightning's does."""
    run = session(tmp_path, precision="16-mixed")
    run.precision.scaler = torch.amp.GradScaler("cpu", init_scale=2.0**60)
    before = [p.detach().clone() for p in run.params]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nor torch's warning that the schedule stepped alone
        train_step(run, batch_at(run.sampler, 0, 0), 0)  # no TrainingDiverged
    assert all(torch.equal(a, b) for a, b in zip(before, run.params))
    assert run.precision.scaler.get_scale() < 2.0**60
    train_step(run, batch_at(run.sampler, 1, 0), 1)


def test_a_non_finite_loss_under_16_mixed_suggests_bf16(tmp_path):
    run = session(tmp_path, precision="16-mixed")
    batch = batch_at(run.sampler, 0, 0)
    batch.yt = torch.full_like(batch.yt, float("nan"))
    with pytest.raises(TrainingDiverged, match="non-finite loss.*try train.precision=bf16-mixed"):
        train_step(run, batch, 0)


def _tiny_fit(tmp_path, **kwargs):
    cfg = load_config(
        write_tiny(tmp_path), tiny_overrides(tmp_path, steps=30, precision="16-mixed")
    )
    return fit(cfg, **kwargs)


def test_a_resumed_16_mixed_run_ends_as_an_uninterrupted_one(tmp_path):
    """The scaler's scale and growth count are in the checkpoint: a resumed run continues
    with them and ends with the uninterrupted run's weights."""
    full = _tiny_fit(tmp_path / "a").model
    _tiny_fit(tmp_path / "b", stop_at=17)
    state = torch.load(tmp_path / "b/run/checkpoints/last.pt", weights_only=True)
    assert set(state["train_state"]["scaler"]) >= {"scale", "_growth_tracker"}
    resumed = _tiny_fit(tmp_path / "b", resume=True).model
    for (name, a), b in zip(full.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name


def test_a_checkpoint_without_a_scaler_resumes_with_a_fresh_one(tmp_path):
    """Checkpoints from before ``train.precision`` (or of a float32 run) hold no scaler:
    the run resumes, its scaler starting afresh."""
    _tiny_fit(tmp_path, stop_at=10)
    path = tmp_path / "run/checkpoints/last.pt"
    record = torch.load(path, weights_only=True)
    del record["train_state"]["scaler"]
    torch.save(record, path)
    result = _tiny_fit(tmp_path, resume=True)
    assert result.steps_done == 30
