"""Tasks scaled as tnpx.predict scales a user's task (data/context_scaling.py): equal to a
float64 re-derivation through predict's own unit maps, task by task; p = 0 changes nothing."""

import numpy as np
import pytest
import torch

from tnpx.apply.unit_choice import fit_units
from tnpx.data import batch_at, build_sampler
from tnpx.data.context_scaling import scale_like_predict

GP = dict(kernels=["rbf", "periodic"], layout="uniform", ctx_range=[-2.0, 2.0],
          tgt_range=[-6.0, 6.0], n_tgt=20, min_ctx=2, max_ctx=30)  # fmt: skip


def _assert_mapped_by_predict(raw, scaled, b: int, x_names: list[str]) -> None:
    """Task ``b`` of ``scaled`` is task ``b`` of ``raw`` through predict's own unit maps
    (float64), its context's range on [-2, 2] in every input column, its outputs centred."""
    xc, yc = raw.xc[b].double().numpy(), raw.yc[b].double().numpy()
    xt, yt = raw.xt[b].double().numpy(), raw.yt[b].double().numpy()
    units, _ = fit_units(xc, yc, xt, x_names, ["y"], (-2.0, 2.0), None, True, None)
    for got, want in [
        (scaled.xc[b], units.inputs(xc)),
        (scaled.yc[b], units.outputs(yc)),
        (scaled.xt[b], units.inputs(xt)),
        (scaled.yt[b], units.outputs(yt)),
    ]:
        np.testing.assert_allclose(got.double().numpy(), want, rtol=1e-5, atol=1e-5)
    for axis in range(len(x_names)):  # each column on its own
        assert scaled.xc[b, :, axis].min() == pytest.approx(-2.0, abs=1e-5)
        assert scaled.xc[b, :, axis].max() == pytest.approx(2.0, abs=1e-5)
    assert scaled.yc[b].mean() == pytest.approx(0.0, abs=1e-5)


def test_each_task_is_mapped_by_predicts_unit_maps():
    batch = batch_at(build_sampler("gp", 8, 3, **GP), 0)
    scaled = scale_like_predict(batch, (-2.0, 2.0))
    for b in range(8):
        _assert_mapped_by_predict(batch, scaled, b, ["x"])
    assert scaled.info == {}  # the GP oracle's hyper-parameters no longer describe the tasks


def test_unchosen_tasks_and_the_input_batch_are_unchanged():
    batch = batch_at(build_sampler("gp", 6, 1, **GP), 2)
    before = batch.xc.clone()
    chosen = torch.tensor([True, False, True, False, False, True])
    scaled = scale_like_predict(batch, (-2.0, 2.0), chosen)
    assert torch.equal(batch.xc, before)
    assert torch.equal(scaled.xc[~chosen], batch.xc[~chosen])
    assert torch.equal(scaled.yt[~chosen], batch.yt[~chosen])
    assert not torch.allclose(scaled.yc[chosen], batch.yc[chosen])


def test_a_context_without_spread_keeps_its_inputs():
    batch = batch_at(build_sampler("gp", 4, 0, **{**GP, "min_ctx": 1, "max_ctx": 1}), 0)
    scaled = scale_like_predict(batch, (-2.0, 2.0))
    assert torch.equal(scaled.xc, batch.xc) and torch.equal(scaled.xt, batch.xt)
    assert torch.allclose(scaled.yc, torch.zeros_like(scaled.yc))  # y - y (scale 1)


def test_the_sampler_option():
    plain = batch_at(build_sampler("gp", 16, 5, **GP), 4)
    off = batch_at(build_sampler("gp", 16, 5, **GP, context_scaling=0.0), 4)
    assert torch.equal(plain.yt, off.yt) and "kernel" in off.info
    on = batch_at(build_sampler("gp-composite", 16, 5, **GP, context_scaling=1.0), 4)
    assert torch.allclose(on.yc.mean(1), torch.zeros(16, 1), atol=1e-5)
    with pytest.raises(ValueError, match="context_scaling must lie in"):
        build_sampler("gp", 4, 0, **GP, context_scaling=1.5)


GP2D = dict(min_ctx=5, max_ctx=30, n_tgt=20, tgt_box=[-6.0, 6.0])


def test_the_2d_sampler_maps_each_input_column_as_predict_does():
    """gp2d-composite's option: the same tasks as without it, each mapped by predict's unit
    maps with two input columns (each column's context range onto the box)."""
    raw = batch_at(build_sampler("gp2d-composite", 6, 2, **GP2D), 1)
    on = batch_at(build_sampler("gp2d-composite", 6, 2, **GP2D, context_scaling=1.0), 1)
    for b in range(6):
        _assert_mapped_by_predict(raw, on, b, ["east", "north"])
    assert on.info == {} and "transform" in raw.info


def test_the_2d_sampler_without_the_option_draws_the_same_batches():
    raw = batch_at(build_sampler("gp2d-composite", 8, 3, **GP2D), 0)
    off = batch_at(build_sampler("gp2d-composite", 8, 3, **GP2D, context_scaling=0.0), 0)
    assert torch.equal(raw.xc, off.xc) and torch.equal(raw.yt, off.yt) and "kernel" in off.info
    half = batch_at(build_sampler("gp2d-composite", 8, 3, **GP2D, context_scaling=0.5), 0)
    kept = (half.xc == raw.xc).all(2).all(1)  # the tasks left raw are bit for bit the same
    assert 0 < int(kept.sum()) < 8  # this seed maps some tasks and leaves others
    with pytest.raises(ValueError, match="context_scaling must lie in"):
        build_sampler("gp2d-composite", 4, 0, **GP2D, context_scaling=-0.1)
