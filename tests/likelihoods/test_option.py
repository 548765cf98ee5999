"""The ``likelihood:`` option: today's names, a family name or a mapping, in ``build_model``,
configs and checkpoints; a bad name or option is one line naming the valid choices."""

from __future__ import annotations

import pytest
import torch

import tnpx
from tests.helpers.small_models import make_task, predict, small_model
from tnpx.checkpoint import read_checkpoint
from tnpx.config import ConfigError, load_config
from tnpx.likelihoods import (
    FAMILIES,
    HeteroscedasticGaussian,
    HomoscedasticGaussian,
    build_likelihood,
    parse_likelihood,
)


def test_todays_names_are_the_gaussian_family():
    assert parse_likelihood("heteroscedastic") == ("gaussian", {"noise": "heteroscedastic"})
    assert isinstance(build_likelihood("gaussian", 1, 1e-3), HeteroscedasticGaussian)
    homo = build_likelihood({"name": "gaussian", "noise": "homoscedastic"}, 2, 1e-3)
    assert isinstance(homo, HomoscedasticGaussian) and homo.n_params == 2


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_builds_by_name_and_by_mapping(family):
    by_name = build_likelihood(family, 2, 1e-3)
    by_mapping = build_likelihood({"name": family}, 2, 1e-3)
    assert by_name.family == by_mapping.family == family
    assert by_name.n_params == by_mapping.n_params >= 2


def test_options_set_the_head():
    assert build_likelihood({"name": "mixture", "components": 5}, 1, 1e-3).n_params == 15
    assert build_likelihood({"name": "beta", "spikes": True}, 1, 1e-3).n_params == 4
    assert build_likelihood({"name": "lowrank-gaussian", "rank": 2}, 3, 1e-3).n_params == 12
    shared = build_likelihood({"name": "student-t", "df": "shared"}, 2, 1e-3)
    assert shared.n_params == 4 and shared.raw_df.shape == (2,)
    head = build_likelihood({"name": "gaussian", "transform": "exp", "min_std": 0.2}, 1, 1e-3)
    assert head.transform == "exp" and head.min_std == 0.2


@pytest.mark.parametrize(
    "option, message",
    [
        ("laplace", "likelihood 'laplace' is unknown; valid choices: heteroscedastic, homo"),
        ({"components": 2}, "has no name; valid names: heteroscedastic"),
        (3, "likelihood = 3; valid choices: heteroscedastic"),
        ({"name": "poisson", "rank": 2}, r"likelihood poisson does not take \['rank'\]; it takes"),
        ({"name": "mixture", "spikes": True}, "it takes: components, min_std"),
        ({"name": "student-t", "df": "per-output"}, "df must be one of"),
        ({"name": "mixture", "components": 0}, "components must be an integer >= 1"),
        ({"name": "beta", "spikes": "yes"}, "spikes must be true or false"),
        ({"name": "lowrank-gaussian", "rank": 0}, "rank must be an integer >= 1"),
        ({"name": "gaussian", "noise": "loud"}, "noise must be one of"),
        ({"name": "poisson", "overdispersion": "gamma"}, "overdispersion must be one of"),
        ({"name": "gaussian", "min_std": -1}, "min_std must be a number >= 0"),
    ],
)
def test_bad_options_are_one_line_naming_the_choices(option, message):
    with pytest.raises(ValueError, match=message) as err:
        build_likelihood(option, 2, 1e-3)
    assert "\n" not in str(err.value)


def test_todays_names_predict_as_before():
    xc, yc, xt = make_task(2, 5, 6, seed=3)
    for legacy, new in (
        ("heteroscedastic", "gaussian"),
        ("heteroscedastic", {"name": "gaussian"}),
        ("homoscedastic", {"name": "gaussian", "noise": "homoscedastic"}),
    ):
        old = predict(small_model("tnp", likelihood=legacy), xc, yc, xt)
        now = predict(small_model("tnp", likelihood=new), xc, yc, xt)
        assert torch.equal(old.mean, now.mean) and torch.equal(old.stddev, now.stddev)


def test_build_model_takes_a_mapping():
    model = tnpx.build_model("tnp", 1, 2, likelihood={"name": "negative-binomial"})
    assert model.likelihood.family == "negative-binomial"
    assert model.config["hyper"]["likelihood"] == {"name": "negative-binomial"}


def test_config_takes_a_name_and_a_mapping(tmp_path):
    assert load_config(None, ["model.likelihood=poisson"]).model["likelihood"] == "poisson"
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  name: tnp\n  likelihood: {name: mixture, components: 2}\n")
    assert load_config(path).model["likelihood"] == {"name": "mixture", "components": 2}


@pytest.mark.parametrize(
    "value, message",
    [
        ("{name: mixture, components: 0}", "model.likelihood = .*components must be an integer"),
        ("laplace", "model.likelihood = 'laplace': likelihood 'laplace' is unknown; valid"),
        ("{name: poisson, df: shared}", "poisson does not take"),
    ],
)
def test_config_refuses_a_bad_likelihood_in_one_line(tmp_path, value, message):
    path = tmp_path / "c.yaml"
    path.write_text(f"model:\n  name: tnp\n  likelihood: {value}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_config_refuses_lowrank_for_one_output(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  name: tnp\n  dim_y: 1\n  likelihood: lowrank-gaussian\n")
    with pytest.raises(ConfigError, match="needs dim_y >= 2"):
        load_config(path)


def test_a_mapping_survives_a_checkpoint(tmp_path):
    option = {"name": "beta", "spikes": True}
    model = small_model("tnp", likelihood=option)
    path = tmp_path / "m.pt"
    tnpx.save(model, path)
    record = read_checkpoint(path)
    assert type(record["model"]["hyper"]["likelihood"]) is dict  # plain data
    loaded = tnpx.load(path).eval()
    assert loaded.hyper.likelihood == option and loaded.likelihood.family == "beta"
    xc, yc, xt = make_task(2, 5, 6, seed=4)
    yc = torch.sigmoid(yc)
    a, b = predict(model, xc, yc, xt), predict(loaded, xc, yc, xt)
    assert torch.equal(a.mean, b.mean) and torch.equal(a.weights, b.weights)


def test_a_mapping_may_use_todays_names():
    head = build_likelihood({"name": "homoscedastic", "min_std": 0.1}, 2, 1e-3)
    assert isinstance(head, HomoscedasticGaussian) and head.min_std == 0.1
