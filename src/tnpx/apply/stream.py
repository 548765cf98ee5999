"""Observations that arrive over time (a sensor, a BO loop): :class:`ContextStream`.

A stream holds a model's encoded context and grows it as points arrive. A model that declares
``incremental`` (``inc-tnp``) appends the new points to its key-value cache, ``O(N)`` per point;
any other model re-encodes the whole context once per change. Either way the encoding is kept
between changes, so predicting many target sets against one context encodes it once.

    >>> import torch, tnpx
    >>> model = tnpx.build_model("inc-tnp", dim_model=16, n_layers=1, n_heads=2, dim_head=8)
    >>> stream = tnpx.ContextStream(model, torch.rand(1, 5, 1), torch.rand(1, 5, 1))
    >>> stream.add(torch.rand(1, 1, 1), torch.rand(1, 1, 1))   # O(N): an update
    >>> stream.predict(torch.rand(1, 3, 1)).mean.shape
    torch.Size([1, 3, 1])

Units. Like :func:`tnpx.predict`, a stream takes a model object, a checkpoint path or a shipped
model's name. A checkpoint trained on a user's data (``tnpx train`` on a table) stores the
normalisation its training tasks were mapped with (:func:`tnpx.checkpoint.stored_units`); the
stream then maps with it: :meth:`~ContextStream.add` takes observations in the user's units and
:meth:`~ContextStream.predict` takes user-unit inputs and returns the predictive distribution of
the outputs in the user's units (means ``* scale + loc``, spreads ``* scale``: the same map as
``predict``'s). ``scaling`` chooses, with ``predict``'s names where they apply:

- ``"auto"``: the stored normalisation where there is one, else the model's units (a model
  object or a zoo model: values go to the model unchanged, as they always did);
- ``"stored"``: the stored normalisation, or a ``ValueError``;
- ``"none"``: the model's units always.

``predict``'s ``"context"`` (maps fitted to the context) is refused: a stream's context grows,
and a map refitted to each new point would change the meaning of the points already encoded
and of every earlier prediction. Fit the maps once with :func:`tnpx.predict` instead, or map
the values yourself and use ``"none"``.

Every prediction is checked to be finite before it is returned (a :class:`tnpx.DataError`
names the task, target and output that is not).
"""

from __future__ import annotations

import numpy as np
import torch
from torch.distributions import Distribution

from ..models.base import ContextEncoding, NeuralProcess
from ..nn.causal import join_masks
from ..units import Affine, UnitMap, in_user_units
from ..user_files import DataError

SCALINGS = ("auto", "stored", "none")  # ContextStream's scaling


class ContextStream:
    """A growing context of ``batch`` tasks for ``model`` (see the module docstring).

    Args:
        model: a tnpx model (call ``.eval()`` first if it has dropout), a checkpoint path or a
            shipped model's name (:func:`tnpx.list_pretrained`).
        xc, yc: the first observations ``[batch, n, dim_x]``, ``[batch, n, dim_y]``; None for
            an empty context (then ``batch`` says how many tasks).
        mask_c: ``[batch, n]`` (True = observed) or None.
        scaling: ``"auto"``, ``"stored"`` or ``"none"`` (the module docstring, "Units").

    Attributes:
        units: the :class:`~tnpx.units.UnitMap` the stream maps with (the checkpoint's stored
            normalisation), or None where values are in the model's units.
        xc, yc, mask_c: every observation so far, in the model's units (what is encoded).

    With a stored normalisation, inputs and outputs may be of any floating dtype (they are
    mapped in float64, then cast to the model's dtype and device), and a prediction is in the
    dtype of its target inputs; without one they must be the model's, as for the model itself.

    Raises:
        TypeError: ``model`` is neither a model, a checkpoint path nor a shipped name (an
            architecture's name, say).
        CheckpointError: the path is not a readable tnpx checkpoint.
        ValueError: ``scaling`` is not one of the above, or ``"stored"`` for a model that
            stores no normalisation; a non-Gaussian model whose stored output map is not the
            identity (rain's scale: use :func:`tnpx.predict`); bad observations (as the model's
            own call).
    """

    def __init__(
        self,
        model: NeuralProcess | str,
        xc: torch.Tensor | None = None,
        yc: torch.Tensor | None = None,
        mask_c: torch.Tensor | None = None,
        batch: int = 1,
        *,
        scaling: str = "auto",
    ):
        self.model, self.units = _resolve(model, scaling)
        model = self.model
        if xc is None:
            xc = torch.zeros(batch, 0, model.dim_x, dtype=self._dtype, device=self._device)
            yc = torch.zeros(batch, 0, model.dim_y, dtype=self._dtype, device=self._device)
        else:
            xc, yc = self._in_model_units(xc, yc)
        xc, yc, _, mask_c = model._validate(xc, yc, xc[:, :0], mask_c)
        self.xc, self.yc, self.mask_c = xc, yc, mask_c
        self._encoding: ContextEncoding | None = None

    @property
    def _dtype(self) -> torch.dtype:
        like = self.model._reference()
        return like.dtype if like is not None else torch.float32

    @property
    def _device(self) -> torch.device | None:
        like = self.model._reference()
        return like.device if like is not None else None

    @property
    def incremental(self) -> bool:
        """Whether new points update the encoding (the model declares ``incremental``)."""
        return self.model.incremental

    @property
    def n_observed(self) -> int:
        """Context entries so far (padding included)."""
        return self.xc.shape[1]

    @property
    def encoding(self) -> ContextEncoding:
        """The encoded context (encoded on first use after a change, for a model that cannot
        update)."""
        if self._encoding is None:
            with torch.no_grad():
                self._encoding = self.model.encode_context(self.xc, self.yc, self.mask_c)
        return self._encoding

    def add(self, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None = None) -> None:
        """Observe ``x [batch, m, dim_x]``, ``y [batch, m, dim_y]`` (``mask [batch, m]``), in the
        user's units where the stream maps (:attr:`units`)."""
        x, y = self._in_model_units(x, y)
        x, y, _, mask = self.model._validate(x, y, x[:, :0], mask)
        if x.shape[0] != self.xc.shape[0]:
            raise ValueError(f"x: expected batch {self.xc.shape[0]}, got {list(x.shape)}")
        if self.incremental and self._encoding is not None:
            with torch.no_grad():
                self._encoding = self.model.update(self._encoding, x, y, mask)
        else:
            self._encoding = None
        self.mask_c = join_masks(self.mask_c, self.n_observed, mask, x)
        self.xc, self.yc = torch.cat([self.xc, x], 1), torch.cat([self.yc, y], 1)

    def predict(self, xt: torch.Tensor) -> Distribution:
        """The prediction at ``xt [batch, n_tgt, dim_x]`` given every observation so far: a
        distribution over ``[batch, n_tgt, dim_y]``, in the user's units where the stream maps.

        Raises:
            DataError: a predicted mean or standard deviation is not finite.
        """
        xt_model, _ = self._in_model_units(xt, None)
        with torch.no_grad():
            pred = self.model.decode_targets(self.encoding, xt_model)
            if self.units is not None:
                dtype = xt.dtype if xt.is_floating_point() else torch.float64
                pred = in_user_units(pred, self.units.y, dtype)
        check_finite(pred, xt)
        return pred

    def _in_model_units(self, x, y):
        """``x``, ``y`` (either may be None) mapped into the model's units and dtype where the
        stream maps; anything else is passed on for the model to validate."""
        if self.units is None:
            return x, y

        def mapped(values, affine: Affine):
            if not isinstance(values, torch.Tensor):
                return values  # the model's validation names what it expected
            model_units = affine.to_model(values.to(torch.float64))
            return model_units.to(dtype=self._dtype, device=self._device)

        return mapped(x, self.units.x), mapped(y, self.units.y)


