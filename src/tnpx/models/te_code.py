"""What every model of the TE paper's code shares, for the presets that compute its function
(registers no model; ``docs/fidelity.md``).

The code: cambridge-mlg/tetnp @ 9f1f38d0a7360a2ee19485c2c1b0032f2ab8c46e (TE-TNP, TE-PT-TNP)
on cambridge-mlg/tnp @ e2adb62406a2382b47c4a10f06b2d38c7aa97001 (PT-TNPs, layers, MLPs,
likelihood). Its configs (``experiments/configs/models/*.yml``) share ``params``: ``embed_dim``
128, 8 heads of 16, 5 layers, ``norm_first: True``, ``feedforward_dim: embed_dim``, every MLP
(token embedder, decoder, TE kernel) ``num_layers: 2, width: embed_dim`` (two hidden layers),
and ``HeteroscedasticNormalLikelihood()``: ``std = softplus(raw) ** 0.5 + min_noise`` with
``min_noise = 0`` (``tnp/likelihoods/gaussian.py``). Every attention projects q, k and v
without bias (``tnp/networks/attention.py``, ``tetnp/networks/teattention.py``).
"""

from __future__ import annotations

# Sizes of the configs' params (pseudo-token configs add num_latents: 32).
TE_CODE_SIZES = dict(
    dim_model=128, n_layers=5, n_heads=8, dim_head=16, dim_ff=128, n_embed_hidden=2,
    n_decoder_hidden=2,
)  # fmt: skip

# The head and attention choices every model of the code shares.
TE_CODE_HEAD = dict(scale_transform="sqrt_softplus", min_std=0.0)

# The TE attention of cambridge-mlg/tetnp tetnp/networks/teattention.py: no q/k/v biases,
# logits kernel(cat[x_n - x_m, q.k / sqrt(d_head)]) with the kernel an MLP of two hidden
# layers of embed_dim (TE Eq. 8, "post"); no phi, so no Eq. 10 location update.
TE_CODE_ATTENTION = dict(
    relative="post", qkv_bias=False, rho_order="rel-first", dim_relative_hidden=None,
    location_update=False,
)  # fmt: skip
