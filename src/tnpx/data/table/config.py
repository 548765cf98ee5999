"""The options of the ``table`` source (:mod:`tnpx.data.table`): which columns are what, how
each task's points become context and targets, and how tasks are held out. The checks and the
splitting read them; ``stations`` shares :class:`TaskDraws`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TaskDraws:
    """How each task's points become context and targets, and how many tasks are held out:
    the options the ``table`` source and those built on it (``stations``) share."""

    min_ctx: int = 1
    max_ctx: int | None = None
    # From 0: a task's context may be a single point (min_ctx). Starting at 0.1 left contexts of
    # 1-3 points out of training, and a model's 95 % interval then covered 0.68-0.83 there
    # (results/examples/seattle-temps: 0.86 or more at every size once trained from 0).
    ctx_fraction: list[float] = field(default_factory=lambda: [0.0, 0.9])
    max_tgt: int | None = None
    val_fraction: float = 0.1
    test_fraction: float = 0.1
    split_seed: int = 0
    normalise: bool = True
    # The model's likelihood option (tnpx.likelihoods), passed on by tnpx train and eval from
    # model.likelihood: a non-Gaussian family's outputs are checked against its support and
    # scaled by its rule (counts, 0/1, fractions as they are; amounts scaled, not centred).
    # None: the outputs are standardised, as always.
    likelihood: str | dict | None = None


@dataclass
class TableConfig(TaskDraws):
    """Where the table is, which columns are what, and how tasks are split.

    ``path``: a CSV or Parquet file (relative to the working folder). ``task``: the task-id
    column(s); ``x``/``y``: the input and output columns. Each task's context is a fraction
    ``U(ctx_fraction)`` of its points, clipped to ``[min_ctx, n - 1]`` and to ``max_ctx``; the
    rest are targets, at most ``max_tgt``. ``val_fraction``/``test_fraction`` of the tasks
    (rounded) are held out, chosen by ``split_by``: ``task`` (a hash of each task's key and
    ``split_seed``, so a task's split depends neither on the sampler's seed nor on the order
    of rows), ``time`` (the latest tasks by ``split_column``) or ``region`` (whole regions of
    ``split_column``: those in ``val_regions``/``test_regions``, or hashed with the fractions
    counting regions); see :mod:`tnpx.data.table.splits`. A missing ``y`` value is masked
    where the row has another output (:mod:`tnpx.data.table`); any other missing value is an error.
    ``exposure``: a count model's exposure column (each row's factor on its rate, > 0).
    """

    path: str | None = None
    task: str | list[str] | None = None
    x: str | list[str] = field(default_factory=list)
    y: str | list[str] = field(default_factory=list)
    split_by: str = "task"
    split_column: str | None = None
    val_regions: list | None = None
    test_regions: list | None = None
    # A count model's exposure column (likelihood poisson or negative-binomial only): each
    # row's factor on its rate (person-years, hours observed), > 0. Never an input, never
    # normalised; batches carry it as info["exposure_c"] / ["exposure_t"] (tnpx.models.exposure).
    exposure: str | None = None
