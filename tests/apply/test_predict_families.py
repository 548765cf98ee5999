"""``tnpx.predict`` for a model of every likelihood family (issue 52, item 3): the default
columns (mean, std and a central interval between the family's quantiles, inside its support),
``quantiles=`` columns, the family's own columns (``p_dry``, ``p_zero``), all in the user's
units with the stored scaling; a Gaussian model's result as before; bad ``quantiles`` refused
in one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tests.helpers.small_models import small_model
from tnpx.cli import main
from tnpx.data import TableSampler
from tnpx.likelihoods import quantile

QUANTILES = [0.1, 0.5, 0.9]
COUNTS = ("poisson", "negative-binomial", "poisson-lognormal")
# case -> (likelihood option, dim_y, the family's own column)
CASES = {
    "gaussian": ("heteroscedastic", 1, None),
    "student-t": ("student-t", 1, None),
    "bernoulli": ("bernoulli", 1, None),
    "bernoulli-gamma": ("bernoulli-gamma", 1, "p_dry"),
    "poisson": ("poisson", 1, "p_zero"),
    "negative-binomial": ("negative-binomial", 1, "p_zero"),
    "poisson-lognormal": ({"name": "poisson", "overdispersion": "lognormal"}, 1, "p_zero"),
    "beta": ("beta", 1, None),
    "beta-spikes": ({"name": "beta", "spikes": True}, 1, None),
    "mixture": ({"name": "mixture", "components": 2}, 1, None),
    "lowrank-gaussian": ({"name": "lowrank-gaussian", "rank": 1}, 2, None),
}


def outputs(case: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``[n, dim_y]`` values in the family's support, in units far from the model's."""
    if case in COUNTS:
        return rng.poisson(6.0, (n, 1)).astype(float)
    if case == "bernoulli":
        return (rng.random((n, 1)) < 0.4).astype(float)
    if case == "bernoulli-gamma":
        return np.where(rng.random((n, 1)) < 0.5, rng.gamma(2.0, 4.0, (n, 1)), 0.0)
    if case == "beta":
        return rng.beta(2.0, 3.0, (n, 1))
    if case == "beta-spikes":
        return np.clip(rng.beta(2.0, 3.0, (n, 1)) * 1.4 - 0.2, 0, 1)
    return 50 + 10 * rng.normal(size=(n, CASES[case][1]))


