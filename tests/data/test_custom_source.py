"""A user's own task source: named by file or module in a config, or registered from Python."""

from __future__ import annotations

import textwrap

import pytest
import torch

import tnpx
from tnpx.config import ConfigError, config_from_dict
from tnpx.data import SAMPLERS, batch_at, build_sampler, register_sampler
from tnpx.training.loop import fit

SOURCE = textwrap.dedent(
    """
    from dataclasses import dataclass
    import torch
    from tnpx.batch import Batch
    from tnpx.data import TaskSampler

    @dataclass
    class SinesConfig:
        amplitude: float = 1.0

    class Sines(TaskSampler):
        Config = SinesConfig
        dim_x = dim_y = 1

        def __init__(self, config=None, batch_size=16, seed=0):
            self.config, self.batch_size, self.seed = config or SinesConfig(), batch_size, seed

        def sample(self, generator, batch_size=None):
            b = batch_size or self.batch_size
            x = 4 * torch.rand(b, 40, 1, generator=generator) - 2
            phase = 6 * torch.rand(b, 1, 1, generator=generator)
            y = self.config.amplitude * torch.sin(3 * x + phase)
            return Batch(x[:, :10], y[:, :10], x[:, 10:], y[:, 10:])

    class NotASource:
        pass
    """
)


@pytest.fixture
def source_file(tmp_path, monkeypatch):
    (tmp_path / "my_sources.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    return "my_sources.py"


def test_a_file_named_in_the_config_is_a_source(source_file):
    sampler = build_sampler(f"{source_file}:Sines", batch_size=3, amplitude=2.0)
    batch = batch_at(sampler, step=5)
    again = batch_at(build_sampler(f"{source_file}:Sines", batch_size=3, amplitude=2.0), step=5)
    assert batch.xc.shape == (3, 10, 1) and batch.xt.shape == (3, 30, 1)
    assert torch.equal(batch.yt, again.yt)  # a batch is a function of (seed, step)
    assert batch.yt.abs().max() <= 2.0 and batch.yt.abs().max() > 1.0  # the option reached it


def test_training_from_a_config_on_a_users_source(source_file, tmp_path):
    cfg = config_from_dict(
        {
            "name": "custom",
            "model": {
                "name": "tnp",
                "dim_x": 1,
                "dim_y": 1,
                "dim_model": 16,
                "n_layers": 1,
                "n_heads": 2,
                "dim_ff": 16,
            },
            "data": {"name": f"{source_file}:Sines", "batch_size": 4, "amplitude": 1.5},
            "train": {
                "steps": 3,
                "out_dir": str(tmp_path / "run"),
                "progress": False,
                "val_every": 2,
            },
        }
    )
    fit(cfg)
    model = tnpx.load(tmp_path / "run" / "model.pt")
    assert model.dim_x == 1


def test_registered_from_python(source_file):
    import importlib.util

    spec = importlib.util.spec_from_file_location("my_sources_test", source_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        register_sampler("sines-test", module.Sines)
        assert build_sampler("sines-test", batch_size=2).dim_x == 1
        cfg = {"model": {"name": "tnp", "dim_x": 1, "dim_y": 1}, "data": {"name": "sines-test"}}
        config_from_dict(cfg)  # a registered name is a known sampler
        with pytest.raises(ValueError, match="exists already"):
            register_sampler("gp", module.Sines)
        with pytest.raises(ValueError, match="not a task source"):
            register_sampler("nothing", module.NotASource)
    finally:
        SAMPLERS.pop("sines-test", None)
        SAMPLERS.pop("nothing", None)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("gone.py:Sines", "no file gone.py"),
        ("my_sources.py:Missing", "has no 'Missing'"),
        ("my_sources.py:NotASource", "lacks dim_x, dim_y, sample, Config"),
        ("no_such_module_xyz:Sines", "cannot import no_such_module_xyz"),
        ("my_sources.py:", "FILE.py:Class"),
    ],
)
def test_bad_names_fail_in_one_line(source_file, name, message):
    with pytest.raises(ValueError, match=message) as err:
        build_sampler(name)
    assert "\n" not in str(err.value)


def test_a_config_checks_the_names_form_without_importing(source_file):
    cfg = {"model": {"name": "tnp", "dim_x": 1, "dim_y": 1}, "data": {"name": "elsewhere.py:X"}}
    config_from_dict(cfg)  # the file is not here: only training would import it
    with pytest.raises(ConfigError, match="FILE.py:Class"):
        config_from_dict({**cfg, "data": {"name": "elsewhere.py:not a name"}})


def test_unknown_options_of_a_users_source_are_named(source_file):
    with pytest.raises(ValueError, match="unknown option.*amplitud"):
        build_sampler(f"{source_file}:Sines", amplitud=2.0)