def _resolve(model, scaling: str) -> tuple[NeuralProcess, UnitMap | None]:
    """The network of ``model`` (an object, a checkpoint path or a shipped name) and the unit
    map the stream maps with under ``scaling`` (None: the model's units)."""
    from ..checkpoint import CheckpointError
    from ..models import list_models
    from .predict import refuse_exposure, resolve

    if scaling == "context":
        raise ValueError(
            "scaling='context' does not apply to a stream: its context grows, and maps refitted "
            "to it would change the points already encoded; use 'auto', 'stored' or 'none' "
            "(values in the model's units), or tnpx.predict for maps fitted to a whole context"
        )
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {', '.join(SCALINGS)}, got {scaling!r}")
    try:
        resolved = resolve(model)
    except CheckpointError:
        if isinstance(model, str) and model in list_models():
            raise TypeError(
                f"model: {model!r} names an architecture, not a trained model: expected a "
                "tnpx NeuralProcess, a checkpoint path or a shipped model's name"
            ) from None
        raise
    if scaling == "stored" and resolved.stored is None:
        raise ValueError(
            "scaling='stored': the model stores no normalisation (only a model trained on "
            "your data with tnpx train does); use scaling='auto' or 'none'"
        )
    refuse_exposure(resolved, "ContextStream")
    use = resolved.stored is not None and scaling != "none"
    units = resolved.stored[0] if use else None
    _check_output_map(resolved.net, units)
    return resolved.net, units


def _check_output_map(net: NeuralProcess, units: UnitMap | None) -> None:
    """A stream maps a Gaussian prediction into the user's units; another family's only where
    its output map is the identity (counts, 0/1 and fractions are left as they are), else a
    ``ValueError`` now, before any point is encoded, rather than at the first prediction."""
    from ..likelihoods import family_of

    family = family_of(getattr(getattr(net, "hyper", None), "likelihood", "heteroscedastic"))
    if units is None or family == "gaussian":
        return
    y = units.y
    if y.is_identity():
        return
    raise ValueError(
        f"ContextStream maps only Gaussian predictions into your units, and this {family} "
        f"model's outputs are scaled (scale {np.asarray(y.scale).tolist()}): use tnpx.predict "
        "(its mean, interval and quantile columns are in your units), or scaling='none' with "
        "outputs in the model's units (yours divided by that scale)"
    )


def check_finite(pred: Distribution, xt: torch.Tensor) -> None:
    """A :class:`~tnpx.DataError` naming the first task, target and output whose predicted
    mean or standard deviation (``[batch, n_tgt, dim_y]``) is not finite; ``xt [batch, n_tgt,
    dim_x]`` the target inputs, for the message."""
    for name, values in (("mean", pred.mean), ("standard deviation", pred.stddev)):
        bad = ~torch.isfinite(values)
        if bad.any():
            task, target, output = (int(i) for i in bad.nonzero()[0])
            raise DataError(
                f"ContextStream.predict: the predicted {name} of task {task}, target {target}, "
                f"output {output} is {values[task, target, output].item()} (not finite) at "
                f"x={xt[task, target].tolist()}; the model's arithmetic overflowed there"
            )
