"""Issue 23, training half: nothing lost, nothing silently wrong, no traceback.

A diverging run keeps only finite checkpoints; every config value is checked where it is read;
YAML, checkpoint and resume errors are one line in tnpx's words; ``tnpx train`` never trains
over an earlier run unasked; every error the user can cause ends in one line on stderr.
"""

from __future__ import annotations

import os
import pickle

import pytest
import torch

import tnpx
import tnpx.train as train_module
from conftest import make_task, small_model, supports
from tiny import tiny_overrides, write_tiny
from tnpx.checkpoint import CheckpointError, experiment_from_record, read_checkpoint
from tnpx.cli import main
from tnpx.config import ConfigError, load_config
from tnpx.models.sizes import size_minima
from tnpx.train import TrainingDiverged, fit
from tnpx.train_guard import all_finite, what_diverged
from tnpx.train_state import last_checkpoint


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


# 2. Every config value checked where it is read --------------------------------------------


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.steps=-5", "train.steps = -5: must be an integer >= 1"),
        ("train.steps=0", "train.steps = 0: must be an integer >= 1"),
        ("train.seed=-1", "train.seed = -1: must be an integer >= 0"),
        ("train.checkpoint_every=0", "train.checkpoint_every = 0: must be an integer >= 1"),
        ("train.log_every=0", "train.log_every = 0: must be an integer >= 1"),
        ("train.val_every=-1", "train.val_every = -1: must be an integer >= 1"),
        ("train.val_batches=0", "train.val_batches = 0: must be an integer >= 1"),
        ("train.clip_norm=0", "train.clip_norm = 0: must be a number > 0 or null"),
        ("train.clip_value=-1", "train.clip_value = -1: must be a number > 0 or null"),
        ("train.device=gpu", "train.device = 'gpu': must be auto, cpu, cuda, cuda:N or mps"),
        ("train.out_dir=''", "train.out_dir = '': must be a non-empty string"),
        ("eval.n_batches=0", "eval.n_batches = 0: must be an integer >= 1"),
        ("eval.batch_size=-2", "eval.batch_size = -2: must be an integer >= 1"),
        ("optim.lr=0", "optim.lr = 0.0: must be a number > 0"),
        ("optim.lr=-1e-3", "optim.lr = -0.001: must be a number > 0"),
        ("optim.lr=.inf", "optim.lr = inf: must be a number > 0"),
        ("optim.weight_decay=-1", "optim.weight_decay = -1.0: must be a number >= 0"),
        ("optim.betas=[0.9]", "optim.betas = [0.9]: must be two numbers in [0, 1)"),
        ("optim.betas=[0.9,1.0]", "optim.betas = [0.9, 1.0]: must be two numbers in [0, 1)"),
        ("optim.name=sgd", "optim.name = 'sgd': must be one of adamw, adam, yogi"),
        ("optim.lr_multipliers={decoder: 0}", "optim.lr_multipliers = {'decoder': 0}: must be a"),
        ("schedule.name=linear", "schedule.name = 'linear': must be one of cosine, constant"),
        ("schedule.warmup_steps=-1", "schedule.warmup_steps = -1: must be an integer >= 0"),
        ("schedule.min_lr_ratio=2", "schedule.min_lr_ratio = 2.0: must be a number in [0, 1]"),
        ("protocol=paper", "protocol = 'paper': must be one of exact, budget"),
        ("data.batch_size=0", "data.batch_size = 0: must be an integer >= 1"),
        ("data.batch_size=-1", "data.batch_size = -1: must be an integer >= 1"),
        ("model.dim_x=0", "model.dim_x = 0: must be an integer >= 1"),
        ("model.n_heads=0", "model.n_heads = 0: must be an integer >= 1"),
        ("model.dim_model=-4", "model.dim_model = -4: must be an integer >= 1"),
        ("model.n_layers=0", "model.n_layers = 0: must be an integer >= 1"),
        ("model.dim_head=0", "model.dim_head = 0: must be an integer >= 1"),
        ("model.dim_ff=0", "model.dim_ff = 0: must be an integer >= 1"),
        ("model.n_embed_hidden=-1", "model.n_embed_hidden = -1: must be an integer >= 0"),
    ],
)
def test_out_of_range_values_name_key_value_and_range(override, message):
    with pytest.raises(ConfigError) as err:
        load_config(None, [override])
    assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize(
    "override",
    [
        "train.clip_norm=null",
        "train.device=cuda:1",
        "schedule.min_lr_ratio=1",
        "optim.betas=[0,0]",
        "optim.name=AdamW",
        "model.n_embed_hidden=0",
        "model.n_decoder_hidden=0",
        "train.steps=1",
    ],
)
def test_boundary_values_are_allowed(override):
    load_config(None, [override])


