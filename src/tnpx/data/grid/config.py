"""The options of the ``grid`` source (:mod:`tnpx.data.grid`): where the grid is, which
variables are what, and how windows are split. The sampler and the splitting
(:mod:`tnpx.data.grid.splits`) read them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class GridConfig:
    """Where the grid is, which variables are what, and how windows are split.

    ``path``: a NetCDF file, a list or glob of them (joined along the dim whose coordinates
    differ), or a Zarr store. ``y``: the output variables (several share dims: ``dim_y > 1``).
    ``window``: dim -> points per task, naming every dim of the outputs. ``x``: the input
    order, dims of the outputs (default: those a window spans more than one point of, in their
    order with ``time`` last); the static inputs
    ``static`` (variables on a subset of the dims, from ``static_path`` or else the data's first
    file) follow. ``select``: dim -> ``[low, high]`` (coordinate values, both included; dates as
    strings) restricts the data. ``N_c`` is drawn once per batch on ``{ceil(N
    min_ctx_frac), ..., floor(N max_ctx_frac)}`` for a window of ``N`` points, by the
    ``ctx_size`` rule (:func:`~tnpx.data.base.context_size`: ``log-uniform`` by default, so
    small contexts are common, or ``uniform``).

    Splits hold out whole windows. By default ``split_dim`` (``time`` when the outputs have it,
    else their first dim) is cut into three stretches, training first, then the last
    ``val_fraction`` and ``test_fraction`` of its points, rounded (a period after the training
    one); windows lie inside one stretch. ``val_select`` / ``test_select`` (dim -> ``[low,
    high]``: a region, a period, or both) give boxes instead: a held-out split's windows lie
    inside its box, training windows touch neither box, and the fractions are not used.

    ``exposure``: a count model's exposure variable (``poisson`` / ``negative-binomial``):
    each cell's factor on its count's rate (people at risk, hours observed), > 0 wherever the
    outputs are present, on the outputs' dims or some of them (population on ``(lat, lon)``);
    never an input, never normalised (:mod:`tnpx.models.exposure`).

    ``normalise``: fit per column ``(value - mean) / std`` on the training split, each
    training cell whose outputs and static inputs are all present counting once (no area
    weighting: every latitude row counts alike); otherwise the identity. ``load``: ``memory``
    reads the outputs whole, ``lazy`` reads each batch's windows from disk, ``auto`` is
    ``memory`` when the selected outputs take at most ``memory_limit_mb`` MiB.
    """

    path: str | list[str] | None = None
    y: str | list[str] = field(default_factory=list)
    window: dict[str, int] = field(default_factory=dict)
    x: list[str] | None = None
    static: str | list[str] = field(default_factory=list)
    static_path: str | None = None
    select: dict[str, list] | None = None
    min_ctx_frac: float = 0.01
    max_ctx_frac: float = 1 / 3
    # log-uniform (the default) | uniform on {min_ctx, ..., max_ctx}: log-uniform draws 1-2
    # context points in ~1/3 of batches, where uniform drew them too rarely to be calibrated
    ctx_size: str = "log-uniform"
    split_dim: str | None = None
    val_fraction: float = 0.1
    test_fraction: float = 0.1
    val_select: dict[str, list] | None = None
    test_select: dict[str, list] | None = None
    normalise: bool = True
    load: str = "auto"  # auto | memory | lazy
    memory_limit_mb: float = 1024.0
    min_valid: float = 0.5
    missing_value: float | dict | None = None
    # the model's likelihood option, passed on by tnpx train and eval (tnpx.data.table's
    # TaskDraws.likelihood): a non-Gaussian family's outputs checked and scaled by its rule
    likelihood: str | dict | None = None
    exposure: str | None = None
