"""A neural process as a scikit-learn regressor of one data set: :class:`NPRegressor`.

``NPRegressor(model).fit(X, y)`` holds the observations as the context; ``predict(X)`` is
:func:`tnpx.predict` on that context and the targets ``X``, in the user's units. scikit-learn
is optional for tnpx: this module imports without it, and constructing the estimator then
raises an :class:`ImportError` saying what to install.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..units import box_pairs
from .estimator_names import (
    by_feature_names,
    check_names,
    dates_as_numbers,
    input_names,
    output_names,
)
from .predict import extrapolation_limits, refuse_exposure, resolve
from .predict_missing import check_missing_y
from .predict_steps import Options, stream_prediction
from .unit_choice import ExtrapolationLimits

if TYPE_CHECKING:  # pandas is imported where it is used
    import pandas as pd
    import torch

    from ..models import NeuralProcess

SKLEARN_NEEDED = "NPRegressor needs scikit-learn: pip install 'tnpx[sklearn]'"

try:  # validate_data came in scikit-learn 1.6: an older one counts as missing
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.utils.validation import check_is_fitted, validate_data
except ImportError:  # scikit-learn is optional: the class exists, constructing it says why not

    class BaseEstimator:  # type: ignore[no-redef]
        def __new__(cls, *args, **kwargs):
            raise ImportError(SKLEARN_NEEDED)

    class RegressorMixin:  # type: ignore[no-redef]
        pass


class NPRegressor(RegressorMixin, BaseEstimator):
    """A neural process conditioned on one data set, with scikit-learn's regressor API.

    ``fit(X, y)`` takes no gradient step: it loads the model once and keeps copies of ``X``
    ``[n_samples, n_features]`` and ``y`` (``[n_samples]`` or ``[n_samples, n_outputs]``) as
    the *context*. ``predict(X)`` conditions the model on that context and predicts at the
    rows of ``X`` ``[n_samples, n_features]``: exactly :func:`tnpx.predict` with the fitted
    data as the context table and ``X`` as the targets. So, as its docstring details, each
    input column is mapped affinely from the context's range onto the model's training domain
    and the outputs are standardised by the context's mean and std; means and stds come back
    in the units of ``y``. Every returned value is finite, or a
    :class:`~tnpx.DataError` says which row is not. Targets far outside the context's input
    range warn, and beyond a shipped model's measured hard limit are refused unless
    ``allow_extrapolation``. A target's prediction depends on the context and that target
    only (except where the context has a single distinct value in an input column: that
    column is then scaled by the range of context and targets together, as in
    :func:`tnpx.predict`).

    Args:
        model: a shipped model's name (:func:`tnpx.list_pretrained`, e.g. ``"gp1d-v2-tnp"``),
            the path of a tnpx checkpoint (its recorded experiment gives the training domain),
            a :class:`~tnpx.NeuralProcess` (used as it is, not copied, unless ``device``
            moves it), or a callable ``(dim_x, dim_y) -> NeuralProcess`` that builds a model
            for the data's dimensions (``n_features``, ``n_outputs``) at ``fit`` (a
            module-level function, so that the estimator pickles).
        level: the probability of :meth:`predict_interval`'s central interval.
        allow_extrapolation: predict beyond a shipped model's hard limit, or outside the
            training range a checkpoint trained on your data stores (past its hard limit),
            too (they still warn) instead of raising :class:`~tnpx.DataError`.
        chunk_size: targets decoded per model call (memory is bounded by a chunk).
        domain: ``(low, high)``, the model's training input domain; None: the one a
            checkpoint records, else ``[-2, 2]`` with a warning.
        device: where to predict (``"cpu"``, ``"cuda"``); None: a checkpoint on the CPU, a
            model object where it is. A model object on another device is copied there.

    Fitted attributes:
        model_: the :class:`~tnpx.NeuralProcess` predicting.
        training_domain_: the training domain the checkpoint records, or None.
        X_, y_: copies of the context, float64, ``[n_samples, n_features]`` and ``y``'s shape.
        n_features_in_, feature_names_in_: as scikit-learn sets them. Fitted on a
            DataFrame, ``predict`` takes a DataFrame's columns by these names, in any order
            (a missing or unknown one is refused), and a checkpoint trained on your data
            matches them to its own names; a bare array's columns are taken by position
            (:mod:`tnpx.apply.estimator_names`). A time input of such a checkpoint takes
            dates in a DataFrame (:mod:`tnpx.apply.coordinate_units`).
        n_outputs_: the number of output columns (the model's ``dim_y``).

    Example:
        >>> import numpy as np
        >>> from tnpx.apply.estimator import NPRegressor
        >>> x = np.linspace(0.0, 10.0, 30)[:, None]
        >>> reg = NPRegressor("gp1d-v2-tnp").fit(x, np.sin(x[:, 0]))
        >>> mean, std = reg.predict(np.array([[2.5], [7.5]]), return_std=True)
        >>> mean.shape, std.shape
        ((2,), (2,))
    """

    def __init__(
        self,
        model: str | Path | NeuralProcess | Callable[[int, int], NeuralProcess] = "gp1d-v2-tnp",
        level: float = 0.95,
        allow_extrapolation: bool = False,
        chunk_size: int = 16384,
        domain: tuple[float, float] | None = None,
        device: str | None = None,
    ):
        # scikit-learn's convention: store the parameters unchanged, check them in fit.
        self.model = model
        self.level = level
        self.allow_extrapolation = allow_extrapolation
        self.chunk_size = chunk_size
        self.domain = domain
        self.device = device

    # -- scikit-learn's tags -----------------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        fixed = self._model_object()
        if fixed is not None:  # a model object: its dim_y says how many outputs y must have
            tags.target_tags.multi_output = fixed.dim_y > 1
            tags.target_tags.single_output = fixed.dim_y == 1
            tags.non_deterministic = bool(fixed.stochastic)  # latent NPs draw latents
        else:  # a factory takes any number; a name or path is not read here (shipped: 1)
            tags.target_tags.multi_output = self._is_factory()
        return tags

    # -- fit ---------------------------------------------------------------------------------
    def fit(self, X, y) -> NPRegressor:
        """Hold ``X [n_samples, n_features]`` and ``y [n_samples]`` or ``[n_samples,
        n_outputs]`` as the context (copied; no training happens) and load the model.

        A missing output (NaN in ``y``) is masked out of the context where the model reads
        missing outputs (built with ``missing_outputs=True``; :mod:`tnpx.apply.predict_missing`),
        as long as each row keeps one output.

        Raises:
            ValueError: non-finite or non-numeric values (NaN in ``y`` for a model that does
                not read missing outputs, or in every output of a row), no samples, or a
                number of input columns (output columns) that is not the model's ``dim_x``
                (``dim_y``).
            CheckpointError: ``model`` is neither a shipped name nor a readable checkpoint.
        """
        resolved = None if self._is_factory() else resolve(self.model)
        if resolved is not None:  # its X has no exposure column to pass
            refuse_exposure(resolved, "NPRegressor")
        units = None if resolved is None else resolved.units
        X, y = validate_context(self, dates_as_numbers(X, units), y)
        n_outputs = 1 if y.ndim == 1 else y.shape[1]
        self._checked_options(None)  # level, chunk_size: fail here, not at predict
        check_domain(self.domain, X.shape[1])
        net, recorded, why, limits = self._load(X.shape[1], n_outputs, resolved)
        check_dims(net, X.shape[1], n_outputs, self.model)
        check_names(self)  # a DataFrame's columns: the model's, by name
        check_missing_y(net, y)  # NaN in y: masked for a model that reads missing outputs
        self.model_ = net
        self.training_domain_ = recorded
        self._domain_unknown = why
        self._limits = limits
        self.X_ = np.array(X, dtype=np.float64)  # copies: the caller's arrays are never held
        self.y_ = np.array(y, dtype=np.float64)
        self.n_outputs_ = n_outputs
        return self

    def _load(
        self, dim_x: int, dim_y: int, resolved
    ) -> tuple[NeuralProcess, tuple[float, float] | None, str, ExtrapolationLimits]:
        """The model (``resolved``: :func:`~tnpx.apply.predict.resolve`'s, None for a
        factory), its recorded training domain (or None and why not) and its limits."""
        self._units = None if resolved is None else resolved.units  # dates in X: converted
        if self._is_factory():
            net = self.model(dim_x, dim_y)
            check_built(net, self.model)
            why = "a model built by a factory carries no record of its training data"
            recorded, limits = None, ExtrapolationLimits()
            self._stored = self._trained = None
        else:
            net, recorded, why = resolved[:3]
            self._stored = resolved.stored  # a model trained on user data: its normalisation
            self._trained = resolved.trained  # and where it was trained
            limits = extrapolation_limits(self.model)
        return self._on_device(net), recorded, why, limits

    def _on_device(self, net: NeuralProcess) -> NeuralProcess:
        """``net`` on ``device``: a user's model object is copied, never moved in place."""
        if self.device is None:
            return net
        import torch

        target = torch.device(self.device)
        if net.device is None or same_device(net.device, target):
            return net
        if net is self.model:
            net = copy.deepcopy(net)
        return net.to(target)

    # -- predict -----------------------------------------------------------------------------
    def predict(self, X, return_std: bool = False):
        """The predictive mean at ``X [n_samples, n_features]``, in the units of ``y``:
        ``[n_samples]`` where ``y`` was 1-D, else ``[n_samples, n_outputs]``; with
        ``return_std``, ``(mean, std)`` of that shape. Every value is finite."""
        frame, y_cols = self._predict_frame(X)
        mean = self._shaped(frame, y_cols, "mean")
        return (mean, self._shaped(frame, y_cols, "std")) if return_std else mean

    def predict_interval(self, X) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)``: the central ``level`` interval at ``X [n_samples,
        n_features]``, shaped as :meth:`predict`'s mean: the Gaussian's with the predictive
        mean and std (for latent NPs the moment-matched Gaussian), or for a model of another
        likelihood family the interval between its quantiles, as in :func:`tnpx.predict`."""
        frame, y_cols = self._predict_frame(X)
        return self._shaped(frame, y_cols, "lower"), self._shaped(frame, y_cols, "upper")

    def _predict_frame(self, X) -> tuple[pd.DataFrame, list[str]]:
        """:func:`tnpx.predict`'s result table for targets ``X`` and the output names."""
        import pandas as pd

        check_is_fitted(self)
        X = dates_as_numbers(by_feature_names(self, X), getattr(self, "_units", None))
        X = validate_data(self, X, reset=False, dtype=np.float64)
        x_cols = input_names(self)
        y_cols = output_names(self, x_cols)
        context = pd.DataFrame(np.hstack([self.X_, self._y_2d()]), columns=[*x_cols, *y_cols])
        targets = pd.DataFrame(X, columns=x_cols)
        options = self._checked_options(self._limits, x_cols, y_cols)
        _, blocks = stream_prediction(
            self.model_, self.training_domain_, self._domain_unknown, context, targets,
            options, rows=None,
        )  # fmt: skip
        [frame] = list(blocks)  # rows=None: one block; exhausting it gives the far warning
        return frame, y_cols

    def _checked_options(self, limits, x_cols=None, y_cols=None) -> Options:
        """:func:`tnpx.predict`'s options from the parameters (checked by ``Options``)."""
        return Options(
            x_cols=x_cols, y_cols=y_cols, domain=self.domain, level=self.level,
            chunk_size=self.chunk_size, allow_extrapolation=self.allow_extrapolation,
            limits=limits, stored=getattr(self, "_stored", None),
            trained=getattr(self, "_trained", None),
        )  # fmt: skip

    def _shaped(self, frame: pd.DataFrame, y_cols: list[str], stat: str) -> np.ndarray:
        """Column ``<y>_<stat>`` of every output, ``[n, n_outputs]``, or ``[n]`` for 1-D y."""
        values = frame[[f"{c}_{stat}" for c in y_cols]].to_numpy(dtype=np.float64)
        return values[:, 0] if self.y_.ndim == 1 else values

    def _y_2d(self) -> np.ndarray:
        return self.y_.reshape(len(self.y_), -1)

    # -- the model parameter -----------------------------------------------------------------
    def _model_object(self) -> NeuralProcess | None:
        from ..models import NeuralProcess

        return self.model if isinstance(self.model, NeuralProcess) else None

    def _is_factory(self) -> bool:
        """Whether ``model`` builds a model for the data (a module is callable too: not one)."""
        return callable(self.model) and self._model_object() is None


