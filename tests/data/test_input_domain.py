"""Each task sampler states its input domain (``input_domain``): the box its context inputs
are drawn from, shift included, or None where it has no box of inputs."""

from __future__ import annotations

import pytest
import torch

from tnpx.data import (
    SAMPLERS,
    ERA5Sampler,
    ImageSampler,
    KolmogorovSampler,
    batch_at,
    build_sampler,
)
from tnpx.data.base import TaskSampler, states_input_domain


def drawn_context_inputs(sampler, n_batches: int = 8) -> torch.Tensor:
    """Every context input of ``n_batches`` training batches, flattened ``[n]``."""
    return torch.cat([batch_at(sampler, step).xc.reshape(-1) for step in range(n_batches)])


@pytest.mark.parametrize(
    "name, options",
    [
        ("gp", {"layout": "kr", "domain": [-1.0, 3.0], "shift": 0.5}),
        ("gp", {"layout": "kr", "dim_x": 2, "n_grid": 5, "shift": -1.0}),
        ("gp", {"layout": "uniform", "ctx_range": [0.0, 2.0], "shift": 3.0}),
        ("gp", {"layout": "uniform", "input_distribution": "bimodal", "shift": 1.0}),
        ("sawtooth", {"ctx_range": [-1.0, 1.0], "shift": 2.0}),
        ("sawtooth", {"dim_x": 2, "direction": "restricted", "shift": -0.5}),
        ("gp2d-composite", {"max_ctx": 40, "n_tgt": 4, "scale": 2.0, "shift": 1.0}),
        ("gp-link", {"family": "poisson", "ctx_range": [-1.0, 3.0], "tgt_range": [-3.0, 5.0]}),
    ],
)
def test_input_domain_is_the_box_the_context_inputs_lie_in(name, options):
    sampler = build_sampler(name, batch_size=4, seed=0, **options)
    lo, hi = sampler.input_domain
    assert isinstance(lo, float) and isinstance(hi, float) and lo < hi
    xc = drawn_context_inputs(sampler).double()
    tol = 1e-5 * max(abs(lo), abs(hi))  # the batch holds float32
    assert xc.min() >= lo - tol and xc.max() <= hi + tol
    # ... and the smallest such box: the draws reach near both ends
    width = hi - lo
    assert xc.min() < lo + 0.1 * width and xc.max() > hi - 0.1 * width


def test_samplers_without_a_box_say_none():
    class Plain(TaskSampler):
        dim_x, dim_y, seed, batch_size = 1, 1, 0, 1

        def sample(self, generator, batch_size=None):
            raise NotImplementedError

    assert Plain().input_domain is None and not states_input_domain(Plain)
    for cls in (ImageSampler, ERA5Sampler, KolmogorovSampler):  # none stated (yet)
        assert not states_input_domain(cls)
    stating = [name for name, (cls, _) in SAMPLERS.items() if states_input_domain(cls)]
    assert stating == ["gp", "gp-composite", "gp2d-composite", "gp-link", "sawtooth"]


def test_predict_reads_the_domain_from_the_sampler_and_none_for_images():
    from tnpx.apply.predict import training_domain
    from tnpx.config import load_config

    shifted = load_config(None, ["data.name=sawtooth", "data.shift=1.5"])
    assert training_domain(shifted) == build_sampler("sawtooth", shift=1.5).input_domain
    assert training_domain(load_config(None, ["data.name=image"])) is None  # not built
