"""models/transformer.py: every transformer NP's options live in its ``Hyper`` (a
``TransformerHyper``), the skeleton is built as that hyper says, and a choice a model fixes is
read like an option but is not one (not taken, not recorded)."""

from __future__ import annotations

import pytest
import torch

import tnpx
from tests.helpers.small_models import small_model
from tnpx.models.registry import REGISTRY, hyper_names
from tnpx.models.transformer import TransformerHyper, TransformerNP
from tnpx.nn import TokenEmbedder

TRANSFORMERS = [n for n in tnpx.list_models() if issubclass(REGISTRY[n], TransformerNP)]
# Read by the skeleton from every transformer's Hyper, an option or a class constant.
SKELETON_CHOICES = (
    "share_weights", "targets_read", "norm", "norm_eps", "tokens", "missing_outputs",
    "dim_decoder_hidden", "dim_embed_hidden", "n_embed_hidden", "n_decoder_hidden",
)  # fmt: skip


def test_the_transformers_are_found():
    assert {"tnp", "tnp-d", "tnp-kr-full", "te-tnp", "te-tnp-rope", "hypermix-np"} <= set(
        TRANSFORMERS
    )


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_every_transformer_hyper_is_a_transformer_hyper_with_every_choice(name):
    hyper = REGISTRY[name].Hyper
    assert issubclass(hyper, TransformerHyper)
    built = hyper()
    assert all(hasattr(built, choice) for choice in SKELETON_CHOICES)


def _off_default(name: str) -> dict:
    """Every skeleton option ``name`` takes, at a value other than its default."""
    h = REGISTRY[name].Hyper()
    values = {
        "share_weights": not h.share_weights,
        "targets_read": "input" if h.targets_read == "updated" else "updated",
        "norm": "post" if h.norm == "pre" else "pre",
        "norm_eps": 1e-6,
        "dim_decoder_hidden": 24,
        "dim_embed_hidden": 20,
    }
    return {k: v for k, v in values.items() if k in hyper_names(REGISTRY[name])}


@pytest.mark.parametrize("defaults", [True, False])
@pytest.mark.parametrize("name", TRANSFORMERS)
def test_the_skeleton_is_built_as_the_hyper_says(name, defaults):
    model = small_model(name, **({} if defaults else _off_default(name)))
    h = model.hyper
    assert (model.stack.share_weights, model.stack.targets_read) == (
        h.share_weights,
        h.targets_read,
    )
    for block in model.stack.blocks:
        assert block.norm_first == (h.norm == "pre")
        assert block.norm_attn.eps == block.norm_ff.eps == h.norm_eps
    if isinstance(model.embed, TokenEmbedder):  # inc-tnp's buffer tokens have their own
        assert model.embed.kind == h.tokens
        assert model.embed.mlp[0].out_features == (h.dim_embed_hidden or h.dim_model)
    width = h.dim_decoder_hidden or h.dim_model
    assert model.decoder[0].out_features == width


@pytest.mark.parametrize(
    "name, choice, value",
    [
        ("tnp-kr-full", "share_weights", False),
        ("tnp-kr-full", "missing_outputs", True),
        ("tnp-kr-fast", "norm", "post"),
        ("hypermix-np", "targets_read", "updated"),
        ("hypermix-np", "n_heads", 2),
        ("te-tnp", "tokens", "flagged"),
    ],
)
def test_a_fixed_choice_is_not_an_option(name, choice, value):
    assert choice not in hyper_names(REGISTRY[name])
    with pytest.raises(ValueError, match=f"does not take \\['{choice}'\\]"):
        tnpx.build_model(name, **{choice: value})
    assert choice not in small_model(name).config["hyper"]  # nor recorded in a checkpoint


@pytest.mark.parametrize("name, choice", [("tnp", "tokens"), ("tnp-kr-full", "norm_eps")])
def test_a_choice_a_model_offers_is_an_option(name, choice):
    """The class constant of ``TransformerHyper`` is a field where a model offers it."""
    assert choice in hyper_names(REGISTRY[name]) and choice not in hyper_names(TransformerNP)
    value = {"tokens": "plain", "norm_eps": 1e-6}[choice]
    model = small_model(name, **{choice: value})
    assert getattr(model.hyper, choice) == model.config["hyper"][choice] == value


def test_tnp_kr_reads_its_fixed_structure():
    """TNP-KR's constants are the TNP-KR code's structure: one block per layer, targets
    reading the layer input, plain tokens through one hidden layer of dim_embed_hidden."""
    model = small_model("tnp-kr-full", dim_embed_hidden=24)
    assert model.stack.share_weights and not hasattr(model.stack, "target_blocks")
    assert model.embed.kind == "plain" and len(model.embed.mlp) == 3
    assert model.embed.mlp[0].out_features == 24
    with torch.no_grad():
        out = model(torch.zeros(1, 3, 1), torch.zeros(1, 3, 1), torch.zeros(1, 2, 1))
    assert out.mean.shape == (1, 2, 1)
