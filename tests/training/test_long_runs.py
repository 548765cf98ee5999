"""Runs that span sessions: ``--max-minutes`` stops at a wall-clock budget with a checkpoint,
resuming ends exactly as an uninterrupted run, and a finished run is left alone."""

from __future__ import annotations

import runpy
import sys
from types import SimpleNamespace

import pytest
import torch

from experiments.long_runs import driver as long_runs
from tests.helpers.tiny import tiny_overrides, write_tiny
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


@pytest.mark.parametrize("name", sorted(set(long_runs.RUNS) - long_runs.ONE_SITTING))
def test_every_long_run_checkpoint_fits_in_a_commit(tmp_path, name):
    """A long run commits ``checkpoints/last.pt`` when it pauses across a session, and a
    committed checkpoint may take at most 5 MB: save a real one (weights and optimiser state
    after one step) of every registered run's config and measure it (the runs in
    ``ONE_SITTING`` never commit theirs; ``tests/boundary/test_repository_policy.py`` holds them
    to it).
    A later stage starts from random weights here (``train.init_from`` unset): its size is its
    shapes', and its first stage may not be finished yet."""
    config, overrides = long_runs.RUNS[name]
    out = tmp_path / "run"
    cfg = load_config(
        long_runs.ROOT / config,
        [*overrides, f"train.out_dir={out}", "train.progress=false", "data.batch_size=2",
         "train.init_from=null"],
    )  # fmt: skip
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
    (run / "tensorboard").mkdir(exist_ok=True)  # written when tensorboard is installed
    (run / "tensorboard" / "events").write_text("")
    assert long_runs.tidy(["run", "missing"]) == ["run"]
    assert sorted(p.name for p in run.iterdir()) == ["config.yaml", "metrics.csv", "model.pt"]
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


class _FakeRuns:
    """A wall clock that each ``sleep`` advances, and training processes that exit when their
    run ends (``ends``: seconds after starting; then it is in ``done``) or their
    ``--max-minutes`` runs out."""

    def __init__(self, ends: dict[str, float]):
        self.now, self.ends, self.procs = 0.0, ends, []
        self.started: dict[str, tuple[float, float]] = {}  # name -> (minute, budget)
        self.done: set[str] = set()

    def popen(self, cmd, **kwargs):
        name, budget = cmd[0], float(cmd[cmd.index("--max-minutes") + 1])
        self.started[name] = (self.now / 60, budget)
        ends = self.ends[name] <= 60 * budget
        proc = SimpleNamespace(
            name=name,
            ends=ends,
            returncode=None,
            stop_at=self.now + min(self.ends[name], 60 * budget),
        )
        proc.poll = lambda: proc.returncode
        self.procs.append(proc)
        return proc

    def sleep(self, seconds):
        self.now += seconds
        for proc in self.procs:
            if proc.returncode is None and self.now >= proc.stop_at:
                proc.returncode = 0
                if proc.ends:
                    self.done.add(proc.name)


@pytest.fixture
def fake_runs(tmp_path, monkeypatch):
    """``advance(names, minutes, parallel, ends, needs={})`` on fake runs (``needs``: a run ->
    the run it is fine-tuned from), returning the :class:`_FakeRuns`."""
    monkeypatch.setattr(long_runs, "FOLDER", tmp_path)
    monkeypatch.setattr(long_runs, "tidy", lambda names: [])
    monkeypatch.setattr(
        long_runs, "command", lambda name, minutes: [name, "--max-minutes", str(minutes)]
    )

    def advance(names, minutes, parallel, ends, needs=None, done=()):
        runs = _FakeRuns(ends)
        runs.done.update(done)
        monkeypatch.setattr(long_runs, "finished", lambda name: name in runs.done)
        monkeypatch.setattr(long_runs, "prerequisite", lambda name: (needs or {}).get(name))
        long_runs.advance(
            names, minutes, parallel, popen=runs.popen, clock=lambda: runs.now, sleep=runs.sleep
        )
        return runs

    return advance


def test_advance_shares_one_budget_over_the_queue(fake_runs):
    """One --minutes budget for the call: a run started when another finishes gets what is
    left, and the call ends with the budget."""
    runs = fake_runs(["a", "b", "c", "d"], 20, 2, ends={"a": 600, "b": 1e9, "c": 1e9, "d": 1e9})
    assert runs.started["a"] == (0.0, 20.0) and runs.started["b"] == (0.0, 20.0)
    at, budget = runs.started["c"]  # took a's place when it finished, for the time left
    assert 10 <= at < 10.2 and at + budget == pytest.approx(20, abs=0.1)
    assert "d" not in runs.started  # no slot freed before the budget ran out
    assert runs.now <= 20 * 60 + 10


def test_a_later_stage_waits_for_the_run_it_starts_from(fake_runs, capsys):
    """A fine-tune starts when its first stage finishes, even with a slot free before; one
    whose first stage this call will not finish is skipped, and the queue goes on."""
    needs = {"far": "first", "orphan": "elsewhere"}
    ends = {"first": 600, "far": 1e9, "orphan": 1e9, "other": 1e9}
    runs = fake_runs(["first", "far", "orphan", "other"], 30, 2, ends, needs)
    assert runs.started["first"][0] == 0.0 and runs.started["other"][0] == 0.0
    assert 10 <= runs.started["far"][0] < 10.2  # the moment "first" finished, not before
    assert "orphan" not in runs.started
    assert "orphan: skipped; it starts from elsewhere, unfinished" in capsys.readouterr().out
    # a first stage finished in an earlier call: its fine-tune starts at once
    again = fake_runs(["far", "other"], 30, 2, ends, needs, done={"first"})
    assert again.started["far"][0] == 0.0
    # one whose first stage stops unfinished (the budget ran out) never starts
    short = fake_runs(["first", "far"], 5, 2, ends, needs)
    assert list(short.started) == ["first"]


def test_the_registered_stages_name_the_runs_they_start_from():
    assert long_runs.prerequisite("gp2d-te-tnp-rope-far") == "gp2d-te-tnp-rope"
    assert long_runs.prerequisite("gp1d-v2-tnp-far") == "gp1d-v2-tnp"
    assert long_runs.prerequisite("gp1d-v3-te-tnp-rope") == "gp1d-v2-te-tnp-rope-far"
    assert long_runs.prerequisite("kr1-rbf-tnp-kr-full") is None
    order = long_runs.ORDER
    for name in order:  # a bare `advance` never queues a stage before the run it starts from
        first = long_runs.prerequisite(name)
        assert first is None or first not in order or order.index(first) < order.index(name)


def test_advance_starts_nothing_with_less_than_the_least_slice_left(fake_runs):
    """A run that would start in the budget's last minutes is left for the next call."""
    least = long_runs.MIN_SLICE_MINUTES
    runs = fake_runs(["a", "b"], 10, 1, ends={"a": 60 * (10 - least / 2), "b": 1e9})
    assert list(runs.started) == ["a"]
    assert fake_runs(["a"], least / 2, 1, ends={"a": 1e9}).started == {}


def test_the_package_runs_the_driver(monkeypatch, capsys):
    """``python -m experiments.long_runs`` (the command the zoo cards record) is the driver's."""
    monkeypatch.setattr(sys, "argv", ["experiments.long_runs", "--help"])
    monkeypatch.delitem(sys.modules, "experiments.long_runs.__main__", raising=False)
    with pytest.raises(SystemExit) as done:
        runpy.run_module("experiments.long_runs", run_name="__main__", alter_sys=True)
    assert done.value.code == 0
    assert "{status,tidy,advance}" in capsys.readouterr().out
