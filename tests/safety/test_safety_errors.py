"""Issue 23, training half: checkpoint errors are in tnpx's own words (never advice to load
with ``weights_only=False``, non-finite weights refused naming the tensor), and every error the
user can cause on the command line ends in one line on stderr and a non-zero exit, unless
``--debug``."""

from __future__ import annotations

import os
import pickle

import pytest
import torch

import tnpx
from tests.helpers.safety_files import write_bad_yaml
from tests.helpers.small_models import small_model
from tests.helpers.tiny import write_tiny
from tnpx.checkpoint import CheckpointError, experiment_from_record, read_checkpoint
from tnpx.cli import main
from tnpx.config import ConfigError

# 4. Checkpoint errors in tnpx's own words --------------------------------------------------


def _poisoned(tmp_path, key_index: int = 0):
    path = tmp_path / "m.pt"
    tnpx.save(small_model("tnp"), path)
    record = torch.load(path, weights_only=True)
    key = list(record["state_dict"])[key_index]
    record["state_dict"][key][..., 0] = float("nan")
    torch.save(record, path)
    return path, key


def test_load_refuses_non_finite_weights_naming_the_tensor(tmp_path):
    path, key = _poisoned(tmp_path, 3)
    with pytest.raises(CheckpointError, match=f"non-finite weights .* in {key}"):
        tnpx.load(path)


class _RunsCode:
    def __reduce__(self):
        return (os.system, ("echo this ran",))


def _code_and_garbage(tmp_path):
    code, garbage = tmp_path / "code.pt", tmp_path / "garbage.pt"
    torch.save({"format": "tnpx-checkpoint", "payload": _RunsCode()}, code)
    with open(tmp_path / "pickled.pt", "wb") as f:
        pickle.dump({"payload": _RunsCode()}, f)
    garbage.write_bytes(bytes(range(256)) * 8)
    return code, tmp_path / "pickled.pt", garbage


def test_unreadable_checkpoints_never_suggest_weights_only_false(tmp_path):
    for path in _code_and_garbage(tmp_path):
        with pytest.raises(CheckpointError) as err:
            read_checkpoint(path)
        msg = str(err.value)
        assert str(path) in msg and "weights_only" not in msg and "\n" not in msg
        assert err.value.__cause__ is None  # torch's advice is not even chained
    code, _, _ = _code_and_garbage(tmp_path)
    with pytest.raises(CheckpointError, match="could run code"):
        read_checkpoint(code)


def test_malformed_stored_experiment_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "m.pt"
    for experiment in ["model: {name: tnp", "- 1", "train: {steps: -3}", "nonsense: 1"]:
        tnpx.save(small_model("tnp"), path, experiment=experiment)
        with pytest.raises(CheckpointError, match="stored experiment config"):
            experiment_from_record(read_checkpoint(path))


# 6. One rule for the command line ---------------------------------------------------------


def _bad_invocations(tmp_path) -> dict[str, list[str]]:
    """Each a way a user can get tnpx wrong, with the files it needs."""
    write_bad_yaml(tmp_path)
    cfg = str(write_tiny(tmp_path))
    run = f"train.out_dir={tmp_path / 'fresh'}"
    code, pickled, garbage = _code_and_garbage(tmp_path)
    poisoned, _ = _poisoned(tmp_path)
    odd = tmp_path / "odd-experiment.pt"
    tnpx.save(small_model("tnp"), odd, experiment="model: {name: tnp")
    (tmp_path / "held/checkpoints").mkdir(parents=True)
    (tmp_path / "held/model.pt").write_bytes(b"")
    ctx, tgt = tmp_path / "ctx.csv", tmp_path / "tgt.csv"
    ctx.write_text("x,y\n0,1\n1,2\n2,1.5\n")
    tgt.write_text("x\n0.5\n")
    train = {
        f"train {name}": ["train", str(tmp_path / name)]
        for name in ["syntax.yaml", "list.yaml", "base-int.yaml", "base-missing.yaml"]
    }
    for override in [
        "train.steps=-5",
        "model.n_heads=0",
        "data.batch_size=0",
        "data.batch_size=-1",
        "train.checkpoint_every=0",
        "optim.lr=0",
        "train.clip_norm=0",
        "eval.n_batches=0",
        "train.steps=${oops}",
        "train.steps=[1,",
        "data=[1]",
        "train.device=cuda:x",
    ]:
        train[f"train {override}"] = ["train", cfg, run, override]
    return {
        **train,
        "train a folder": ["train", str(tmp_path)],
        "train into a run": ["train", cfg, f"train.out_dir={tmp_path / 'held'}"],
        "eval code": ["eval", str(code)],
        "eval pickle": ["eval", str(pickled)],
        "eval garbage": ["eval", str(garbage)],
        "eval a folder": ["eval", str(tmp_path)],
        "eval non-finite": ["eval", str(poisoned)],
        "eval bad experiment": ["eval", str(odd)],
        "eval bad config": ["eval", str(odd), "--config", str(tmp_path / "list.yaml")],
        "eval n-batches": ["eval", "gp1d-tnp", "--n-batches", "-1", "--no-oracle"],
        "plot garbage": ["plot", str(garbage)],
        "predict non-finite": [
            "predict",
            str(poisoned),
            "--context",
            str(ctx),
            "--targets",
            str(tgt),
        ],
        "predict code": ["predict", str(code), "--context", str(ctx), "--targets", str(tgt)],
    }


def test_every_bad_invocation_is_one_line_and_a_non_zero_exit(tmp_path, capsys):
    for label, args in _bad_invocations(tmp_path).items():
        code = main(args)
        out = capsys.readouterr()
        lines = out.err.splitlines()
        assert code != 0, label
        assert len(lines) == 1, (label, out.err)
        assert lines[0].startswith(f"tnpx {args[0]}: error: "), (label, lines)
        assert "Traceback" not in out.err and "weights_only" not in out.err, label


def test_debug_re_raises(tmp_path):
    with pytest.raises(ConfigError, match="holds a list"):
        write_bad_yaml(tmp_path)
        main(["--debug", "train", str(tmp_path / "list.yaml")])
    with pytest.raises(ConfigError, match="must be an integer >= 1"):
        main(["train", str(write_tiny(tmp_path)), "train.steps=0", "--debug"])


def test_unexpected_errors_are_named_by_type(monkeypatch, capsys):
    import tnpx.cli.commands as cli

    def boom(args):
        raise KeyError("missing_piece")

    monkeypatch.setattr(cli, "_models", boom)
    assert main(["models"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "tnpx models: error: KeyError: 'missing_piece' (run with --debug for the traceback)\n"
    )


def test_keyboard_interrupt_is_not_swallowed(monkeypatch):
    import tnpx.cli.commands as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_models", interrupted)
    with pytest.raises(KeyboardInterrupt):
        main(["models"])
