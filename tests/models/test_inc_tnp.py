"""inc-tnp: the incremental context (update = encoding at once), the causal buffer's API and the
one-pass training objective that reads prefixes of the context and of the buffer."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.small_models import make_task, small_model
from tnpx.batch import Batch

ATOL, RTOL = 1e-5, 1e-4


def close(p, q):
    assert_close(p.mean, q.mean, atol=ATOL, rtol=RTOL)
    assert_close(p.stddev, q.stddev, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("structure", [{}, {"share_weights": False, "targets_read": "updated"}])
def test_a_stream_of_single_points_equals_the_whole_context(structure):
    model = small_model("inc-tnp", **structure)
    xc, yc, xt = make_task(2, 12, 6, seed=1)
    with torch.no_grad():
        context = model.encode_context(xc[:, :0], yc[:, :0])  # from nothing: the prior
        close(model.decode_targets(context, xt), model(xc[:, :0], yc[:, :0], xt))
        for i in range(12):
            context = model.update(context, xc[:, i : i + 1], yc[:, i : i + 1])
            close(model.decode_targets(context, xt), model(xc[:, : i + 1], yc[:, : i + 1], xt))


def test_padded_updates_with_junk_equal_the_unpadded_stream():
    """Each task's new points arrive padded (NaN in the pads) to one batch shape."""
    model = small_model("inc-tnp")
    xc, yc, xt = make_task(2, 6, 4, seed=2)
    n_new = [2, 0]  # task 1 gets nothing in the second update: an all-padded chunk
    x_new = torch.full((2, 3, 1), float("nan"))
    y_new = torch.full((2, 3, 1), float("nan"))
    mask = torch.zeros(2, 3, dtype=torch.bool)
    for i, n in enumerate(n_new):
        x_new[i, 1 : 1 + n], y_new[i, 1 : 1 + n], mask[i, 1 : 1 + n] = (
            xc[i, 4:6][:n],
            yc[i, 4:6][:n],
            True,
        )
    with torch.no_grad():
        context = model.update(model.encode_context(xc[:, :4], yc[:, :4]), x_new, y_new, mask)
        pred = model.decode_targets(context, xt)
        for i, n in enumerate(n_new):
            alone = model(xc[i : i + 1, : 4 + n], yc[i : i + 1, : 4 + n], xt[i : i + 1])
            assert_close(pred.mean[i : i + 1], alone.mean, atol=ATOL, rtol=RTOL)


def test_update_leaves_the_given_encoding_valid():
    model = small_model("inc-tnp")
    xc, yc, xt = make_task(1, 5, 3, seed=3)
    with torch.no_grad():
        first = model.encode_context(xc[:, :3], yc[:, :3])
        before = model.decode_targets(first, xt)
        model.update(first, xc[:, 3:], yc[:, 3:])
        close(model.decode_targets(first, xt), before)


def test_update_rejects_bad_input():
    model = small_model("inc-tnp")
    xc, yc, _ = make_task(3, 5, 1)
    context = model.encode_context(xc, yc)
    with pytest.raises(ValueError, match="x_new: expected batch 3"):
        model.update(context, xc[:2], yc[:2])
    with pytest.raises(ValueError, match="yc"):  # validated as a context pair
        model.update(context, xc, yc[:, :, :0])
    other = small_model("tnp")
    with pytest.raises(ValueError, match="encoding made by inc-tnp"):
        model.update(other.encode_context(xc, yc), xc, yc)


def test_bad_training_shares_are_refused():
    with pytest.raises(ValueError, match="prefix_fraction"):
        tnpx.build_model("inc-tnp", prefix_fraction=0.8, buffer_fraction=0.5)
    with pytest.raises(ValueError, match="n_buffer = 0: must be an integer >= 1"):
        tnpx.build_model("inc-tnp", n_buffer=0)


def test_each_target_reads_its_prefixes_as_a_separate_prediction_would():
    """The one-pass training forward: a target reading c context points (and no buffer) or
    the whole context and j buffer entries gets the prediction of the context's first c
    points, or of the context and a buffer of the first j entries."""
    model = small_model("inc-tnp")
    xc, yc, xt = make_task(2, 5, 6, seed=4)
    xb, yb = xt[:, :3], torch.randn(2, 3, 1)
    ctx_reads = torch.tensor([[5, 0, 2, 5, 3, 5], [1, 5, 5, 4, 5, 0]])
    buf_reads = torch.tensor([[0, 0, 0, 3, 0, 2], [0, 1, 0, 0, 3, 0]])
    with torch.no_grad():
        pred = model._read_prefixes(xc, yc, None, xt, ctx_reads, xb, yb, buf_reads)
        for i in range(2):
            for t in range(6):
                c, j = int(ctx_reads[i, t]), int(buf_reads[i, t])
                context = model.encode_context(xc[i : i + 1, :c], yc[i : i + 1, :c])
                buffer = model.add_to_buffer(
                    context, model.start_buffer(context, 1), xb[i : i + 1, :j], yb[i : i + 1, :j]
                )
                alone = model.predict_with_buffer(context, buffer, xt[i : i + 1, t : t + 1])
                assert_close(pred.mean[i, t], alone.mean[0, 0], atol=ATOL, rtol=RTOL)


def test_training_plan_reads():
    model = small_model("inc-tnp", n_buffer=4)
    for seed in range(20):
        plan = model.training_plan(3, 7, 10, torch.Generator().manual_seed(seed))
        k = plan.n_buffer
        assert 0 <= k <= 4 and plan.order.sort(1).values.equal(torch.arange(10).expand(3, 10))
        assert plan.buffer_reads[:, :k].equal(torch.arange(k).expand(3, k))  # buffer < k
        assert (plan.context_reads[:, :k] == 7).all()
        assert ((plan.context_reads >= 0) & (plan.context_reads <= 7)).all()
        assert ((plan.buffer_reads >= 0) & (plan.buffer_reads <= k)).all()
        prefix = plan.context_reads < 7  # a target reads a context prefix or the buffer
        assert (plan.buffer_reads[prefix] == 0).all()


def test_training_loss_is_a_function_of_the_batch_and_trains_every_part():
    model = small_model("inc-tnp").train()
    xc, yc, xt = make_task(4, 8, 12, seed=5)
    batch = Batch(xc, yc, xt, torch.randn(4, 12, 1))
    torch.manual_seed(0)
    a = model.training_loss(batch)
    torch.manual_seed(1)  # the global RNG plays no part
    b = model.training_loss(batch)
    assert torch.isfinite(a) and a.item() == b.item()
    a.backward()
    embed = model.embed.mlp[0].weight.grad
    assert embed is not None and embed[:, -1].abs().sum() > 0  # the buffer flag is trained
    masked = Batch(xc, yc, xt, batch.yt, mask_c=torch.rand(4, 8) > 0.3)
    assert torch.isfinite(model.training_loss(masked))


def test_joint_log_prob_of_one_target_is_its_marginal():
    model = small_model("inc-tnp")
    xc, yc, xt = make_task(3, 6, 1, seed=6)
    yt = torch.randn(3, 1, 1)
    with torch.no_grad():
        joint = model.joint_log_prob(xc, yc, xt, yt)
        marginal = model(xc, yc, xt).log_prob(yt).sum((-2, -1))
    assert_close(joint, marginal, atol=ATOL, rtol=RTOL)
    with pytest.raises(ValueError, match="yt: expected shape"):
        model.joint_log_prob(xc, yc, xt, yt[:, :, :0])
