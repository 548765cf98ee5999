"""tnpx.apply.estimator.NPRegressor: scikit-learn's estimator checks, the same numbers as
tnpx.predict, shapes, errors, copies, clone and pickle."""

from __future__ import annotations

import importlib.util
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator, check_regressors_train  # noqa: E402

import tnpx  # noqa: E402
from tnpx.apply import estimator as estimator_module  # noqa: E402
from tnpx.apply.estimator import NPRegressor  # noqa: E402
from tnpx.apply.unit_choice import ExtrapolationLimits  # noqa: E402

TINY = {"dim_model": 16, "n_layers": 1, "n_heads": 2, "dim_head": 8, "dim_ff": 16}
BOX = (-2.0, 2.0)  # the tiny models' domain, given so that no "domain unknown" warning fires

# Checks that cannot pass with the tiny *untrained* model the suite uses for speed, and why.
# (test_a_model_that_fits_passes_the_score_check shows the estimator passes them with a model
# that interpolates its context.)
EXPECTED_FAILED_CHECKS = {
    "check_regressors_train": (
        "asserts R^2 > 0.5 on the training data; an untrained network's predictions are "
        "noise, whatever it is conditioned on"
    ),
}
# Checks that skip themselves, and why: none is skipped silently.
EXPECTED_SKIPPED_CHECKS = {
    "check_array_api_input": "runs only with SCIPY_ARRAY_API=1; NPRegressor computes in torch",
}


