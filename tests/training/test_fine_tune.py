"""``train.init_from``: a run starts from a checkpoint's weights (fine-tuning), a path or a
pretrained name; a checkpoint of another model or size fails in one line; resuming ignores it."""

from __future__ import annotations

import pytest
import torch

import tnpx
from tests.helpers.tiny import tiny_overrides, write_tiny
from tnpx.config import load_config
from tnpx.training.loop import fit, initialise_from


def _cfg(tmp_path, *extra, **train):
    return load_config(write_tiny(tmp_path), [*tiny_overrides(tmp_path, **train), *extra])


def test_a_run_starts_from_the_donors_weights(tmp_path):
    donor = fit(_cfg(tmp_path / "a", steps=30)).model
    path = tmp_path / "donor.pt"
    tnpx.save(donor, path)
    cfg = _cfg(tmp_path / "b", "optim.lr=1.0e-12", steps=1, seed=7, init_from=str(path))
    tuned = fit(cfg).model  # one step at a negligible rate: still the donor's weights
    for (name, a), b in zip(donor.state_dict().items(), tuned.state_dict().values()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0, msg=name)
    scratch = fit(_cfg(tmp_path / "c", "optim.lr=1.0e-12", steps=1, seed=7)).model
    differs = [not torch.allclose(a, b) for a, b in zip(scratch.parameters(), donor.parameters())]
    assert all(differs)  # without init_from the same run starts elsewhere


def test_a_checkpoint_of_another_size_fails_in_one_line(tmp_path):
    other = tnpx.build_model("tnp", 1, 1, dim_model=24, n_layers=1, n_heads=2, dim_head=8)
    path = tmp_path / "other.pt"
    tnpx.save(other, path)
    cfg = _cfg(tmp_path, steps=1, init_from=str(path))
    with pytest.raises(ValueError, match=r"train.init_from=.*other.pt: .*shape") as err:
        fit(cfg)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="holds a TNP.*builds a CNP"):
        initialise_from(tnpx.build_model("cnp", 1, 1), str(path))


def test_a_pretrained_name_is_a_donor():
    model = tnpx.build_model("tnp", 1, 1, dim_model=64, n_layers=4, n_heads=4, dim_head=16,
                             dim_ff=128, min_std=1e-3)  # fmt: skip
    initialise_from(model, "gp1d-tnp")
    shipped = tnpx.pretrained("gp1d-tnp").state_dict()
    assert all(torch.equal(v, shipped[k]) for k, v in model.state_dict().items())


def test_the_option_is_checked():
    from tnpx.config import config_from_dict

    with pytest.raises(ValueError, match="init_from"):
        config_from_dict({"train": {"init_from": ""}})