def validate_context(estimator: NPRegressor, X, y) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's ``validate_data`` of ``(X, y)``, except that NaN in ``y`` is kept for
    :func:`~tnpx.apply.predict_missing.check_missing_y` to judge once the model is known."""
    try:
        return validate_data(estimator, X, y, multi_output=True, y_numeric=True, dtype=np.float64)
    except ValueError as err:
        if "Input y contains NaN" not in str(err):
            raise
    from sklearn.utils import check_array, check_consistent_length

    X = validate_data(estimator, X, dtype=np.float64)
    y = check_array(y, ensure_all_finite="allow-nan", ensure_2d=False, dtype=np.float64,
                    input_name="y")  # fmt: skip
    check_consistent_length(X, y)
    return X, y


def same_device(a: torch.device, b: torch.device) -> bool:
    """Whether ``a`` is ``b`` (``"cuda"`` with no index means the current CUDA device)."""
    import torch

    def resolved(d: torch.device) -> torch.device:
        if d.type == "cuda" and d.index is None:
            return torch.device("cuda", torch.cuda.current_device())
        return d

    return resolved(a) == resolved(b)


def describe(model) -> str:
    """``model`` in a message: a name or path as given, a factory's name, else its type."""
    from ..models import NeuralProcess

    if isinstance(model, (str, Path)):
        return repr(str(model))
    if callable(model) and not isinstance(model, NeuralProcess):
        return getattr(model, "__qualname__", type(model).__name__)
    return type(model).__name__


def check_built(net, factory) -> None:
    """A factory's result must be a :class:`~tnpx.NeuralProcess`."""
    from ..models import NeuralProcess

    if not isinstance(net, NeuralProcess):
        raise TypeError(
            f"model: the factory {factory!r} returned {type(net).__name__}, not a "
            "tnpx.NeuralProcess"
        )


def check_domain(domain, dim_x: int) -> None:
    """``domain`` None or a finite ``(low, high)`` (or one per input), ``low < high``."""
    if domain is None:
        return
    box = box_pairs(domain, dim_x, "domain")
    if (box[:, 1] <= box[:, 0]).any():
        raise ValueError(f"domain: expected (low, high) with low < high, got {domain!r}")


def check_dims(net: NeuralProcess, n_features: int, n_outputs: int, model) -> None:
    """The data's columns must be the model's: one-line errors naming both numbers."""
    if n_features != net.dim_x:
        raise ValueError(
            f"X has {n_features} feature(s), but the model ({describe(model)}) takes "
            f"{net.dim_x} input(s) (its dim_x)"
        )
    if n_outputs != net.dim_y:
        raise ValueError(
            f"y has {n_outputs} output column(s), but the model ({describe(model)}) predicts "
            f"{net.dim_y} (its dim_y)"
        )
