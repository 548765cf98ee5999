"""Issue 23, training half: every config value is checked where it is read (naming the key,
the value and the allowed range, the models' size options included, through a config or the
Python API), and YAML and override errors are one line naming the file or the override."""

from __future__ import annotations

import pytest
import torch

import tnpx
from tests.helpers.safety_files import BAD_YAML, write_bad_yaml
from tests.helpers.small_models import make_task, small_model, supports
from tnpx.config import ConfigError, load_config
from tnpx.models.sizes import size_minima

# 2. Every config value checked where it is read --------------------------------------------


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.steps=-5", "train.steps = -5: must be an integer >= 1"),
        ("train.steps=0", "train.steps = 0: must be an integer >= 1"),
        ("train.seed=-1", "train.seed = -1: must be an integer >= 0"),
        ("train.checkpoint_every=0", "train.checkpoint_every = 0: must be an integer >= 1"),
        ("train.log_every=0", "train.log_every = 0: must be an integer >= 1"),
        ("train.val_every=-1", "train.val_every = -1: must be an integer >= 1"),
        ("train.val_batches=0", "train.val_batches = 0: must be an integer >= 1"),
        ("train.clip_norm=0", "train.clip_norm = 0: must be a number > 0 or null"),
        ("train.clip_value=-1", "train.clip_value = -1: must be a number > 0 or null"),
        ("train.device=gpu", "train.device = 'gpu': must be auto, cpu, cuda, cuda:N or mps"),
        ("train.out_dir=''", "train.out_dir = '': must be a non-empty string"),
        ("eval.n_batches=0", "eval.n_batches = 0: must be an integer >= 1"),
        ("eval.batch_size=-2", "eval.batch_size = -2: must be an integer >= 1"),
        ("optim.lr=0", "optim.lr = 0.0: must be a number > 0"),
        ("optim.lr=-1e-3", "optim.lr = -0.001: must be a number > 0"),
        ("optim.lr=.inf", "optim.lr = inf: must be a number > 0"),
        ("optim.weight_decay=-1", "optim.weight_decay = -1.0: must be a number >= 0"),
        ("optim.betas=[0.9]", "optim.betas = [0.9]: must be two numbers in [0, 1)"),
        ("optim.betas=[0.9,1.0]", "optim.betas = [0.9, 1.0]: must be two numbers in [0, 1)"),
        (
            "optim.name=sgd",
            "optim.name = 'sgd': must be one of adamw, adam, yogi, schedulefree-adamw",
        ),
        ("optim.lr_multipliers={decoder: 0}", "optim.lr_multipliers = {'decoder': 0}: must be a"),
        ("schedule.name=linear", "schedule.name = 'linear': must be one of cosine, constant"),
        ("schedule.warmup_steps=-1", "schedule.warmup_steps = -1: must be an integer >= 0"),
        ("schedule.min_lr_ratio=2", "schedule.min_lr_ratio = 2.0: must be a number in [0, 1]"),
        ("protocol=paper", "protocol = 'paper': must be one of exact, budget"),
        ("data.batch_size=0", "data.batch_size = 0: must be an integer >= 1"),
        ("data.batch_size=-1", "data.batch_size = -1: must be an integer >= 1"),
        ("model.dim_x=0", "model.dim_x = 0: must be an integer >= 1"),
        ("model.n_heads=0", "model.n_heads = 0: must be an integer >= 1"),
        ("model.dim_model=-4", "model.dim_model = -4: must be an integer >= 1"),
        ("model.n_layers=0", "model.n_layers = 0: must be an integer >= 1"),
        ("model.dim_head=0", "model.dim_head = 0: must be an integer >= 1"),
        ("model.dim_ff=0", "model.dim_ff = 0: must be an integer >= 1"),
        ("model.n_embed_hidden=-1", "model.n_embed_hidden = -1: must be an integer >= 0"),
    ],
)
def test_out_of_range_values_name_key_value_and_range(override, message):
    with pytest.raises(ConfigError) as err:
        load_config(None, [override])
    assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize(
    "override",
    [
        "train.clip_norm=null",
        "train.device=cuda:1",
        "schedule.min_lr_ratio=1",
        "optim.betas=[0,0]",
        "optim.name=AdamW",
        "model.n_embed_hidden=0",
        "model.n_decoder_hidden=0",
        "train.steps=1",
    ],
)
def test_boundary_values_are_allowed(override):
    load_config(None, [override])


