"""``tnpx.train``: the Python entry point the ``tnpx train`` command calls."""

from __future__ import annotations

import pytest
import torch

import tnpx
from tnpx.config import ConfigError, load_config
from tnpx.training.loop import fit


def _config(out_dir, steps: int = 6) -> dict:
    return {
        "model": {"name": "cnp", "dim_model": 16},
        "data": {"name": "gp", "batch_size": 4},
        "train": {"steps": steps, "log_every": 3, "val_every": 3, "checkpoint_every": 3,
                  "val_batches": 2, "out_dir": str(out_dir), "progress": False},
    }  # fmt: skip


def test_a_mapping_trains_the_model_a_loaded_config_trains(tmp_path):
    by_train = tnpx.train(_config(tmp_path / "a"))
    by_fit = fit(load_config(_config(tmp_path / "b")))
    assert by_train.steps_done == 6 and (by_train.out_dir / "model.pt").exists()
    for (name, value), other in zip(
        by_train.model.state_dict().items(), by_fit.model.state_dict().values()
    ):
        torch.testing.assert_close(value, other, rtol=0, atol=0, msg=name)


def test_overrides_apply_on_top_and_a_bad_key_is_named(tmp_path):
    result = tnpx.train(_config(tmp_path / "run"), ["train.steps=3"])
    assert result.steps_done == 3
    with pytest.raises(ConfigError, match="stepz"):
        tnpx.train(_config(tmp_path / "other"), ["train.stepz=3"])


def test_a_run_folder_is_never_silently_overwritten(tmp_path):
    tnpx.train(_config(tmp_path / "run"), max_minutes=10)
    with pytest.raises(ValueError, match="resume=True / overwrite=True"):
        tnpx.train(_config(tmp_path / "run"))
    again = tnpx.train(_config(tmp_path / "run", steps=9), resume=True)
    assert again.steps_done == 9  # continued from step 6
    fresh = tnpx.train(_config(tmp_path / "run", steps=3), overwrite=True)
    assert fresh.steps_done == 3


def test_a_loaded_config_takes_no_overrides_and_minutes_must_be_positive(tmp_path):
    cfg = load_config(_config(tmp_path / "run"))
    with pytest.raises(ValueError, match="edit the loaded config"):
        tnpx.train(cfg, ["train.steps=3"])
    with pytest.raises(ValueError, match="max_minutes"):
        tnpx.train(cfg, max_minutes=0)
