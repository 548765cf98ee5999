"""``tnpx.save`` / ``tnpx.load``: a round trip rebuilds the model exactly, and every bad file
is a ``tnpx.CheckpointError`` (a ``ValueError``) that says why."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

import tnpx
from tests.helpers.small_models import make_task, predict, small_model
from tnpx.checkpoint import FORMAT, FORMAT_VERSION


@pytest.mark.parametrize("dims", [(1, 1), (2, 1)])
def test_round_trip_gives_identical_predictions(model_name, tmp_path, dims):
    model = small_model(model_name, *dims, seed=3)
    path = tmp_path / f"{model_name}.pt"
    tnpx.save(model, path)
    loaded = tnpx.load(path)
    assert type(loaded) is type(model)
    assert loaded.config == model.config
    assert not loaded.training
    xc, yc, xt = make_task(3, 6, 5, *dims, seed=4)
    mask = torch.ones(3, 6, dtype=torch.bool)
    mask[0, 2:] = False
    for m in (None, mask):
        a, b = predict(model, xc, yc, xt, m), predict(loaded, xc, yc, xt, m)
        assert_close(a.mean, b.mean, atol=0, rtol=0)
        assert_close(a.stddev, b.stddev, atol=0, rtol=0)


def test_round_trip_keeps_non_default_hyperparameters(tmp_path):
    model = small_model("tnp", min_std=0.2, scale_transform="exp")
    tnpx.save(model, tmp_path / "m.pt")
    loaded = tnpx.load(tmp_path / "m.pt")
    assert loaded.hyper == model.hyper
    assert loaded.hyper.min_std == 0.2 and loaded.hyper.dim_model == 32
    oracle = tnpx.build_model("gp-oracle", 1, 1, kernel="matern32", lengthscale=0.8, noise_tgt=0.1)
    tnpx.save(oracle, tmp_path / "o.pt")
    assert tnpx.load(tmp_path / "o.pt").hyper == oracle.hyper


def test_trained_weights_survive_round_trip(tmp_path):
    model = small_model("cnp")
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    tnpx.save(model, tmp_path / "m.pt")
    loaded = tnpx.load(tmp_path / "m.pt")
    for (k1, v1), (k2, v2) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert k1 == k2
        assert torch.equal(v1, v2)


def test_save_overwrites_and_creates_folders(tmp_path):
    path = tmp_path / "a" / "b" / "m.pt"
    tnpx.save(small_model("cnp", seed=0), path)
    second = small_model("cnp", seed=1)
    tnpx.save(second, path)
    loaded = tnpx.load(path)
    assert torch.equal(
        next(iter(loaded.state_dict().values())), next(iter(second.state_dict().values()))
    )
    assert [p.name for p in path.parent.iterdir()] == ["m.pt"]  # no temporary left behind


def test_save_stores_extra_entries(tmp_path):
    tnpx.save(small_model("cnp"), tmp_path / "m.pt", step=17, note="hello")
    record = torch.load(tmp_path / "m.pt", weights_only=True)
    assert record["step"] == 17 and record["note"] == "hello"
    assert record["format"] == FORMAT
    assert tnpx.load(tmp_path / "m.pt").name == "cnp"


def test_load_string_path_and_map_location(tmp_path):
    tnpx.save(small_model("tnp"), tmp_path / "m.pt")
    loaded = tnpx.load(str(tmp_path / "m.pt"), map_location="cpu")
    assert all(p.device.type == "cpu" for p in loaded.parameters())


# --- bad files ----------------------------------------------------------------------------


def _raises_checkpoint_error(path, *needles):
    with pytest.raises(tnpx.CheckpointError) as err:
        tnpx.load(path)
    assert isinstance(err.value, ValueError)
    msg = str(err.value)
    assert str(path) in msg, msg
    for needle in needles:
        assert needle in msg, msg
    return msg


def test_missing_file(tmp_path):
    _raises_checkpoint_error(tmp_path / "nope.pt", "no such")


def test_directory_is_not_a_checkpoint(tmp_path):
    _raises_checkpoint_error(tmp_path)


def test_plain_torch_dict(tmp_path):
    path = tmp_path / "plain.pt"
    torch.save({"weights": torch.zeros(3)}, path)
    _raises_checkpoint_error(path, "not a tnpx checkpoint")


def test_plain_state_dict(tmp_path):
    path = tmp_path / "state.pt"
    torch.save(small_model("cnp").state_dict(), path)
    _raises_checkpoint_error(path, "not a tnpx checkpoint")


def test_tensor_file(tmp_path):
    path = tmp_path / "tensor.pt"
    torch.save(torch.zeros(3), path)
    _raises_checkpoint_error(path, "not a tnpx checkpoint")


def test_text_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("this is not a checkpoint\n")
    _raises_checkpoint_error(path, "not a readable tnpx checkpoint")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.pt"
    path.write_bytes(b"")
    _raises_checkpoint_error(path)


def test_truncated_checkpoint(tmp_path):
    path = tmp_path / "m.pt"
    tnpx.save(small_model("tnp"), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    _raises_checkpoint_error(path, "not a readable tnpx checkpoint")


def test_unknown_model_name(tmp_path):
    path = tmp_path / "m.pt"
    tnpx.save(small_model("cnp"), path)
    record = torch.load(path, weights_only=True)
    record["model"]["name"] = "mystery-np"
    torch.save(record, path)
    msg = _raises_checkpoint_error(path, "mystery-np")
    for name in tnpx.list_models():
        assert name in msg


def test_newer_format_version(tmp_path):
    path = tmp_path / "m.pt"
    tnpx.save(small_model("cnp"), path)
    record = torch.load(path, weights_only=True)
    record["format_version"] = FORMAT_VERSION + 1
    torch.save(record, path)
    _raises_checkpoint_error(path, "newer")


def test_mismatched_state_dict(tmp_path):
    path = tmp_path / "m.pt"
    tnpx.save(small_model("tnp"), path)
    record = torch.load(path, weights_only=True)
    record["state_dict"].pop(next(iter(record["state_dict"])))
    torch.save(record, path)
    _raises_checkpoint_error(path, "tnp")


def test_mismatched_hyperparameters(tmp_path):
    path = tmp_path / "m.pt"
    tnpx.save(small_model("tnp"), path)
    record = torch.load(path, weights_only=True)
    record["model"]["hyper"]["dim_model"] = 48  # weights no longer fit
    torch.save(record, path)
    _raises_checkpoint_error(path)
    record["model"]["hyper"] = {"not_a_hyperparameter": 1}
    torch.save(record, path)
    _raises_checkpoint_error(path)


def test_model_entry_not_a_dict(tmp_path):
    """A tagged file whose ``model`` entry is not a dict is still a CheckpointError, not an
    AttributeError from inside the loader."""
    path = tmp_path / "m.pt"
    torch.save(
        {"format": FORMAT, "format_version": FORMAT_VERSION, "model": "tnp", "state_dict": {}}, path
    )
    _raises_checkpoint_error(path)


def test_pickled_module_is_refused(tmp_path):
    """``weights_only=True``: a file holding pickled code (a whole nn.Module) is refused."""
    path = tmp_path / "module.pt"
    torch.save(small_model("cnp"), path)
    _raises_checkpoint_error(path, "not a readable tnpx checkpoint")


def test_pickled_code_inside_a_tagged_record_is_refused(tmp_path):
    path = tmp_path / "m.pt"
    model = small_model("cnp")
    tnpx.save(model, path)
    record = torch.load(path, weights_only=True)
    record["payload"] = model  # pickled code beside valid entries
    torch.save(record, path)
    _raises_checkpoint_error(path, "not a readable tnpx checkpoint")


def test_hyperparameter_of_wrong_type(tmp_path):
    """A corrupted config value (a string where a size belongs) is a CheckpointError, not a
    TypeError from deep inside the model constructor."""
    path = tmp_path / "m.pt"
    tnpx.save(small_model("cnp"), path)
    record = torch.load(path, weights_only=True)
    record["model"]["hyper"]["dim_model"] = "abc"
    torch.save(record, path)
    _raises_checkpoint_error(path, "cnp")


def test_predict_reads_a_checkpoint_once_for_model_and_domain(tmp_path, monkeypatch):
    import pandas as pd

    import tnpx.checkpoint.records as checkpoint
    from tests.helpers.tiny import write_tiny
    from tnpx.config import config_to_yaml, load_config

    cfg = load_config(write_tiny(tmp_path), ["data.domain=[0.0,4.0]"])
    model = tnpx.build_model(cfg.model["name"], 1, 1, **cfg.model_options())
    path = tmp_path / "model.pt"
    tnpx.save(model, path, experiment=config_to_yaml(cfg))
    reads = []
    real_load = checkpoint.torch.load
    monkeypatch.setattr(
        checkpoint.torch, "load", lambda *a, **kw: reads.append(a[0]) or real_load(*a, **kw)
    )
    ctx = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [0.5, -0.2, 0.1]})
    out = tnpx.predict(path, ctx, pd.DataFrame({"x": [1.5]}))
    assert out.attrs["tnpx"]["domain"] == [[0.0, 4.0]]  # the experiment came from that read
    assert reads == [path]