def table(case: str, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n_tasks, n = 20, 10
    y = outputs(case, n_tasks * n, rng)
    frame = pd.DataFrame(
        {"site": np.repeat(np.arange(n_tasks), n), "day": rng.uniform(0, 30, n * n_tasks)}
    )
    for j in range(y.shape[1]):
        frame[f"y{j}"] = y[:, j]
    return frame


def save_case(case: str, folder) -> tuple[str, object, dict]:
    """``(case, path, normalisation)``: a small model of the case's family saved with the
    normalisation a table source fits for it (the family's scaling rule)."""
    option, dim_y, _ = CASES[case]
    y_cols = [f"y{j}" for j in range(dim_y)]
    sampler = TableSampler.from_frame(
        table(case), task="site", x=["day"], y=y_cols, likelihood=option
    )
    path = folder / "model.pt"
    tnpx.save(small_model("tnp", 1, dim_y, likelihood=option), path,
              normalisation=sampler.normalisation)  # fmt: skip
    return case, path, sampler.normalisation


@pytest.fixture(scope="module", params=list(CASES))
def saved(request, tmp_path_factory):
    return save_case(request.param, tmp_path_factory.mktemp(request.param))


def task(case: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(7)
    y = outputs(case, 8, rng)
    context = pd.DataFrame({"day": rng.uniform(0, 30, 8)})
    for j in range(y.shape[1]):
        context[f"y{j}"] = y[:, j]
    return context, pd.DataFrame({"day": np.linspace(1, 29, 6)})


def test_columns_quantiles_and_support(saved):
    case, path, _ = saved
    option, dim_y, own = CASES[case]
    context, targets = task(case)
    before = context.copy()
    out = tnpx.predict(path, context, targets, quantiles=QUANTILES)
    pd.testing.assert_frame_equal(context, before)  # the user's table is left as it was
    stats = ["mean", "std", "lower", "upper", "q0.1", "q0.5", "q0.9", *([own] if own else [])]
    assert list(out.columns) == ["day", *(f"y{j}_{s}" for j in range(dim_y) for s in stats)]
    assert np.isfinite(out.iloc[:, 1:].to_numpy()).all()
    for j in range(dim_y):
        ends = out[[f"y{j}_{s}" for s in ("lower", "q0.1", "q0.5", "q0.9", "upper")]].to_numpy()
        assert (np.diff(ends, axis=1) >= 0).all(), case  # quantiles never cross
        assert (out[f"y{j}_std"] > 0).all()
    y = out.filter(regex="_(mean|lower|upper|q[0-9.]+)$").to_numpy()
    if case in COUNTS:
        q = out.filter(regex="_(lower|upper|q[0-9.]+)$").to_numpy()
        assert (q >= 0).all() and np.array_equal(q, q.round())  # whole counts
    if case == "bernoulli":
        q = out.filter(regex="_(lower|upper|q[0-9.]+)$").to_numpy()
        assert set(np.unique(q)) <= {0.0, 1.0}
        assert ((out.y0_mean > 0) & (out.y0_mean < 1)).all()  # P(y = 1)
    if case == "bernoulli-gamma":
        assert (y >= 0).all() and ((out.y0_p_dry > 0) & (out.y0_p_dry < 1)).all()
    if case.startswith("beta"):
        assert ((y >= 0) & (y <= 1)).all()
    if own == "p_zero":
        assert ((out.y0_p_zero > 0) & (out.y0_p_zero < 1)).all()
    if case == "gaussian":  # the Gaussian path: the median is the mean
        np.testing.assert_allclose(out["y0_q0.5"], out.y0_mean, rtol=1e-12)


def test_the_unit_mapping_rederived_in_float64(saved):
    case, path, norm = saved
    context, targets = task(case)
    out = tnpx.predict(path, context, targets, quantiles=QUANTILES)
    model = tnpx.load(path)
    x_loc, x_scale = (np.asarray(norm["x"][k]) for k in ("loc", "scale"))
    y_loc, y_scale = (np.asarray(norm["y"][k]) for k in ("loc", "scale"))
    y_cols = list(norm["y"]["columns"])

    def t(a):
        return torch.tensor(np.asarray(a, np.float64), dtype=torch.float32)[None]

    xc = (context[["day"]].to_numpy() - x_loc) / x_scale
    yc = (context[y_cols].to_numpy() - y_loc) / y_scale
    xt = (targets[["day"]].to_numpy() - x_loc) / x_scale
    with torch.no_grad():
        pred = model(t(xc), t(yc), t(xt))
    mean = pred.mean[0].double().numpy() * y_scale + y_loc
    std = pred.stddev[0].double().numpy() * y_scale
    for j, col in enumerate(y_cols):
        np.testing.assert_allclose(out[f"{col}_mean"], mean[:, j], rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(out[f"{col}_std"], std[:, j], rtol=1e-5, atol=1e-9)
    if case == "gaussian":
        return
    for p in QUANTILES:
        q = quantile(pred, p)[0].double().numpy() * y_scale + y_loc
        for j, col in enumerate(y_cols):
            np.testing.assert_allclose(out[f"{col}_q{p:g}"], q[:, j], rtol=1e-5, atol=1e-6)
    lower = quantile(pred, 0.025)[0].double().numpy() * y_scale + y_loc
    np.testing.assert_allclose(out[f"{y_cols[0]}_lower"], lower[:, 0], rtol=1e-5, atol=1e-6)
    if case == "bernoulli-gamma":
        np.testing.assert_allclose(out.y0_p_dry, 1 - pred.wet.probs[0, :, 0].double(), rtol=1e-5)
        assert norm["y"]["loc"] == [0.0] and norm["y"]["scale"][0] > 1  # scaled, not centred


def test_a_gaussian_model_predicts_as_before_and_its_quantiles_are_normal(tmp_path):
    case, path, _ = save_case("gaussian", tmp_path)
    context, targets = task(case)
    plain = tnpx.predict(path, context, targets)
    assert list(plain.columns) == ["day", "y0_mean", "y0_std", "y0_lower", "y0_upper"]
    with_q = tnpx.predict(path, context, targets, quantiles=[0.975])
    pd.testing.assert_frame_equal(with_q[plain.columns], plain)
    np.testing.assert_allclose(with_q["y0_q0.975"], plain.y0_upper, rtol=1e-12)  # the 95 % end


@pytest.mark.parametrize(
    "bad", [[0.0, 0.5], [1.0], [1.5], [-0.1], ["a"], "0.9", [True], [0.5, 0.5], [float("nan")]]
)
def test_bad_quantiles_are_refused_in_one_line(bad):
    model = small_model("tnp", likelihood="poisson")
    context = pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [1.0, 0.0, 3.0]})
    with pytest.raises(ValueError, match="quantiles") as err:
        tnpx.predict(model, context, pd.DataFrame({"x": [0.5]}), quantiles=bad)
    assert "\n" not in str(err.value)


def test_a_count_models_context_maps_leave_counts_alone():
    model = small_model("tnp", likelihood="negative-binomial")
    context = pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [10.0, 20.0, 30.0]})
    out = tnpx.predict(model, context, pd.DataFrame({"x": [0.5]}), domain=(-2, 2))
    assert out.attrs["tnpx"]["output_mean_std"] == {"y": [0.0, 1.0]}
    rain = small_model("tnp", likelihood="bernoulli-gamma")
    context["y"] = [0.0, 3.0, 4.0]
    out = tnpx.predict(rain, context, pd.DataFrame({"x": [0.5]}), domain=(-2, 2))
    assert out.attrs["tnpx"]["output_mean_std"]["y"] == [0.0, pytest.approx(np.sqrt(25 / 3))]


