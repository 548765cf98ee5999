"""The columns of :class:`tnpx.NPRegressor`'s data by name: ``X``'s feature names, matched by
name at ``predict``; the names its context table gives the model's columns; dates in ``X``.

Fitted on a DataFrame, the estimator keeps its column names (``feature_names_in_``,
scikit-learn's convention) and ``predict`` takes a DataFrame's columns by name, in any order;
a column it was not fitted on, or one missing, is refused naming them. A bare array has no
names: its columns are taken by position, in the order ``fit`` had them; for a checkpoint
trained on a user's data, in the order of the model's own columns
(:mod:`tnpx.apply.model_columns`). Where that checkpoint stores a time input's unit, a
DataFrame's dates in that column are converted (:mod:`tnpx.apply.coordinate_units`).
"""

from __future__ import annotations

from ..user_files import Table
from .coordinate_units import in_model_units
from .model_columns import by_name


def by_feature_names(estimator, X):
    """``X`` with its columns in the order ``fit`` had them, where both have names (a
    DataFrame fitted on a DataFrame); anything else unchanged.

    Raises:
        ValueError: ``X`` lacks a fitted column or has one the estimator was not fitted on.
    """
    names = getattr(estimator, "feature_names_in_", None)
    if names is None or not hasattr(X, "columns"):
        return X
    names, have = [str(n) for n in names], [str(c) for c in X.columns]
    unknown = [c for c in have if c not in names]
    missing = [c for c in names if c not in have]
    if unknown or missing:
        what = f"{unknown[0]!r} is not one of them" if unknown else f"{missing[0]!r} is missing"
        raise ValueError(
            f"X: the estimator was fitted on columns {names}; {what}: give X those columns "
            "(in any order)"
        )
    return X[list(names)] if have != names else X


def dates_as_numbers(X, units: dict[str, str] | None):
    """A DataFrame ``X`` with the dates in a time input as numbers in its unit, where the
    checkpoint stores its inputs' units (``units``: ``{column: unit}``, :attr:`tnpx.apply.
    predict.Resolved.units`); anything else unchanged."""
    if not units or not hasattr(X, "columns"):
        return X
    cols = [c for c in X.columns if c in units]
    return in_model_units(Table(X, "X", from_file=False), units, cols).frame


def check_names(estimator) -> None:
    """At ``fit``: a DataFrame's columns must be the names a checkpoint trained on a user's
    data knows (any order), else a one-line :class:`~tnpx.DataError` listing them."""
    names, stored = getattr(estimator, "feature_names_in_", None), estimator._stored
    if names is not None and stored is not None:
        import pandas as pd

        frame = Table(pd.DataFrame(columns=list(names)), "X", from_file=False)
        by_name(frame, [str(n) for n in names], list(stored[1]), "inputs", "X's columns")


def input_names(estimator) -> list[str]:
    """The input columns' names the context table gives the model: ``X``'s feature names;
    without names, the model's stored input names (a checkpoint trained on a user's data:
    the columns are taken by position), else ``x0``, ``x1``..."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        return [str(n) for n in names]
    stored = getattr(estimator, "_stored", None)
    if stored is not None:
        return list(stored[1])
    return [f"x{i}" for i in range(estimator.n_features_in_)]


def output_names(estimator, taken: list[str]) -> list[str]:
    """The output columns' names: the model's stored output names (``y`` has none: its
    columns are taken by position), else ``y0``, ``y1``..., each made unlike every input's."""
    stored = getattr(estimator, "_stored", None)
    if stored is not None:
        return list(stored[2])
    names = []
    for j in range(estimator.n_outputs_):
        name = f"y{j}"
        while name in taken:
            name += "_"
        names.append(name)
    return names


__all__ = ["by_feature_names", "check_names", "dates_as_numbers", "input_names", "output_names"]
