"""Missing output values in the ``table`` source (tnpx.data.table): masked, not dropped with
their row. Batches carry ``mask_yc`` / ``mask_yt`` equal to where the table has values, y is 0
where one is missing, normalisation uses observed values only, scores leave missing values out
(checked against float64 re-derivations), and what stays an error is one line."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tests.helpers.table_curves import columns, curves, normalised, task_rows
from tnpx.batch import Batch, observed_mean, observed_score, output_means
from tnpx.data import SPLITS, batch_at
from tnpx.data.stations import StationsSampler
from tnpx.data.table import TableSampler
from tnpx.evaluation.protocol import Z95, evaluate
from tnpx.evaluation.user_tasks import evaluate_tasks, per_task
from tnpx.user_files import DataError

SMALL = dict(dim_model=16, n_layers=1, n_heads=2, dim_head=8, dim_ff=16)


def gappy(frame: pd.DataFrame, share: float = 0.25, seed: int = 1) -> pd.DataFrame:
    """``frame`` (outputs ``v``, ``w``) with ``share`` of its rows missing one output (which
    one at random): every row keeps an observed output."""
    rng = np.random.default_rng(seed)
    frame = frame.copy()
    rows = rng.choice(len(frame), int(share * len(frame)), replace=False)
    which = rng.integers(0, 2, len(rows))
    frame.loc[frame.index[rows[which == 0]], "v"] = np.nan
    frame.loc[frame.index[rows[which == 1]], "w"] = np.nan
    return frame


def sampler_of(frame: pd.DataFrame, **options) -> TableSampler:
    return TableSampler.from_frame(frame, batch_size=6, **columns(dim_y=2), **options)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return gappy(curves(n_tasks=30, dim_y=2))


@pytest.fixture(scope="module")
def sampler(table) -> TableSampler:
    return sampler_of(table)


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


def points_of(b: Batch, t: int, split: str, sampler: TableSampler, frame: pd.DataFrame):
    """The table rows of task ``t`` of batch ``b`` in the order of its context then its targets,
    found by their input (distinct within a task), with the real slots of each set."""
    key = sampler.task_keys(split)[int(b.info["task"][t])]
    rows = task_rows(frame, "curve", key)
    x_model = normalised(sampler, rows.fillna(0.0))[:, 0]
    found = []
    for x, mask in ((b.xc, b.mask_c), (b.xt, b.mask_t)):
        real = torch.ones(x.shape[1], dtype=torch.bool) if mask is None else mask[t]
        at = [int(np.argmin(np.abs(x_model - float(v)))) for v in x[t, real, 0]]
        found.append((rows.iloc[at], real))
    return found, rows


# -- what a batch holds ------------------------------------------------------------------------
def test_the_table_says_it_has_missing_outputs(sampler, table):
    assert sampler.missing_outputs
    assert not sampler_of(table.fillna(1.0)).missing_outputs


@pytest.mark.parametrize("split", list(SPLITS))
def test_no_row_is_dropped(sampler, table, split):
    assert sum(len(sampler.task_keys(s)) for s in SPLITS) == table["curve"].nunique()
    b = batch_at(sampler, 0, split=split)
    for t in range(b.batch_size):
        (ctx, real_c), (tgt, real_t) = points_of(b, t, split, sampler, table)[0]
        key = sampler.task_keys(split)[int(b.info["task"][t])]
        n_rows = len(task_rows(table, "curve", key))
        # every point of the task is drawn (no max_tgt), each once
        assert int(real_c.sum()) + int(real_t.sum()) == n_rows
        assert len(set(ctx.index) | set(tgt.index)) == n_rows


@pytest.mark.parametrize("split", ["train", "test"])
def test_masks_are_where_the_table_has_values(sampler, table, split):
    seen_missing = False
    for step in range(3):
        b = batch_at(sampler, step, split=split)
        assert b.mask_yc is not None and b.mask_yt is not None
        assert b.mask_yc.shape == b.yc.shape and b.mask_yt.shape == b.yt.shape
        assert torch.isfinite(b.yc).all() and torch.isfinite(b.yt).all()
        for t in range(b.batch_size):
            found, _ = points_of(b, t, split, sampler, table)
            for (rows, real), y, mask_y in zip(found, (b.yc, b.yt), (b.mask_yc, b.mask_yt)):
                values = rows[["v", "w"]].to_numpy(np.float64)
                observed = ~np.isnan(values)
                assert np.array_equal(mask_y[t, real].numpy(), observed)
                want = normalised(sampler, rows.fillna(0.0))[:, 1:]
                got = y[t, real].numpy()
                np.testing.assert_allclose(got[observed], want[observed], rtol=1e-6)
                assert (got[~observed] == 0).all()
                seen_missing |= not observed.all()
            # padding is not a missing value
            for mask, mask_y in ((b.mask_c, b.mask_yc), (b.mask_t, b.mask_yt)):
                if mask is not None:
                    assert mask_y[t, ~mask[t]].all()
    assert seen_missing


def test_normalisation_uses_observed_values_only(sampler, table):
    train = table[table["curve"].isin(sampler.task_keys("train"))]
    norm = sampler.normalisation["y"]
    for j, col in enumerate(["v", "w"]):
        seen = train[col].dropna().to_numpy(np.float64)
        assert norm["loc"][j] == pytest.approx(seen.mean(), rel=1e-12)
        assert norm["scale"][j] == pytest.approx(seen.std(), rel=1e-12)


def test_gaps_change_nothing_else(table):
    """The same draws as the table filled in: inputs, padding and observed values agree, and a
    column without gaps keeps its normalisation exactly."""
    full = curves(n_tasks=30, dim_y=2)
    gaps, filled = sampler_of(table), sampler_of(full)
    assert gaps.normalisation["x"] == filled.normalisation["x"]
    for split in SPLITS:
        assert gaps.task_keys(split) == filled.task_keys(split)
        a, b = batch_at(gaps, 2, split=split), batch_at(filled, 2, split=split)
        assert torch.equal(a.xc, b.xc) and torch.equal(a.xt, b.xt)
        assert torch.equal(a.info["task"], b.info["task"])
        assert b.mask_yc is None and b.mask_yt is None
        w_only = sampler_of(table.assign(v=full["v"]))  # gaps in w alone: v is as filled in
        c = batch_at(w_only, 2, split=split)
        assert torch.equal(c.yc[..., 0], b.yc[..., 0]) and torch.equal(c.yt[..., 0], b.yt[..., 0])


def test_batches_move_and_select_with_their_masks(sampler):
    b = batch_at(sampler, 0)
    part = b.select(slice(1, 3))
    assert torch.equal(part.mask_yc, b.mask_yc[1:3]) and torch.equal(part.mask_yt, b.mask_yt[1:3])
    moved = b.to("cpu")
    assert torch.equal(moved.mask_yc, b.mask_yc) and torch.equal(moved.mask_yt, b.mask_yt)


# -- what stays an error -----------------------------------------------------------------------
def test_a_row_without_any_output_is_an_error(table):
    frame = table.copy()
    rows = frame.index[frame["curve"] == "c07"][:2]
    frame.loc[rows, ["v", "w"]] = np.nan
    with pytest.raises(DataError) as err:
        sampler_of(frame)
    text = one_line(err)
    assert "columns 'v', 'w'" in text and "2 row(s) missing every output in 1 task(s)" in text
    assert "task curve='c07'" in text and "not supported" in text


def test_a_missing_input_is_still_an_error(table):
    frame = table.copy()
    frame.loc[frame.index[frame["curve"] == "c03"][0], "t"] = np.nan
    with pytest.raises(DataError) as err:
        sampler_of(frame)
    text = one_line(err)
    assert "column 't'" in text and "task curve='c03'" in text and "missing input" in text


def test_an_output_missing_everywhere_is_still_an_error(table):
    with pytest.raises(DataError) as err:
        sampler_of(table.assign(w=np.nan))
    assert "column 'w'" in one_line(err) and "every value is missing" in str(err.value)


def test_an_output_missing_in_every_training_task_is_an_error(table, sampler):
    frame = table.copy()
    train = frame["curve"].isin(sampler.task_keys("train"))
    frame.loc[train, "v"] = frame.loc[train, "v"].fillna(2.0)  # every row keeps an output
    frame.loc[train, "w"] = np.nan
    with pytest.raises(DataError) as err:
        sampler_of(frame)
    assert "column 'w'" in one_line(err) and "training tasks" in str(err.value)


def test_an_output_whose_observed_values_never_change_is_an_error(table):
    frame = table.copy()
    frame.loc[frame["w"].notna(), "w"] = 1.5
    with pytest.raises(DataError) as err:
        sampler_of(frame)
    assert "column 'w'" in one_line(err) and "never changes" in str(err.value)


def test_a_value_that_is_not_a_number_is_still_named(table):
    frame = table.astype({"w": object})
    frame.loc[frame.index[5], "w"] = "n/a?"
    with pytest.raises(DataError) as err:
        sampler_of(frame)
    assert "column 'w'" in one_line(err) and "'n/a?'" in str(err.value)


# -- scores ------------------------------------------------------------------------------------
def reference_ll(b: Batch, mean, std) -> torch.Tensor:
    """Float64: per task, log-densities summed over a target's observed outputs, averaged over
    real targets with one."""
    out = []
    for t in range(b.batch_size):
        total, count = 0.0, 0
        for i in range(b.yt.shape[1]):
            if b.mask_t is not None and not b.mask_t[t, i]:
                continue
            seen = b.mask_yt[t, i]
            if not seen.any():
                continue
            y, m, s = (v[t, i, seen].double() for v in (b.yt, mean, std))
            total += float(
                (-0.5 * ((y - m) / s) ** 2 - s.log() - 0.5 * math.log(2 * math.pi)).sum()
            )
            count += 1
        out.append(total / count)
    return torch.tensor(out, dtype=torch.float64)


def test_the_loss_is_over_observed_values(sampler):
    torch.manual_seed(0)
    model = tnpx.build_model("tnp", 1, 2, missing_outputs=True, **SMALL)
    b = batch_at(sampler, 1)
    with torch.no_grad():
        pred = model.predict_batch(b)
        ll = model.log_likelihood(b, pred)
    want = reference_ll(b, pred.mean, pred.stddev)
    torch.testing.assert_close(ll.double(), want, rtol=1e-5, atol=1e-6)
    assert model.training_loss(b).item() == pytest.approx(-float(want.mean()), rel=1e-5)


def test_a_missing_targets_value_changes_no_score(sampler):
    torch.manual_seed(0)
    model = tnpx.build_model("tnp", 1, 2, missing_outputs=True, **SMALL).eval()
    b = batch_at(sampler, 1)
    moved = Batch(**{**b.__dict__, "yt": torch.where(b.mask_yt, b.yt, 1e3)})
    with torch.no_grad():
        assert torch.equal(model.log_likelihood(b), model.log_likelihood(moved))


def test_all_true_masks_score_as_no_masks_bit_for_bit(table):
    full = sampler_of(table.fillna(0.5))
    b = batch_at(full, 0)
    masked = Batch(
        **{**b.__dict__, "mask_yc": torch.ones_like(b.yc, dtype=torch.bool)},
    )
    masked.mask_yt = torch.ones_like(b.yt, dtype=torch.bool)
    for option in (False, True):
        torch.manual_seed(0)
        model = tnpx.build_model("tnp", 1, 2, missing_outputs=option, **SMALL)
        assert torch.equal(model.log_likelihood(b), model.log_likelihood(masked))
        assert torch.equal(model.training_loss(b), model.training_loss(masked))


def test_score_helpers_match_a_float64_rederivation():
    g = torch.Generator().manual_seed(3)
    values = torch.randn(4, 6, 3, generator=g)
    mask_t = torch.rand(4, 6, generator=g) > 0.2
    mask_t[:, 0] = True
    mask_y = torch.rand(4, 6, 3, generator=g) > 0.4
    mask_y[:, 0, 0] = True
    v, keep = values.double(), mask_y & mask_t[..., None]
    scored = keep.any(-1)
    want_score = (v * keep).sum(-1).sum(1) / scored.sum(1)
    want_mean = (v * keep).sum((1, 2)) / keep.sum((1, 2))
    want_outputs = (v * keep).sum(1) / keep.sum(1)  # NaN: 0 / 0
    torch.testing.assert_close(observed_score(values, mask_t, mask_y).double(), want_score)
    torch.testing.assert_close(observed_mean(values, mask_t, mask_y).double(), want_mean)
    torch.testing.assert_close(
        output_means(values, mask_t, mask_y).double(), want_outputs, equal_nan=True
    )
    with pytest.raises(ValueError, match="mask_yt: task 2 has no observed output"):
        observed_score(
            values, mask_t, torch.where(torch.arange(4)[:, None, None] == 2, False, mask_y)
        )
    with pytest.raises(ValueError, match=r"mask_yt: expected shape \[4, 6, 3\]"):
        observed_score(values, mask_t, mask_y[..., :2])


def test_evaluation_counts_observed_values_only(sampler):
    torch.manual_seed(0)
    model = tnpx.build_model("tnp", 1, 2, missing_outputs=True, **SMALL)
    metrics = evaluate(model, sampler, 2, oracle=False)
    lls, covered = [], []
    with torch.no_grad():
        for i in range(2):
            b = batch_at(sampler, i, split="test")
            pred = model.predict_batch(b)
            lls.append(reference_ll(b, pred.mean, pred.stddev))
            keep = b.mask_yt & (b.mask_t[..., None] if b.mask_t is not None else True)
            inside = ((b.yt - pred.mean).abs() <= Z95 * pred.stddev).double()
            covered.append((inside * keep).sum((1, 2)) / keep.sum((1, 2)))
    assert metrics.ll == pytest.approx(float(torch.cat(lls).mean()), rel=1e-5)
    assert metrics.coverage95 == pytest.approx(float(torch.cat(covered).mean()), rel=1e-6)


def test_task_scores_in_data_units_over_observed_values(sampler):
    """``tnpx eval``'s scores: LL, per-output RMSE and the baselines over observed values."""
    torch.manual_seed(0)
    model = tnpx.build_model("tnp", 1, 2, missing_outputs=True, **SMALL)
    rows = evaluate_tasks(model, sampler, 2, baselines=("context-moments",))
    norm = sampler.normalisation["y"]
    loc, scale = (torch.tensor(norm[k], dtype=torch.float64) for k in ("loc", "scale"))
    lls, errors = [], [[], []]
    with torch.no_grad():
        for i in range(2):
            b = batch_at(sampler, i, split="test")
            pred = model.predict_batch(b)
            y, mean = b.yt.double() * scale + loc, pred.mean.double() * scale + loc
            std = pred.stddev.double() * scale
            lls.append(
                reference_ll(
                    Batch(b.xc, b.yc, b.xt, y, b.mask_c, {}, b.mask_t, None, b.mask_yt), mean, std
                )
            )
            keep = b.mask_yt & (b.mask_t[..., None] if b.mask_t is not None else True)
            for d in range(2):
                for t in range(b.batch_size):
                    e = (y - mean)[t, keep[t, :, d], d]
                    if len(e):
                        errors[d].append(float(e.pow(2).mean().sqrt()))
    ours = rows[0]
    assert ours.ll == pytest.approx(float(torch.cat(lls).mean()), rel=1e-5)
    for d in range(2):
        assert ours.rmse[d] == pytest.approx(np.mean(errors[d]), rel=1e-5)
    assert all(np.isfinite(r.ll) and np.isfinite(r.rmse).all() for r in rows)


