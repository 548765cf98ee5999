"""A count model's exposures (:mod:`tnpx.models.exposure`, issue 52, item 4): the encoder sees
``yc / exposure_c``, the prediction's rate (mean) is multiplied by ``exposure_t``; without
exposures, or with exposures of 1, every model predicts as before, bit for bit; a model of
another family refuses exposures it cannot use, in one line."""

from __future__ import annotations

import math

import pytest
import torch

from tests.helpers.small_models import predict, small_model
from tnpx.batch import Batch
from tnpx.likelihoods.poisson_lognormal import PoissonLogNormalPrediction
from tnpx.models.exposure import predict_exposed, predict_with_exposures, rates_batch

COUNTS = ("poisson", "negative-binomial", "poisson-lognormal")
LIKELIHOOD = {"poisson-lognormal": {"name": "poisson", "overdispersion": "lognormal"}}


def count_model(family: str):
    return small_model("tnp", likelihood=LIKELIHOOD.get(family, family))


def count_batch(seed: int = 0, b: int = 3, n_ctx: int = 9, n_tgt: int = 7) -> Batch:
    """Counts at exposures log-uniform on [0.2, 5] (float64, as the sources give them)."""
    g = torch.Generator().manual_seed(seed)
    xc, xt = torch.rand(b, n_ctx, 1, generator=g) * 4 - 2, torch.rand(b, n_tgt, 1, generator=g)
    e_c = torch.exp(torch.empty(b, n_ctx, 1).uniform_(math.log(0.2), math.log(5), generator=g))
    e_t = torch.exp(torch.empty(b, n_tgt, 1).uniform_(math.log(0.2), math.log(5), generator=g))
    yc = torch.poisson(3 * e_c.float(), generator=g)
    yt = torch.poisson(3 * e_t.float(), generator=g)
    return Batch(xc, yc, xt, yt, info={"exposure_c": e_c.double(), "exposure_t": e_t.double()})


def log_prob64(family: str, prediction, exposure: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The count law's log-probability of ``y`` in float64 from a prediction at exposure 1
    with its rate (mean) times ``exposure``, written out (not torch's distributions)."""
    y, e = y.double(), exposure.double()
    if family == "poisson-lognormal":  # the log rate's location moves by log(exposure)
        loc, scale = prediction.loc.double(), prediction.scale.double()
        return PoissonLogNormalPrediction(loc + e.log(), scale).log_prob(y)
    if family == "poisson":
        rate = prediction.rate.double() * e
        return y * rate.log() - rate - torch.lgamma(y + 1)
    r = prediction.total_count.double()
    mean = prediction.mean.double() * e
    return (
        torch.lgamma(y + r) - torch.lgamma(r) - torch.lgamma(y + 1)
        + r * torch.log(r / (r + mean)) + y * torch.log(mean / (r + mean))
    )  # fmt: skip


@pytest.mark.parametrize("family", COUNTS)
def test_the_prediction_is_the_rate_per_unit_exposure_times_each_targets_exposure(family):
    model = count_model(family)
    batch = count_batch()
    e_c, e_t = batch.info["exposure_c"], batch.info["exposure_t"]
    with torch.no_grad():
        exposed = model.predict_batch(batch)
        # the context the encoder sees: the rates yc / exposure_c, called directly
        at_one = model(batch.xc, batch.yc / e_c.float(), batch.xt)
    assert type(exposed) is type(at_one)
    torch.testing.assert_close(exposed.mean.double(), at_one.mean.double() * e_t, rtol=1e-5, atol=0)
    want = log_prob64(family, at_one, e_t, batch.yt)
    torch.testing.assert_close(exposed.log_prob(batch.yt).double(), want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(  # the per-task score follows: it goes through predict_batch
        model.log_likelihood(batch).double(), want.sum(-1).mean(-1), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("family", COUNTS)
def test_the_context_is_read_as_rates(family):
    """Counts and exposures of the context scaled together: the same rates, the same
    prediction (the encoder sees only ``yc / exposure_c``)."""
    model = count_model(family)
    batch = count_batch()
    e_c = batch.info["exposure_c"]
    twice = Batch(batch.xc, batch.yc * 2, batch.xt, batch.yt,
                  info={**batch.info, "exposure_c": e_c * 2})  # fmt: skip
    with torch.no_grad():
        torch.testing.assert_close(model.predict_batch(twice).mean, model.predict_batch(batch).mean)


@pytest.mark.parametrize("family", COUNTS)
def test_exposures_of_one_predict_bit_for_bit_as_none(family):
    model = count_model(family)
    batch = count_batch()
    ones = {k: torch.ones_like(v) for k, v in batch.info.items()}
    plain = Batch(batch.xc, batch.yc, batch.xt, batch.yt)
    with torch.no_grad():
        a = model.predict_batch(Batch(batch.xc, batch.yc, batch.xt, batch.yt, info=ones))
        b = model.predict_batch(plain)
        c = model(batch.xc, batch.yc, batch.xt)
    for p in (a, b):
        assert torch.equal(p.mean, c.mean) and torch.equal(
            p.log_prob(batch.yt), c.log_prob(batch.yt)
        )


def test_only_target_exposures_leave_the_context_as_it_is():
    model = small_model("tnp", likelihood="poisson")
    batch = count_batch()
    e_t = batch.info["exposure_t"]
    with torch.no_grad():
        only_t = predict_with_exposures(model, batch.xc, batch.yc, batch.xt, exposure_t=e_t)
        plain = model(batch.xc, batch.yc, batch.xt)
    torch.testing.assert_close(only_t.rate, plain.rate * e_t.float())


@pytest.mark.parametrize("name", ["tnp", "context-moments"])
def test_another_family_refuses_exposures_it_cannot_use_in_one_line(name):
    model = small_model(name)  # gaussian
    batch = count_batch()
    with pytest.raises(ValueError) as err:
        model.predict_batch(batch)
    text = str(err.value)
    assert "\n" not in text and "exposure" in text and "poisson or negative-binomial" in text
    ones = Batch(batch.xc, batch.yc, batch.xt, batch.yt,
                 info={k: torch.ones_like(v) for k, v in batch.info.items()})  # fmt: skip
    torch.testing.assert_close(  # exposures of 1: what the model assumes, taken as they are
        predict(model, batch.xc, batch.yc, batch.xt).mean, model.predict_batch(ones).mean
    )


def test_the_gp_oracle_refuses_exposures_too():
    model = small_model("gp-oracle")
    batch = count_batch()
    with pytest.raises(ValueError, match="exposure"):
        model.predict_batch(batch)


def test_an_exposure_of_the_wrong_shape_is_named():
    model = small_model("tnp", likelihood="poisson")
    batch = count_batch()
    wrong = {**batch.info, "exposure_t": batch.info["exposure_t"][:, :3]}
    with pytest.raises(
        ValueError, match=r"exposure_t: expected shape \[3, 7, 1\], got \[3, 3, 1\]"
    ):
        predict_exposed(model, Batch(batch.xc, batch.yc, batch.xt, batch.yt, info=wrong))


def test_a_batch_as_rates_divides_each_side_by_its_exposures():
    batch = count_batch()
    rates = rates_batch(batch)
    assert not set(rates.info) & {"exposure_c", "exposure_t"}
    torch.testing.assert_close(rates.yc, batch.yc / batch.info["exposure_c"].float())
    torch.testing.assert_close(rates.yt, batch.yt / batch.info["exposure_t"].float())
    plain = Batch(batch.xc, batch.yc, batch.xt, batch.yt)
    assert rates_batch(plain) is plain
