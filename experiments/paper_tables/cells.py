"""One cell of a table: its config, training (or not), scoring, and the JSON cache that lets a
stopped table resume; the guard against missing data (stale cells: ``staleness``)."""

from __future__ import annotations

import itertools
import json
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from experiments.kit import pm
from experiments.paper_tables.specs import (
    FROM_CONFIG,
    ORACLE,
    REFERENCE,
    Row,
    TableSpec,
    is_trained,
)
from experiments.paper_tables.staleness import settings
from tnpx.config import ExperimentConfig, load_config
from tnpx.evaluation import Metrics, build_test_sampler, evaluate
from tnpx.models import build_model
from tnpx.provenance import hardware
from tnpx.training import resolve_device, train_or_load


@dataclass
class Cell:
    """One (table, column, row) result, as cached in ``cells/<column>-<label>.json``.
    ``kernel`` is the column and ``model`` the row's label (their names from when every
    column was a kernel and every label a registered model); ``model_name`` is the
    registered model (None in cells written before labels: then the label)."""

    table: str
    kernel: str
    model: str
    protocol: str
    metrics: Metrics
    ll_estimator: str
    parameters: int
    model_options: dict
    steps: int
    batch_size: int
    test_tasks: int
    train_seconds: float | None  # None: no training (gp-oracle, fitted GPs) or not recorded
    eval_seconds: float
    commit: str
    hardware: str
    settings: dict = field(default_factory=dict)  # the config keys that produced the numbers
    model_name: str | None = None

    @property
    def column(self) -> str:
        return self.kernel

    @property
    def registered(self) -> str:
        return self.model_name or self.model

    @property
    def nll(self) -> float:
        return -self.metrics.ll

    @property
    def nll_se(self) -> float:
        return self.metrics.ll_se

    def value(self, metric: str) -> float:
        """The cell's number in ``metric`` (``nll`` or ``ll``)."""
        return self.nll if metric == "nll" else self.metrics.ll

    @property
    def wall_seconds(self) -> float:
        return (self.train_seconds or 0.0) + self.eval_seconds

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Cell:
        values = json.loads(text)
        return cls(**{**values, "metrics": Metrics(**values["metrics"])})


def cell_path(out: Path, table: str, kernel: str, model: str) -> Path:
    """Where the cell of ``table``, column ``kernel`` and row label ``model`` is cached."""
    return out / table / "cells" / f"{kernel}-{model}.json"


def run_dir(runs: Path, table: str, kernel: str, model: str, shared: bool = False) -> Path:
    """Where a cell trains: per column, or per row when the table's columns share training."""
    return runs / (table if shared else f"{table}-{kernel}") / model


def _value(v) -> str:
    if v is None:
        return "null"
    return str(v).lower() if isinstance(v, bool) else str(v)


def row_overrides(row: Row, column: str, exact: bool) -> list[str]:
    """``model.name``, the row's preset (None: ``null``), its options (its budget sizes too at
    the budget), its overrides."""
    options = {**row.options, **row.column_options.get(column, {})}
    if not exact:
        options.update(row.budget)
    preset = [] if row.preset == FROM_CONFIG else [f"model.preset={_value(row.preset)}"]
    return [
        f"model.name={row.model}",
        *preset,
        *(f"model.{k}={_value(v)}" for k, v in options.items()),
        *row.overrides,
    ]


def cell_config(
    spec: TableSpec, kernel: str, model: str, exact: bool, runs: Path, extra: list[str]
) -> ExperimentConfig:
    """The config of one cell (column ``kernel``, row label ``model``): the column's config,
    the row's model, options and sizes, the run dir, then ``extra`` overrides (``--steps``,
    ``--eval-batches``, positional ones)."""
    overrides = [
        *row_overrides(spec.rows[model], kernel, exact),
        *spec.column_overrides.get(kernel, ()),
        f"train.out_dir={run_dir(runs, spec.name, kernel, model, spec.shared_training)}",
        *extra,
    ]
    with warnings.catch_warnings():  # the file's options a model does not take are dropped
        warnings.filterwarnings("ignore", message=r"model\.name=.*ignoring")
        return load_config(spec.config_path(kernel, exact), overrides)


# Data files a sampler reads, and how to make them where a command can.
DATA_FILE_KEYS = ("path", "cache", "elevation_path")
DATA_HINTS = {
    "kolmogorov": "create it with `tnpx data kolmogorov --preset {preset} --out {path}`",
    "image": "put the {dataset} files there (see tnpx.data.images.load_images)",
}


def missing_data(cfg: ExperimentConfig, exact: bool) -> str | None:
    """Why the cell of ``cfg`` cannot run because a data file its sampler reads (training or
    test) is missing, with the command or the files that would provide it; None if none is."""
    from tnpx.data import SAMPLERS

    name = cfg.data["name"]
    config_cls = SAMPLERS[name][1]
    for test in (False, True):
        options = config_cls(**cfg.data_options(test=test))
        for key in DATA_FILE_KEYS:
            path = getattr(options, key, None)
            if isinstance(path, str) and not Path(path).exists():
                hint = DATA_HINTS.get(name, "provide it (see the config's header)").format(
                    preset="exact" if exact else "budget",
                    path=path,
                    dataset=getattr(options, "dataset", name),
                )
                return f"data file {path} not found ({'test' if test else 'train'} data); {hint}"
    return None