def test_context_moments_reads_each_outputs_observed_values(sampler):
    """Per output, the baseline's prediction is the one from that output's observed context
    points alone."""
    b = batch_at(sampler, 0, split="test")
    both = tnpx.build_model("context-moments", 1, 2).predict_batch(b)
    one = tnpx.build_model("context-moments", 1, 1)
    for d in range(2):
        for t in range(b.batch_size):
            keep = b.mask_yc[t, :, d] & (b.mask_c[t] if b.mask_c is not None else True)
            alone = one(b.xc[t : t + 1, keep], b.yc[t : t + 1, keep, d : d + 1], b.xt[t : t + 1])
            torch.testing.assert_close(both.mean[t, :, d], alone.mean[0, :, 0])
            torch.testing.assert_close(both.stddev[t, :, d], alone.stddev[0, :, 0])


def test_the_gp_baseline_fits_each_output_on_its_observed_context(sampler):
    pytest.importorskip("gpytorch")
    gp = tnpx.build_model("gp", 1, 2, n_iterations=20)
    scores = per_task(gp, sampler, 1)
    assert np.isfinite(scores["ll"]).all() and scores["mse"].shape == (6, 2)
    b = batch_at(sampler, 0, split="test")
    both = gp.predict_batch(b)
    one = tnpx.build_model("gp", 1, 1, n_iterations=20)
    for d in range(2):
        t = int(torch.argmax((~b.mask_yc[..., d]).sum(1)))  # the task missing most of it
        keep = b.mask_yc[t, :, d] & (b.mask_c[t] if b.mask_c is not None else True)
        alone = one(b.xc[t : t + 1, keep], b.yc[t : t + 1, keep, d : d + 1], b.xt[t : t + 1])
        torch.testing.assert_close(both.mean[t, :, d], alone.mean[0, :, 0], atol=1e-4, rtol=1e-3)
        torch.testing.assert_close(
            both.stddev[t, :, d], alone.stddev[0, :, 0], atol=1e-4, rtol=1e-3
        )