# The allowed ranges of the models' integer options (tnpx.models.sizes): every other dim_* /
# n_* option (and chunk_elements, kernel_size, rank) must be >= 1.
MIN_ZERO = {
    "n_embed_hidden": "an MLP with no hidden layer is a linear map",
    "n_decoder_hidden": "ditto",
    "n_encoder_hidden": "ditto",
    "n_cov_hidden": "ditto (TNP-ND's projection)",
    "n_cov_layers": "TNP-ND without target self-attention",
    "n_iterations": "a fitted GP at its initial hyper-parameters",
    "redraw_every": "fixed FAVOR+ features (the paper's)",
    # declared by the models (a Hyper's ``zero_allowed``): more MLP depths, 0 = a linear map
    "n_post_hidden": "the MLP after a pooling mean (the BNP code's CNP)",
    "n_key_hidden": "the x-only key embedding of CANP/ANP/BANP",
    "n_grid_encoder_hidden": "ConvCNP's map on the grid (the TNP-KR code's Dense)",
    "n_readout_hidden": "ConvCNP's map after the read-out",
}
ZERO_LAYERS = {"canp", "anp", "banp"}  # no self-attention blocks; the cross-attention remains
NOT_SIZES = {"feature_seed"}


@pytest.mark.parametrize("name", tnpx.list_models())
def test_model_size_ranges(name):
    from dataclasses import fields

    ints = {
        f.name
        for f in fields(tnpx.models.REGISTRY[name].Hyper)
        if "int" in str(f.type) and f.name not in NOT_SIZES
    }
    expected = {
        k: 0 if k in MIN_ZERO or (k == "n_layers" and name in ZERO_LAYERS) else 1 for k in ints
    }
    assert size_minima(tnpx.models.REGISTRY[name].Hyper) == expected


@pytest.mark.parametrize(
    "name, key",
    [
        (n, k)
        for n in tnpx.list_models()
        for k, low in size_minima(tnpx.models.REGISTRY[n].Hyper).items()
        if low == 0
    ],
)
def test_zero_where_allowed_builds_a_working_model(name, key):
    dims = next(d for d in [(1, 1), (1, 2), (2, 1)] if supports(name, *d))
    xc, yc, xt = make_task(dim_x=dims[0], dim_y=dims[1])
    with torch.no_grad():
        pred = small_model(name, *dims, **{key: 0})(xc, yc, xt)
    assert pred.mean.isfinite().all()


def test_model_sizes_are_checked_for_the_chosen_model():
    with pytest.raises(ConfigError, match=r"model.n_layers = -1: must be an integer >= 0"):
        load_config(None, ["model.name=canp", "model.n_layers=-1"])
    with pytest.raises(ConfigError, match=r"model.n_pseudo = 0: must be an integer >= 1"):
        load_config(None, ["model.name=pt-tnp-ist", "model.n_pseudo=0"])


def test_build_model_checks_sizes_too():
    """The Python API applies the same size rule as a config: ``n_heads=0`` is refused."""
    with pytest.raises(ValueError, match="tnp.n_heads = 0: must be an integer >= 1"):
        tnpx.build_model("tnp", 1, 1, n_heads=0)
    assert tnpx.build_model("canp", 1, 1, n_layers=0, dim_model=8, n_heads=1, dim_head=4)


# 3. YAML errors name the file ------------------------------------------------------------


@pytest.mark.parametrize("name", BAD_YAML)
def test_yaml_errors_are_one_line_naming_the_file(tmp_path, name):
    write_bad_yaml(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / name)
    msg = str(err.value)
    assert BAD_YAML[name][1] in msg and "\n" not in msg
    if name != "interpolation.yaml":  # which names the key
        assert (name if name != "base-list.yaml" else "list.yaml") in msg


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.steps=[1,", "override 'train.steps=[1,' is not valid YAML"),
        ("data=[1]", "override 'data=[1]' does not fit the config"),
        ("train.steps=${oops}", "train.steps: Interpolation key 'oops' not found"),
    ],
)
def test_override_errors_name_the_override(override, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("$", r"\$")):
        load_config(None, [override])
