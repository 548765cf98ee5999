"""The ``NeuralProcess`` base class (the registry of models is :mod:`.registry`, the context's
encoding and mask :mod:`.context`).

A model subclass declares a hyper-parameter dataclass ``Hyper``, its capabilities (class
attributes: equivariances, ``predicts_jointly``, ``stochastic``, supported dims) and implements
``_encode_context(xc, yc, mask_c) -> state`` and ``_decode_targets(state, xt) -> distribution``
(the default ``_predict`` is one after the other), or ``_predict`` itself; the base class
validates inputs, records the config needed to rebuild the model, and provides the per-task
log-likelihood used everywhere.

Missing outputs: ``mask_yc [batch, n_ctx, dim_y]`` (``Batch.mask_yc``, True = observed) marks
context outputs a point lacks. A model states how it reads them
(:meth:`NeuralProcess.missing_outputs_support`); one that does receives ``mask_c`` as that
per-output mask ``[batch, n_ctx, dim_y]`` (False also at padding) in ``_predict`` and
``_encode_context``, and every other model refuses a False in one line. Scores leave missing
target outputs out (``Batch.mask_yt``, :func:`~tnpx.batch.observed_score`).

Streamed prediction: ``encode_context`` computes what a model needs from the context once,
``decode_targets`` predicts any number of targets from it, and ``predict_streamed`` does both
with the targets in chunks, so peak memory is bounded by a chunk, not by ``n_tgt``. A model
that only overrides ``_predict`` still streams correctly (the default state keeps the inputs
and decoding recomputes the context per chunk).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, ClassVar

import torch
from torch import nn
from torch.distributions import Distribution, Normal

from ..batch import Batch, check_mask, observed_score, partly_missing
from ..input_checks import validate_inputs
from ..likelihoods import HeadHyper, likelihood_head  # noqa: F401 (the models' head options)
from .centring import centring_refusal, context_output_mean, shifted
from .context import ContextEncoding, RawContext, joined_chunks, per_output_mask
from .exposure import predict_exposed
from .registry import missing_outputs_models, missing_outputs_refusal


class NeuralProcess(nn.Module):
    """Maps ``(xc, yc, xt)`` to a predictive distribution over ``yt``.

    Call as ``model(xc, yc, xt, mask_c=None, mask_yc=None)`` with ``xc [batch, n_ctx, dim_x]``,
    ``yc [batch, n_ctx, dim_y]``, ``xt [batch, n_tgt, dim_x]``, ``mask_c [batch, n_ctx]`` (bool,
    True = observed), ``mask_yc [batch, n_ctx, dim_y]`` (bool, True = an observed output; a
    missing one may hold anything in ``yc``, NaN included; only for a model that reads missing
    outputs). Returns a ``torch.distributions.Distribution`` whose ``mean``/``stddev`` are
    ``[batch, n_tgt, dim_y]``. Inputs are checked (``tnpx.input_checks``): shape, dtype and
    device always; NaN, Inf and magnitude except on ``meta`` / fake tensors and inside
    ``trusted_values()`` (the training step).
    """

    name: ClassVar[str] = "base"
    summary: ClassVar[str] = ""  # one line for `tnpx models`
    Hyper: ClassVar[type] = HeadHyper
    # -- capabilities: declared per class, read by sample / predict / streaming / tests ------
    translation_equivariant: ClassVar[bool] = False
    # Where equivariance holds only in part, how ("" = exactly, for every shift).
    equivariance_note: ClassVar[str] = ""
    rotation_equivariant: ClassVar[bool] = False
    # True where a target's predictive marginal depends on the other targets of the call
    # (TNP-ND: targets attend to targets); such a model cannot stream targets in chunks.
    targets_interact: ClassVar[bool] = False
    # True where the prediction is one joint distribution over all targets of a call
    # (``JointGaussian``, ``LatentMixture``): ``tnpx.sample`` draws from it directly.
    predicts_jointly: ClassVar[bool] = False
    # True where a call draws random numbers (latent samples, bootstrap resamples): repeat a
    # call under ``torch.manual_seed`` to get the same prediction.
    stochastic: ClassVar[bool] = False
    # False where the prediction depends on the context's order (a causal context: inc-tnp).
    permutation_invariant: ClassVar[bool] = True
    # True where ``update(context, x_new, y_new)`` extends an encoded context (no re-encoding).
    incremental: ClassVar[bool] = False
    # True where joint samples come from a causal buffer against the context encoded once.
    buffered_sampling: ClassVar[bool] = False
    # The dims a model can be built for: ``(min, max)``, ``None`` = no upper bound.
    dim_x_range: ClassVar[tuple[int, int | None]] = (1, None)
    dim_y_range: ClassVar[tuple[int, int | None]] = (1, None)
    # Parameter names a model had in older checkpoint formats: {format version: ((old prefix,
    # new prefix or None to drop), ...)}, applied by `tnpx.load` (see `upgrade_state_dict`).
    renamed_parameters: ClassVar[dict[int, tuple[tuple[str, str | None], ...]]] = {}

    def __init__(self, dim_x: int, dim_y: int, hyper):
        super().__init__()
        problem = self.unsupported_dims(dim_x, dim_y)
        if problem:
            raise ValueError(problem)
        self.dim_x, self.dim_y, self.hyper = dim_x, dim_y, hyper
        why = centring_refusal(type(self), hyper.likelihood) if self.centres_outputs else None
        if why:
            raise ValueError(f"{self.name}: centre_outputs=True is not supported: {why}")

    @property
    def centres_outputs(self) -> bool:
        """Whether each task's outputs are centred on its context's mean (the option
        ``centre_outputs``, :mod:`tnpx.models.centring`)."""
        return isinstance(self.hyper, HeadHyper) and self.hyper.centre_outputs

    def legacy_renames(self, version: int) -> tuple[tuple[str, str | None], ...]:
        """The renames that take a format-``version`` state dict one version up (a model
        whose renames depend on its options overrides this)."""
        return self.renamed_parameters.get(version, ())

    @classmethod
    def streamable(cls) -> bool:
        """Whether targets can be decoded in independent chunks (``predict_streamed``): the
        prediction is a product of per-target Normals that do not depend on each other."""
        return not (cls.targets_interact or cls.predicts_jointly)

    @classmethod
    def unsupported_dims(cls, dim_x: int, dim_y: int) -> str | None:
        """Why this model cannot take ``dim_x`` inputs and ``dim_y`` outputs, or None."""
        for label, value, (lo, hi) in (
            ("dim_x", dim_x, cls.dim_x_range),
            ("dim_y", dim_y, cls.dim_y_range),
        ):
            if value < lo or (hi is not None and value > hi):
                allowed = f"{lo}" if lo == hi else f">= {lo}" if hi is None else f"{lo}..{hi}"
                return f"{cls.name} takes {label} {allowed}, got {label}={value}"
        return None

    @classmethod
    def missing_outputs_support(cls) -> str:
        """How the model reads a context whose points miss some outputs (``mask_yc``):
        ``"always"`` (per-output masks: ``gp``, ``context-moments``), ``"option"`` (when built
        with ``missing_outputs=True``) or ``""`` (not at all)."""
        return ""

    @property
    def reads_missing_outputs(self) -> bool:
        """Whether this model, as built, reads a context with missing outputs."""
        support = self.missing_outputs_support()
        # "option": the model's Hyper has the field (TransformerNP.missing_outputs_support)
        return support == "always" or (support == "option" and bool(self.hyper.missing_outputs))

    @classmethod
    def supports(cls, dim_x: int, dim_y: int) -> bool:
        """Whether the model can be built for ``dim_x`` inputs and ``dim_y`` outputs."""
        return cls.unsupported_dims(dim_x, dim_y) is None

    @property
    def dtype(self) -> torch.dtype | None:
        """The floating dtype of the model's parameters and buffers (inputs are cast to it);
        None for a model without any (it computes in its inputs' dtype)."""
        ref = self._reference()
        return None if ref is None else ref.dtype

    @property
    def device(self) -> torch.device | None:
        """The device of the model's parameters and buffers; None for a model without any."""
        ref = self._reference()
        return None if ref is None else ref.device

    @property
    def config(self) -> dict:
        """Everything needed to rebuild this model with :func:`tnpx.build_model`."""
        return {
            "name": self.name,
            "dim_x": self.dim_x,
            "dim_y": self.dim_y,
            "hyper": asdict(self.hyper),
        }

    def _anchor_dtype(self) -> None:
        """For a model without parameters: a buffer that gives it a dtype and device, so that
        inputs are checked against (and moved with) them."""
        self.register_buffer("_anchor", torch.zeros(()), persistent=False)

    def _reference(self) -> torch.Tensor | None:
        """A parameter (else a floating buffer) that sets the model's dtype and device."""
        ref = next(self.parameters(), None)
        if ref is None:
            ref = next((b for b in self.buffers() if b.is_floating_point()), None)
        return ref

    def forward(
        self,
        xc: torch.Tensor,
        yc: torch.Tensor,
        xt: torch.Tensor,
        mask_c: torch.Tensor | None = None,
        mask_yc: torch.Tensor | None = None,
    ) -> Distribution:
        yc, mask_yc = self._observed_outputs(yc, mask_yc)
        xc, yc, xt, mask_c = self._validate(xc, yc, xt, mask_c)
        return self._predict_centred(xc, yc, xt, per_output_mask(mask_c, mask_yc, yc))

    def _predict_centred(self, xc, yc, xt, mask_c) -> Distribution:
        """:meth:`_predict` for validated inputs, with the context's output mean taken out
        and put back where the model centres its outputs (every caller of ``_predict`` from
        outside the model goes through here)."""
        if not self.centres_outputs:
            return self._predict(xc, yc, xt, mask_c)
        shift = context_output_mean(yc, mask_c)  # [batch, 1, dim_y]
        return shifted(self._predict(xc, yc - shift, xt, mask_c), shift)

    def _predict(self, xc, yc, xt, mask_c) -> Distribution:
        """The prediction for validated inputs: by default, the targets decoded from the
        encoded context. A model overrides this, or ``_encode_context`` and
        ``_decode_targets``, or all three."""
        return self._decode_targets(self._encode_context(xc, yc, mask_c), xt)

    def _validate(self, xc, yc, xt, mask_c):
        ref = self._reference()
        dtype, device = (None, None) if ref is None else (ref.dtype, ref.device)
        return validate_inputs(xc, yc, xt, mask_c, self.dim_x, self.dim_y, dtype, device)

    def _observed_outputs(self, yc, mask_yc) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``yc`` with 0 at its missing outputs and ``mask_yc``: None where nothing is missing
        (then the call is the one without a mask, bit for bit); a ``ValueError`` where some
        is and the model does not read missing outputs."""
        if mask_yc is None or not isinstance(yc, torch.Tensor):
            return yc, mask_yc  # validation names a yc that is not a tensor
        check_mask(mask_yc, tuple(yc.shape), "mask_yc")
        if not partly_missing(mask_yc):
            return yc, None
        self.refuse_missing_outputs(mask_yc)
        mask_yc = mask_yc.to(yc.device)
        return torch.where(mask_yc, yc, torch.zeros((), dtype=yc.dtype, device=yc.device)), mask_yc

    def refuse_missing_outputs(self, mask_y: torch.Tensor | None) -> None:
        """A ``ValueError`` where ``mask_y`` marks a missing output and this model, as built,
        does not read them (one line: the option to set, or the models that can)."""
        if self.reads_missing_outputs or not partly_missing(mask_y):
            return
        why = missing_outputs_refusal(self)
        raise ValueError(f"mask_yc: the context has missing output values and {why}")

    def encode_context(
        self,
        xc: torch.Tensor,
        yc: torch.Tensor,
        mask_c: torch.Tensor | None = None,
        mask_yc: torch.Tensor | None = None,
    ) -> ContextEncoding:
        """Encode a context set once: ``xc [batch, n_ctx, dim_x]``, ``yc [batch, n_ctx,
        dim_y]``, ``mask_c [batch, n_ctx]``, ``mask_yc [batch, n_ctx, dim_y]``. Pass the
        result to :meth:`decode_targets`."""
        yc, mask_yc = self._observed_outputs(yc, mask_yc)
        xc, yc, _, mask_c = self._validate(xc, yc, xc[:, :0], mask_c)
        mask_c = per_output_mask(mask_c, mask_yc, yc)
        shift = context_output_mean(yc, mask_c) if self.centres_outputs else None
        state = self._encode_context(xc, yc if shift is None else yc - shift, mask_c)
        return ContextEncoding(self.name, xc.shape[0], state, shift)

    def decode_targets(self, context: ContextEncoding, xt: torch.Tensor) -> Distribution:
        """Predict targets ``xt [batch, n_tgt, dim_x]`` from :meth:`encode_context`'s result."""
        self._check_encoding(context)
        # Validate xt as a call with an empty context would: shape, batch, dtype, device, finite.
        ref = self._reference()
        like = ref if ref is not None else xt if isinstance(xt, torch.Tensor) else torch.empty(0)
        no_x = like.new_zeros(context.batch, 0, self.dim_x)
        no_y = like.new_zeros(context.batch, 0, self.dim_y)
        _, _, xt, _ = self._validate(no_x, no_y, xt, None)
        prediction = self._decode_targets(context.state, xt)
        return prediction if context.shift is None else shifted(prediction, context.shift)

    def _check_encoding(self, context: Any) -> None:
        """A ``ValueError`` unless ``context`` is an encoding made by this model."""
        if not isinstance(context, ContextEncoding) or context.model != self.name:
            got = context.model if isinstance(context, ContextEncoding) else type(context)
            raise ValueError(f"context: expected an encoding made by {self.name}, got {got}")

    def _encode_context(self, xc, yc, mask_c) -> Any:
        """Model-specific context state; the default keeps the inputs (decoding recomputes)."""
        return RawContext(xc, yc, mask_c)

    def _decode_targets(self, state: Any, xt: torch.Tensor) -> Distribution:
        if type(self)._predict is NeuralProcess._predict:
            raise NotImplementedError(
                f"{type(self).__name__} overrides neither _predict nor _decode_targets"
            )
        return self._predict(state.xc, state.yc, xt, state.mask_c)

    def predict_streamed(
        self,
        xc: torch.Tensor,
        yc: torch.Tensor,
        xt: torch.Tensor,
        mask_c: torch.Tensor | None = None,
        chunk_size: int = 16384,
        mask_yc: torch.Tensor | None = None,
    ) -> Normal:
        """``model(xc, yc, xt, mask_c, mask_yc=mask_yc)`` with the context encoded once and the
        targets decoded ``chunk_size`` at a time, so memory does not grow with ``n_tgt`` beyond
        the output.

        Call it under ``torch.no_grad()`` (or ``inference_mode``) for bounded memory: with
        gradients on, every chunk's graph is kept. Needs a model whose targets are
        conditionally independent given the context and whose prediction is a ``Normal``
        (not TNP-ND; not latent-variable NPs, whose chunks would draw different latents).
        """
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        if not self.streamable():
            why = "targets interact" if self.targets_interact else "its prediction is joint"
            raise ValueError(
                f"{self.name}: {why} (not independent Normals per target), so targets cannot "
                "be decoded in chunks; call the model on all targets at once"
            )
        context = self.encode_context(xc, yc, mask_c, mask_yc)
        parts = [self.decode_targets(context, part) for part in xt.split(chunk_size, dim=1)]
        return joined_chunks(parts, self.name)

    def predict_batch(self, batch: Batch) -> Distribution:
        """Predict for a :class:`~tnpx.batch.Batch` (its exposures: :mod:`.exposure`)."""
        return predict_exposed(self, batch)  # without exposures: self(xc, yc, xt, masks)

    def log_likelihood(self, batch: Batch, pred: Distribution | None = None) -> torch.Tensor:
        """Per-task LL per target point ``[batch]``: ``log_prob`` summed over output
        dimensions, averaged over targets (over the real ones where ``batch.mask_t`` marks
        padding). Where ``batch.mask_yt`` marks missing target outputs, a target's sum runs
        over its observed outputs and the mean over targets with at least one
        (:func:`~tnpx.batch.observed_score`). ``pred`` (this model's prediction for
        ``batch``) saves a forward pass. Models whose targets are not independent given the
        context (latent-variable NPs) override this with their joint estimate divided by
        ``n_tgt``."""
        if batch.yt is None:
            raise ValueError("batch.yt is None: the log-likelihood needs target outputs")
        self.refuse_missing_outputs(batch.mask_yc)  # also where predict_batch is overridden
        pred = self.predict_batch(batch) if pred is None else pred
        return observed_score(pred.log_prob(batch.yt), batch.mask_t, batch.mask_yt)

    def refuse_target_mask(self, batch: Batch) -> None:
        """For an override of :meth:`log_likelihood` or :meth:`training_loss` that cannot
        leave padded targets or missing target outputs out (a joint score over the targets,
        targets that feed later ones): a ``ValueError`` where ``batch.mask_t`` or
        ``batch.mask_yt`` marks any (or ``batch.mask_yc`` a missing context output the model
        does not read), rather than scoring them."""
        if batch.mask_t is not None and not bool(batch.mask_t.all()):
            raise ValueError(
                f"{self.name} does not support target masks (batch.mask_t) yet: its score "
                "would count the padded targets; use a model such as tnp, or tasks with equal "
                "numbers of targets"
            )
        if partly_missing(batch.mask_yt):
            raise ValueError(
                f"{self.name} cannot leave missing target outputs (batch.mask_yt) out of its "
                f"score; models that can, with model.missing_outputs=true: "
                f"{', '.join(missing_outputs_models())}"
            )
        self.refuse_missing_outputs(batch.mask_yc)

    def training_loss(self, batch: Batch) -> torch.Tensor:
        """The scalar that training minimises: by default the negative LL per target point,
        averaged over tasks. Latent-variable models override it (ELBO, importance-weighted)."""
        return -self.log_likelihood(batch).mean()
