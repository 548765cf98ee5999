"""The registry of paper tables: ``TABLES`` (name -> :class:`TableSpec`), the TNP-KR tables of
``kr_specs`` and the TE tables of ``te_specs``, with what the table modules import from one
place (``table_spec``: rows, specs and the row kinds every table shares)."""

from __future__ import annotations

from experiments.paper_tables.kr_specs import (  # noqa: F401 (re-exported)
    KERNEL_LABELS,
    KR_TABLES,
    kr_code_budget,
    kr_rows,
)
from experiments.paper_tables.table_spec import (  # noqa: F401 (re-exported)
    FROM_CONFIG,
    LATENT,
    METRICS,
    ORACLE,
    REFERENCE,
    ROOT,
    UNTRAINED,
    Row,
    TableSpec,
    is_trained,
)
from experiments.paper_tables.te_specs import TE_TABLES, te_rows  # noqa: F401 (re-exported)

DEFAULT_TABLES = ("kr1", "kr3")  # what a bare `python -m experiments.paper_tables.build` builds
TABLES: dict[str, TableSpec] = {**KR_TABLES, **TE_TABLES}
