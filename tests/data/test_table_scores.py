"""Scores of the ``table`` source's padded batches over real targets only (each task's LL
alone, ``evaluate``, every model honouring target masks or refusing them), ``target_mean``'s
mask checks, and the split-aware sampling hook of ``batch_at``, which leaves samplers that do
not split tasks as they were; ``Batch.mask_t`` carried by moves and selections."""

from __future__ import annotations

import pytest
import torch

import tnpx
from tests.helpers.small_models import ALL_MODELS, small_model
from tests.helpers.table_curves import SPLIT_NAMES, curves
from tnpx.batch import Batch, target_mean
from tnpx.data import batch_at, build_sampler, task_generator
from tnpx.data.table import TableSampler
from tnpx.evaluation.protocol import Z95, evaluate

# --- scores over real targets ----------------------------------------------------------------


def _unpadded(batch: Batch, i: int) -> Batch:
    """Task ``i`` of ``batch`` alone, without padding."""
    nc = batch.xc.shape[1] if batch.mask_c is None else int(batch.mask_c[i].sum())
    nt = batch.xt.shape[1] if batch.mask_t is None else int(batch.mask_t[i].sum())
    task = slice(i, i + 1)
    return Batch(batch.xc[task, :nc], batch.yc[task, :nc], batch.xt[task, :nt], batch.yt[task, :nt])


def _tiny_tnp():
    torch.manual_seed(0)
    return tnpx.build_model(
        "tnp", 1, 1, dim_model=16, n_layers=1, n_heads=2, dim_head=8, dim_ff=16
    ).eval()


def test_masked_ll_equals_the_ll_of_each_task_alone():
    sampler = TableSampler.from_frame(curves(), task="curve", x=["t"], y=["v"], batch_size=6)
    batch = batch_at(sampler, 1)
    assert batch.mask_c is not None and batch.mask_t is not None
    model = _tiny_tnp()
    with torch.no_grad():
        ll = model.log_likelihood(batch)
        alone = torch.cat([model.log_likelihood(_unpadded(batch, i)) for i in range(6)])
        torch.testing.assert_close(ll, alone, rtol=1e-5, atol=1e-5)
        # padded targets' values count nowhere, NaN included
        garbage = batch.yt.masked_fill(~batch.mask_t[..., None], float("nan"))
        padded = Batch(batch.xc, batch.yc, batch.xt, garbage, batch.mask_c, {}, batch.mask_t)
        torch.testing.assert_close(model.log_likelihood(padded), ll)
    loss = model.training_loss(batch)
    torch.testing.assert_close(loss, -ll.mean())


def test_evaluate_scores_real_targets_only():
    frame = curves(n_tasks=60)
    sampler = TableSampler.from_frame(frame, task="curve", x=["t"], y=["v"], batch_size=4)
    model = _tiny_tnp()
    metrics = evaluate(model, sampler, n_batches=2)
    lls, covered = [], []
    with torch.no_grad():
        for step in range(2):
            batch = batch_at(sampler, step, split="test")
            for i in range(batch.batch_size):
                task = _unpadded(batch, i)
                pred = model.predict_batch(task)
                lls.append(model.log_likelihood(task, pred))
                inside = (task.yt - pred.mean).abs() <= Z95 * pred.stddev
                covered.append(inside.float().mean())
    assert metrics.n_tasks == 8
    assert metrics.ll == pytest.approx(torch.cat(lls).double().mean().item(), abs=1e-5)
    assert metrics.coverage95 == pytest.approx(torch.stack(covered).mean().item(), abs=1e-6)
    assert metrics.oracle_ll is None


def test_target_mean_checks_its_mask():
    values = torch.arange(6.0).reshape(2, 3)
    mask = torch.tensor([[True, True, False], [True, False, False]])
    torch.testing.assert_close(target_mean(values, mask), torch.tensor([0.5, 3.0]))
    torch.testing.assert_close(target_mean(values, None), values.mean(-1))
    with pytest.raises(ValueError, match="bool"):
        target_mean(values, mask.float())
    with pytest.raises(ValueError, match="shape"):
        target_mean(values, mask[:, :2])
    with pytest.raises(ValueError, match="task 1 has no real target"):
        target_mean(values, torch.tensor([[True, True, False], [False, False, False]]))


@pytest.mark.parametrize("name", [m for m in ALL_MODELS if m != "gp-oracle"])
def test_every_model_honours_target_masks_or_refuses_them(name):
    frame = curves(n_tasks=30, sizes=(5, 9))
    sampler = TableSampler.from_frame(frame, task="curve", x=["t"], y=["v"], batch_size=3)
    batch = batch_at(sampler, 0)
    assert batch.mask_t is not None and not batch.mask_t.all()
    pad = ~batch.mask_t[..., None]  # padded targets moved far off
    xt, yt = batch.xt.masked_fill(pad, 4.0), batch.yt.masked_fill(pad, 50.0)
    garbage = Batch(batch.xc, batch.yc, xt, yt, batch.mask_c, {}, batch.mask_t)
    model = small_model(name)
    for score in ("log_likelihood", "training_loss"):
        results = []
        for b in (batch, garbage):
            torch.manual_seed(0)
            try:
                with torch.no_grad():
                    results.append(getattr(model, score)(b))
            except ValueError as err:
                assert "does not support target masks" in str(err), err
                break
        else:
            torch.testing.assert_close(results[0], results[1], msg=f"{name}.{score}")


# --- split-aware sampling leaves other samplers as they were -----------------------------------


def test_batch_at_passes_the_split_only_to_samplers_that_split_tasks():
    gp = build_sampler("gp", batch_size=3, seed=4)
    for split in SPLIT_NAMES:
        direct = gp.sample(task_generator(4, split, 2, 1), None)
        via = batch_at(gp, 2, rank=1, split=split)
        for name in ("xc", "yc", "xt", "yt"):
            assert torch.equal(getattr(direct, name), getattr(via, name))
        assert via.mask_t is None and via.mask_c is None

    class Splitting:
        splits_tasks, dim_x, dim_y, seed, batch_size = True, 1, 1, 0, 1

        def sample(self, generator, batch_size=None, split="train"):
            return split

    assert batch_at(Splitting(), 0, split="test") == "test"


def test_batch_moves_and_selects_carry_the_target_mask():
    sampler = TableSampler.from_frame(curves(), task="curve", x=["t"], y=["v"], batch_size=4)
    batch = batch_at(sampler, 0)
    assert torch.equal(batch.to("cpu").mask_t, batch.mask_t)
    assert torch.equal(batch.select(slice(1, 3)).mask_t, batch.mask_t[1:3])
