"""``train.keep_best`` and ``train.patience`` (tnpx.training.best): model.pt holds the best
validated weights, a run stops after N validations without improvement as a finished run, and
resuming continues the count exactly."""

from __future__ import annotations

import math

import pytest
import torch

import tnpx
from tests.helpers.tiny import tiny_overrides, write_tiny
from tnpx.config import load_config
from tnpx.training.best import BestSoFar
from tnpx.training.loop import build_train_sampler, fit, validation_ll
from tnpx.training.runs import run_status


def _cfg(tmp_path, *extra, **train):
    return load_config(write_tiny(tmp_path), [*tiny_overrides(tmp_path, **train), *extra])


def test_the_tracker_counts_validations_without_improvement():
    best = BestSoFar.from_config(False, 2)
    assert best.enabled and best.update(10, -1.0) and best.update(20, -0.5)
    assert not best.update(30, -0.7) and not best.stopped
    assert not best.update(40, -0.5) and best.stopped  # equal is no improvement
    again = BestSoFar.from_config(False, 2, best.state())
    assert (again.best_ll, again.best_step, again.since, again.stopped) == (-0.5, 20, 2, True)
    assert not BestSoFar.from_config(False, None).enabled


def test_model_pt_holds_the_best_validated_weights(tmp_path):
    # a learning rate that diverges late makes the last validation worse than an earlier one
    cfg = _cfg(tmp_path, "optim.lr=0.05", steps=40, val_every=10, log_every=10,
               keep_best="true")  # fmt: skip
    result = fit(cfg)
    record = torch.load(tmp_path / "run" / "model.pt", weights_only=False)
    trained = record["trained"]
    assert trained["best_step"] in (10, 20, 30, 40) and not trained["early_stopped"]
    model = tnpx.load(tmp_path / "run" / "model.pt")
    best = tnpx.load(tmp_path / "run" / "best.pt")
    for a, b in zip(model.state_dict().values(), best.state_dict().values()):
        assert torch.equal(a, b)
    sampler = build_train_sampler(cfg)
    ll = validation_ll(model, sampler, cfg.train.val_batches, torch.device("cpu"))
    assert ll == pytest.approx(trained["best_val_ll"], abs=1e-5)
    assert result.steps_done == 40


def test_patience_stops_a_run_as_finished_and_resume_does_nothing(tmp_path, capsys):
    cfg = _cfg(tmp_path, "optim.lr=1.0e-9", steps=200, val_every=10, log_every=10, patience=2)
    result = fit(cfg)  # a negligible rate: no validation improves on the first
    assert result.steps_done == 30 and not result.stopped_early
    assert "no better validation LL in 2 validations" in capsys.readouterr().out
    status = run_status(tmp_path / "run")
    assert status.finished and status.steps_done == 30
    again = fit(cfg, resume=True)
    assert again.steps_done == 30 and "nothing to do" in capsys.readouterr().out


@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_an_interrupted_run_continues_the_count(tmp_path):
    over = ["optim.lr=1.0e-9"]
    full = fit(_cfg(tmp_path / "a", *over, steps=200, val_every=10, log_every=10, patience=3))
    first = fit(_cfg(tmp_path / "b", *over, steps=200, val_every=10, log_every=10, patience=3,
                     checkpoint_every=10), stop_at=20)  # fmt: skip
    assert first.stopped_early and first.steps_done == 20
    rest = fit(_cfg(tmp_path / "b", *over, steps=200, val_every=10, log_every=10, patience=3,
                    checkpoint_every=10), resume=True)  # fmt: skip
    assert rest.steps_done == full.steps_done == 40
    assert math.isfinite(rest.final_loss)
