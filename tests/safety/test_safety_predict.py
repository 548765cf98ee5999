"""Issue 23, prediction half: nothing lost, nothing silently wrong.

Outputs never overwrite an input and are written whole or not at all; inputs beyond the range
where a model's arithmetic stays finite are refused, and no non-finite prediction is ever
returned or written; the fitted GPs take inputs that require grad; `tnpx predict` reads and
writes the targets in chunks.
"""

from __future__ import annotations

import os
import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tests.helpers.small_models import small_model
from tnpx.apply import predict_steps
from tnpx.apply.predict import DataError
from tnpx.cli import main
from tnpx.cli.predict import PlotSample
from tnpx.input_checks import max_abs_input

SIZES = {"dim_model": 16, "n_layers": 1, "n_heads": 2, "dim_head": 8, "dim_ff": 16}
DOMAIN = ["--domain", "-2", "2"]
# Chunked against one-pass prediction of a float32 model: chunks change the matmul shapes, and
# some CPUs' kernels then sum in another order (3e-8 relative on the CI machine): a few ulps.
CHUNKED_RTOL = 1e-6


def tiny(name: str = "tnp", **sizes):
    torch.manual_seed(0)
    return tnpx.build_model(name, 1, 1, **(sizes or SIZES)).eval()


@pytest.fixture
def files(tmp_path):
    """A checkpoint, a context of 9 points and 40 targets, in ``tmp_path``."""
    tnpx.save(tiny(), tmp_path / "model.pt")
    rng = np.random.default_rng(0)
    x = rng.uniform(10, 30, 9)
    pd.DataFrame({"x": x, "y": 280 + 5 * np.sin(x / 3)}).to_csv(tmp_path / "ctx.csv", index=False)
    pd.DataFrame({"x": np.linspace(5, 35, 40)}).to_csv(tmp_path / "tgt.csv", index=False)
    return tmp_path


