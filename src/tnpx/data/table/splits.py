"""How the ``table`` source holds out whole tasks for validation and test (``split_by``).

* ``task`` (the default): tasks ranked by a hash of ``(split_seed, key)``; the first
  ``round(n * test_fraction)`` are test, the next ``round(n * val_fraction)`` val. A task's
  split depends on its key alone, so tasks added to a table move few others.
* ``time``: tasks ordered by their earliest value of ``split_column`` (numbers or dates); the
  latest ``test_fraction`` of them are test and the ``val_fraction`` before those val, so a
  model is validated and tested on a period after the one it was trained on. Tasks that
  start at the same time keep their key order, so a boundary may fall between them.
* ``region``: ``split_column`` gives each row's region, and every row of a task must share
  one. Whole regions are held out: those listed in ``val_regions`` / ``test_regions``, or,
  without lists, regions ranked by a hash of ``(split_seed, region)``, ``round(n_regions *
  fraction)`` of them for each held-out split. Regions are compared as text, so a YAML ``3``
  names the table's region ``3``.

Fractions count tasks (regions for a region split) after tasks too small to split are
skipped; a split they leave empty is an error of one line.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

from ...user_files import DataError, Table, column_names
from ..base import SPLITS
from .times import parse_times, time_order

if TYPE_CHECKING:
    from .config import TableConfig

SPLIT_BY = ("task", "time", "region")
TRAIN, VAL, TEST = SPLITS["train"], SPLITS["val"], SPLITS["test"]


def split_tasks(
    table: Table, keys: list, code: np.ndarray, kept: np.ndarray, show, c: TableConfig
) -> np.ndarray:
    """Each kept task's split ``[len(kept)]`` (``SPLITS``' numbers). ``code [rows]``: each
    row's task number (an index into ``keys``); ``kept``: the task numbers split; ``show``
    writes a task's key for messages."""
    if c.split_by == "time":
        return _by_time(table, code, len(keys), kept, c)
    if c.split_by == "region":
        return _by_region(table, keys, code, kept, show, c)
    return _by_hash(table, [keys[i] for i in kept], c)


def _by_hash(table: Table, keys: list, c: TableConfig) -> np.ndarray:
    n_test, n_val = _counts(table, len(keys), c)
    rank = np.argsort(np.array([_hash(c.split_seed, k) for k in keys], dtype=np.uint64))
    return _assign(rank, n_test, n_val)


def _by_time(
    table: Table, code: np.ndarray, n_keys: int, kept: np.ndarray, c: TableConfig
) -> np.ndarray:
    times = time_order(parse_times(table, c.split_column))  # [rows]
    start = np.full(n_keys, np.inf)
    np.minimum.at(start, code, times)
    n_test, n_val = _counts(table, len(kept), c)
    earliest_first = np.argsort(start[kept], kind="stable")  # ties in key order
    return _assign(earliest_first[::-1], n_test, n_val)


def _by_region(
    table: Table, keys: list, code: np.ndarray, kept: np.ndarray, show, c: TableConfig
) -> np.ndarray:
    col = c.split_column
    column = table.frame[col]
    missing = column.isna().to_numpy()
    if missing.any():
        pos = int(missing.argmax())
        raise DataError(f"{table.name}, {table.where(pos)}, column {col!r}: missing region")
    names, region = np.unique(column.astype(str).to_numpy(), return_inverse=True)
    region = region.reshape(-1)
    lo = np.full(len(keys), len(names))
    hi = np.full(len(keys), -1)
    np.minimum.at(lo, code, region)
    np.maximum.at(hi, code, region)
    mixed = (lo != hi)[code]
    if mixed.any():
        pos = int(mixed.argmax())
        task = code[pos]
        raise DataError(
            f"{table.name}: task {show(keys[task])} lies in more than one region of column "
            f"{col!r} ({names[lo[task]]!r} and {names[hi[task]]!r}, {table.where(pos)}); a "
            "task must lie in one region to be held out whole"
        )
    task_region = names[lo[kept]]  # [n_kept] region names
    if c.val_regions is None and c.test_regions is None:
        present = np.unique(task_region)
        where = f"region(s) in column {col!r}"
        n_test, n_val = _counts(table, len(present), c, where, "regions")
        rank = np.argsort(np.array([_hash(c.split_seed, r) for r in present], dtype=np.uint64))
        by_region = _assign(rank, n_test, n_val)
        return by_region[np.searchsorted(present, task_region)]
    return _listed_regions(table, task_region, col, c)


def _listed_regions(table: Table, task_region: np.ndarray, col, c: TableConfig) -> np.ndarray:
    """Splits of tasks in regions ``task_region [n]`` from ``val_regions``/``test_regions``."""
    present = set(task_region.tolist())
    split = np.full(len(task_region), TRAIN)
    for name, index in (("val", VAL), ("test", TEST)):
        listed = [str(r) for r in getattr(c, f"{name}_regions") or []]
        for region in listed:
            if region not in present:
                raise DataError(
                    f"{table.name}: no usable task lies in region {region!r} of column {col!r} "
                    f"(named by {name}_regions); its regions are {column_names(sorted(present))}"
                )
        split[np.isin(task_region, listed)] = index
    if not (split == TRAIN).any():
        raise DataError(
            f"{table.name}: val_regions and test_regions hold every region of column {col!r}; "
            "leave some for training"
        )
    return split


def _assign(rank: np.ndarray, n_test: int, n_val: int) -> np.ndarray:
    """Splits ``[n]``: the items ``rank[:n_test]`` test, the next ``n_val`` val, others train."""
    split = np.full(len(rank), TRAIN)
    split[rank[:n_test]] = TEST
    split[rank[n_test : n_test + n_val]] = VAL
    return split


def _counts(
    table: Table, n: int, c: TableConfig, units: str = "usable task(s)", more: str = "tasks"
) -> tuple[int, int]:
    """How many of ``n`` items (tasks or regions) are test and val; an error where a split
    asked for is left empty."""
    counts = {"test": _rounded(n * c.test_fraction), "val": _rounded(n * c.val_fraction)}
    asked = f"val_fraction={c.val_fraction:g}, test_fraction={c.test_fraction:g}"
    for name, fraction in (("val", c.val_fraction), ("test", c.test_fraction)):
        if fraction > 0 and counts[name] == 0:
            raise DataError(
                f"{table.name}: {n} {units} leave none for the {name} split ({asked}); "
                f"add {more} or raise {name}_fraction to at least {1 / max(n, 1):.3g}"
            )
    if n - counts["val"] - counts["test"] < 1:
        raise DataError(f"{table.name}: {n} {units} leave none for training ({asked})")
    return counts["test"], counts["val"]


def _rounded(value: float) -> int:
    return int(np.floor(value + 0.5))  # half up (Python's round goes to even)


def _hash(seed: int, key) -> int:
    """A hash of a task key that is the same in every process and run (``hash`` is not)."""
    values = key if isinstance(key, tuple) else (key,)
    text = "\x1f".join([str(seed), *map(str, values)])
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
