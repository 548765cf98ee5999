"""Runs that span sessions: ``--max-minutes`` stops at a wall-clock budget with a checkpoint,
resuming ends exactly as an uninterrupted run, and a finished run is left alone."""

from __future__ import annotations

import pytest
import torch

from experiments import long_runs
from tiny import tiny_overrides, write_tiny
from tnpx.cli import main
from tnpx.config import load_config
from tnpx.training.loop import fit


def _cfg(tmp_path, **train):
    return load_config(write_tiny(tmp_path), tiny_overrides(tmp_path, **train))


@pytest.mark.slow
def test_time_budget_stops_and_resume_equals_uninterrupted(tmp_path):
    full = fit(_cfg(tmp_path / "a", steps=30)).model
    sliced = [fit(_cfg(tmp_path / "b", steps=30), max_seconds=1e-9)]  # one step a slice
    assert sliced[0].stopped_early and sliced[0].steps_done == 1
    while sliced[-1].stopped_early:
        sliced.append(fit(_cfg(tmp_path / "b", steps=30), resume=True, max_seconds=1e-9))
    assert [r.steps_done for r in sliced] == list(range(1, 31))
    for (k, v), w in zip(full.state_dict().items(), sliced[-1].model.state_dict().values()):
        torch.testing.assert_close(v, w, rtol=0, atol=0, msg=k)


def test_cli_max_minutes_exits_zero_and_says_how_far(tmp_path, capsys):
    cfg = str(write_tiny(tmp_path))
    args = ["train", cfg, *tiny_overrides(tmp_path, steps=20, progress="false")]
    assert main([*args, "--max-minutes", "1e-9"]) == 0
    out = capsys.readouterr().out
    assert "stopped at the time budget" in out and "at step 1 of 20" in out
    assert main([*args, "--resume", "--max-minutes", "60"]) == 0
    assert "trained 20 steps" in capsys.readouterr().out


def test_max_minutes_on_a_finished_run_does_nothing(tmp_path, capsys):
    cfg = str(write_tiny(tmp_path))
    args = ["train", cfg, *tiny_overrides(tmp_path, steps=10, progress="false")]
    assert main(args) == 0
    run = tmp_path / "run"
    files = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main([*args, "--resume", "--max-minutes", "5"]) == 0
    assert "finished (10 of 10 steps); nothing to do" in capsys.readouterr().out
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == files


def test_bad_max_minutes_is_one_line(tmp_path, capsys):
    cfg = str(write_tiny(tmp_path))
    for bad in ("0", "-3", "soon", "inf"):
        try:
            main(["train", cfg, "--max-minutes", bad])
        except SystemExit as err:  # argparse: usage error, exit 2
            assert err.code == 2
        assert "must be a number of minutes > 0" in capsys.readouterr().err


def test_runs_reports_progress_speed_and_validation(tmp_path, capsys):
    from tnpx.training.runs import find_runs, run_status

    cfg = str(write_tiny(tmp_path))
    overrides = tiny_overrides(tmp_path, steps=40, progress="false", val_every=20, log_every=10)
    assert main(["train", cfg, *overrides, "--max-minutes", "1e-9"]) == 0
    status = run_status(tmp_path / "run")
    assert (status.steps_done, status.steps_total, status.finished) == (1, 40, False)
    assert status.model == "tnp" and status.val_ll is None
    assert main(["train", cfg, *overrides, "--resume"]) == 0
    status = run_status(tmp_path / "run")
    assert status.finished and status.eta_hours == 0.0 and status.val_step == 40
    assert status.steps_per_s > 0 and status.train_hours > 0
    capsys.readouterr()
    assert main(["runs", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert "| run | model |" in table and "| 40 / 40 | 40 | 100% |" in table and "done" in table
    assert find_runs([tmp_path]) == [tmp_path / "run"]


def test_runs_on_a_folder_without_runs(tmp_path, capsys):
    assert main(["runs", str(tmp_path)]) == 0
    assert "no runs under" in capsys.readouterr().out
    assert main(["runs", str(tmp_path / "missing")]) == 2


def test_prefetching_batches_changes_no_number(tmp_path):
    """The next batch is sampled in a background thread; the weights are bit-identical to a
    run that samples each batch in turn (batches are pure functions of the step)."""
    on = fit(_cfg(tmp_path / "on", steps=25, prefetch="true")).model
    off = fit(_cfg(tmp_path / "off", steps=25, prefetch="false")).model
    for (k, v), w in zip(on.state_dict().items(), off.state_dict().values()):
        torch.testing.assert_close(v, w, rtol=0, atol=0, msg=k)


@pytest.mark.parametrize("name", sorted(long_runs.RUNS))
def test_every_long_run_checkpoint_fits_in_a_commit(tmp_path, name):
    """A long run commits ``checkpoints/last.pt`` after every slice, and a committed checkpoint
    may take at most 5 MB: save a real one (weights and optimiser state after one step) of
    every registered run's config and measure it."""
    config, overrides = long_runs.RUNS[name]
    out = tmp_path / "run"
    cfg = load_config(
        long_runs.ROOT / config,
        [*overrides, f"train.out_dir={out}", "train.progress=false", "data.batch_size=2"],
    )
    fit(cfg, stop_at=1)
    size = (out / "checkpoints" / "last.pt").stat().st_size
    assert size <= 5_000_000, f"{name}: a checkpoint takes {size / 1e6:.1f} MB (limit 5 MB)"


def test_a_finished_run_needs_only_its_model_config_and_metrics(tmp_path, monkeypatch):
    import shutil

    from tnpx.training.runs import run_status

    fit(_cfg(tmp_path, steps=20, log_every=10))
    run = tmp_path / "run"
    before = run_status(run)
    monkeypatch.setattr(long_runs, "FOLDER", tmp_path)
    assert long_runs.tidy(["run", "missing"]) == ["run"] and not (run / "checkpoints").exists()
    after = run_status(run)  # from model.pt's recorded totals
    assert (after.finished, after.steps_done) == (True, 20)
    assert after.train_hours >= before.train_hours > 0  # model.pt is written after last.pt
    # a run finished before model.pt recorded them: the steps and time of its metrics log
    old = tmp_path / "old"
    shutil.copytree(run, old)
    record = torch.load(old / "model.pt", weights_only=False)
    del record["trained"]
    torch.save(record, old / "model.pt")
    legacy = run_status(old)
    assert (legacy.finished, legacy.steps_done) == (True, 20) and legacy.train_hours > 0
