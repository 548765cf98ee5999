"""A prediction's columns, matched to the model's by name wherever the model knows them.

A checkpoint trained on a user's data stores its input and output column names, in the
order the model takes them (``record["normalisation"][side]["columns"]``,
:func:`tnpx.checkpoint.stored_units`). The user's columns are then put in that order *by
name*, whatever order ``x_cols`` / ``y_cols`` (``--x-cols``, ``--y-cols``) or the tables give
them in: ``--x-cols longitude latitude`` for a model trained on ``(latitude, longitude)``
predicts exactly what ``--x-cols latitude longitude`` does. A column the model does not know
(renamed: ``lat`` for ``latitude``) or a column it needs that is missing is refused in one
line listing the names it knows. The result keeps the user's order (:class:`Columns`).

Positional matching is left only where there are no names to match: a model object or a
shipped model (they store none: the columns go to the model in the order given) and a bare
array given to :class:`tnpx.NPRegressor` (its columns are the model's, in the model's order).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..user_files import DataError, Table, as_list, choose_columns, column_names

STATS = ("mean", "std", "lower", "upper")  # the result's columns per output, in order


@dataclass(frozen=True)
class Columns:
    """The inputs ``x`` and outputs ``y`` in the order the model takes them, and the order the
    user gave them in (``x_shown``, ``y_shown``), which the result keeps."""

    x: list
    y: list
    x_shown: list
    y_shown: list

    def result_order(self, stats: tuple = STATS) -> list:
        """The result's columns: the inputs, then ``<y>_<stat>`` per output and ``stats``
        (``mean`` ... ``upper``, then any quantiles and family columns), in the user's order."""
        return [*self.x_shown, *(f"{y}_{s}" for y in self.y_shown for s in stats)]


def model_columns(
    context: Table, targets: Table, x_cols, y_cols, stored: tuple | None, dim_x: int, dim_y: int
) -> Columns:
    """The :class:`Columns` of a prediction. ``stored`` is the checkpoint's ``(UnitMap,
    x_names, y_names)`` (None: the model knows no names; the columns then are
    :func:`tnpx.user_files.choose_columns`'s, in the order given). With names, ``x_cols`` and
    ``y_cols`` (None: the model's own names) are matched to them by name.

    Raises:
        DataError: a column the model does not know, one it needs that is not named or not in
            the table, or (without names) as :func:`~tnpx.user_files.choose_columns`.
    """
    if stored is None:
        x, y = choose_columns(context, targets, x_cols, y_cols, dim_x, dim_y)
        return Columns(x, y, x, y)
    _, x_names, y_names = stored
    x_shown = by_name(targets, x_cols, list(x_names), "inputs", "x_cols (--x-cols)")
    y_shown = by_name(context, y_cols, list(y_names), "outputs", "y_cols (--y-cols)")
    choose_columns(context, targets, x_shown, y_shown, dim_x, dim_y)  # the tables hold them
    return Columns(list(x_names), list(y_names), x_shown, y_shown)


def by_name(table: Table, given, names: list, what: str, option: str) -> list:
    """The user's columns for the model's ``names`` (its ``what``, "inputs" or "outputs"), in
    the user's order: ``given`` (``option``) in any order, or, where None, the model's names
    in the order ``table`` holds them.

    Raises:
        DataError: ``given`` names a column the model does not know, leaves one out or names
            one twice; or ``table`` lacks one of ``names`` (``given`` None).
    """
    trained = f"the model was trained on {what} {names}"
    if given is None:
        columns = list(table.frame.columns)
        missing = [c for c in names if c not in columns]
        if missing:
            raise DataError(
                f"{table.name}: {trained}; the table has no column {missing[0]!r} (its columns "
                f"are {column_names(columns)}): rename your columns to the model's names"
            )
        return [c for c in columns if c in names]
    given = as_list(given)
    unknown = [c for c in given if c not in names]
    if unknown:
        raise DataError(
            f"{table.name}: {trained}; {unknown[0]!r} (named by {option}) is not one of "
            "them: rename your columns to the model's names"
        )
    twice = [c for c in names if given.count(c) > 1]
    if twice:
        raise DataError(f"{option} names {twice[0]!r} twice; {trained}")
    missing = [c for c in names if c not in given]
    if missing:
        raise DataError(
            f"{option} leaves out {missing[0]!r}: {trained}; name every one of them (in any order)"
        )
    return given


__all__ = ["STATS", "Columns", "by_name", "model_columns"]
