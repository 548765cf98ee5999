"""Per-prefix learning-rate multipliers (``optim.lr_multipliers``, tnpx.training.optim)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tests.helpers.tiny import tiny_overrides, write_tiny
from tnpx.config import OptimConfig, load_config
from tnpx.config.experiment import read_yaml
from tnpx.models import build_model
from tnpx.training.loop import fit
from tnpx.training.optim import build_optimizer, build_schedule, clip_gradients, parameter_groups


def _model():
    return build_model("cnp", 1, 1, dim_model=8, likelihood="homoscedastic")


def test_groups_take_the_longest_matching_prefix():
    model = _model()
    cfg = OptimConfig(lr=1e-3, lr_multipliers={"encoder": 100, "encoder.mlp.0": 10})
    groups = parameter_groups(model.named_parameters(), cfg)
    by_lr = {round(g["lr"], 9): g["params"] for g in groups}
    assert set(by_lr) == {1e-3, 1e-2, 1e-1}
    assert by_lr[1e-2] == [model.encoder.mlp[0].weight, model.encoder.mlp[0].bias]
    assert model.encoder.mlp[2].weight in by_lr[1e-1] and model.likelihood.raw_std in by_lr[1e-3]
    n_params = sum(len(g["params"]) for g in groups)
    assert n_params == len(list(model.parameters()))


def test_prefix_must_match_whole_name_segments():
    model = _model()
    with pytest.raises(ValueError, match="match no trainable parameter.*likelihood"):
        parameter_groups(model.named_parameters(), OptimConfig(lr_multipliers={"likeli": 2}))


@pytest.mark.parametrize("factor", [0, -1.0, "fast", True])
def test_bad_factor_fails_clearly(factor):
    cfg = OptimConfig(lr_multipliers={"likelihood": factor})
    with pytest.raises(ValueError, match="positive number"):
        parameter_groups(_model().named_parameters(), cfg)


def test_schedule_keeps_the_ratio():
    model = _model()
    cfg = OptimConfig(lr=1e-3, lr_multipliers={"likelihood": 50})
    opt = build_optimizer(parameter_groups(model.named_parameters(), cfg), cfg)
    sched = build_schedule(opt, load_config(None).schedule, total_steps=10)
    for _ in range(4):
        opt.step()
        sched.step()
        base, fast = sorted(g["lr"] for g in opt.param_groups)
        assert fast == pytest.approx(50 * base)


@pytest.mark.filterwarnings("ignore:model.name=cnp")
def test_multiplier_moves_the_noise_scale_further(tmp_path):
    """The reason the option exists: Adam moves a parameter about lr per step, so in a short
    run a homoscedastic noise scale barely leaves its initial value unless its lr is raised."""
    path = write_tiny(tmp_path)

    def noise_after(run: str, *extra: str) -> float:
        overrides = tiny_overrides(tmp_path, out_dir=tmp_path / run, steps=30)
        cfg = load_config(
            path, [*overrides, "model.name=cnp", "model.likelihood=homoscedastic", *extra]
        )
        model = fit(cfg).model
        return F.softplus(model.likelihood.raw_std).item()

    plain = noise_after("plain")
    fast = noise_after("fast", "optim.lr_multipliers={likelihood: 100}")
    assert abs(plain - 0.5) < 0.05  # the initial noise scale is 0.5
    assert abs(fast - 0.5) > 3 * abs(plain - 0.5)


def test_clip_gradients_clamps_values_then_the_joint_norm():
    def params():
        a, b = torch.zeros(3, requires_grad=True), torch.zeros(2, requires_grad=True)
        a.grad, b.grad = torch.tensor([3.0, -0.2, 0.4]), torch.tensor([-4.0, 0.1])
        return [a, b]

    untouched = params()
    clip_gradients(untouched, None, None)
    torch.testing.assert_close(untouched[0].grad, torch.tensor([3.0, -0.2, 0.4]))
    both = params()
    clip_gradients(iter(both), 0.5, 0.1)  # any iterable, as the trainer's parameter lists
    clamped = torch.tensor([0.5, -0.2, 0.4, -0.5, 0.1], dtype=torch.float64)
    expected = clamped * 0.1 / clamped.norm()  # float64: the re-derivation
    got = torch.cat([both[0].grad, both[1].grad])
    torch.testing.assert_close(got, expected.float(), rtol=1e-5, atol=1e-7)
    small = params()
    clip_gradients(small, None, 100.0)  # a norm under the limit is left alone
    torch.testing.assert_close(small[1].grad, torch.tensor([-4.0, 0.1]))


def test_default_schedule_is_the_time_to_accuracy_recipe():
    # warm-up over 4 % of the run, then cosine to 1 % of the rate (results/time-to-accuracy/)
    cfg = load_config(None, ["train.steps=1000"])
    assert cfg.schedule.warmup(cfg.train.steps) == 40
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    schedule = build_schedule(opt, cfg.schedule, cfg.train.steps)
    rates = []
    for _ in range(1000):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        schedule.step()
    assert rates[0] == pytest.approx(1 / 40) and rates[39] == pytest.approx(1.0)
    assert rates[-1] == pytest.approx(0.01, abs=1e-4)
    assert load_config(None, ["schedule.warmup_steps=0"]).schedule.warmup(1000) == 0


CONFIGS = sorted(  # the BO benchmarks' configs (with `notes`) train nothing themselves
    p
    for p in (Path(__file__).parents[2] / "configs").rglob("*.yaml")
    if "notes:" not in p.read_text()
)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_shipped_config_states_its_schedule(path):
    # the defaults are the user's recipe and may change; a paper config, a zoo config or a
    # worked example must not change with them
    schedule = read_yaml(path).get("schedule", {})
    assert "warmup_steps" in schedule and "min_lr_ratio" in schedule, path.name
