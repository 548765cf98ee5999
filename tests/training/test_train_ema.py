"""``train.ema_decay`` (tnpx.training.ema): validation, best.pt and model.pt use an exponential
moving average of the weights, re-derived here step by step, and a resumed run ends exactly as
an uninterrupted one."""

from __future__ import annotations

import pytest
import torch

import tnpx
from tests.helpers.tiny import tiny_overrides, write_tiny
from tnpx.config import ConfigError, load_config
from tnpx.training.ema import WeightAverage
from tnpx.training.loop import build_train_sampler, fit, validation_ll


def _cfg(tmp_path, *extra, **train):
    return load_config(write_tiny(tmp_path), [*tiny_overrides(tmp_path, **train), *extra])


def test_the_average_follows_its_recurrence_in_float64():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    ema = WeightAverage(model, 0.9)
    expected = {k: v.detach().double().clone() for k, v in model.state_dict().items()}
    ema.update(model)  # the first update copies the weights
    for _ in range(5):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p))
        ema.update(model)
        for k, v in model.state_dict().items():  # w_ema <- 0.9 w_ema + 0.1 w
            expected[k] = 0.9 * expected[k] + 0.1 * v.double()
    for k, v in ema.module.state_dict().items():
        torch.testing.assert_close(v.double(), expected[k], rtol=1e-6, atol=1e-6, msg=k)
    assert ema.updates == 6
    assert not any(p.requires_grad for p in ema.module.parameters())


def test_model_pt_holds_the_averaged_weights_and_validation_scores_them(tmp_path):
    cfg = _cfg(tmp_path, "train.ema_decay=0.9", steps=20, val_every=10, log_every=10)
    result = fit(cfg)
    plain = fit(_cfg(tmp_path / "plain", steps=20, val_every=10, log_every=10))
    saved = tnpx.load(tmp_path / "run" / "model.pt")
    for (k, a), b in zip(saved.state_dict().items(), result.model.state_dict().values()):
        assert torch.equal(a, b), k
    # the raw weights of the same run (same seed, same batches) differ from the average
    assert any(
        not torch.equal(a, b)
        for a, b in zip(saved.state_dict().values(), plain.model.state_dict().values())
    )
    sampler = build_train_sampler(cfg)
    ll = validation_ll(saved, sampler, cfg.train.val_batches, torch.device("cpu"))
    rows = (tmp_path / "run" / "metrics.csv").read_text().split()
    assert float(rows[-1].split(",")[-1]) == pytest.approx(ll, abs=1e-5)


def test_resume_matches_uninterrupted_with_the_average(tmp_path):
    over = ["train.ema_decay=0.8"]
    full = fit(_cfg(tmp_path / "a", *over, steps=30)).model
    stopped = fit(_cfg(tmp_path / "b", *over, steps=30), stop_at=13)
    assert stopped.stopped_early
    resumed = fit(_cfg(tmp_path / "b", *over, steps=30), resume=True).model
    for (k, v), w in zip(full.state_dict().items(), resumed.state_dict().values()):
        torch.testing.assert_close(v, w, rtol=0, atol=0, msg=k)
    again = fit(_cfg(tmp_path / "b", *over, steps=30), resume=True)  # finished: model.pt's
    for (k, v), w in zip(full.state_dict().items(), again.model.state_dict().values()):
        assert torch.equal(v, w), k


def test_resuming_with_another_decay_fails_clearly(tmp_path):
    fit(_cfg(tmp_path, "train.ema_decay=0.8", steps=30), stop_at=10)
    with pytest.raises(ValueError, match="ema_decay 0.8.*asks for 0.9"):
        fit(_cfg(tmp_path, "train.ema_decay=0.9", steps=30), resume=True)


def test_a_decay_outside_zero_to_one_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="ema_decay"):
        _cfg(tmp_path, "train.ema_decay=1.0")
