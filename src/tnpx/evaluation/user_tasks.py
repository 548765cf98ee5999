"""Scores on a user's held-out tasks, in the user's units, beside two per-task baselines.

A model trained on a user's data (a ``table`` source, say) computes in the units its data
source normalised to (``value_model = (value - loc) / scale``, fitted on the training tasks).
:func:`evaluate_tasks` scores it on the source's test tasks in the data's own units: the LL per
target point shifts by ``-sum(log scale_y)`` (over the outputs whose LL is a density: not a
count's or a 0/1 outcome's probability, nor a dry day's), the RMSE and the CRPS scale by
``scale_y`` per output, the 95 % coverage (between the family's quantiles for a non-Gaussian
model) does not move. Beside it, on the same tasks: a GP fitted to each task's context
alone (the ``gp`` model, the ``gp`` extra) and the context's mean and std (``context-moments``),
with the model's LL less each baseline's paired over tasks (positive: the model is better).
The baselines read the context's outputs as they are (a count model's exposures, which they
know nothing of, are left out of their batches). They predict Gaussians: for a model whose
LL is partly a probability (``poisson``, ``negative-binomial``, ``bernoulli``,
``bernoulli-gamma``, ``beta`` with spikes) that difference means nothing and is not given; the
CRPS, a score of any distribution, compares them.

Each standard error comes twice: over tasks (every task independent), and over the split's
clusters (:mod:`tnpx.evaluation.clusters`: the test windows of one month, the draws of one test
curve), which respects what was held out; ``cluster_unit`` says what one cluster is. The 95 %
coverage is also binned by context size (:mod:`tnpx.evaluation.coverage_flags`).

Missing target outputs (``Batch.mask_yt``) count nowhere: the LL sums each target's observed
outputs (its shift too), an output's RMSE is over the targets where it is observed (tasks with
none of it left out of that output's mean), coverage over observed values. Both baselines read
only the observed context values, per output.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from ..batch import observed_mean, output_means
from ..data import TaskSampler, batch_at
from ..likelihoods import covered as in_interval
from ..likelihoods import crps as crps_of
from ..likelihoods import density_points, is_continuous
from ..models import NeuralProcess, build_model
from ..models.exposure import without_exposures
from .clusters import cluster_rule, clustered_se
from .coverage_flags import coverage_by_context
from .protocol import Z95, mean_se

BASELINES = ("gp", "context-moments")


@dataclass
class TaskMetrics:
    """One model's scores over ``n_tasks`` test tasks in the data's units: LL per target
    point and per-output RMSE (means ± s.e. over tasks), 95 % coverage, and the LL less each
    baseline's paired over the same tasks (``vs``: name -> (mean, s.e.)). The ``*_clustered``
    s.e.s take each of the ``n_clusters`` clusters (``cluster_unit``) as one unit;
    ``coverage_by_ctx``: :class:`~tnpx.evaluation.coverage_flags.CoverageBin` dicts. (Scores
    stored before these existed load with them empty.)"""

    model: str
    n_tasks: int
    ll: float
    ll_se: float
    rmse: list[float]
    rmse_se: list[float]
    coverage95: float
    vs: dict[str, tuple[float, float]] = field(default_factory=dict)
    ll_se_clustered: float = float("nan")
    rmse_se_clustered: list[float] = field(default_factory=list)
    vs_se_clustered: dict[str, float] = field(default_factory=dict)
    n_clusters: int = 0
    cluster_unit: str = ""
    coverage_by_ctx: list[dict] = field(default_factory=list)
    # per output: CRPS in the data's units (lower is better) and its s.e. over tasks
    crps: list[float] = field(default_factory=list)
    crps_se: list[float] = field(default_factory=list)
    # False: the model's LL is partly a probability (counts, 0/1, dry days), which no
    # Gaussian baseline's log-density compares with: ``vs`` is left empty (compare CRPS)
    ll_is_density: bool = True
    # name -> per output, the other row's CRPS less this one's, paired over tasks (mean, s.e.;
    # positive: this model's CRPS is lower, better): the comparison every family has
    crps_vs: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def output_scale(sampler: TaskSampler, dim_y: int) -> np.ndarray:
    """``[dim_y]``: the data source's output scale (``normalisation["y"]["scale"]``), ones for
    a source that does not normalise (a prior's tasks are in their own units already)."""
    normalisation = getattr(sampler, "normalisation", None)
    if not normalisation:
        return np.ones(dim_y)
    return np.asarray(normalisation["y"]["scale"], dtype=np.float64)


@torch.no_grad()
def per_task(
    model: NeuralProcess, sampler: TaskSampler, n_batches: int, exposures: bool = True
) -> dict[str, np.ndarray]:
    """Per task of test batches ``0..n_batches-1``, in the source's model units (``exposures``
    False: the batches' exposures left out, for a baseline that knows none): ``ll
    [tasks]`` (per real target point), ``mse [tasks, dim_y]`` (NaN for an output a task never
    observes at a target), ``covered [tasks]``, ``outputs [tasks, dim_y]``: the observed
    outputs per scored target (ones without missing outputs), what the LL's shift to the data's
    units counts, ``n_ctx [tasks]`` (real context points) and ``cluster [tasks]`` (each task's
    cluster name, :func:`~tnpx.evaluation.clusters.cluster_rule`)."""
    model = model.eval()
    out: dict[str, list] = {"ll": [], "mse": [], "covered": [], "outputs": [], "n_ctx": []}
    out["crps"] = []
    labels, rule, likelihood = [], cluster_rule(sampler), likelihood_of(model)
    for i in range(n_batches):
        batch = batch_at(sampler, i, split="test")
        batch = batch if exposures else without_exposures(batch)
        labels += rule.labels(batch, i)
        n_ctx = batch.xc.shape[1] if batch.mask_c is None else batch.mask_c.sum(1)
        out["n_ctx"].append(torch.as_tensor(n_ctx).expand(batch.xc.shape[0]))
        pred = model.predict_batch(batch)
        out["ll"].append(model.log_likelihood(batch, pred))
        err = pred.mean - batch.yt  # [tasks, n_tgt, dim_y]
        mask, mask_y = batch.mask_t, batch.mask_yt
        out["mse"].append(output_means(err**2, mask, mask_y))
        inside = in_interval(pred, batch.yt, Z95).float()  # Gaussian: |err| <= z std, as before
        out["covered"].append(observed_mean(inside, mask, mask_y))
        density = density_points(likelihood, batch.yt)  # where the LL is a density (its shift)
        out["outputs"].append(_outputs_per_target(mask, mask_y, err, density))
        with torch.random.fork_rng(devices=[]):  # a sampled CRPS: the same draws every run
            torch.manual_seed(0)
            out["crps"].append(output_means(crps_of(pred, batch.yt).double(), mask, mask_y))
    scores = {k: torch.cat(v).double().numpy() for k, v in out.items()}
    return {**scores, "cluster": np.asarray(labels)}


def likelihood_of(model: NeuralProcess) -> str | dict:
    """The model's ``likelihood`` option (the Gaussian default for a model without one)."""
    return getattr(getattr(model, "hyper", None), "likelihood", "heteroscedastic")


def _outputs_per_target(
    mask_t, mask_yt, err: torch.Tensor, density: torch.Tensor | None = None
) -> torch.Tensor:
    """``[tasks, dim_y]``: per task, the share of its scored targets (real, some output
    observed) at which each output is observed (and its log-likelihood a density, where
    ``density [tasks, n_tgt, dim_y]`` says where: not a count's probability, nor a dry day's);
    ones where nothing is missing and every value is a density."""
    if density is not None and bool(density.all()):
        density = None  # a continuous family: exactly as before the families came
    if mask_yt is None and density is None:
        return torch.ones(err.shape[0], err.shape[-1], dtype=err.dtype)
    observed = torch.ones_like(err, dtype=torch.bool) if mask_yt is None else mask_yt
    scored = observed.any(-1) if mask_t is None else mask_t & observed.any(-1)
    counted = observed & scored[..., None]
    seen = (counted if density is None else counted & density).sum(1).to(err.dtype)
    return seen / scored.sum(1, keepdim=True).to(err.dtype)


def summarise(
    name: str, scores: dict[str, np.ndarray], scale_y: np.ndarray, cluster_unit: str = ""
) -> TaskMetrics:
    """``scores`` (:func:`per_task`) in the data's units; the clustered s.e.s where ``scores``
    names each task's cluster (``cluster_unit``: what one is)."""
    ll = _data_ll(scores, scale_y)
    rmse = np.sqrt(scores["mse"]) * scale_y  # [tasks, dim_y]; NaN: no target observes it
    ll_mean, ll_se = mean_se(torch.as_tensor(ll))
    pairs = [mean_se(torch.as_tensor(r[~np.isnan(r)])) for r in rmse.T]
    # the CRPS moves with the outputs' map: CRPS(scale X + loc, scale y + loc) = scale CRPS
    scored = [mean_se(torch.as_tensor(c[~np.isnan(c)])) for c in (scores["crps"] * scale_y).T]
    row = TaskMetrics(
        model=name,
        n_tasks=len(ll),
        ll=ll_mean,
        ll_se=ll_se,
        rmse=[m for m, _ in pairs],
        rmse_se=[s for _, s in pairs],
        coverage95=float(scores["covered"].mean()),
        crps=[m for m, _ in scored],
        crps_se=[s for _, s in scored],
    )
    if "n_ctx" in scores:
        bins = coverage_by_context(scores["covered"], scores["n_ctx"])
        row.coverage_by_ctx = [b.as_dict() for b in bins]
    if "cluster" in scores:
        labels = scores["cluster"]
        _, row.ll_se_clustered, row.n_clusters = clustered_se(ll, labels)
        row.rmse_se_clustered = [clustered_se(r, labels)[1] for r in rmse.T]
        row.cluster_unit = cluster_unit
    return row


def evaluate_tasks(
    model: NeuralProcess,
    sampler: TaskSampler,
    n_batches: int,
    baselines: tuple[str, ...] = BASELINES,
    against: dict[str, tuple[NeuralProcess, TaskSampler]] | None = None,
) -> list[TaskMetrics]:
    """``model`` and each baseline on the same test tasks, in the data's units (module
    docstring); the model's row first, its ``vs`` holding the paired LL differences (none
    for a model whose LL is partly a probability: :attr:`TaskMetrics.ll_is_density`) and its
    ``crps_vs`` the paired CRPS differences.

    ``against``: other trained models, row name -> (model, its own test sampler), scored
    after the baselines and paired with ``model`` as they are (a Gaussian head beside a
    family's, say). Each sampler must draw the same tasks and contexts as ``sampler`` (the
    caller checks: the units may differ, so the batches need not be equal); its rows are in
    the data's units by its own normalisation."""
    scale_y = output_scale(sampler, model.dim_y)
    unit = cluster_rule(sampler).unit
    ours = per_task(model, sampler, n_batches)
    rows = [summarise(model.name, ours, scale_y, unit)]
    rows[0].ll_is_density = is_continuous(likelihood_of(model))
    others = [(name, build_model(name, model.dim_x, model.dim_y), sampler) for name in baselines]
    others += [(name, m, s) for name, (m, s) in (against or {}).items()]
    for name, other, other_sampler in others:
        theirs = per_task(other, other_sampler, n_batches, exposures=name not in baselines)
        their_scale = output_scale(other_sampler, model.dim_y)
        rows.append(summarise(name, theirs, their_scale, unit))
        rows[0].crps_vs[name] = _paired_crps(theirs, their_scale, ours, scale_y)
        rows[-1].ll_is_density = is_continuous(likelihood_of(other))
        if not (rows[0].ll_is_density and rows[-1].ll_is_density):
            continue  # a probability against a density: no comparison
        # in the data's units: the Jacobians differ where the two samplers scale differently
        diff = _data_ll(ours, scale_y) - _data_ll(theirs, their_scale)
        rows[0].vs[name] = mean_se(torch.as_tensor(diff))
        rows[0].vs_se_clustered[name] = clustered_se(diff, ours["cluster"])[1]
    return rows


def _data_ll(scores: dict[str, np.ndarray], scale_y: np.ndarray) -> np.ndarray:
    """Per task, the LL per target point in the data's units (:func:`summarise`'s)."""
    return scores["ll"] - (scores["outputs"] * np.log(scale_y)).sum(-1)


def _paired_crps(
    theirs: dict[str, np.ndarray],
    their_scale: np.ndarray,
    ours: dict[str, np.ndarray],
    our_scale: np.ndarray,
) -> list[tuple[float, float]]:
    """Per output, their CRPS less ours in the data's units (``crps * scale_y``: each side's
    own map), paired over the tasks where both are scored (mean, s.e.; positive: ours is
    lower, better)."""
    diff = theirs["crps"] * their_scale - ours["crps"] * our_scale  # [tasks, dim_y]
    return [mean_se(torch.as_tensor(d[~np.isnan(d)])) for d in diff.T]


def format_task_table(rows: list[TaskMetrics]) -> str:
    """A markdown table of :func:`evaluate_tasks`' rows: each ``±`` gives the s.e. over tasks,
    then (``/``) over clusters where the rows have them, and a line under the table says what
    each assumes."""
    first = rows[0]
    both = first.n_clusters > 0
    se_head = " ± s.e. tasks / clusters" if both else " ± s.e."
    lines = [
        f"| model | tasks | LL (data units){se_head} | RMSE{se_head} | CRPS ± s.e. | "
        f"95% coverage | model LL − this{se_head} |",
        "| --- | ---: | --- | --- | --- | ---: | --- |",
    ]
    for r in rows:
        # an output no target observes (a grid variable beside stations) has no RMSE: "—"
        clustered = r.rmse_se_clustered or [None] * len(r.rmse)
        rmse = ", ".join(
            "—" if math.isnan(m) else f"{m:.4g} ± {_se(s, c, '.2g')}"
            for m, s, c in zip(r.rmse, r.rmse_se, clustered)
        )
        diff = first.vs.get(r.model)
        vs = "—"
        if diff is not None:
            vs = f"{diff[0]:+.3f} ± {_se(diff[1], first.vs_se_clustered.get(r.model))}"
        ll = f"{r.ll:.3f} ± {_se(r.ll_se, r.ll_se_clustered if r.n_clusters else None)}"
        crps = ", ".join(
            "—" if math.isnan(m) else f"{m:.4g} ± {s:.2g}" for m, s in zip(r.crps, r.crps_se)
        )  # none in scores stored before the CRPS was
        row = f"| {r.model} | {r.n_tasks} | {ll} | {rmse} | {crps or '—'} | {r.coverage95:.3f} |"
        lines.append(f"{row} {vs} |")
    notes = [] if first.ll_is_density or len(rows) < 2 else [no_ll_comparison(first)]
    unpaired = {name: d for name, d in first.crps_vs.items() if name not in first.vs}
    if unpaired:  # where no LL compares, the paired CRPS does
        notes.append(crps_comparison(first.model, unpaired))
    return "\n".join([*lines, "", se_assumptions(first), *notes])


def crps_comparison(model: str, diffs: dict[str, list[tuple[float, float]]]) -> str:
    """One line: each other row's CRPS less ``model``'s, paired over tasks, per output."""
    cells = "; ".join(
        f"`{name}` {', '.join(f'{m:+.4g} ± {s:.2g}' for m, s in per_output)}"
        for name, per_output in diffs.items()
    )
    return f"CRPS less {model}'s, paired over tasks (positive: {model}'s is lower): {cells}."


def no_ll_comparison(row: TaskMetrics) -> str:
    """Why ``row`` (a model whose LL is partly a probability) has no LL difference."""
    return (
        f"{row.model}'s LL is a probability at counts, 0/1 outcomes or dry days, the "
        "baselines' a Gaussian density: they do not compare (—); compare the CRPS."
    )


def _se(tasks: float, clusters: float | None, spec: str = ".3f") -> str:
    """``tasks`` s.e., then ``/ clusters`` where there is a clustered one."""
    text = "nan" if math.isnan(tasks) else format(tasks, spec)
    if clusters is None:
        return text
    return f"{text} / {'nan' if math.isnan(clusters) else format(clusters, spec)}"


def se_assumptions(row: TaskMetrics) -> str:
    """What each standard error of ``row`` assumes, in one line for under its table."""
    tasks = f"s.e. over tasks: each of the {row.n_tasks} test tasks independent"
    if not row.n_clusters:
        return f"{tasks} (optimistic where tasks overlap or repeat)."
    if row.n_clusters < 2:
        return (
            f"{tasks}, which they are not: they all lie in one {row.cluster_unit}, so no s.e. "
            "over clusters can be estimated (nan): hold out more of the split unit."
        )
    few = " (under 10 clusters: a rough size)" if row.n_clusters < 10 else ""
    return (
        f"{tasks} (optimistic where tasks overlap or repeat); s.e. over clusters: "
        f"{row.n_clusters} clusters, one per {row.cluster_unit}{few}. Quote the second."
    )
