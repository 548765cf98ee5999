"""The ``bnp-code`` presets (and ``cnp`` ``te-code``) at the code's sizes and choices: the
parameter counts of the authors' models, the choices each preset sets, the defaults they leave
unchanged, and that each preset saves and loads (``docs/fidelity.md``). The forward passes are
re-derived in ``test_fidelity_bnp.py``."""

from __future__ import annotations

import pytest

import tnpx
from tests.helpers.bnp_reference import SIZES
from tests.helpers.reference_ops import assert_reloads_identically, randomise
from tests.helpers.reference_ops import count_parameters as count

# --- sizes, presets, defaults, checkpoints ----------------------------------------------------


def test_parameter_counts_at_the_code_sizes():
    # dx = dy = 1, dim_hid = dim_lat = 128. build_mlp(a, h, b, depth): depth Linears.
    # PoolingEncoder: pre 2->128->128->128->128: 384 + 3 * 16,512 = 49,920; post 128->128->128:
    # 33,024; 82,944 in all. Decoder (depth 3) fc 257->128: 33,024, 128->128, 128->2: 49,794.
    pooling, dec = 49_920 + 33_024, 33_024 + 16_512 + 258
    assert count(tnpx.build_model("cnp", preset="bnp-code")) == 2 * pooling + dec == 215_682
    # NP: denc 82,944; lenc pre 49,920, post 128->128->256: 16,512 + 33,024; decoder fc takes
    # [r, z, x] (257).
    lenc = 49_920 + 16_512 + 33_024
    assert count(tnpx.build_model("np", preset="bnp-code")) == pooling + lenc + dec == 232_194
    # MultiHeadAttn(128): fc_q, fc_k, fc_v 3 * 16,384 (no bias), fc_out 16,512, ln1 + ln2 512.
    attn = 3 * 16_384 + 16_512 + 512
    # CrossAttnEncoder: net_v 2->128->128: 16,896; SelfAttn; net_qk 1->128->128: 16,768; attn.
    cross = 16_896 + attn + 16_768 + attn
    # CANP enc2 PoolingEncoder(self_attn): build_mlp depth 2, SelfAttn, post 33,024.
    pooled = 16_896 + attn + 33_024
    assert count(tnpx.build_model("canp", preset="bnp-code")) == cross + pooled + dec == 331_906
    # ANP: lenc = PoolingEncoder(self_attn, dim_lat): post 128->128->256.
    lenc_attn = 16_896 + attn + 16_512 + 33_024
    assert count(tnpx.build_model("anp", preset="bnp-code")) == cross + lenc_attn + dec
    assert cross + lenc_attn + dec == 348_418
    # BNP / BANP: add_ctx(256): fc_ctx 256 -> 128 without bias, 32,768.
    assert count(tnpx.build_model("bnp", preset="bnp-code")) == 215_682 + 32_768 == 248_450
    assert count(tnpx.build_model("banp", preset="bnp-code")) == 331_906 + 32_768 == 364_674
    # cambridge CNP (cnp.yml): z_encoder 2->128 then 5 hidden: 384 + 5 * 16,512 = 82,944;
    # z_decoder 129->128: 16,640 + 4 * 16,512 + 128->2: 258 = 82,946.
    assert count(tnpx.build_model("cnp", preset="te-code")) == 82_944 + 82_946 == 165_890


def test_bnp_code_presets_set_the_code_choices():
    for name in ("cnp", "np", "canp", "anp", "bnp", "banp"):
        model = tnpx.build_model(name, preset="bnp-code")
        assert (model.likelihood.transform, model.likelihood.min_std) == ("affine_softplus", 0.1)
    np_, anp = (tnpx.build_model(n, preset="bnp-code") for n in ("np", "anp"))
    for m in (np_, anp):  # --train_num_samples 4, --eval_num_samples 50, logmeanexp per point
        assert (m.hyper.n_train_samples, m.hyper.n_samples) == (4, 50)
        assert (m.hyper.objective, m.hyper.ll_estimate) == ("bnp-code", "marginal")
    for name in ("bnp", "banp"):
        m = tnpx.build_model(name, preset="bnp-code")
        assert (m.hyper.n_train_bootstrap, m.hyper.n_bootstrap) == (4, 50)
        assert (m.hyper.boot_adapter, m.hyper.bootstrap_loss, m.hyper.bootstrap_grad) == (
            "concat", "sum", False,
        )  # fmt: skip
    canp = tnpx.build_model("canp", preset="bnp-code")
    attn = canp.encoder[0].cross_attention
    assert attn.to_q.bias is None and attn.to_out.bias is not None and attn.n_heads == 8
    assert canp.encoder[1].relu_embed and not canp.encoder[0].self_attention[0].to_k.bias
    assert anp.latent.relu_embed and len(anp.latent.blocks) == 1


def test_the_bnp_attention_needs_heads_that_tile_the_model_width():
    with pytest.raises(ValueError, match="n_heads \\* dim_head"):
        tnpx.build_model("canp", preset="bnp-code", dim_head=8)


def test_defaults_are_unchanged():
    cnp = tnpx.build_model("cnp")
    assert type(cnp.encoder).__name__ == "DeepSetEncoder" and not hasattr(cnp.encoder, "post")
    assert (cnp.hyper.n_paths, cnp.hyper.n_post_hidden) == (1, None)
    for name in ("canp", "anp", "banp"):
        h = tnpx.build_model(name).hyper
        assert (h.layer, h.keys, h.n_key_hidden, h.pooled_path) == ("block", "tokens", None, False)
    assert type(tnpx.build_model("canp").encoder).__name__ == "AttentiveEncoder"
    assert not tnpx.build_model("anp").latent.relu_embed
    for name in ("np", "anp"):
        assert tnpx.build_model(name).hyper.decoder_order == "r-z-x"
    for name in ("bnp", "banp"):
        h = tnpx.build_model(name).hyper
        assert (h.boot_adapter, h.bootstrap_loss, h.bootstrap_grad, h.pair_keys) == (
            "concat", "sum", False, "resampled",
        )  # fmt: skip


@pytest.mark.parametrize("name,preset", [(n, "bnp-code") for n in SIZES] + [("cnp", "te-code")])
def test_presets_save_and_load(tmp_path, name, preset):
    sizes = SIZES[name] if preset == "bnp-code" else {"dim_model": 8}
    model = randomise(tnpx.build_model(name, 2, 2, preset=preset, **sizes)).float()
    assert_reloads_identically(model, tmp_path / "model.pt")
