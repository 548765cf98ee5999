"""``train.weight_init``: Flax's lecun_normal (truncated normal, variance 1/fan_in, zero bias)
or each layer's torch default; a fresh run uses it, init_from and resuming do not."""

from __future__ import annotations

import pytest
import torch

import tnpx
from tests.helpers.tiny import tiny_overrides, write_tiny
from tnpx.config import load_config
from tnpx.training.loop import fit
from tnpx.weight_init import initialise, lecun_normal_


def test_lecun_normal_has_the_variance_flax_gives_it():
    torch.manual_seed(0)
    w = torch.empty(400, 250)
    lecun_normal_(w)
    assert w.var().item() == pytest.approx(1 / 250, rel=0.02)
    assert w.abs().max().item() <= 2 * (1 / 250) ** 0.5 / 0.87962566103423978 + 1e-7


def test_every_linear_layer_changes_and_biases_are_zero():
    torch.manual_seed(0)
    model = tnpx.build_model("cnp", 1, 1, preset="kr-code")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert initialise(model, "default") == 0
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert initialise(model, "lecun_normal") == 11
    for name, value in model.state_dict().items():
        if name.endswith("bias"):
            assert not value.any(), name
        else:
            assert not torch.equal(value, before[name]), name
    with pytest.raises(ValueError, match="unknown weight_init 'xavier'"):
        initialise(model, "xavier")


def test_a_fresh_run_starts_from_it(tmp_path):
    over = tiny_overrides(tmp_path / "a", steps=1)
    cfg = load_config(
        write_tiny(tmp_path), [*over, "optim.lr=1.0e-12", "train.weight_init=lecun_normal"]
    )
    model = fit(cfg).model
    biases = [p for n, p in model.named_parameters() if n.endswith("bias")]
    assert max(b.abs().max().item() for b in biases) < 1e-6  # one step at a negligible rate
    with pytest.raises(ValueError, match="weight_init"):
        load_config(write_tiny(tmp_path), [*over, "train.weight_init=xavier"])
