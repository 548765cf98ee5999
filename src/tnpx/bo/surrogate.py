"""Any tnpx model as a BoTorch model: :class:`NPSurrogate`.

The neural process *is* the posterior: conditioning on observations is putting them in the
context, and ``posterior(X)`` is one forward pass. BoTorch's acquisition functions and
optimisers then run on it unchanged.

The posterior over a q-batch is Gaussian with the model's per-target means and variances and
no cross-covariance (the model predicts targets independently given the context), so
analytic acquisitions (q = 1) are exact for the model and MC acquisitions with q > 1 treat the
q points as independent. Latent-variable models are summarised by their predictive mean and
variance (a moment-matched Gaussian).

Units. A checkpoint trained on a user's data stores the normalisation of its training tasks
(:func:`tnpx.checkpoint.stored_units`); the surrogate of such a checkpoint maps the user's X and
Y with it, as :func:`tnpx.predict` does, and the per-call maps (the search box onto a training
domain, Y standardised by the observations) are the fallback for a model that stores none.
Either way ``posterior`` is in the user's Y units.
"""

from __future__ import annotations

import torch
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultitaskMultivariateNormal, MultivariateNormal
from linear_operator.operators import DiagLinearOperator

from ..apply.predict import Resolved, resolve
from ..apply.predict_steps import Options, uses_stored
from ..likelihoods import refuse_family
from ..models.base import ContextEncoding, NeuralProcess
from ..units import UnitMap, box_pairs, range_onto_box, standardising


class NPSurrogate(Model):
    """A neural process conditioned on observations ``(train_X, train_Y)``, as a BoTorch model.

    Args:
        model: a trained tnpx model (``dim_x`` = d, ``dim_y`` = m), a checkpoint path, a
            shipped model's name, or :func:`tnpx.apply.predict.resolve`'s result for one.
        train_X: ``[n, d]`` observed inputs (the user's units).
        train_Y: ``[n, m]`` observed outputs.
        bounds: ``[2, d]`` the search box; when given with ``domain``, inputs are mapped
            affinely from the box onto the model's training domain.
        domain: ``(low, high)`` of the model's training inputs (per axis, or one pair).
        standardize: standardise outputs with the observations' mean and population std
            before they enter the context, and map predictions back (a model is trained on
            standardised data); a column without spread (one observation, equal values) is
            only centred. The same :class:`~tnpx.units.UnitMap` as :func:`tnpx.predict`.
        encoding: the model's encoding of ``(train_X, train_Y)`` as one task (e.g. a
            :class:`tnpx.ContextStream`'s, grown by updates); ``posterior`` then decodes
            against it instead of encoding the observations per call. Only without any map
            (the encoding is of the observations as given).
        scaling: ``"auto"``: a checkpoint's stored normalisation maps X and Y where it has
            one (``bounds``, ``domain`` and ``standardize`` are then unused), else the maps
            those set; ``"context"``: those maps always; ``"stored"``: the stored one, or a
            ``ValueError``. :func:`tnpx.predict`'s names and rule.

    Example:
        >>> import torch, tnpx
        >>> from tnpx.bo import NPSurrogate
        >>> net = tnpx.build_model("tnp", dim_model=16, n_layers=1, n_heads=2, dim_head=8)
        >>> surrogate = NPSurrogate(net, torch.rand(5, 1), torch.rand(5, 1))
        >>> surrogate.posterior(torch.rand(3, 1, 1)).mean.shape
        torch.Size([3, 1, 1])
    """

    def __init__(
        self,
        model: NeuralProcess | str | Resolved,
        train_X: torch.Tensor,
        train_Y: torch.Tensor,
        bounds: torch.Tensor | None = None,
        domain: tuple[float, float] | None = None,
        standardize: bool = False,
        encoding: ContextEncoding | None = None,
        scaling: str = "auto",
    ):
        super().__init__()
        resolved = model if isinstance(model, Resolved) else resolve(model)
        model = resolved.net
        refuse_family(model, "the BoTorch adapter (tnpx.bo)")  # its posterior is Gaussian
        if train_X.dim() != 2 or train_X.shape[1] != model.dim_x:
            raise ValueError(
                f"train_X: expected [n, {model.dim_x}] for {model.name}, got {list(train_X.shape)}"
            )
        if train_Y.dim() != 2 or train_Y.shape != (train_X.shape[0], model.dim_y):
            raise ValueError(
                f"train_Y: expected [{train_X.shape[0]}, {model.dim_y}], got {list(train_Y.shape)}"
            )
        # Kept out of the module tree: BoTorch casts acquisition functions (and their models)
        # to the dtype of X, which would silently turn the user's network into float64.
        self.__dict__["np_model"] = model.eval()
        self.train_X, self.train_Y = train_X, train_Y
        self.bounds, self.domain, self.standardize = bounds, domain, standardize
        self.resolved, self.scaling = resolved, scaling
        self.stored = stored_map(resolved, scaling)
        self.units = surrogate_units(model, train_Y, bounds, domain, standardize, self.stored)
        by_box = bounds is not None and domain is not None
        if encoding is not None and (self.stored is not None or standardize or by_box):
            raise ValueError("encoding: only for observations in the model's units")
        self.encoding = encoding

    @property
    def num_outputs(self) -> int:
        return self.np_model.dim_y

    @property
    def _dtype(self) -> torch.dtype:
        return self.np_model.dtype or torch.float32

    def _to_model_x(self, x: torch.Tensor) -> torch.Tensor:
        return self.units.inputs(x).to(self._dtype)

    def posterior(
        self,
        X: torch.Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool = False,
        posterior_transform=None,
        **kwargs,
    ) -> GPyTorchPosterior:
        """The model's predictive at ``X`` ``[..., q, d]``: a Gaussian over ``[..., q, m]``.

        ``observation_noise`` is accepted for BoTorch's sake and changes nothing: the model's
        predictive already is that of an observation (it was trained on the targets' noise)."""
        *batch, q, d = X.shape
        if self.np_model.targets_interact:  # each q-batch is its own task
            xt = self._to_model_x(X.reshape(-1, q, d))
        else:  # targets independent given the context: all of X as the targets of ONE task
            xt = self._to_model_x(X.reshape(1, -1, d))
        n = xt.shape[0]
        if self.encoding is not None and not self.np_model.targets_interact:
            pred = self.np_model.decode_targets(self.encoding, xt)
        else:
            xc = self._to_model_x(self.train_X).expand(n, -1, -1)
            yc = self.units.outputs(self.train_Y.to(X)).to(self._dtype).expand(n, -1, -1)
            pred = self.np_model(xc, yc, xt)
        mean = self.units.mean_to_user(pred.mean.to(X.dtype))  # [n, q, m] or [1, n * q, m]
        var = self.units.variance_to_user(pred.variance.to(X.dtype))
        if output_indices is not None:
            mean, var = mean[..., output_indices], var[..., output_indices]
        mean = mean.reshape(*batch, q, mean.shape[-1])
        var = var.reshape(*batch, q, var.shape[-1]).clamp_min(1e-12)
        if mean.shape[-1] == 1:
            mvn = MultivariateNormal(mean[..., 0], DiagLinearOperator(var[..., 0]))
        else:  # interleaved: task index fastest, as gpytorch expects
            mvn = MultitaskMultivariateNormal(mean, DiagLinearOperator(var.flatten(-2)))
        posterior = GPyTorchPosterior(mvn)
        return posterior_transform(posterior) if posterior_transform is not None else posterior

    def condition_on_observations(self, X: torch.Tensor, Y: torch.Tensor, **kwargs):
        """A new surrogate with ``(X, Y)`` added to the context (no refitting)."""
        if X.dim() != 2:
            raise ValueError("NPSurrogate conditions on un-batched observations [n, d] only")
        encoding = self.encoding
        if encoding is not None:  # an incremental model updates; any other re-encodes
            model = self.np_model
            x, y = X[None].to(self._dtype), Y[None].to(self._dtype)
            encoding = model.update(encoding, x, y) if model.incremental else None
        return NPSurrogate(
            self.resolved,
            torch.cat([self.train_X, X.to(self.train_X)]),
            torch.cat([self.train_Y, Y.to(self.train_Y)]),
            self.bounds,
            self.domain,
            self.standardize,
            encoding,
            self.scaling,
        )