# The allowed ranges of the models' integer options (tnpx.models.sizes): every other dim_* /
# n_* option (and chunk_elements, kernel_size, rank) must be >= 1.
MIN_ZERO = {
    "n_embed_hidden": "an MLP with no hidden layer is a linear map",
    "n_decoder_hidden": "ditto",
    "n_encoder_hidden": "ditto",
    "n_cov_hidden": "ditto (TNP-ND's projection)",
    "n_cov_layers": "TNP-ND without target self-attention",
    "n_iterations": "a fitted GP at its initial hyper-parameters",
    "redraw_every": "fixed FAVOR+ features (the paper's)",
    # declared by the models (a Hyper's ``zero_allowed``): more MLP depths, 0 = a linear map
    "n_post_hidden": "the MLP after a pooling mean (the BNP code's CNP)",
    "n_key_hidden": "the x-only key embedding of CANP/ANP/BANP",
    "n_grid_encoder_hidden": "ConvCNP's map on the grid (the TNP-KR code's Dense)",
    "n_readout_hidden": "ConvCNP's map after the read-out",
}
ZERO_LAYERS = {"canp", "anp", "banp"}  # no self-attention blocks; the cross-attention remains
NOT_SIZES = {"feature_seed"}


@pytest.mark.parametrize("name", tnpx.list_models())
def test_model_size_ranges(name):
    from dataclasses import fields

    ints = {
        f.name
        for f in fields(tnpx.models.REGISTRY[name].Hyper)
        if "int" in str(f.type) and f.name not in NOT_SIZES
    }
    expected = {
        k: 0 if k in MIN_ZERO or (k == "n_layers" and name in ZERO_LAYERS) else 1 for k in ints
    }
    assert size_minima(name) == expected


@pytest.mark.parametrize(
    "name, key",
    [(n, k) for n in tnpx.list_models() for k, low in size_minima(n).items() if low == 0],
)
def test_zero_where_allowed_builds_a_working_model(name, key):
    dims = next(d for d in [(1, 1), (1, 2), (2, 1)] if supports(name, *d))
    xc, yc, xt = make_task(dim_x=dims[0], dim_y=dims[1])
    with torch.no_grad():
        pred = small_model(name, *dims, **{key: 0})(xc, yc, xt)
    assert pred.mean.isfinite().all()


def test_model_sizes_are_checked_for_the_chosen_model():
    with pytest.raises(ConfigError, match=r"model.n_layers = -1: must be an integer >= 0"):
        load_config(None, ["model.name=canp", "model.n_layers=-1"])
    with pytest.raises(ConfigError, match=r"model.n_pseudo = 0: must be an integer >= 1"):
        load_config(None, ["model.name=pt-tnp-ist", "model.n_pseudo=0"])


# 3. YAML errors name the file ------------------------------------------------------------

BAD_YAML = {
    "syntax.yaml": ("model: {name: tnp\ntrain: [1,\n", "is not valid YAML: line 2"),
    "list.yaml": ("- 1\n- 2\n", "holds a list; a config is a mapping"),
    "base-int.yaml": ("base: 5\n", "base = 5 must be a YAML file's path"),
    "base-missing.yaml": ("base: nope.yaml\n", "base = 'nope.yaml': no file"),
    "base-list.yaml": ("base: list.yaml\n", "list.yaml holds a list"),
    "interpolation.yaml": ("name: ${nope}\n", "name: Interpolation key 'nope' not found"),
    "section.yaml": ("model: [1, 2]\n", "section.yaml does not fit the config"),
}


def _write_bad_yaml(tmp_path):
    for name, (text, _) in BAD_YAML.items():
        (tmp_path / name).write_text(text)


@pytest.mark.parametrize("name", BAD_YAML)
def test_yaml_errors_are_one_line_naming_the_file(tmp_path, name):
    _write_bad_yaml(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / name)
    msg = str(err.value)
    assert BAD_YAML[name][1] in msg and "\n" not in msg
    if name != "interpolation.yaml":  # which names the key
        assert (name if name != "base-list.yaml" else "list.yaml") in msg


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.steps=[1,", "override 'train.steps=[1,' is not valid YAML"),
        ("data=[1]", "override 'data=[1]' does not fit the config"),
        ("train.steps=${oops}", "train.steps: Interpolation key 'oops' not found"),
    ],
)
def test_override_errors_name_the_override(override, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("$", r"\$")):
        load_config(None, [override])


# 4. Checkpoint errors in tnpx's own words --------------------------------------------------


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
    from tnpx.train_state import claim_run_folder

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


# 6. One rule for the command line ---------------------------------------------------------


def _bad_invocations(tmp_path) -> dict[str, list[str]]:
    """Each a way a user can get tnpx wrong, with the files it needs."""
    _write_bad_yaml(tmp_path)
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
        _write_bad_yaml(tmp_path)
        main(["--debug", "train", str(tmp_path / "list.yaml")])
    with pytest.raises(ConfigError, match="must be an integer >= 1"):
        main(["train", str(write_tiny(tmp_path)), "train.steps=0", "--debug"])


def test_unexpected_errors_are_named_by_type(monkeypatch, capsys):
    import tnpx.cli as cli

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
    import tnpx.cli as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_models", interrupted)
    with pytest.raises(KeyboardInterrupt):
        main(["models"])


def test_build_model_checks_sizes_too():
    """The Python API applies the same size rule as a config: ``n_heads=0`` is refused."""
    with pytest.raises(ValueError, match="tnp.n_heads = 0: must be an integer >= 1"):
        tnpx.build_model("tnp", 1, 1, n_heads=0)
    assert tnpx.build_model("canp", 1, 1, n_layers=0, dim_model=8, n_heads=1, dim_head=4)