def run(tmp, *extra, model="model.pt", ctx="ctx.csv", tgt="tgt.csv") -> int:
    return main(
        ["predict", str(tmp / model), "--context", str(tmp / ctx), "--targets", str(tmp / tgt)]
        + [*DOMAIN, *extra]
    )


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("tnpx predict: error")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def snapshot(folder) -> dict:
    """Every file under ``folder`` and its bytes."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# -- 1. outputs never overwrite an input; written whole or not at all --------------------------
@pytest.mark.parametrize("option", ["--out", "--plot"])
@pytest.mark.parametrize("victim", ["ctx.csv", "tgt.csv", "model.pt"])
@pytest.mark.parametrize("spelling", ["same", "relative", "symlink", "hardlink"])
def test_an_output_that_is_an_input_is_refused(files, capsys, option, victim, spelling):
    target = files / victim
    if spelling == "relative":
        target = files / "sub" / ".." / victim
        (files / "sub").mkdir()
    elif spelling == "symlink":
        target = files / "alias"
        target.symlink_to(files / victim)
    elif spelling == "hardlink":
        target = files / "alias"
        os.link(files / victim, target)
    before = snapshot(files)
    assert run(files, option, str(target)) == 2
    line = one_error_line(capsys)
    assert f"{option} {target} is the " in line and "refusing to overwrite an input" in line
    assert snapshot(files) == before


def test_out_and_plot_on_one_file_are_refused(files, capsys):
    before = snapshot(files)
    assert run(files, "--out", str(files / "p.csv"), "--plot", str(files / "p.csv")) == 2
    assert "refusing to overwrite another output" in one_error_line(capsys)
    assert snapshot(files) == before


@pytest.mark.parametrize("existing", [False, True])
def test_a_failure_midway_leaves_no_output_and_no_temporary_file(files, capsys, existing):
    rows = [f"{x:.3f}" for x in np.linspace(5, 35, 40)]
    rows[33] = "oops"  # in the fifth chunk of 7 rows: four chunks were written before
    (files / "tgt.csv").write_text("x\n" + "\n".join(rows) + "\n")
    out = files / "pred.csv"
    if existing:
        out.write_text("an earlier result\n")
    before = snapshot(files)
    assert run(files, "--out", str(out), "--chunk-size", "7") == 2
    assert "tgt.csv, data row 34, column 'x': 'oops' is not a number" in one_error_line(capsys)
    assert snapshot(files) == before  # the old file untouched, nothing new, no .tmp


def test_a_result_is_written_whole_through_a_temporary_file(files, capsys, monkeypatch):
    seen = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (seen.append((a, b)), real(a, b)))
    out = files / "sub" / "pred.csv"
    assert run(files, "--out", str(out), "--plot", str(files / "pred.png")) == 0
    assert [b for _, b in seen] == [out, files / "pred.png"]
    assert all(a.parent == b.parent and a.name.startswith(".") for a, b in seen)
    assert len(pd.read_csv(out)) == 40 and not list(files.glob(".*tmp*"))


# -- 2. values beyond the safe range fail; nothing non-finite comes out ------------------------
PATTERNS = ["shifted", "opposite", "big-y"]


def task_at(m: float, pattern: str, dim_y: int, dtype) -> tuple:
    """``(xc, yc, xt)`` whose values reach magnitude ``m`` (never beyond it)."""
    g = torch.Generator().manual_seed(0)
    xc = torch.rand(2, 6, 1, generator=g, dtype=torch.float64) * 4 - 2
    yc = torch.randn(2, 6, dim_y, generator=g, dtype=torch.float64).clamp(-1, 1)
    xt = torch.rand(2, 5, 1, generator=g, dtype=torch.float64) * 4 - 2
    if pattern == "shifted":
        xc, xt = m - 2 - xc, m - 2 - xt
    elif pattern == "opposite":
        xc, xt = m - 2 - xc, 2 + xt - m
    else:
        yc = yc * m
    return xc.to(dtype), yc.to(dtype), xt.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_model_is_finite_at_the_bound_and_refuses_beyond(model_name, dtype, pattern):
    dim_y = 2 if model_name == "mt-gp" else 1
    model = small_model(model_name, 1, dim_y).to(dtype)
    bound = max_abs_input(dtype)
    xc, yc, xt = task_at(bound, pattern, dim_y, dtype)
    assert max(t.abs().max() for t in (xc, yc, xt)) <= bound
    torch.manual_seed(0)
    with torch.no_grad():
        pred = model(xc, yc, xt)
    assert torch.isfinite(pred.mean).all() and torch.isfinite(pred.stddev).all()
    beyond = task_at(bound * 10, pattern, dim_y, dtype)
    with pytest.raises(ValueError, match=r"^(xc|yc|xt): value .* is beyond \+-1e\+\d\d, the"):
        model(*beyond)


def test_the_bound_scales_with_the_dtype():
    assert max_abs_input(torch.float32) == 1e9 == max_abs_input(torch.bfloat16)
    assert max_abs_input(torch.float64) == 1e77 and max_abs_input(torch.float16) == 10
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        assert torch.isfinite(torch.tensor(max_abs_input(dtype), dtype=dtype) ** 4)


def test_a_nan_is_still_named_as_a_nan_before_a_large_value():
    xt = torch.tensor([[[1e20], [float("nan")]]])
    with pytest.raises(ValueError, match=r"xt: contains NaN or Inf \(first at index \[0, 1, 0\]"):
        tiny()(torch.zeros(1, 2, 1), torch.zeros(1, 2, 1), xt)


def test_predict_names_the_target_beyond_the_safe_range(files, capsys):
    ctx = pd.read_csv(files / "ctx.csv")
    tgt = pd.DataFrame({"x": [12.0, 20.0, 1e30, 25.0]})
    with pytest.raises(DataError, match=r"targets DataFrame, row 2, column 'x': 1e\+30 is .* in "):
        tnpx.predict(tiny(), ctx, tgt, domain=(-2, 2))
    (files / "far.csv").write_text("x\n12\n20\n1e30\n")
    assert run(files, "--out", str(files / "pred.csv"), tgt="far.csv") == 2
    line = one_error_line(capsys)
    assert "far.csv, data row 3, column 'x': 1e+30 is" in line and "+-1e+09" in line
    assert not (files / "pred.csv").exists()


def test_unscaled_context_values_beyond_the_safe_range_name_their_row(files):
    ctx = pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [0.0, 3e9, 1.0]})
    with pytest.raises(DataError, match=r"context DataFrame, row 1, column 'y': 3e\+09 is 3e\+09"):
        tnpx.predict(
            tiny(), ctx, pd.DataFrame({"x": [0.5]}), domain=(-2, 2), standardise_outputs=False
        )


def test_a_prediction_that_is_not_finite_names_its_row_and_column(files):
    ctx, tgt = pd.read_csv(files / "ctx.csv"), pd.read_csv(files / "tgt.csv")
    with pytest.raises(DataError, match=r"targets DataFrame, row \d+: the prediction 'y_\w+' is "):
        tnpx.predict(tiny(), ctx, tgt, domain=(-2, 2), output_scale=(0.0, 1e308))  # overflows

    model = tiny()
    real = model.predict_streamed

    def overflowing(xc, yc, xt, *args):  # a model that overflows at the fourth target
        pred = real(xc, yc, xt, *args)
        pred.scale[0, 3] = float("inf")
        return pred

    model.predict_streamed = overflowing
    with pytest.raises(DataError, match=r"row 3: the prediction 'y_std' is inf \(not finite\)"):
        tnpx.predict(model, ctx, tgt, domain=(-2, 2))


def test_a_context_too_wide_for_float64_is_named():
    ctx = pd.DataFrame({"x": [-1e308, 1e308], "y": [0.0, 1.0]})
    with pytest.raises(DataError, match=r"context DataFrame, column 'x': .* too large to scale"):
        tnpx.predict(tiny(), ctx, pd.DataFrame({"x": [0.0]}), domain=(-2, 2))


# -- 3. the fitted GPs take inputs that require grad -------------------------------------------
@pytest.mark.parametrize("name, dim_y", [("gp", 1), ("mt-gp", 2)])
def test_fitted_gps_give_gradients_to_their_inputs(name, dim_y):
    torch.manual_seed(0)
    model = tnpx.build_model(name, 1, dim_y, n_iterations=20)
    g = torch.Generator().manual_seed(1)
    xc, yc = torch.randn(2, 6, 1, generator=g), torch.randn(2, 6, dim_y, generator=g)
    xt = torch.randn(2, 4, 1, generator=g)
    with torch.no_grad():
        plain = model(xc, yc, xt)
    inputs = [t.clone().requires_grad_() for t in (xc, yc, xt)]
    pred = model(*inputs)
    (pred.mean.sum() + pred.stddev.sum()).backward()
    torch.testing.assert_close(pred.mean.detach(), plain.mean)
    assert all(t.grad is not None and torch.isfinite(t.grad).all() for t in inputs)
    assert all(t.grad.abs().sum() > 0 for t in inputs)
    # The fit does not depend on the targets, so d/dxt is exact: central differences agree.
    eps, total = 1e-2, []
    for sign in (1, -1):
        moved = xt.clone()
        moved[0, 0, 0] += sign * eps
        with torch.no_grad():
            p = model(xc, yc, moved)
        total.append(float(p.mean.sum() + p.stddev.sum()))
    assert (total[0] - total[1]) / (2 * eps) == pytest.approx(float(inputs[2].grad[0, 0, 0]), 1e-2)


@pytest.mark.parametrize("name, dim_y", [("gp", 1), ("mt-gp", 2)])
def test_fitted_gp_gradients_hold_the_hyper_parameters_fixed(name, dim_y):
    """With no fitting steps the hyper-parameters are fixed: the gradient in the context is
    then the exact derivative of the posterior (gradcheck)."""
    model = tnpx.build_model(name, 1, dim_y, n_iterations=0).double()
    g = torch.Generator().manual_seed(2)
    xc = torch.randn(1, 4, 1, generator=g, dtype=torch.float64)
    yc = torch.randn(1, 4, dim_y, generator=g, dtype=torch.float64)
    xt = torch.randn(1, 3, 1, generator=g, dtype=torch.float64)

    def moments(xc, yc, xt):
        pred = model(xc, yc, xt)
        return pred.mean, pred.stddev

    inputs = tuple(t.requires_grad_() for t in (xc, yc, xt))
    assert torch.autograd.gradcheck(moments, inputs)


# -- 4. `tnpx predict` reads and writes the targets in chunks ----------------------------------
def test_chunked_cli_equals_the_function_and_warns_once_over_all_chunks(files, capsys):
    xs = [f"{x:.3f}" for x in np.linspace(5, 35, 40)]
    xs[3] = xs[30] = "NaN"  # one missing value in the first chunk, one in the fifth
    xs[12], xs[25] = "200", "-150"  # far targets in two different chunks
    (files / "tgt.csv").write_text("x\n" + "\n".join(xs) + "\n")
    out = files / "pred.csv"
    assert run(files, "--out", str(out), "--chunk-size", "7", "--drop-missing") == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = tnpx.predict(
            files / "model.pt", files / "ctx.csv", files / "tgt.csv", domain=(-2, 2),
            drop_missing=True,
        )  # fmt: skip
    pd.testing.assert_frame_equal(
        pd.read_csv(out), expected.reset_index(drop=True), rtol=CHUNKED_RTOL
    )
    far = [w for w in warned if "extrapolate poorly" in w]
    dropped = [w for w in warned if "dropped" in w]
    assert len(far) == 1 and "2 of 38 targets" in far[0]
    assert len(dropped) == 1 and "dropped 2 of 40 rows" in dropped[0]
    assert "data row 4, data row 31" in dropped[0]


def test_the_model_sees_one_chunk_at_a_time(files, monkeypatch):
    sizes = []
    real = predict_steps.predict_arrays
    monkeypatch.setattr(
        predict_steps,
        "predict_arrays",
        lambda net, xc, yc, xt, chunk: (sizes.append(len(xt)), real(net, xc, yc, xt, chunk))[1],
    )
    assert run(files, "--out", str(files / "pred.csv"), "--chunk-size", "16") == 0
    assert sizes == [16, 16, 8]


def test_a_one_point_context_scales_by_the_targets_over_all_chunks(files, capsys):
    (files / "one.csv").write_text("x,y\n20,3\n")
    out = files / "pred.csv"
    assert run(files, "--out", str(out), "--chunk-size", "6", ctx="one.csv") == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = tnpx.predict(
            files / "model.pt", files / "one.csv", files / "tgt.csv", domain=(-2, 2)
        )
    pd.testing.assert_frame_equal(pd.read_csv(out), expected, rtol=CHUNKED_RTOL)
    assert expected.attrs["tnpx"]["input_ranges"]["x"] == [5.0, 35.0]


def test_a_model_that_cannot_stream_takes_all_targets_at_once(files, monkeypatch):
    torch.manual_seed(0)
    tnpx.save(tnpx.build_model("tnp-nd", 1, 1, **SIZES, rank=2), files / "nd.pt")
    sizes = []
    real = predict_steps.predict_arrays
    monkeypatch.setattr(
        predict_steps,
        "predict_arrays",
        lambda net, xc, yc, xt, chunk: (sizes.append(len(xt)), real(net, xc, yc, xt, chunk))[1],
    )
    assert run(files, "--out", str(files / "pred.csv"), "--chunk-size", "7", model="nd.pt") == 0
    assert sizes == [40]


def test_no_target_rows_is_an_error_in_chunked_mode(files, capsys):
    (files / "none.csv").write_text("x\n")
    assert run(files, "--out", str(files / "pred.csv"), "--chunk-size", "4", tgt="none.csv") == 2
    assert "none.csv: no targets to predict at (a header but no rows)" in one_error_line(capsys)
    assert not (files / "pred.csv").exists()


@pytest.mark.slow  # a subprocess per table size: ~12 s
def test_memory_of_the_table_is_bounded_by_the_chunk(files):
    """Python-side allocations (pandas, NumPy) of `tnpx predict`: with chunks of 1,024 rows
    they do not grow from 12,500 to 50,000 targets; in one chunk they do (the whole result
    alone is 2 MB at 50,000)."""
    peaks = {}
    for n, chunk in ((12_500, 1024), (50_000, 1024), (50_000, 50_000)):
        x = np.linspace(5, 35, n)
        np.savetxt(files / "big.csv", x, fmt="%.6f", header="x", comments="")
        tracemalloc.start()
        code = run(files, "--out", str(files / "p.csv"), "--chunk-size", str(chunk), tgt="big.csv")
        peaks[n, chunk] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        assert code == 0
    small, large, whole = peaks.values()
    assert large < 1.2 * small + 0.1, peaks
    assert whole > 3 * large, peaks


def test_plot_sample_keeps_evenly_spaced_rows_within_its_limit():
    sample = PlotSample(limit=100)
    for start in range(0, 1000, 37):
        stop = min(start + 37, 1000)
        sample.add(pd.DataFrame({"x": np.arange(start, stop)}))
    kept = sample.frame()["x"].to_numpy()
    assert 100 <= len(kept) <= 200
    assert (np.diff(kept) == sample.step).all() and kept[0] == 0
