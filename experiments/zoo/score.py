"""Score any 1D zoo checkpoint (a shipped model, a finished run's ``model.pt``, a long run's
``checkpoints/last.pt``) against the GP oracle on the zoo's three shared priors, on fixed test
tasks (each prior's config: test split, ``eval.seed``, ``eval.batch_size``). Every model is
scored on the same tasks of each, whatever it trained on, so a column of the zoo report
compares models task for task:

(a) the **single-kernel prior** of today's zoo (:data:`SINGLE_KERNEL`: five kernels, variance
    1), overall and per kernel, exactly as ``src/tnpx/zoo/gp1d-*.json`` report it (card key
    ``eval``, ``per_kernel``);
(b) the **composite prior** of the long-run zoo (:data:`REFERENCE`), its composite tasks only
    (``composite_prob = 1``; ``eval_composite``);
(c) the **wide prior** (:data:`WIDE_PRIOR`: wider lengthscales and periods, polynomial trends,
    locally periodic sums, near noise-free tasks, 3-256 context points), all its tasks, with
    the targets its config's ``eval.data`` sets (``eval_v3``).

A config trained on ``gp-composite`` has the same single-kernel tasks as (a) when its
single-kernel options are today's (:func:`single_kernel_sampler` draws them with the plain
``gp`` sampler: the composite sampler with ``composite_prob = 0`` draws its composite
hyper-parameters too, so other tasks). The wide prior's single-kernel options are wider, so a
model's own prior is not (a) in general: hence the fixed priors.

Metrics per target point (LL, higher is better); the gap is oracle − model, paired over tasks.
"""

from __future__ import annotations

from pathlib import Path

from tnpx.checkpoint import load
from tnpx.config import ExperimentConfig, load_config
from tnpx.data import TaskSampler, build_sampler
from tnpx.data.synthetic import single_kernel_options
from tnpx.evaluation import Metrics, build_test_sampler, evaluate
from tnpx.models import NeuralProcess
from tnpx.training import experiment_of

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ["rbf", "matern12", "matern32", "matern52", "periodic"]
SINGLE_KERNEL = ROOT / "configs" / "pretrained-gp1d-tnp.yaml"  # (a): today's zoo's prior
REFERENCE = ROOT / "configs" / "pretrained-gp1d-v2-tnp.yaml"  # (b): the composite prior
WIDE_PRIOR = ROOT / "configs" / "pretrained-gp1d-v3-tnp.yaml"  # (c): the wide prior
PRIORS = ("eval_composite", "eval_v3")  # a card's entries for priors (b) and (c)
METRIC_KEYS = ("ll", "ll_se", "oracle_ll", "gap", "gap_se")  # a per-kernel entry of a card
FULL_KEYS = ("n_tasks", *METRIC_KEYS, "coverage95")  # a card's eval / eval_composite entry


def single_kernel_sampler(cfg: ExperimentConfig, **overrides) -> TaskSampler:
    """Prior (a)'s test sampler for a model trained with ``cfg`` (``overrides``: options such
    as ``kernels=["rbf"]``). For a ``gp`` config this is :func:`build_test_sampler` itself.

    Raises:
        ValueError: ``cfg`` trains on neither ``gp`` nor ``gp-composite`` data.
    """
    name = cfg.data["name"]
    if name == "gp":
        return build_test_sampler(cfg, **overrides)
    if name != "gp-composite":
        raise ValueError(f"{cfg.name}: data {name!r} has no single-kernel GP prior to score on")
    options = single_kernel_options(cfg.data_options(test=True))
    return build_sampler("gp", cfg.eval.batch_size, cfg.eval.seed, **{**options, **overrides})


def prior_sampler(key: str, **overrides) -> TaskSampler:
    """The test sampler of prior ``key``: ``"eval"`` (a), or an entry of :data:`PRIORS`
    (``overrides``: sampler options such as ``kernels=["rbf"]``)."""
    if key == "eval":
        return single_kernel_sampler(load_config(SINGLE_KERNEL), **overrides)
    if key == "eval_composite":
        return build_test_sampler(load_config(REFERENCE), **{"composite_prob": 1.0, **overrides})
    if key == "eval_v3":
        return build_test_sampler(load_config(WIDE_PRIOR), **overrides)
    raise ValueError(f"no zoo prior {key!r}; known: eval, {', '.join(PRIORS)}")


def _entry(m: Metrics, keys: tuple[str, ...]) -> dict:
    return {k: getattr(m, k) for k in keys}


def score(model: NeuralProcess, n_batches: int, progress: bool = False) -> dict:
    """Prior (a) overall (``eval``) and per kernel (``per_kernel``, a quarter of the batches
    each, as today's cards), and each prior of :data:`PRIORS`, each on batches ``0..n-1`` of
    its test split. Entries as in today's zoo cards."""
    overall = evaluate(model, prior_sampler("eval"), n_batches, progress=progress)
    per_kernel = {
        k: _entry(
            evaluate(model, prior_sampler("eval", kernels=[k]), max(1, n_batches // 4)),
            METRIC_KEYS,
        )
        for k in KERNELS
    }
    return {
        "eval": _entry(overall, FULL_KEYS),
        "per_kernel": per_kernel,
        **{key: prior_score(model, key, n_batches, progress) for key in PRIORS},
    }


def prior_score(model: NeuralProcess, key: str, n_batches: int, progress: bool = False) -> dict:
    """One prior of :data:`PRIORS` alone: a card's entry ``key`` (batches ``0..n-1``)."""
    metrics = evaluate(model, prior_sampler(key), n_batches, progress=progress)
    return _entry(metrics, FULL_KEYS)


def experiment(path: str | Path) -> ExperimentConfig:
    """The experiment config a checkpoint was trained with (training stores it).

    Raises:
        ValueError: the checkpoint stores none (its priors are unknown).
    """
    cfg = experiment_of(path)
    if cfg is None:
        raise ValueError(f"{path}: stores no experiment config, so its training prior is unknown")
    return cfg


def score_checkpoint(path: str | Path, n_batches: int | None = None) -> dict:
    """:func:`score` for the checkpoint at ``path`` (loaded with ``tnpx.load``), with its
    config's ``eval.n_batches`` unless ``n_batches`` says otherwise."""
    return score(load(path).eval(), n_batches or experiment(path).eval.n_batches)
