"""Issue 23, training half: nothing lost, nothing silently wrong, no traceback.

This file: a diverging run keeps only finite checkpoints; ``tnpx train`` never trains over an
earlier run unasked, and resume errors are one line. Config values and YAML errors are in
``test_safety_config.py``; checkpoint errors and the one-line rule for every error the user can
cause on the command line in ``test_safety_errors.py``.
"""

from __future__ import annotations

import pytest
import torch

import tnpx
import tnpx.training.session as train_module  # where the run builds its optimiser
from tests.helpers.small_models import small_model
from tests.helpers.tiny import tiny_overrides, write_tiny
from tnpx.cli import main
from tnpx.config import load_config
from tnpx.training.guard import all_finite, what_diverged
from tnpx.training.loop import TrainingDiverged, fit
from tnpx.training.state import last_checkpoint


def _cfg(tmp_path, *extra, **train):
    return load_config(write_tiny(tmp_path), [*tiny_overrides(tmp_path, **train), *extra])


def _finite(path) -> bool:
    return all(v.isfinite().all() for v in tnpx.load(path).state_dict().values())


# 1. Divergence never reaches a checkpoint ---------------------------------------------------


def test_diverging_lr_keeps_a_finite_checkpoint(tmp_path):
    diverging = ["optim.lr=1e30", "schedule.name=constant", "schedule.warmup_steps=0"]
    cfg = _cfg(tmp_path, *diverging, "train.clip_norm=null", checkpoint_every=1, val_every=1000)
    with pytest.raises(TrainingDiverged, match="non-finite .* at step 1; last good checkpoint"):
        fit(cfg)
    assert _finite(tmp_path / "run/checkpoints/last.pt")
    assert not (tmp_path / "run/model.pt").exists()


def _optimizer_that_breaks_a_weight_at(call: int):
    """build_optimizer whose ``call``-th step writes Inf into a weight after updating: an
    update that breaks the weights while that step's loss was still finite."""
    real = train_module.build_optimizer

    def build(params, cfg):
        opt, calls = real(params, cfg), [0]

        def break_a_weight(opt, args, kwargs):
            calls[0] += 1
            if calls[0] == call:
                with torch.no_grad():
                    opt.param_groups[0]["params"][0].fill_(float("inf"))

        opt.register_step_post_hook(break_a_weight)
        return opt

    return build


def test_an_update_that_breaks_the_weights_is_never_checkpointed(tmp_path, monkeypatch):
    """Before the guard, step 5's update was checkpointed (checkpoint_every=1) and only step
    6's loss showed it: last.pt held Inf."""
    monkeypatch.setattr(train_module, "build_optimizer", _optimizer_that_breaks_a_weight_at(5))
    cfg = _cfg(tmp_path, checkpoint_every=1, val_every=1000)
    with pytest.raises(TrainingDiverged, match="non-finite weights in .* at step 4"):
        fit(cfg)
    ckpt = last_checkpoint(tmp_path / "run")
    assert torch.load(ckpt, weights_only=True)["train_state"]["step"] == 4
    assert _finite(ckpt)


def test_guard_tells_loss_gradient_and_weight_apart():
    w = torch.nn.Parameter(torch.ones(3))
    named, loss = [("w", w)], torch.tensor(1.0)
    assert all_finite(loss, [w])
    w.grad = torch.tensor([0.0, float("inf"), 0.0])
    assert not all_finite(loss, [w])
    assert what_diverged(loss, named) == "non-finite gradient of w"
    assert what_diverged(torch.tensor(float("nan")), named) == "non-finite loss (nan)"
    w.grad = None
    with torch.no_grad():
        w[1] = float("nan")
    assert not all_finite(loss, [w])
    assert what_diverged(loss, named) == "non-finite weights in w after the update"
    with torch.no_grad():
        w.fill_(3e38)  # huge but finite: a 2-norm would overflow, the max-norm does not
    assert all_finite(loss, [w, torch.nn.Parameter(torch.zeros(0))])


# 5. Resume and run folders --------------------------------------------------------------------


def _train_args(tmp_path, *extra):
    return ["train", str(write_tiny(tmp_path)), *tiny_overrides(tmp_path, steps=4), *extra]


def test_train_refuses_a_folder_holding_a_run_unless_told(tmp_path, capsys):
    assert main(_train_args(tmp_path)) == 0
    first = tnpx.load(tmp_path / "run/model.pt").state_dict()
    capsys.readouterr()
    assert main(_train_args(tmp_path)) == 2
    err = capsys.readouterr().err
    assert "already holds a run" in err and "--resume" in err and "--overwrite" in err
    # --overwrite trains afresh (same seed, same weights); --resume finds the run finished
    assert main(_train_args(tmp_path, "--overwrite")) == 0
    again = tnpx.load(tmp_path / "run/model.pt").state_dict()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert main(_train_args(tmp_path, "--resume")) == 0


def test_overwrite_removes_the_old_checkpoint(tmp_path):
    assert main(_train_args(tmp_path, "train.checkpoint_every=1")) == 0
    ckpt = last_checkpoint(tmp_path / "run")
    (tmp_path / "run/model.pt").unlink()
    from tnpx.training.state import claim_run_folder

    claim_run_folder(tmp_path / "run", resume=False, overwrite=True)
    assert not ckpt.exists()


def test_stale_temporaries_are_removed_when_a_run_starts(tmp_path):
    run = tmp_path / "run"
    stale = [run / "checkpoints/.last.pt.abc123.tmp", run / ".model.pt.xyz.tmp"]
    for f in stale:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"half a checkpoint")
    keep = run / "checkpoints/notes.tmp"
    keep.write_text("not ours")
    fit(_cfg(tmp_path, steps=2))
    assert not any(f.exists() for f in stale) and keep.exists()


def test_resume_from_a_saved_model_is_one_line(tmp_path, capsys):
    ckpt = last_checkpoint(tmp_path / "run")
    ckpt.parent.mkdir(parents=True)
    tnpx.save(small_model("tnp"), ckpt)
    assert main(_train_args(tmp_path, "--resume")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds a model but no training state" in err


def test_resume_with_another_model_size_names_the_key(tmp_path, capsys):
    fit(_cfg(tmp_path, steps=4), stop_at=2)
    assert main(_train_args(tmp_path, "model.dim_model=32", "--resume")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "cannot resume: the config's model differs:" in err
    assert "has shape [" in err and "in the file," in err and "in the model" in err


def test_resume_with_other_lr_groups_is_one_line(tmp_path, capsys):
    fit(_cfg(tmp_path, steps=4), stop_at=2)
    args = _train_args(tmp_path, "optim.lr_multipliers={decoder: 10}", "--resume")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "optimiser or schedule state does not fit" in err


def test_resume_where_only_a_final_model_is_left_is_refused(tmp_path, capsys):
    assert main(_train_args(tmp_path)) == 0
    last_checkpoint(tmp_path / "run").unlink()
    capsys.readouterr()
    assert main(_train_args(tmp_path, "--resume")) == 2
    assert "no checkpoint to resume from" in capsys.readouterr().err
