"""What a paper table is: a :class:`Row` (a registered model and the options that make it that
row) and a :class:`TableSpec` (columns, rows, config files, published numbers), plus the row
kinds every table shares (the oracle, the reference, the untrained models)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ORACLE = "gp-oracle"
LATENT = ("np", "anp", "bnp", "banp")  # predict a K-component mixture; LL is an estimate
# The no-input reference row of the real-data tables: the context's moments at every target.
REFERENCE = "context-moments"
# Registered models that are evaluated, never trained: the oracle, the per-task fitted GPs and
# the reference.
UNTRAINED = (ORACLE, "gp", "mt-gp", REFERENCE)
METRICS = {
    "nll": "NLL per target point (NLL = −LL; lower is better)",
    "ll": "LL per target point (higher is better)",
}


# A row's preset that is whatever the column's config names (ad-hoc tables; every paper table
# names each row's preset, or None for a row with no reference code: tnpx's own model).
FROM_CONFIG = "from-config"


def is_trained(model: str) -> bool:
    return model not in UNTRAINED


@dataclass(frozen=True)
class Row:
    """A row of a table: the registered ``model`` and what makes it this row.

    ``preset``: the preset that makes ``model`` the function of the code behind the paper's
    number (``docs/fidelity.md``), None where no code is (tnpx's model, the paper's text), or
    ``FROM_CONFIG``; it is set on every cell (``model.preset``), over the column's config.
    ``options`` (model options, both protocols, e.g. ``n_pseudo``), ``column_options``
    (column -> model options that depend on the data, both protocols), ``budget`` (model
    sizes at the CPU budget only) and ``overrides`` (other ``section.key=value`` config
    overrides, both protocols, e.g. a row's own batch size)."""

    model: str
    options: Mapping = field(default_factory=dict)
    budget: Mapping = field(default_factory=dict)
    column_options: Mapping = field(default_factory=dict)
    overrides: tuple[str, ...] = ()
    preset: str | None = FROM_CONFIG

    @property
    def trained(self) -> bool:
        return is_trained(self.model)


@dataclass(frozen=True)
class TableSpec:
    """One table of a paper: its columns, rows, config files and published numbers.

    ``config`` is the template of a column's config: ``configs/<config>.yaml`` for the exact
    protocol and ``configs/<config>-budget.yaml`` for the budget, with ``{column}`` replaced by
    the column (an absolute template is used as it is). ``paper`` holds the published numbers
    in the table's ``metric`` (``nll``: lower is better; ``ll``: higher is better). The GP
    oracle's row and the gap table appear only where ``gp_data`` (the tasks are GP draws).
    The ``paper_*`` and ``budget_*`` texts say how the budget differs from the paper."""

    name: str
    title: str
    what: str
    columns: Mapping[str, str]  # column -> display label, in the paper's order
    rows: Mapping[str, Row]  # label -> row, in the paper's order (the oracle last)
    paper: Mapping[str, Mapping[str, float]]  # label -> column -> published number
    config: str
    metric: str = "nll"
    gp_data: bool = False
    column_kind: str = "kernel"  # what a column is (headers, results.json keys)
    paper_digits: int = 3  # the precision the paper prints
    paper_batch: int = 32
    paper_note: str = "mean over 5 seeds"
    paper_train: str = "100,000 of 32"
    paper_optim: str = "Yogi, cosine from 1e-3, no warm-up"
    paper_test: str = "5,000 batches of 32"
    paper_seeds: str = "paper: 5, whose ± is over seeds; ours is over test tasks"
    exact_sizes: str = "library default sizes = the published ones"
    budget_sizes: str = (
        "model sizes shrunk to about 120–140k parameters each (table below; the paper used the "
        "published sizes)"
    )
    budget_data: str = ""  # how the budget's data differ from the paper's ("" if they do not)
    # What the rows' presets (named in the configs or the rows' options) mean, per protocol;
    # the README lists which preset each row used beside it.
    exact_presets: str = ""
    budget_presets: str = ""
    # Config overrides per column, after the row's (TE-4: the test region of a column).
    column_overrides: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # One training run per row, scored in every column (TE-4: train once, test per region);
    # otherwise each column trains its own (KR-1: one run per kernel).
    shared_training: bool = False

    @property
    def kernels(self) -> tuple[str, ...]:
        """The columns (the name they had when every column was a GP kernel)."""
        return tuple(self.columns)

    @property
    def models(self) -> tuple[str, ...]:
        """The row labels."""
        return tuple(self.rows)

    @property
    def metric_name(self) -> str:
        return self.metric.upper()

    def config_path(self, column: str, exact: bool) -> Path:
        stem = self.config.format(column=column) + ("" if exact else "-budget")
        return ROOT / "configs" / f"{stem}.yaml"

    def paper_value(self, label: str, column: str) -> float | None:
        return self.paper.get(label, {}).get(column)


def by_column(kernels: tuple[str, ...], rows: dict[str, tuple[float, ...]]) -> dict:
    return {model: dict(zip(kernels, values, strict=True)) for model, values in rows.items()}
