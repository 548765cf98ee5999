"""Evaluation on a fixed test set: LL per target point ± standard error over tasks, the GP
oracle on the same tasks and each model's gap to it, and 95% interval coverage."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from ..batch import observed_mean
from ..config import ExperimentConfig
from ..data import TaskSampler, batch_at, build_sampler
from ..likelihoods import covered as in_interval
from ..models import NeuralProcess, build_model

Z95 = 1.959963984540054


@dataclass
class Metrics:
    """Per-target-point log-likelihood (higher is better) over ``n_tasks`` test tasks."""

    model: str
    n_tasks: int
    ll: float
    ll_se: float
    coverage95: float
    oracle_ll: float | None = None
    oracle_ll_se: float | None = None
    gap: float | None = None  # oracle LL - model LL (>= 0 up to noise)
    gap_se: float | None = None
    # The same standard errors with each test batch as one independent unit: a sampler may
    # share a batch's context size and input locations among its tasks (the KR protocol's does),
    # so its tasks are not independent and the s.e. over tasks understates the noise.
    ll_se_batches: float | None = None
    gap_se_batches: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def mean_se(values: torch.Tensor) -> tuple[float, float]:
    """Mean and standard error of a 1D tensor of per-task values."""
    n = values.numel()
    se = values.std(unbiased=True).item() / math.sqrt(n) if n > 1 else float("nan")
    return values.mean().item(), se


def clustered_mean_se(values: list[torch.Tensor]) -> tuple[float, float]:
    """Mean over all per-task values and its standard error with each group (a test batch:
    one ``[tasks]`` tensor of ``values``) as the independent unit: the cluster-robust
    estimate sqrt(G / (G - 1) * sum_g (S_g - n_g m)^2) / N, for G groups of n_g tasks summing
    to S_g, N tasks in all, mean m (for equal groups, the s.e. of the groups' means). NaN with
    fewer than two groups."""
    sums = torch.stack([v.double().sum() for v in values])
    sizes = torch.tensor([v.numel() for v in values], dtype=torch.float64)
    n, groups = sizes.sum(), len(values)
    mean = sums.sum() / n
    if groups < 2:
        return mean.item(), float("nan")
    spread = ((sums - sizes * mean) ** 2).sum() * groups / (groups - 1)
    return mean.item(), (spread.sqrt() / n).item()


def build_test_sampler(cfg: ExperimentConfig, **data_overrides) -> TaskSampler:
    """The fixed test-set sampler of an experiment: seed ``eval.seed`` and split ``test``, so
    every model (and every training seed) is scored on the same tasks."""
    opts = {**cfg.data_options(test=True), **data_overrides}
    return build_sampler(cfg.data["name"], cfg.eval.batch_size, cfg.eval.seed, **opts)


def _has_gp_info(sampler: TaskSampler) -> bool:
    """Whether the sampler's batches carry what ``gp-oracle`` needs (``Batch.info``)."""
    return bool(getattr(sampler, "exact_gp_posterior", False))


@torch.no_grad()
def evaluate(
    model: NeuralProcess,
    sampler: TaskSampler,
    n_batches: int,
    oracle: bool = True,
    device: torch.device | str = "cpu",
    progress: bool = False,
) -> Metrics:
    """Score ``model`` on batches ``0..n_batches-1`` of ``sampler``'s test split. Padded
    targets (``batch.mask_t``) count nowhere: LL, coverage and the oracle use real ones only;
    nor do missing target outputs (``batch.mask_yt``): LL and coverage use observed values.

    The GP oracle (exact posterior under each task's generating hyper-parameters) is scored
    on the same tasks when the sampler is a GP sampler and ``oracle`` is True.
    """
    if isinstance(n_batches, bool) or not isinstance(n_batches, int) or n_batches < 1:
        raise ValueError(f"n_batches = {n_batches!r}: must be an integer >= 1")
    model = model.to(device).eval()
    gp_oracle = (
        build_model("gp-oracle", sampler.dim_x, sampler.dim_y)
        if (oracle and _has_gp_info(sampler) and sampler.dim_y == 1)
        else None
    )
    lls, oracle_lls, covered = [], [], []
    batches = range(n_batches)
    if progress:
        from tqdm.auto import tqdm

        batches = tqdm(batches, desc=f"eval {model.name}", dynamic_ncols=True)
    for i in batches:
        batch = batch_at(sampler, i, split="test").to(device)
        pred = model.predict_batch(batch)
        lls.append(model.log_likelihood(batch, pred).cpu())
        inside = in_interval(pred, batch.yt, Z95)  # the family's interval (Gaussian: mean ± z std)
        covered.append(observed_mean(inside.float(), batch.mask_t, batch.mask_yt).cpu())
        if gp_oracle is not None:
            oracle_lls.append(gp_oracle.log_likelihood(batch).cpu())
    ll = torch.cat(lls).double()
    mean, se = mean_se(ll)
    metrics = Metrics(model.name, ll.numel(), mean, se, torch.cat(covered).mean().item())
    metrics.ll_se_batches = clustered_mean_se(lls)[1]
    if oracle_lls:
        o = torch.cat(oracle_lls).double()
        metrics.oracle_ll, metrics.oracle_ll_se = mean_se(o)
        metrics.gap, metrics.gap_se = mean_se(o - ll)  # paired over the same tasks
        per_batch = (o - ll).split([b.numel() for b in lls])  # the same gaps, batch by batch
        metrics.gap_se_batches = clustered_mean_se(list(per_batch))[1]
    return metrics


def format_table(rows: list[Metrics]) -> str:
    """A markdown table of metrics (LL per target point, higher is better)."""
    lines = [
        "| model | tasks | LL ± s.e. | gap to oracle ± s.e. | 95% coverage |",
        "| --- | --- | --- | --- | --- |",
    ]
    for m in rows:
        gap = f"{m.gap:.3f} ± {m.gap_se:.3f}" if m.gap is not None else "n/a"
        lines.append(
            f"| {m.model} | {m.n_tasks} | {m.ll:.3f} ± {m.ll_se:.3f} | {gap} | {m.coverage95:.3f} |"
        )
    oracle = next((m for m in rows if m.oracle_ll is not None), None)
    if oracle is not None:
        lines.append(
            f"| gp-oracle | {oracle.n_tasks} | {oracle.oracle_ll:.3f} ± "
            f"{oracle.oracle_ll_se:.3f} | 0 | — |"
        )
    by_batch = [
        f"{m.model}: LL ± {m.ll_se_batches:.3f}"
        + ("" if m.gap_se_batches is None else f", gap ± {m.gap_se_batches:.3f}")
        for m in rows
        if m.ll_se_batches is not None
    ]
    if by_batch:  # the honest error bar where a batch's tasks share context size or locations
        lines += ["", f"s.e. over test batches (each batch one unit): {'; '.join(by_batch)}"]
    return "\n".join(lines)


def cached_evaluate(
    model: NeuralProcess,
    cfg: ExperimentConfig,
    cell: str | Path,
    *,
    settings: dict | None = None,
    needs: tuple[str, ...] = (),
    **data_overrides,
) -> Metrics:
    """:func:`evaluate` on the experiment's test set (with ``data_overrides``), stored as JSON
    at ``cell`` and read back from there next time, so a table can be built cell by cell and
    resumed.

    With ``settings`` (what the numbers depend on, JSON-serialisable) the cell is stored as
    ``{"settings": ..., "metrics": ...}`` so that a caller can later refuse a cell computed
    under other settings; without, as the metrics alone (the older layout, still read).

    ``needs``: :class:`Metrics` fields the caller reads that a cell stored before they existed
    lacks (``"ll_se_batches"``); such a cell is computed again and overwritten."""
    cell = Path(cell)
    if cell.exists():
        stored = json.loads(cell.read_text())
        metrics = Metrics(**stored.get("metrics", stored))
        if all(getattr(metrics, field) is not None for field in needs):
            return metrics
    metrics = evaluate(model, build_test_sampler(cfg, **data_overrides), cfg.eval.n_batches)
    cell.parent.mkdir(parents=True, exist_ok=True)
    if settings is None:
        cell.write_text(json.dumps(metrics.as_dict()))
    else:
        cell.write_text(json.dumps({"settings": settings, "metrics": metrics.as_dict()}, indent=2))
    return metrics