def tiny_model(dim_x: int, dim_y: int) -> tnpx.NeuralProcess:
    """A small untrained TNP for the data's dimensions, the same weights every call (a
    factory: ``NPRegressor(model=tiny_model)``), the global RNG left as it was."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return tnpx.build_model("tnp", dim_x, dim_y, **TINY).eval()


def gp_oracle(dim_x: int, dim_y: int) -> tnpx.NeuralProcess:
    """An exact GP posterior (no weights): a model that interpolates its context."""
    return tnpx.build_model("gp-oracle", dim_x, dim_y)


def sine(n: int = 30, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``X [n, 1]`` in [0, 10] and ``y [n]``: a noisy sine in its own units."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0.0, 10.0, n))[:, None]
    return x, 20.0 + 3.0 * np.sin(x[:, 0]) + 0.1 * rng.normal(size=n)


# -- scikit-learn's checks ---------------------------------------------------------------------
@pytest.mark.slow  # the default suite's time (CI's limit): `make test-slow` runs it
def test_check_estimator_fails_exactly_the_listed_checks():
    reg = NPRegressor(model=tiny_model, domain=BOX)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checks' own warnings (1-sample contexts, say)
        results = check_estimator(
            reg, expected_failed_checks=EXPECTED_FAILED_CHECKS, on_fail=None, on_skip=None
        )
    by_status: dict[str, set[str]] = {}
    for r in results:
        by_status.setdefault(r["status"], set()).add(r["check_name"])
    failed = {r["check_name"]: r["exception"] for r in results if r["status"] == "failed"}
    assert not failed, failed
    assert by_status.get("xfail", set()) == set(EXPECTED_FAILED_CHECKS)
    assert by_status.get("skipped", set()) == set(EXPECTED_SKIPPED_CHECKS)
    assert len(by_status["passed"]) > 40  # the checks did run


def test_a_model_that_fits_passes_the_score_check():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_regressors_train("NPRegressor", NPRegressor(model=gp_oracle, domain=BOX))


def test_tags_follow_the_model():
    factory = NPRegressor(model=tiny_model).__sklearn_tags__()
    assert factory.target_tags.multi_output and factory.target_tags.single_output
    assert not factory.input_tags.allow_nan and factory.estimator_type == "regressor"
    two = NPRegressor(model=tiny_model(1, 2)).__sklearn_tags__()
    assert two.target_tags.multi_output and not two.target_tags.single_output
    latent = NPRegressor(
        model=tnpx.build_model("np", 1, 1, dim_model=16, dim_latent=8)
    ).__sklearn_tags__()
    assert latent.non_deterministic  # latent NPs draw their latents at each prediction
    assert not NPRegressor(model="gp1d-tnp").__sklearn_tags__().target_tags.multi_output


# -- the numbers -------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:.*context-range width")  # targets outside, on purpose
def test_same_numbers_as_tnpx_predict_for_a_shipped_model():
    x, y = sine()
    xt = np.linspace(-2.0, 12.0, 57)[:, None]  # inside and (less than a width) outside
    # allow_extrapolation: the same numbers whatever hard limit the card records
    reg = NPRegressor(model="gp1d-tnp", level=0.9, allow_extrapolation=True).fit(x, y)
    mean, std = reg.predict(xt, return_std=True)
    lower, upper = reg.predict_interval(xt)

    context = pd.DataFrame({"t": x[:, 0], "temp": y})
    targets = pd.DataFrame({"t": xt[:, 0]})
    expected = tnpx.predict("gp1d-tnp", context, targets, level=0.9, allow_extrapolation=True)
    for got, col in ((mean, "mean"), (std, "std"), (lower, "lower"), (upper, "upper")):
        np.testing.assert_allclose(got, expected[f"temp_{col}"], rtol=0, atol=1e-6)
    assert np.isfinite(mean).all() and (std > 0).all()
    assert abs(mean.mean() - y.mean()) < 3.0  # in the user's units (around 20), not ~0


def test_same_numbers_as_tnpx_predict_with_several_inputs_and_outputs():
    rng = np.random.default_rng(1)
    x, y = rng.uniform(0, 5, (20, 2)), rng.normal(100.0, 10.0, (20, 3))
    xt = rng.uniform(0, 5, (8, 2))
    reg = NPRegressor(model=tiny_model, domain=BOX).fit(x, y)
    mean, std = reg.predict(xt, return_std=True)

    context = pd.DataFrame(np.hstack([x, y]), columns=["a", "b", "p", "q", "r"])
    targets = pd.DataFrame(xt, columns=["a", "b"])
    expected = tnpx.predict(reg.model_, context, targets, domain=BOX)
    np.testing.assert_allclose(mean, expected[["p_mean", "q_mean", "r_mean"]], rtol=0, atol=1e-6)
    np.testing.assert_allclose(std, expected[["p_std", "q_std", "r_std"]], rtol=0, atol=1e-6)


def test_each_target_depends_on_the_context_only():
    x, y = sine()
    xt = np.linspace(1.0, 9.0, 9)[:, None]
    reg = NPRegressor(model="gp1d-tnp").fit(x, y)
    one_by_one = np.concatenate([reg.predict(xt[i : i + 1]) for i in range(len(xt))])
    # float32 model: a batch of 9 and of 1 round differently, by ~1e-7 of the value
    np.testing.assert_allclose(reg.predict(xt), one_by_one, rtol=1e-6, atol=0)


# -- shapes ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("y_shape", "out_shape"), [((12,), (5,)), ((12, 1), (5, 1)), ((12, 3), (5, 3))]
)
def test_shapes_follow_y(y_shape, out_shape):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(12, 2)), rng.normal(size=y_shape)
    reg = NPRegressor(model=tiny_model, domain=BOX).fit(x, y)
    xt = rng.normal(size=(5, 2))
    mean, std = reg.predict(xt, return_std=True)
    lower, upper = reg.predict_interval(xt)
    assert reg.predict(xt).shape == mean.shape == std.shape == out_shape
    assert lower.shape == upper.shape == out_shape
    assert mean.dtype == std.dtype == np.float64
    assert (lower < mean).all() and (mean < upper).all()
    assert reg.n_outputs_ == (1 if len(y_shape) == 1 else y_shape[1])


# -- errors ------------------------------------------------------------------------------------
def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


def test_wrong_number_of_features_at_fit_names_both_numbers():
    x = np.zeros((10, 3))
    with pytest.raises(ValueError) as err:
        NPRegressor(model="gp1d-tnp").fit(x, np.arange(10.0))
    assert "X has 3 feature(s), but the model ('gp1d-tnp') takes 1 input(s)" in one_line(err)


def test_wrong_number_of_outputs_at_fit_names_both_numbers():
    model = tiny_model(1, 1)
    with pytest.raises(ValueError) as err:
        NPRegressor(model=model, domain=BOX).fit(np.zeros((10, 1)), np.zeros((10, 2)))
    assert "y has 2 output column(s), but the model (TNP) predicts 1" in one_line(err)


def test_wrong_number_of_features_at_predict():
    x, y = sine()
    reg = NPRegressor(model="gp1d-tnp").fit(x, y)
    with pytest.raises(ValueError) as err:
        reg.predict(np.zeros((4, 2)))
    assert "X has 2 features, but NPRegressor is expecting 1 features" in one_line(err)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input_is_rejected(bad):
    x, y = sine()
    reg = NPRegressor(model="gp1d-tnp")
    x_bad, y_bad = x.copy(), y.copy()
    x_bad[3, 0], y_bad[4] = bad, bad
    with pytest.raises(ValueError, match="Input X contains"):
        reg.fit(x_bad, y)
    with pytest.raises(ValueError, match="Input y contains"):
        reg.fit(x, y_bad)
    reg.fit(x, y)
    with pytest.raises(ValueError, match="Input X contains"):
        reg.predict(x_bad)


def test_predict_before_fit_raises_not_fitted():
    with pytest.raises(NotFittedError):
        NPRegressor(model="gp1d-tnp").predict(np.zeros((3, 1)))


def test_bad_parameters_fail_at_fit_not_at_construction():
    x, y = sine()
    reg = NPRegressor(model="gp1d-tnp", level=1.5)  # stored unchecked (scikit-learn's way)
    with pytest.raises(ValueError, match="level must be in"):
        reg.fit(x, y)
    with pytest.raises(TypeError, match="not a tnpx.NeuralProcess"):
        NPRegressor(model=lambda dim_x, dim_y: "a model").fit(x, y)
    with pytest.raises(tnpx.CheckpointError):
        NPRegressor(model="no-such-model").fit(x, y)
    with pytest.raises(ValueError, match="low < high"):
        NPRegressor(model="gp1d-tnp", domain=(2.0, -2.0)).fit(x, y)
    with pytest.raises(ValueError, match="domain: expected one finite pair"):
        NPRegressor(model="gp1d-tnp", domain=(0.0,)).fit(x, y)


def test_far_targets_follow_the_models_limits(monkeypatch):
    limits = ExtrapolationLimits(warn_at=1.0, refuse_at=3.0, model="a carded model")
    monkeypatch.setattr(estimator_module, "extrapolation_limits", lambda model: limits)
    x, y = sine()
    reg = NPRegressor(model="gp1d-tnp").fit(x, y)
    with pytest.warns(UserWarning, match="context-range width"):
        reg.predict(np.array([[25.0]]))  # 1.5 widths out: warns
    with pytest.raises(tnpx.DataError, match="hard limit"):
        reg.predict(np.array([[50.0]]))  # 4 widths out: refused
    reg.set_params(allow_extrapolation=True)
    with pytest.warns(UserWarning, match="context-range width"):
        assert np.isfinite(reg.predict(np.array([[50.0]]))).all()


# -- copies, clone, pickle ---------------------------------------------------------------------
def test_the_callers_arrays_are_never_modified_nor_held():
    x, y = sine()
    x_before, y_before = x.copy(), y.copy()
    xt = np.linspace(1.0, 9.0, 7)[:, None]
    xt_before = xt.copy()
    reg = NPRegressor(model="gp1d-tnp").fit(x, y)
    first = reg.predict(xt)
    np.testing.assert_array_equal(x, x_before)
    np.testing.assert_array_equal(y, y_before)
    np.testing.assert_array_equal(xt, xt_before)
    assert not np.shares_memory(reg.X_, x) and not np.shares_memory(reg.y_, y)
    x += 1.0  # the caller's later edits do not reach the fitted context
    y *= 2.0
    np.testing.assert_array_equal(reg.predict(xt), first)


def test_a_model_object_is_used_as_it_is():
    model = tiny_model(1, 1)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    model.train()  # the user's mode is theirs: predicting does not change it
    reg = NPRegressor(model=model, domain=BOX, device="cpu").fit(*sine())
    reg.predict(np.zeros((2, 1)))
    assert reg.model_ is model and model.training
    for k, v in model.state_dict().items():
        assert torch.equal(v, state[k])


def test_a_model_object_on_another_device_is_copied_there_not_moved():
    model = tiny_model(1, 1)
    reg = NPRegressor(model=model, domain=BOX, device="meta").fit(*sine())  # any non-CPU one
    assert reg.model_ is not model and reg.model_.device.type == "meta"
    assert model.device.type == "cpu"


def test_clone_gives_the_same_parameters_unfitted():
    reg = NPRegressor(model="gp1d-tnp", level=0.8, chunk_size=7).fit(*sine())
    twin = clone(reg)
    assert twin.get_params() == reg.get_params()
    assert not hasattr(twin, "model_")
    xt = np.linspace(1.0, 9.0, 5)[:, None]
    np.testing.assert_array_equal(twin.fit(*sine()).predict(xt), reg.predict(xt))


def test_pickle_round_trip_of_a_fitted_estimator():
    reg = NPRegressor(model="gp1d-tnp").fit(*sine())
    xt = np.linspace(1.0, 9.0, 13)[:, None]
    back = pickle.loads(pickle.dumps(reg))
    mean, std = reg.predict(xt, return_std=True)
    mean2, std2 = back.predict(xt, return_std=True)
    np.testing.assert_array_equal(mean, mean2)
    np.testing.assert_array_equal(std, std2)


def test_feature_names_of_a_dataframe_are_kept():
    x, y = sine()
    frame = pd.DataFrame({"t": x[:, 0]})
    reg = NPRegressor(model="gp1d-tnp").fit(frame, y)
    assert list(reg.feature_names_in_) == ["t"]
    np.testing.assert_array_equal(reg.predict(frame), NPRegressor("gp1d-tnp").fit(x, y).predict(x))


# -- scikit-learn is optional ------------------------------------------------------------------
def test_without_sklearn_constructing_says_what_to_install(monkeypatch):
    for name in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")]:
        monkeypatch.setitem(sys.modules, name, None)  # None in sys.modules: ImportError
    path = Path(estimator_module.__file__)
    spec = importlib.util.spec_from_file_location("tnpx.apply._estimator_without_sklearn", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the module imports
    with pytest.raises(ImportError) as err:
        module.NPRegressor(model="gp1d-tnp")
    assert one_line(err) == "NPRegressor needs scikit-learn: pip install 'tnpx[sklearn]'"
