"""Schedule-free AdamW (``optim.name: schedulefree-adamw``, tnpx.training.optim): the update
re-derived in float64 from its paper's definition (Defazio et al. 2024, Algorithm 1 with
Adam's normalisation), the switch to the evaluated average, and a run that validates, saves
and resumes with it."""

from __future__ import annotations

import math

import pytest
import torch

import tnpx
from tests.helpers.tiny import tiny_overrides, write_tiny
from tnpx.config import ConfigError, OptimConfig, ScheduleConfig, load_config
from tnpx.training.loop import build_train_sampler, fit, validation_ll
from tnpx.training.optim import build_optimizer, build_schedule, evaluation_weights

pytest.importorskip("pytorch_optimizer")

BETA1, BETA2, EPS, LR, WARMUP = 0.9, 0.999, 1e-8, 0.05, 4


def _gradient(w: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The gradient at ``w`` of the least-squares loss mean((a w - b)^2)."""
    return 2 * a.T @ (a @ w - b) / len(b)


def test_the_update_and_the_average_match_the_paper_in_float64():
    torch.manual_seed(0)
    a, b = torch.randn(20, 3, dtype=torch.float64), torch.randn(20, dtype=torch.float64)
    w = torch.nn.Parameter(torch.randn(3, dtype=torch.float64))
    opt = build_optimizer([w], OptimConfig(name="schedulefree-adamw", lr=LR, betas=[BETA1, BETA2]))
    schedule = build_schedule(opt, ScheduleConfig(name="constant", warmup_steps=WARMUP), 100)
    # The paper's three sequences: z (the base iterate), x (its weighted average, evaluated)
    # and y = (1 - beta1) z + beta1 x (where gradients are taken; the parameter holds it).
    z, x, v = w.detach().clone(), w.detach().clone(), torch.zeros(3, dtype=torch.float64)
    weight_sum, lr_max = 0.0, 0.0
    for t in range(1, 13):
        y = (1 - BETA1) * z + BETA1 * x
        torch.testing.assert_close(w.detach(), y, rtol=0, atol=1e-12)
        g = _gradient(y, a, b)
        w.grad = _gradient(w.detach(), a, b)
        opt.step()
        schedule.step()
        gamma = LR * min(t / WARMUP, 1.0)  # linear warm-up, then constant
        lr_max = max(lr_max, gamma)
        v = BETA2 * v + (1 - BETA2) * g * g
        z = z - gamma * g / ((v / (1 - BETA2**t)).sqrt() + EPS)
        weight_sum += lr_max**2  # c_{t+1} = w_t / sum w, w_t = max rate so far, squared
        x = x + (lr_max**2 / weight_sum) * (z - x)
        y = (1 - BETA1) * z + BETA1 * x
        torch.testing.assert_close(w.detach(), y, rtol=0, atol=1e-12)
        with evaluation_weights(opt):
            torch.testing.assert_close(w.detach(), x, rtol=0, atol=1e-12)
        torch.testing.assert_close(w.detach(), y, rtol=0, atol=1e-12)
    assert not torch.equal(x, y)  # the two sequences are apart, so the checks above can fail


def test_evaluation_weights_restore_the_training_iterate_bit_for_bit():
    torch.manual_seed(1)
    w = torch.nn.Parameter(torch.randn(50))
    opt = build_optimizer([w], OptimConfig(name="schedulefree-adamw", lr=0.1))
    for _ in range(5):
        w.grad = torch.randn(50)
        opt.step()
    before = w.detach().clone()
    for _ in range(3):
        with evaluation_weights(opt):
            assert not torch.equal(w.detach(), before)
    assert torch.equal(w.detach(), before)


def test_evaluation_weights_change_nothing_for_other_optimisers():
    w = torch.nn.Parameter(torch.randn(4))
    opt = build_optimizer([w], OptimConfig(name="adamw"))
    w.grad = torch.ones(4)
    opt.step()
    before = w.detach().clone()
    with evaluation_weights(opt):
        assert torch.equal(w.detach(), before)


def _cfg(tmp_path, *extra, **train):
    over = ["optim.name=schedulefree-adamw", "schedule.name=constant", *extra]
    return load_config(write_tiny(tmp_path), [*tiny_overrides(tmp_path, **train), *over])


def test_a_decaying_schedule_is_refused_clearly(tmp_path):
    with pytest.raises(ConfigError, match="schedulefree-adamw.*schedule.name=constant"):
        load_config(write_tiny(tmp_path), ["optim.name=schedulefree-adamw"])


def test_model_pt_holds_the_average_that_validation_scored(tmp_path):
    cfg = _cfg(tmp_path, steps=20, val_every=10, log_every=10)
    result = fit(cfg)
    saved = tnpx.load(tmp_path / "run" / "model.pt")
    for (k, a), b in zip(saved.state_dict().items(), result.model.state_dict().values()):
        assert torch.equal(a, b), k
    # the checkpoint keeps the training iterate, which is not the saved average
    state = torch.load(tmp_path / "run" / "checkpoints" / "last.pt", weights_only=False)
    trained = state["state_dict"]
    assert any(not torch.equal(v, saved.state_dict()[k]) for k, v in trained.items())
    ll = validation_ll(saved, build_train_sampler(cfg), cfg.train.val_batches, torch.device("cpu"))
    rows = (tmp_path / "run" / "metrics.csv").read_text().split()
    assert float(rows[-1].split(",")[-1]) == pytest.approx(ll, abs=1e-5)


def test_resume_matches_uninterrupted(tmp_path):
    full = fit(_cfg(tmp_path / "a", steps=30, val_every=10)).model
    assert fit(_cfg(tmp_path / "b", steps=30, val_every=10), stop_at=13).stopped_early
    resumed = fit(_cfg(tmp_path / "b", steps=30, val_every=10), resume=True).model
    for (k, v), w in zip(full.state_dict().items(), resumed.state_dict().values()):
        torch.testing.assert_close(v, w, rtol=0, atol=0, msg=k)


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_training_reduces_the_loss(tmp_path):
    fit(_cfg(tmp_path, "optim.lr=3.0e-3", steps=200, log_every=20, val_every=100))
    rows = [r.split(",") for r in (tmp_path / "run" / "metrics.csv").read_text().split()[1:]]
    losses = [float(r[1]) for r in rows]
    assert math.isfinite(losses[-1])
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3
