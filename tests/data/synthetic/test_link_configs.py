"""The likelihood configs (configs/likelihoods/*.yaml) load and build their ``gp-link``
sampler, and a model with today's Gaussian head trains on every family's tasks (the first
baseline of issue 52, item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import tnpx
from tnpx.config import config_from_yaml, config_to_yaml, load_config
from tnpx.data import batch_at, build_sampler
from tnpx.data.synthetic.link_families import FAMILIES
from tnpx.data.synthetic.link_priors import true_predictive_log_prob
from tnpx.likelihoods import family_of

FOLDER = Path(__file__).parents[3] / "configs" / "likelihoods"


def test_one_config_per_family_and_one_per_variant_of_the_study():
    from experiments.likelihoods.family_scores import VARIANTS

    variants = {stem for stem, _ in VARIANTS.values()} - set(FAMILIES)  # beta-skewed
    assert {p.stem for p in FOLDER.glob("*.yaml")} == set(FAMILIES) | variants
    for stem in variants:  # a variant is another task of one family's
        cfg = load_config(FOLDER / f"{stem}.yaml")
        assert cfg.data["family"] == family_of(cfg.model["likelihood"]) in FAMILIES
        assert cfg.train.out_dir == f"runs/likelihoods/{stem}"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_each_config_loads_and_builds_its_family_s_sampler(family):
    cfg = load_config(FOLDER / f"{family}.yaml")
    assert cfg.data["name"] == "gp-link" and cfg.data["family"] == family
    assert family_of(cfg.model["likelihood"]) == family and cfg.protocol == "budget"
    assert cfg.train.out_dir == f"runs/likelihoods/{family}"
    assert config_from_yaml(config_to_yaml(cfg)) == cfg  # as a run folder stores it
    sampler = build_sampler("gp-link", cfg.data["batch_size"], cfg.train.seed, **cfg.data_options())
    assert sampler.dim_y == cfg.model["dim_y"] and sampler.dim_x == cfg.model["dim_x"]
    batch = batch_at(sampler, 0, split="test")
    assert bool(torch.isfinite(true_predictive_log_prob(batch)).all())


TINY_MODEL = {
    "name": "tnp",
    "dim_model": 16,
    "n_layers": 1,
    "n_heads": 2,
    "dim_head": 8,
    "dim_ff": 16,
    "n_embed_hidden": 1,
    "n_decoder_hidden": 1,
}


@pytest.mark.parametrize("family", ["poisson", "bernoulli-gamma", "lowrank-gaussian"])
def test_the_gaussian_head_trains_on_the_tasks(family, tmp_path):
    # 50 steps of a tiny tnp with the default (Gaussian) likelihood: the loss falls and the
    # trained model's log-likelihood on test tasks beats the untrained one's
    dim_y = 2 if family == "lowrank-gaussian" else 1
    # counts at exposure 1, as configs/likelihoods/poisson.yaml: a Gaussian head cannot use
    # other exposures and refuses them (tnpx.models.exposure)
    ones = {"exposure_range": [1.0, 1.0]} if family == "poisson" else {}
    data = {"name": "gp-link", "family": family, "batch_size": 8, "n_tgt": 32, "max_ctx": 32}
    config = {
        "model": {**TINY_MODEL, "dim_x": 1, "dim_y": dim_y},
        "data": {**data, **ones},
        "optim": {"name": "adamw", "lr": 3.0e-3},
        "schedule": {"name": "constant", "warmup_steps": 0, "min_lr_ratio": 0.0},
        "train": {
            "steps": 50,
            "log_every": 10,
            "val_every": 50,
            "val_batches": 2,
            "checkpoint_every": 50,
            "progress": False,
            "out_dir": str(tmp_path / "run"),
        },
    }
    cfg = load_config(config)
    untrained = tnpx.build_model(
        "tnp", 1, dim_y, **{k: v for k, v in TINY_MODEL.items() if k != "name"}
    )
    sampler = build_sampler("gp-link", 16, 0, **cfg.data_options())
    batches = [batch_at(sampler, i, split="test") for i in range(4)]

    def score(model):
        with torch.no_grad():
            return torch.cat([model.log_likelihood(b) for b in batches]).mean().item()

    before = score(untrained.eval())
    result = tnpx.train(cfg)
    after = score(result.model.eval())
    assert result.steps_done == 50 and torch.isfinite(torch.tensor(result.final_loss))
    assert after > before + 0.2, (before, after)


def test_the_gaussian_head_refuses_count_tasks_of_varying_exposure():
    sampler = build_sampler("gp-link", 4, 0, family="poisson", exposure_range=[0.5, 2.0])
    model = tnpx.build_model("tnp", 1, 1, **{k: v for k, v in TINY_MODEL.items() if k != "name"})
    with pytest.raises(ValueError, match="only a model with likelihood poisson or negative-"):
        model.log_likelihood(batch_at(sampler, 0, split="test"))