def model_description(model) -> str:
    """How evaluation scored the model: the estimator of a latent model, else exact."""
    estimator = getattr(model, "ll_estimator", None)
    if estimator is not None:
        return estimator
    if model.name == ORACLE:
        return "exact GP posterior under each task's generating hyper-parameters"
    if model.name == REFERENCE:
        return "exact: the context outputs' moments at every target (reference, not trained)"
    if not is_trained(model.name):
        hyper = getattr(model, "hyper", None)
        fit = (
            f" ({hyper.n_iterations} Adam iterations, lr {hyper.lr})"
            if hasattr(hyper, "n_iterations")
            else ""
        )
        return f"exact posterior of a GP fitted per test task{fit}"
    return "exact: mean over targets of the Gaussian log-density"


def score(model, cfg: ExperimentConfig) -> tuple[Metrics, float]:
    """Metrics on the config's test set and the seconds they took. The oracle is not scored
    a second time beside itself."""
    start = time.perf_counter()
    metrics = evaluate(
        model,
        build_test_sampler(cfg),
        cfg.eval.n_batches,
        oracle=model.name != ORACLE,
        device=resolve_device(cfg.train.device),
        progress=cfg.train.progress,
    )
    return metrics, time.perf_counter() - start


def trained(cfg: ExperimentConfig):
    """The cell's model and its training seconds (None for the untrained oracle and GPs)."""
    name = cfg.model["name"]
    if not is_trained(name):
        dim_x, dim_y = cfg.model.get("dim_x", 1), cfg.model.get("dim_y", 1)
        return build_model(name, dim_x, dim_y, **cfg.model_options()), None
    return train_or_load(cfg)


def compute_cell(
    spec: TableSpec,
    kernel: str,
    cfg: ExperimentConfig,
    commit: str,
    exact: bool,
    label: str | None = None,
) -> Cell:
    """Train (unless untrained) and score the cell of column ``kernel`` and row ``label``
    (default: the registered model's name)."""
    model, train_seconds = trained(cfg)
    metrics, eval_seconds = score(model, cfg)
    name = cfg.model["name"]
    return Cell(
        table=spec.name,
        kernel=kernel,
        model=label or name,
        protocol="exact" if exact else "budget",
        metrics=metrics,
        ll_estimator=model_description(model),
        parameters=sum(p.numel() for p in model.parameters()),
        model_options=cfg.model_options(),
        steps=cfg.train.steps if is_trained(name) else 0,
        batch_size=cfg.data.get("batch_size", 16),
        test_tasks=metrics.n_tasks,
        train_seconds=train_seconds,
        eval_seconds=eval_seconds,
        commit=commit,
        hardware=hardware(),
        settings=settings(cfg),
        model_name=None if label in (None, name) else name,
    )


def cell_line(spec: TableSpec, kernel: str, label: str, text: str) -> str:
    return f"[{spec.name} {kernel} {label}] {text}"


def run_cell(
    spec: TableSpec,
    kernel: str,
    cfg: ExperimentConfig,
    out: Path,
    commit: str,
    exact: bool,
    label: str | None = None,
) -> bool:
    """Train, score and cache the cell unless it is cached; prints one line. Returns whether
    it computed anything."""
    label = label or cfg.model["name"]
    path = cell_path(out, spec.name, kernel, label)
    cached = path.exists()
    if cached:
        cell = Cell.from_json(path.read_text())
    else:
        cell = compute_cell(spec, kernel, cfg, commit, exact, label)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(cell.to_json())
    paper = spec.paper_value(label, kernel)
    metric = spec.metric_name
    text = (
        f"{metric} {pm(cell.value(spec.metric), cell.nll_se)}"
        f" (paper {'—' if paper is None else f'{paper:.3f}'}), {cell.wall_seconds:.0f} s"
        f"{' (cached)' if cached else ''}"
    )
    print(cell_line(spec, kernel, label, text), flush=True)
    return not cached


def restore_run(
    spec: TableSpec, kernel: str, cfg: ExperimentConfig, out: Path, label: str
) -> str | None:
    """Retrain the run behind a cached cell whose checkpoint is missing (``runs/`` is not
    committed, so a fresh machine has the cells but not the models that other tables, such as
    KR-2's surrogates, load), and rescore it beside the cached cell; the cell is left as it
    is. Returns the line saying how far apart the two are, or None when nothing was to do."""
    path = cell_path(out, spec.name, kernel, label)
    run = Path(cfg.train.out_dir) / "model.pt"
    if not path.exists() or not is_trained(cfg.model["name"]) or run.exists():
        return None
    cached = Cell.from_json(path.read_text())
    model, _ = trained(cfg)
    metrics, _ = score(model, cfg)
    # A seeded run replays the same tasks and steps; across machines the float32 kernels sum
    # in another order, so the restored model can differ from the cached one by a little.
    diff = metrics.ll - cached.metrics.ll
    line = cell_line(
        spec, kernel, label,
        f"restored {run}: LL {metrics.ll:.4f} vs cached {cached.metrics.ll:.4f} "
        f"(difference {diff:+.4f}, {abs(diff) / max(cached.metrics.ll_se, 1e-12):.2f} s.e.)",
    )  # fmt: skip
    print(line, flush=True)
    return line


def load_cells(out: Path, spec: TableSpec) -> dict[tuple[str, str], Cell]:
    """Every cached cell of the table, keyed by (column, row label)."""
    cells = {}
    for kernel, model in itertools.product(spec.kernels, spec.models):
        path = cell_path(out, spec.name, kernel, model)
        if path.exists():
            cells[kernel, model] = Cell.from_json(path.read_text())
    return cells


def missing_cells(spec: TableSpec, cells: dict) -> list[tuple[str, str]]:
    return [k for k in itertools.product(spec.kernels, spec.models) if k not in cells]