def test_a_single_quantile_may_be_a_number():
    model = small_model("tnp", likelihood="poisson")
    context = pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [1.0, 0.0, 3.0]})
    out = tnpx.predict(model, context, pd.DataFrame({"x": [0.5]}), quantiles=0.9, domain=(-2, 2))
    assert list(out.columns)[-2:] == ["y_q0.9", "y_p_zero"]


def test_npregressor_predicts_a_count_models_mean():
    pytest.importorskip("sklearn")
    model = small_model("tnp", likelihood="poisson")
    x, y = np.linspace(0, 1, 5)[:, None], np.array([0.0, 2.0, 1.0, 4.0, 3.0])
    reg = tnpx.NPRegressor(model, domain=(-2, 2)).fit(x, y)
    mean = reg.predict(np.array([[0.5]]))
    expected = tnpx.predict(model, pd.DataFrame({"x": x[:, 0], "y": y}),
                            pd.DataFrame({"x": [0.5]}), domain=(-2, 2))  # fmt: skip
    np.testing.assert_allclose(mean, expected.y_mean, rtol=1e-6)


def test_the_cli_writes_quantile_columns_and_refuses_bad_ones(tmp_path, capsys):
    case, path, _ = save_case("bernoulli-gamma", tmp_path)
    context, targets = task(case)
    context.to_csv(tmp_path / "c.csv", index=False)
    targets.to_csv(tmp_path / "t.csv", index=False)
    args = ["predict", str(path), "--context", str(tmp_path / "c.csv"), "--targets",
            str(tmp_path / "t.csv"), "--out", str(tmp_path / "o.csv")]  # fmt: skip
    assert main([*args, "--quantiles", "0.1", "0.9"]) == 0
    written = pd.read_csv(tmp_path / "o.csv")
    assert list(written.columns)[-3:] == ["y0_q0.1", "y0_q0.9", "y0_p_dry"]
    assert (written.y0_lower >= 0).all()
    capsys.readouterr()
    assert main([*args[:-2], "--quantiles", "1.5"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert any("quantiles must each lie strictly between 0 and 1" in line for line in err)


def test_training_on_a_rain_table_stores_the_familys_scaling(tmp_path):
    from tests.helpers.user_tables import CONFIG
    from tnpx.checkpoint import read_checkpoint
    from tnpx.config import load_config
    from tnpx.training.loop import fit

    frame = table("bernoulli-gamma").rename(columns={"site": "curve", "day": "t", "y0": "value"})
    frame.to_csv(tmp_path / "rain.csv", index=False)
    config = tmp_path / "rain.yaml"
    config.write_text(CONFIG.format(path=tmp_path / "rain.csv", out=tmp_path / "run"))
    overrides = ["train.steps=3", "model.likelihood=bernoulli-gamma", "train.val_every=3"]
    fit(load_config(config, overrides))
    stored = read_checkpoint(tmp_path / "run" / "model.pt")["normalisation"]["y"]
    train = frame[frame.curve.isin(TableSampler.from_frame(
        frame, task="curve", x=["t"], y=["value"]).task_keys("train"))].value  # fmt: skip
    assert stored["loc"] == [0.0]
    np.testing.assert_allclose(stored["scale"], [np.sqrt(np.mean(train**2))], rtol=1e-12)
    context, targets = task("bernoulli-gamma")
    context = context.rename(columns={"day": "t", "y0": "value"})
    out = tnpx.predict(tmp_path / "run" / "model.pt", context, targets.rename(columns={"day": "t"}))
    assert (out.value_lower >= 0).all() and "value_p_dry" in out.columns


def test_the_cli_says_a_count_models_outputs_follow_its_family(tmp_path, capsys):
    path = tmp_path / "counts.pt"
    tnpx.save(small_model("tnp", likelihood="poisson"), path)  # no stored normalisation
    pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [4.0, 6.0, 5.0]}).to_csv(
        tmp_path / "c.csv", index=False
    )
    pd.DataFrame({"x": [0.5]}).to_csv(tmp_path / "t.csv", index=False)
    args = ["predict", str(path), "--context", str(tmp_path / "c.csv"), "--targets",
            str(tmp_path / "t.csv"), "--domain", "-2", "2"]  # fmt: skip
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "outputs mapped by the poisson family's rule: y (loc 0, scale 1)" in err