# -- the stations source -----------------------------------------------------------------------
def test_missing_outputs_flow_through_the_stations_source():
    rng = np.random.default_rng(0)
    hours = np.repeat(np.arange(60.0), 10)
    lat = np.tile(np.linspace(50, 55, 10), 60)
    frame = pd.DataFrame(
        {"hour": hours, "lat": lat, "temp": np.sin(hours / 5 + lat), "wind": np.cos(lat + hours)}
    )
    gaps = rng.choice(len(frame), 80, replace=False)
    frame.loc[gaps[:40], "temp"] = np.nan
    frame.loc[gaps[40:], "wind"] = np.nan
    sampler = StationsSampler.from_frame(
        frame, time="hour", coords=["lat"], y=["temp", "wind"], batch_size=4
    )
    assert sampler.missing_outputs
    seen = 0
    for step in range(4):
        b = batch_at(sampler, step)
        assert torch.isfinite(b.yc).all() and torch.isfinite(b.yt).all()
        seen += sum(int((~m).sum()) for m in (b.mask_yc, b.mask_yt) if m is not None)
    assert seen > 0
    torch.manual_seed(0)
    model = tnpx.build_model("te-tnp", 1, 2, missing_outputs=True, **SMALL)
    assert torch.isfinite(model.log_likelihood(batch_at(sampler, 0))).all()
