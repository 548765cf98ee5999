"""The model option ``centre_outputs`` (tnpx.models.centring): each task's context outputs are
centred on their mean and the mean put back, so predictions move exactly with the outputs."""

import pytest
import torch

import tnpx
from tnpx.models.centring import context_output_mean

SMALL = {"dim_model": 16, "n_layers": 1, "n_heads": 2, "dim_head": 8, "dim_ff": 16}
CENTRING_MODELS = {
    "tnp": SMALL,
    "cnp": {"dim_hidden": 16},
    "tnp-kr-full": {"dim_model": 16, "n_layers": 1, "n_heads": 2, "dim_ff": 16},
}


def _model(name: str, centre: bool, dim_y: int = 2):
    torch.manual_seed(0)
    options = tnpx.models.options_taken(name, CENTRING_MODELS[name])
    return tnpx.build_model(name, dim_x=1, dim_y=dim_y, centre_outputs=centre, **options).eval()


def _task(b: int = 3, n_ctx: int = 7, n_tgt: int = 5, dim_y: int = 2):
    g = torch.Generator().manual_seed(1)
    xc = torch.rand(b, n_ctx, 1, generator=g) * 4 - 2
    yc = torch.randn(b, n_ctx, dim_y, generator=g)
    xt = torch.rand(b, n_tgt, 1, generator=g) * 4 - 2
    return xc, yc, xt


@pytest.mark.parametrize("name", sorted(CENTRING_MODELS))
def test_prediction_moves_exactly_with_the_outputs(name):
    model = _model(name, centre=True)
    xc, yc, xt = _task()
    shift = torch.tensor([[[30.0, -5.0]], [[-250.0, 2.0]], [[0.5, 1e3]]])  # per task, output
    with torch.no_grad():
        base, moved = model(xc, yc, xt), model(xc, yc + shift, xt)
    torch.testing.assert_close(moved.mean, base.mean + shift, rtol=1e-5, atol=1e-3)
    torch.testing.assert_close(moved.stddev, base.stddev, rtol=1e-4, atol=1e-5)


def test_without_the_option_the_prediction_does_not_move_with_the_outputs():
    """The test above can fail: an uncentred model does not shift with its outputs."""
    model = _model("tnp", centre=False)
    xc, yc, xt = _task()
    with torch.no_grad():
        base, moved = model(xc, yc, xt), model(xc, yc + 30.0, xt)
    assert (moved.mean - base.mean - 30.0).abs().max() > 1.0


def test_the_mean_counts_observed_points_only():
    model = _model("tnp", centre=True)
    xc, yc, xt = _task()
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[:, 5:] = False
    padded = yc.clone()
    padded[:, 5:] = 1e4  # values at padding never reach the model
    with torch.no_grad():
        short = model(xc[:, :5], yc[:, :5], xt)
        masked = model(xc, padded, xt, mask_c=mask)
    torch.testing.assert_close(masked.mean, short.mean, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(masked.stddev, short.stddev, rtol=1e-5, atol=1e-5)


def test_context_output_mean_matches_a_float64_rederivation():
    g = torch.Generator().manual_seed(2)
    yc = torch.randn(4, 6, 3, generator=g)
    mask = torch.rand(4, 6, 3, generator=g) > 0.4
    mask[0] = False  # a task with nothing observed: no shift
    got = context_output_mean(yc, mask)
    want = torch.zeros(4, 1, 3, dtype=torch.float64)
    for b in range(4):
        for d in range(3):
            seen = yc[b, :, d].double()[mask[b, :, d]]
            want[b, 0, d] = seen.mean() if len(seen) else 0.0
    torch.testing.assert_close(got.double(), want, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(context_output_mean(yc, None), yc.mean(1, keepdim=True))
    assert context_output_mean(yc[:, :0], None).abs().sum() == 0


def test_streamed_prediction_equals_the_whole_call():
    model = _model("tnp", centre=True)
    xc, yc, xt = _task(n_tgt=9)
    with torch.no_grad():
        whole = model(xc, yc + 40.0, xt)
        streamed = model.predict_streamed(xc, yc + 40.0, xt, chunk_size=4)
    torch.testing.assert_close(streamed.mean, whole.mean, rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(streamed.stddev, whole.stddev, rtol=1e-6, atol=1e-6)


def test_the_option_is_recorded_and_rebuilds_the_same_model(tmp_path):
    model = _model("tnp", centre=True)
    assert model.config["hyper"]["centre_outputs"] is True
    path = tmp_path / "model.pt"
    tnpx.save(model, path)
    loaded = tnpx.load(path)
    xc, yc, xt = _task()
    with torch.no_grad():
        torch.testing.assert_close(loaded(xc, yc + 9.0, xt).mean, model(xc, yc + 9.0, xt).mean)
    assert loaded.centres_outputs


@pytest.mark.parametrize(
    ("name", "options", "why"),
    [
        ("tnp-nd", {}, "joint or random"),
        ("np", {}, "joint or random"),
        ("inc-tnp", {}, "incrementally"),
        ("tnp", {"likelihood": "student-t"}, "gaussian only"),
    ],
)
def test_models_that_cannot_centre_refuse_in_one_line(name, options, why):
    with pytest.raises(ValueError, match=f"centre_outputs=True is not supported: .*{why}"):
        tnpx.build_model(name, dim_x=1, dim_y=1, centre_outputs=True, **options)


def test_training_a_centred_model_reduces_its_loss():
    model = _model("tnp", centre=True, dim_y=1).train()
    g = torch.Generator().manual_seed(3)
    x = torch.rand(16, 20, 1, generator=g) * 4 - 2
    level = torch.randn(16, 1, 1, generator=g) * 50  # per-task levels far apart
    y = level + torch.sin(3 * x)
    batch = tnpx.batch.Batch(x[:, :10], y[:, :10], x[:, 10:], y[:, 10:])
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = model.training_loss(batch).item()
    for _ in range(60):
        optimiser.zero_grad()
        model.training_loss(batch).backward()
        optimiser.step()
    assert model.training_loss(batch).item() < first - 0.5