def stored_map(resolved: Resolved, scaling: str) -> UnitMap | None:
    """The stored normalisation :class:`NPSurrogate` maps with under ``scaling``, None where it
    uses its per-call maps (:func:`tnpx.predict`'s rule).

    Raises:
        ValueError: an unknown ``scaling``, or ``"stored"`` for a model that stores none.
    """
    use = uses_stored(Options(scaling=scaling, stored=resolved.stored))
    return resolved.stored[0] if use else None


def surrogate_units(
    model: NeuralProcess,
    train_Y: torch.Tensor,
    bounds: torch.Tensor | None,
    domain: tuple[float, float] | None,
    standardize: bool,
    stored: UnitMap | None = None,
) -> UnitMap:
    """The :class:`~tnpx.units.UnitMap` of :class:`NPSurrogate`: a checkpoint's ``stored``
    normalisation where given; else inputs from the search box ``bounds [2, d]`` onto
    ``domain`` (identity unless both are given), outputs standardised by the observations
    ``train_Y [n, m]`` as :func:`tnpx.predict` standardises a context (identity unless
    ``standardize``)."""
    if stored is not None:
        return stored
    units = UnitMap.identity(model.dim_x, model.dim_y)
    x_map, y_map = units.x, units.y
    if bounds is not None and domain is not None:
        box = box_pairs(domain, model.dim_x, "domain")
        x_map = range_onto_box(bounds.detach().double().cpu().numpy().T, box)
    if standardize:
        y_map = standardising(train_Y.detach().double().cpu().numpy())
    return UnitMap(x_map, y_map)
