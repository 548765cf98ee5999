"""Training (tnpx.training.loop): the loss falls, divergence stops cleanly, checkpoints resume
exactly, DDP runs."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch

import tnpx
from tests.helpers.tiny import tiny_overrides, write_tiny
from tnpx.config import load_config
from tnpx.data import build_sampler
from tnpx.training.loop import TrainingDiverged, build_train_sampler, fit, validation_ll

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _cfg(tmp_path, *extra, **train):
    return load_config(write_tiny(tmp_path), [*tiny_overrides(tmp_path, **train), *extra])


def test_training_lowers_validation_loss(tmp_path):
    # Smooth functions (lengthscale 1), so a tiny model learns them in a few seconds.
    smooth = ["data.lengthscale_prior=fixed", "data.lengthscale_a=1.0"]
    cfg = _cfg(tmp_path, *smooth, steps=150, val_every=150, log_every=150, checkpoint_every=1000)
    sampler = build_train_sampler(cfg)
    torch.manual_seed(cfg.train.seed)  # fit() builds the same initial weights
    untrained = tnpx.build_model("tnp", 1, 1, **cfg.model_options())
    before = validation_ll(untrained, sampler, 4, torch.device("cpu"))
    result = fit(cfg)
    after = validation_ll(result.model, sampler, 4, torch.device("cpu"))
    assert after > before + 0.3, (before, after)
    assert (result.out_dir / "model.pt").exists()
    assert (result.out_dir / "metrics.csv").read_text().count("\n") >= 2


class _NaNAfter:
    """Wraps a sampler; from step ``bad_step`` on, targets are NaN (so the loss is)."""

    def __init__(self, inner, bad_step):
        self.inner, self.bad_step, self.calls = inner, bad_step, 0
        self.dim_x, self.dim_y, self.seed, self.batch_size = (
            inner.dim_x,
            1,
            inner.seed,
            inner.batch_size,
        )

    def sample(self, generator, batch_size=None):
        batch = self.inner.sample(generator, batch_size)
        self.calls += 1
        if self.calls > self.bad_step:
            batch.yt = torch.full_like(batch.yt, float("nan"))
        return batch


def test_non_finite_loss_stops_and_keeps_last_good_checkpoint(tmp_path):
    cfg = _cfg(tmp_path, steps=40, checkpoint_every=10, val_every=1000)
    sampler = _NaNAfter(
        build_sampler("gp", 4, 0, kernels=["rbf"], n_random=12, n_grid=12, max_ctx=10), bad_step=25
    )
    with pytest.raises(TrainingDiverged, match="at step 25"):
        fit(cfg, sampler=sampler)
    ckpt = torch.load(tmp_path / "run/checkpoints/last.pt", weights_only=True)
    assert ckpt["train_state"]["step"] == 20
    assert all(torch.isfinite(v).all() for v in ckpt["state_dict"].values())
    assert not (tmp_path / "run/model.pt").exists()


def test_resume_in_process_matches_uninterrupted(tmp_path):
    full = fit(_cfg(tmp_path / "a", steps=30)).model
    stopped = fit(_cfg(tmp_path / "b", steps=30), stop_at=17)
    assert stopped.stopped_early and stopped.steps_done == 17
    assert not (tmp_path / "b/run/model.pt").exists()
    resumed = fit(_cfg(tmp_path / "b", steps=30), resume=True).model
    steps = [int(r.split(",")[0]) for r in (tmp_path / "b/run/metrics.csv").read_text().split()[1:]]
    assert steps == [10, 20, 30]  # each logged step once, across the interruption
    for (k, v), w in zip(full.state_dict().items(), resumed.state_dict().values()):
        torch.testing.assert_close(v, w, rtol=0, atol=0, msg=k)


def _train_cmd(cfg_path, out_dir, *extra):
    return [
        sys.executable,
        "-m",
        "tnpx.cli",
        "train",
        str(cfg_path),
        f"train.out_dir={out_dir}",
        "train.steps=300",
        "train.checkpoint_every=20",
        "train.val_every=100000",
        *extra,
    ]


@pytest.mark.slow
def test_sigkill_then_resume_is_bit_identical(tmp_path):
    cfg_path = write_tiny(tmp_path)
    ref_dir, run_dir = tmp_path / "ref", tmp_path / "run"
    subprocess.run(
        _train_cmd(cfg_path, ref_dir), env=ENV, check=True, capture_output=True, timeout=300
    )

    proc = subprocess.Popen(
        _train_cmd(cfg_path, run_dir), env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    ckpt = run_dir / "checkpoints" / "last.pt"
    deadline = time.time() + 120
    while not ckpt.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(random.uniform(0.0, 0.3))  # a random step after the first checkpoint
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert not (run_dir / "model.pt").exists(), "the run finished before it was killed"
    killed_at = torch.load(ckpt, weights_only=True)["train_state"]["step"]
    assert 0 < killed_at < 300

    out = subprocess.run(
        _train_cmd(cfg_path, run_dir, "--resume"),
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert f"resuming from {ckpt} at step {killed_at}" in out.stdout
    ref = torch.load(ref_dir / "model.pt", weights_only=True)["state_dict"]
    got = torch.load(run_dir / "model.pt", weights_only=True)["state_dict"]
    for k in ref:
        assert torch.equal(ref[k], got[k]), k


@pytest.mark.slow
def test_sigterm_checkpoints_and_stops(tmp_path):
    cfg_path = write_tiny(tmp_path)
    run_dir = tmp_path / "run"
    cmd = _train_cmd(cfg_path, run_dir, "train.steps=100000", "train.checkpoint_every=100000")
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (run_dir / "metrics.csv").exists() and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "stopped by signal" in stdout
    step = torch.load(run_dir / "checkpoints/last.pt", weights_only=True)["train_state"]["step"]
    assert 0 < step < 100000


@pytest.mark.slow
def test_two_process_ddp_gloo(tmp_path):
    cfg_path = write_tiny(tmp_path)
    ddp_dir, single_dir = tmp_path / "ddp", tmp_path / "single"
    common = ["train.steps=20", "train.val_every=100000", "train.checkpoint_every=10"]
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "tnpx.cli",
        "train",
        str(cfg_path),
        f"train.out_dir={ddp_dir}",
        *common,
    ]
    out = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tnpx.cli",
            "train",
            str(cfg_path),
            f"train.out_dir={single_dir}",
            *common,
        ],
        env=ENV,
        check=True,
        capture_output=True,
        timeout=240,
    )
    ddp = tnpx.load(ddp_dir / "model.pt")
    single = tnpx.load(single_dir / "model.pt")
    # Same seed and init, but DDP averages gradients over two ranks' different batches.
    diffs = [
        (a - b).abs().max().item()
        for a, b in zip(ddp.state_dict().values(), single.state_dict().values())
    ]
    assert max(diffs) > 1e-6
    assert all(torch.isfinite(v).all() for v in ddp.state_dict().values())


def test_train_or_load_and_cached_evaluate(tmp_path):
    from tnpx.evaluation.protocol import cached_evaluate
    from tnpx.training.loop import train_or_load

    cfg = _cfg(tmp_path, steps=5, checkpoint_every=1000, val_every=1000)
    model, seconds = train_or_load(cfg)
    assert seconds > 0 and (tmp_path / "run/model.pt").exists()
    again, seconds_again = train_or_load(cfg)  # loaded, with the recorded training time
    assert seconds_again == pytest.approx(seconds, rel=0.5)
    for a, b in zip(model.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)
    cell = tmp_path / "cells/tiny.json"
    first = cached_evaluate(model, cfg, cell, shift=1.0)
    assert cell.exists()
    cell.write_text(cell.read_text().replace(f'"ll": {first.ll}', '"ll": 123.0'))
    assert cached_evaluate(model, cfg, cell, shift=1.0).ll == 123.0  # read back, not recomputed
    recorded = tmp_path / "cells/tiny-settings.json"  # the layout a stale-cell check reads
    with_settings = cached_evaluate(model, cfg, recorded, settings={"preset": "x"}, shift=1.0)
    stored = json.loads(recorded.read_text())
    assert stored["settings"] == {"preset": "x"} and stored["metrics"]["ll"] == first.ll
    assert with_settings.ll == first.ll  # same tasks, same model
    recorded.write_text(recorded.read_text().replace(f'"ll": {first.ll}', '"ll": 7.0'))
    assert cached_evaluate(model, cfg, recorded, settings={"preset": "x"}, shift=1.0).ll == 7.0


def test_train_or_load_refuses_an_unfinished_run(tmp_path, monkeypatch):
    import tnpx.training.loop as train_module

    cfg = _cfg(tmp_path, steps=30)
    stopped = train_module.TrainResult(None, tmp_path, 17, 1.0, True, 2.0)
    monkeypatch.setattr(train_module, "fit", lambda cfg, resume: stopped)
    with pytest.raises(RuntimeError, match="stopped at step 17 of 30; run again to resume"):
        train_module.train_or_load(cfg)
