"""Configs: every committed config loads; unknown keys and wrong types fail with the valid keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from tnpx.config import ConfigError, config_from_yaml, config_to_yaml, load_config

CONFIGS = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_committed_configs_load_and_round_trip(path):
    cfg = load_config(path)
    assert cfg.protocol in ("exact", "budget")
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
        (["model.name=nope"], "registered models: cnp"),
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
    path = CONFIGS[0]
    with pytest.warns(UserWarning, match="ignoring the config file's model options"):
        cfg = load_config(path, ["model.name=cnp"])
    assert cfg.model["name"] == "cnp" and "n_layers" not in cfg.model
