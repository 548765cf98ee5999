"""A data source's default model options (tnpx.config.source_defaults): the grid source
centres each task's outputs unless the config says otherwise."""

import pytest

from tnpx.config import config_from_yaml, config_to_yaml, load_config

GRID = {"name": "grid", "path": "field.nc", "y": ["t"]}


def _model(model: dict, data: dict = GRID) -> dict:
    return load_config({"model": model, "data": data}).model


def test_a_grid_config_centres_the_outputs_by_default():
    assert _model({"name": "tnp"})["centre_outputs"] is True


def test_the_config_s_own_choice_wins():
    assert _model({"name": "tnp", "centre_outputs": False})["centre_outputs"] is False
    cfg = load_config({"model": {"name": "tnp"}, "data": GRID}, ["model.centre_outputs=false"])
    assert cfg.model["centre_outputs"] is False


@pytest.mark.parametrize(
    ("model", "data"),
    [
        ({"name": "tnp"}, {"name": "gp"}),  # a prior's draws: no default
        ({"name": "tnp"}, {"name": "table", "path": "t.csv", "task": "id", "x": ["a"], "y": ["b"]}),
        ({"name": "tnp-nd"}, GRID),  # a joint prediction cannot be shifted
        ({"name": "np"}, GRID),  # latent: random
        ({"name": "tnp", "likelihood": "poisson"}, GRID),  # counts are not shifted
        ({"name": "context-moments"}, GRID),  # no likelihood head, no option
    ],
)
def test_no_default_where_the_source_or_model_does_not_take_it(model, data):
    assert "centre_outputs" not in _model(model, data)


def test_the_default_is_recorded_and_read_back_unchanged():
    cfg = load_config({"model": {"name": "tnp"}, "data": GRID})
    again = config_from_yaml(config_to_yaml(cfg))
    assert again.model["centre_outputs"] is True


def test_a_recorded_config_without_the_option_stays_without_it():
    """An old run's recorded config (config.yaml, a checkpoint's experiment) is read as it
    is: its model did not centre, and reading it must not change that."""
    cfg = load_config({"model": {"name": "tnp", "centre_outputs": False}, "data": GRID})
    text = config_to_yaml(cfg).replace("  centre_outputs: false\n", "")
    assert "centre_outputs" not in config_from_yaml(text).model
