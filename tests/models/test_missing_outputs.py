"""Missing output values in the context (``mask_yc``): the ``missing_outputs`` option of the
transformer NPs (context tokens ``[x, y * m, m]``), what every other model says when handed one,
and training a tiny model on a table with gaps end to end."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

import tnpx
from tests.helpers.small_models import ALL_MODELS, make_task, small_model
from tests.helpers.user_tables import CONFIG
from tnpx.batch import Batch
from tnpx.cli import main
from tnpx.config import load_config
from tnpx.models.registry import REGISTRY, missing_outputs_models
from tnpx.nn import TokenEmbedder
from tnpx.training.loop import build_train_sampler, fit, validation_ll

OPTION_MODELS = missing_outputs_models()
OTHERS = [n for n in ALL_MODELS if REGISTRY[n].missing_outputs_support() == ""]


def gappy_task(seed: int = 0, b: int = 3, n_ctx: int = 9, n_tgt: int = 5):
    """A task of two outputs and ``observed [b, n_ctx, 2]`` with about a third missing, every
    point keeping one output."""
    xc, yc, xt = make_task(b, n_ctx, n_tgt, 1, 2, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    observed = torch.rand(b, n_ctx, 2, generator=g) > 0.35
    observed[..., 0] |= ~observed[..., 1]
    return xc, yc, xt, observed


def call(model, xc, yc, xt, mask_c=None, mask_yc=None):
    torch.manual_seed(0)
    with torch.no_grad():
        return model(xc, yc, xt, mask_c=mask_c, mask_yc=mask_yc)


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


def test_the_option_models_are_the_transformer_nps():
    assert {"tnp", "tnp-d", "te-tnp", "re-te-tnp", "linear-tnp"} <= set(OPTION_MODELS)
    assert {"inc-tnp", "tnp-nd", "convcnp", "tnp-kr-full", "pt-tnp-ist"} <= set(OTHERS)
    assert REGISTRY["gp"].missing_outputs_support() == "always"
    assert REGISTRY["context-moments"].missing_outputs_support() == "always"


# -- the tokens --------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["flagged", "target-flagged", "plain", "y-only"])
def test_tokens_are_x_then_masked_y_then_the_mask(kind):
    plain = TokenEmbedder(kind, 2, 3, 8, 8, 1)
    masked = TokenEmbedder(kind, 2, 3, 8, 8, 1, missing_outputs=True)
    x_width, flag = (0 if kind == "y-only" else 2), int(kind != "plain")
    assert plain.mlp.dim_in == x_width + 3 + flag  # as before the option
    assert masked.mlp.dim_in == x_width + 6 + flag
    g = torch.Generator().manual_seed(1)
    xc, yc = torch.randn(2, 4, 2, generator=g), torch.randn(2, 4, 3, generator=g)
    observed = torch.rand(2, 4, 3, generator=g) > 0.4
    m = observed.double()
    parts = [] if kind == "y-only" else [xc.double()]
    parts += [yc.double() * m, m]
    if flag:
        parts.append(torch.full((2, 4, 1), float(kind == "flagged"), dtype=torch.float64))
    expected = masked.mlp.double()(torch.cat(parts, -1))
    masked.float()
    got = masked.context(xc, yc, observed)
    torch.testing.assert_close(got.double(), expected, rtol=1e-5, atol=1e-6)
    # a missing value is not read, whatever it holds
    other = torch.where(observed, yc, float("nan"))
    assert torch.equal(masked.context(xc, other, observed), got)
    # no mask: every output observed
    assert torch.equal(masked.context(xc, yc), masked.context(xc, yc, torch.ones_like(observed)))
    xt = torch.randn(2, 5, 2, generator=g)
    assert masked.targets(xt).shape == (2, 5, 8)
    with pytest.raises(ValueError, match="missing_outputs=True"):
        plain.context(xc, yc, observed)


# -- models with the option --------------------------------------------------------------------
@pytest.mark.parametrize("name", OPTION_MODELS)
def test_a_missing_value_is_not_read(name):
    model = small_model(name, 1, 2, missing_outputs=True)
    xc, yc, xt, observed = gappy_task()
    a = call(model, xc, yc, xt, mask_yc=observed)
    b = call(model, xc, torch.where(observed, yc, 1e3), xt, mask_yc=observed)
    c = call(model, xc, torch.where(observed, yc, float("nan")), xt, mask_yc=observed)
    assert torch.equal(a.mean, b.mean) and torch.equal(a.mean, c.mean)
    assert torch.equal(a.stddev, b.stddev) and torch.equal(a.stddev, c.stddev)
    assert torch.isfinite(a.mean).all() and (a.stddev > 0).all()
    # "missing" is not "observed as 0"
    zero = call(model, xc, torch.where(observed, yc, 0.0), xt)
    assert not torch.allclose(a.mean, zero.mean)


@pytest.mark.parametrize("name", OPTION_MODELS)
def test_context_order_does_not_matter(name):
    model = small_model(name, 1, 2, missing_outputs=True)
    xc, yc, xt, observed = gappy_task(seed=2)
    perm = torch.randperm(xc.shape[1], generator=torch.Generator().manual_seed(4))
    a = call(model, xc, yc, xt, mask_yc=observed)
    b = call(model, xc[:, perm], yc[:, perm], xt, mask_yc=observed[:, perm])
    torch.testing.assert_close(a.mean, b.mean, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(a.stddev, b.stddev, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", OPTION_MODELS)
def test_a_point_missing_every_output_is_left_out(name):
    model = small_model(name, 1, 2, missing_outputs=True)
    xc, yc, xt, observed = gappy_task(seed=3)
    observed[:, 4] = False
    a = call(model, xc, yc, xt, mask_yc=observed)
    keep = [i for i in range(xc.shape[1]) if i != 4]
    b = call(model, xc[:, keep], yc[:, keep], xt, mask_yc=observed[:, keep])
    torch.testing.assert_close(a.mean, b.mean, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", OPTION_MODELS)
def test_padding_and_streaming_with_missing_outputs(name):
    model = small_model(name, 1, 2, missing_outputs=True)
    xc, yc, xt, observed = gappy_task(seed=5)
    mask_c = torch.ones(xc.shape[:2], dtype=torch.bool)
    mask_c[0, 6:] = False
    a = call(model, xc, yc, xt, mask_c, observed)
    alone = call(model, xc[:1, :6], yc[:1, :6], xt[:1], mask_yc=observed[:1, :6])
    torch.testing.assert_close(a.mean[:1], alone.mean, rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        streamed = model.predict_streamed(xc, yc, xt, mask_c, chunk_size=2, mask_yc=observed)
    torch.testing.assert_close(streamed.mean, a.mean, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", OPTION_MODELS)
def test_an_all_true_mask_is_no_mask_bit_for_bit(name):
    xc, yc, xt, _ = gappy_task(seed=6)
    everything = torch.ones_like(yc, dtype=torch.bool)
    for option in (False, True):
        model = small_model(name, 1, 2, missing_outputs=option)
        a, b = call(model, xc, yc, xt), call(model, xc, yc, xt, mask_yc=everything)
        assert torch.equal(a.mean, b.mean) and torch.equal(a.stddev, b.stddev)


@pytest.mark.parametrize("name", OPTION_MODELS)
def test_the_option_adds_only_the_mask_channels(name):
    """The option widens the token MLP's input by ``dim_y`` mask channels and nothing else;
    off, the config records it (earlier checkpoints, without it, load as off:
    tests/checkpoint/test_checkpoint_compat.py)."""
    off = small_model(name, 1, 2).state_dict()
    on = small_model(name, 1, 2, missing_outputs=True).state_dict()
    assert list(off) == list(on)
    first = next(k for k in off if k.startswith("embed.mlp.") and k.endswith("weight"))
    for key in off:
        want = off[key].shape
        if key == first:
            want = (want[0], want[1] + 2)
        assert on[key].shape == want, key
    assert small_model(name, 1, 2).config["hyper"]["missing_outputs"] is False


def test_a_shipped_checkpoint_loads_without_the_option():
    model = tnpx.pretrained("gp1d-v2-tnp")
    assert model.hyper.missing_outputs is False and not model.reads_missing_outputs


# -- models without it -------------------------------------------------------------------------
def refusal(model) -> str:
    """The one-line error of ``model`` called on a context with missing outputs."""
    xc, yc, xt, observed = gappy_task()
    with pytest.raises(ValueError) as err:
        call(model, xc, yc, xt, mask_yc=observed)
    return one_line(err)


@pytest.mark.parametrize("name", OPTION_MODELS)
def test_the_option_off_refuses_missing_outputs_naming_it(name):
    text = refusal(small_model(name, 1, 2))
    assert text.startswith("mask_yc:") and "set model.missing_outputs=true" in text


@pytest.mark.parametrize("name", OTHERS)
def test_models_that_cannot_read_missing_outputs_say_so(name):
    model = small_model(name, 1, 2)
    text = refusal(model)
    assert f"{name} cannot read them" in text and "tnp" in text
    xc, yc, xt, observed = gappy_task()
    batch = Batch(xc, yc, xt, torch.zeros(3, 5, 2), mask_yc=observed)
    with pytest.raises(ValueError, match="mask_yc"):
        model.log_likelihood(batch)
    # and an all-true mask is no mask
    everything = torch.ones_like(observed)
    assert torch.equal(
        call(model, xc, yc, xt).mean, call(model, xc, yc, xt, mask_yc=everything).mean
    )


@pytest.mark.parametrize("name", ["inc-tnp", "tnp-nd"])
def test_models_that_cannot_have_the_option_say_so_when_built(name):
    with pytest.raises(ValueError) as err:
        tnpx.build_model(name, 1, 2, missing_outputs=True)
    text = one_line(err)
    assert f"{name} cannot take missing_outputs" in text and "tnp-d" in text


@pytest.mark.parametrize("name", ["tnp-kr-full", "hypermix-np", "convcnp"])
def test_models_without_the_option_do_not_take_it(name):
    with pytest.raises(ValueError, match="does not take"):
        tnpx.build_model(name, 1, 2, missing_outputs=True)


@pytest.mark.parametrize("name", ["tnp-nd", "np", "inc-tnp"])
def test_joint_scores_refuse_missing_target_outputs(name):
    model = small_model(name, 1, 2)
    xc, yc, xt, _ = gappy_task()
    mask_yt = torch.ones(3, 5, 2, dtype=torch.bool)
    mask_yt[0, 1, 0] = False
    batch = Batch(xc, yc, xt, torch.zeros(3, 5, 2), mask_yt=mask_yt)
    with pytest.raises(ValueError, match="missing target outputs"):
        model.training_loss(batch)


def test_a_bad_output_mask_is_named():
    model = small_model("tnp", 1, 2, missing_outputs=True)
    xc, yc, xt, observed = gappy_task()
    with pytest.raises(ValueError, match=r"^mask_yc: expected shape \[3, 9, 2\]"):
        call(model, xc, yc, xt, mask_yc=observed[..., :1])
    with pytest.raises(ValueError, match="^mask_yc: expected a bool tensor"):
        call(model, xc, yc, xt, mask_yc=observed.float())


# -- training on a table with gaps -------------------------------------------------------------
def write_gappy(path) -> None:
    """Two outputs of noisy sine curves, a quarter of the rows missing one of them."""
    rng = np.random.default_rng(0)
    rows = []
    for curve in range(60):
        t = np.sort(rng.uniform(0, 8, rng.integers(15, 40)))
        phase = rng.uniform(0, 2 * np.pi)
        value = np.sin(t + phase) + 0.05 * rng.normal(size=len(t))
        other = np.cos(t + phase) + 0.05 * rng.normal(size=len(t))
        gap = rng.uniform(size=len(t)) < 0.25
        which = rng.integers(0, 2, len(t)).astype(bool)
        value[gap & which], other[gap & ~which] = np.nan, np.nan
        rows += [(f"s{curve}", ti, vi, oi) for ti, vi, oi in zip(t, value, other)]
    pd.DataFrame(rows, columns=["curve", "t", "value", "other"]).to_csv(path, index=False)


def gappy_config(tmp_path, option: bool, steps: int = 200):
    write_gappy(tmp_path / "gaps.csv")
    text = CONFIG.format(path=tmp_path / "gaps.csv", out=tmp_path / "run")
    text = text.replace("y: [value]", "y: [value, other]").replace("dim_y: 1", "dim_y: 2")
    text = text.replace("steps: 300", f"steps: {steps}").replace(
        "val_every: 300", f"val_every: {steps}"
    )
    if option:
        text = text.replace("name: tnp,", "name: tnp, missing_outputs: true,")
    config = tmp_path / "gaps.yaml"
    config.write_text(text)
    return config


@pytest.mark.slow  # trains and evaluates through the CLI (~10-20 s)
def test_training_on_a_table_with_gaps(tmp_path):
    # 400 steps: with contexts from 0 points (the table's default ctx_fraction [0, 0.9]) 200
    # steps gained only 0.16 nats here, 400 gain 0.65
    config = gappy_config(tmp_path, option=True, steps=400)
    cfg = load_config(config)
    sampler = build_train_sampler(cfg)
    assert sampler.missing_outputs
    torch.manual_seed(cfg.train.seed)  # the weights `tnpx train` starts from
    untrained = tnpx.build_model("tnp", 1, 2, **cfg.model_options())
    before = validation_ll(untrained, sampler, 4, torch.device("cpu"))
    assert main(["train", str(config)]) == 0
    trained = tnpx.load(tmp_path / "run" / "model.pt")
    assert trained.reads_missing_outputs
    after = validation_ll(trained, sampler, 4, torch.device("cpu"))
    assert after > before + 0.3, (before, after)
    xc, yc, xt, observed = gappy_task()
    pred = call(trained, xc, yc, xt, mask_yc=observed)
    assert torch.isfinite(pred.mean).all() and torch.isfinite(pred.stddev).all()
    # `tnpx eval`: the model and both baselines scored on the held-out tasks with gaps
    out = tmp_path / "eval.json"
    assert main(["eval", str(tmp_path / "run" / "model.pt"), "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["model"] for r in rows] == ["tnp", "gp", "context-moments"]
    assert all(np.isfinite(r["ll"]) and np.isfinite(r["rmse"]).all() for r in rows)


def test_training_without_the_option_is_one_clear_error(tmp_path):
    cfg = load_config(gappy_config(tmp_path, option=False, steps=5))
    with pytest.raises(ValueError) as err:
        fit(cfg)
    text = one_line(err)
    assert "has missing output values" in text and "set model.missing_outputs=true" in text
    assert "te-tnp" in text  # which models take it
