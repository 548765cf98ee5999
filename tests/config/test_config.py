"""Configs (tnpx.config): every committed config loads; unknown keys and wrong types fail with
the valid keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from tnpx.config import ConfigError, config_from_yaml, config_to_yaml, load_config

# Experiment configs; BO benchmark configs (a top-level `bo:` section) have their own schema
# and test (tests/bo/test_bo.py).
CONFIGS = sorted(
    p
    for p in (Path(__file__).parents[2] / "configs").glob("*.yaml")
    if not p.read_text().startswith("bo:") and "\nbo:" not in p.read_text()
)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_committed_configs_load_and_round_trip(path):
    cfg = load_config(path)
    assert cfg.protocol in ("exact", "budget")
    # The zoo's models and the joint-samples model follow no paper's protocol.
    if not path.stem.startswith(("pretrained-", "samples-")):
        assert ("budget" in path.stem) == (cfg.protocol == "budget")
    assert config_from_yaml(config_to_yaml(cfg)) == cfg


def test_overrides_apply_with_types():
    cfg = load_config(
        None, ["model.dim_model=64", "train.steps=2000", "optim.lr=0.01", "train.clip_value=0.5"]
    )
    assert cfg.model["dim_model"] == 64 and cfg.train.steps == 2000
    assert cfg.optim.lr == 0.01 and cfg.train.clip_value == 0.5


@pytest.mark.parametrize(
    "override, message",
    [
        (["trian.steps=3"], "unknown key trian; valid keys: data, description"),
        (["train.stepz=3"], "unknown key train.stepz; valid keys of train: checkpoint_every"),
        (["train.steps=abc"], "train.steps = 'abc' has type str; expected int"),
        (["model.foo=1"], "unknown key model.foo; valid keys of model:"),
        (["model.name=nope"], "registered models: anp, banp, bnp, canp, cnp"),
        (["data.kernels=3"], "data.kernels = 3 has type int; expected list"),
        (["data.wrong=3"], "unknown key data.wrong; valid keys of data:"),
        (["eval.data.shift=x"], "eval.data.shift = 'x' has type str; expected float"),
        (["nonsense"], "not of the form section.key=value"),
    ],
)
def test_bad_keys_and_types_list_valid_keys(override, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load_config(None, override)


def test_switching_model_drops_file_options_with_a_warning(tmp_path):
    path = Path(__file__).parents[2] / "configs" / "kr1-rbf-tnpx-budget.yaml"  # tnp's sizes
    with pytest.warns(UserWarning, match="ignoring the config file's model options"):
        cfg = load_config(path, ["model.name=cnp"])
    assert cfg.model["name"] == "cnp" and "n_layers" not in cfg.model


def test_base_inheritance_merges_and_a_new_model_keeps_the_options_it_takes(tmp_path):
    (tmp_path / "parent.yaml").write_text(
        "name: parent\nmodel: {name: te-tnp, dim_model: 32, relative: pre}\n"
        "train: {steps: 7, seed: 3}\n"
    )
    (tmp_path / "same.yaml").write_text("base: parent.yaml\nname: same\nmodel: {n_layers: 2}\n")
    (tmp_path / "other.yaml").write_text("base: parent.yaml\nname: other\nmodel: {name: tnp}\n")
    same = load_config(tmp_path / "same.yaml")
    assert same.name == "same" and same.train.steps == 7 and same.train.seed == 3
    assert same.model == {
        "name": "te-tnp",
        "dim_x": 1,
        "dim_y": 1,
        "dim_model": 32,
        "relative": "pre",
        "n_layers": 2,
    }
    other = load_config(tmp_path / "other.yaml")
    # tnp takes dim_model (kept) but not the TE option 'relative' (dropped)
    assert other.model == {"name": "tnp", "dim_x": 1, "dim_y": 1, "dim_model": 32}


def test_base_cycles_are_reported(tmp_path):
    (tmp_path / "a.yaml").write_text("base: b.yaml\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\n")
    with pytest.raises(ConfigError, match="includes itself"):
        load_config(tmp_path / "a.yaml")


def test_a_null_preset_undoes_the_base_configs_preset(tmp_path):
    """A config whose base names a preset of another model says ``preset: null``."""
    from tnpx.models import build_model

    (tmp_path / "base.yaml").write_text("model: {name: tnp, preset: te-code}\n")
    (tmp_path / "child.yaml").write_text("base: base.yaml\nmodel: {name: canp, preset: null}\n")
    child = load_config(tmp_path / "child.yaml")
    assert child.model["preset"] is None
    assert build_model("canp", **child.model_options()).hyper == build_model("canp").hyper
    (tmp_path / "leak.yaml").write_text("base: base.yaml\nmodel: {name: canp}\n")
    with pytest.raises(ValueError, match="te-code"):  # the base's preset is not canp's
        build_model("canp", **load_config(tmp_path / "leak.yaml").model_options())
