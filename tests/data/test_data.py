"""Task samplers (tnpx.data): a batch is a function of seed, step, rank and split alone;
unknown samplers and options are errors naming the valid ones; ``Batch``'s selection and
moves. The GP layouts are tested in ``test_data_layouts.py``, the GP priors in
``test_data_priors.py``."""

from __future__ import annotations

import pytest
import torch

from tnpx.batch import Batch
from tnpx.data import (
    SPLITS,
    batch_at,
    build_sampler,
    sampler_options,
    task_generator,
)

SAMPLER_NAMES = ["gp", "sawtooth"]


def assert_batches_equal(a: Batch, b: Batch):
    for name in ("xc", "yc", "xt", "yt"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert a.info.keys() == b.info.keys()
    for k in a.info:
        assert torch.equal(a.info[k], b.info[k]), k


def batches_differ(a: Batch, b: Batch) -> bool:
    if a.xt.shape != b.xt.shape or a.xc.shape != b.xc.shape:
        return True
    return not (torch.equal(a.xt, b.xt) and torch.equal(a.yt, b.yt) and torch.equal(a.yc, b.yc))


# --- reproducibility --------------------------------------------------------------------


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_batch_is_a_function_of_seed_step_rank_split(name):
    sampler = build_sampler(name, batch_size=4, seed=7)
    ref = batch_at(sampler, step=3, rank=1, split="train")
    assert_batches_equal(ref, batch_at(sampler, step=3, rank=1, split="train"))
    # a freshly built sampler with the same seed gives the same stream
    assert_batches_equal(ref, batch_at(build_sampler(name, batch_size=4, seed=7), 3, 1, "train"))
    assert batches_differ(ref, batch_at(sampler, step=4, rank=1, split="train"))
    assert batches_differ(ref, batch_at(sampler, step=3, rank=0, split="train"))
    assert batches_differ(ref, batch_at(sampler, step=3, rank=1, split="val"))
    assert batches_differ(ref, batch_at(sampler, step=3, rank=1, split="test"))
    assert batches_differ(ref, batch_at(build_sampler(name, batch_size=4, seed=8), 3, 1, "train"))


def test_splits_never_share_a_stream():
    draws = {
        (split, step, rank): torch.rand(4, generator=task_generator(0, split, step, rank))
        for split in SPLITS
        for step in range(3)
        for rank in range(2)
    }
    values = list(draws.values())
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            assert not torch.equal(values[i], values[j])


def test_task_generator_rejects_unknown_split():
    with pytest.raises(ValueError, match="train"):
        task_generator(0, "validation", 0)


def test_batch_size_override():
    sampler = build_sampler("gp", batch_size=4, seed=0)
    assert batch_at(sampler, 0).batch_size == 4
    assert batch_at(sampler, 0, batch_size=2).batch_size == 2


def test_sampler_uses_only_its_generator():
    sampler = build_sampler("gp", batch_size=3, seed=0)
    torch.manual_seed(0)
    a = batch_at(sampler, 5)
    torch.manual_seed(123)
    torch.rand(10)
    assert_batches_equal(a, batch_at(sampler, 5))


# --- configuration errors ---------------------------------------------------------------


def test_unknown_sampler_lists_valid_ones():
    with pytest.raises(ValueError) as err:
        build_sampler("mnist")
    for name in SAMPLER_NAMES:
        assert name in str(err.value)


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_unknown_option_lists_valid_ones(name):
    with pytest.raises(ValueError) as err:
        build_sampler(name, not_an_option=1)
    msg = str(err.value)
    assert "not_an_option" in msg
    for option in sampler_options(name):
        assert option in msg


@pytest.mark.parametrize(
    "options",
    [
        {"layout": "grid"},
        {"lengthscale_prior": "gamma"},
        {"period_prior": "beta"},
        {"noise_prior": "gamma"},
        {"noise_prior": "loguniform", "noise_range": [0.0, 0.1]},
        {"min_ctx": 10, "max_ctx": 5},
        {"min_ctx": -1},
        {"max_ctx": 60},  # exceeds n_random=50 in the kr layout
    ],
)
def test_invalid_gp_options(options):
    with pytest.raises(ValueError) as err:
        build_sampler("gp", **options)
    value = next(iter(options.values()))
    assert str(value) in str(err.value)


@pytest.mark.parametrize(
    "options",
    [
        {"dim_x": 1, "direction": "restricted"},
        {"dim_x": 3},
        {"dim_x": 2, "direction": "diagonal"},
    ],
)
def test_invalid_sawtooth_options(options):
    with pytest.raises(ValueError):
        build_sampler("sawtooth", **options)


# --- Batch ------------------------------------------------------------------------------


def test_batch_select_and_to():
    b = batch_at(build_sampler("gp", batch_size=4, seed=0), 0)
    sub = b.select(slice(1, 3))
    assert sub.batch_size == 2
    assert torch.equal(sub.xc, b.xc[1:3]) and torch.equal(sub.yt, b.yt[1:3])
    assert torch.equal(sub.info["lengthscale"], b.info["lengthscale"][1:3])
    idx = torch.tensor([3, 0])
    assert torch.equal(b.select(idx).yc, b.yc[idx])
    moved = b.to("cpu")
    assert_batches_equal(moved, b)
    assert moved.mask_c is None
