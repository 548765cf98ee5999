"""Score any 1D zoo checkpoint (a shipped model, a finished run's ``model.pt``, a long run's
``checkpoints/last.pt``) against the GP oracle on two priors, on fixed test tasks:

(a) the **single-kernel prior** of today's zoo (``configs/pretrained-gp1d-tnp.yaml``: five
    kernels, variance 1), overall and per kernel, exactly as ``src/tnpx/zoo/gp1d-*.json``
    report it: the same tasks (test split, ``eval.seed``, ``eval.batch_size``), so old and new
    models compare task for task;
(b) the **composite prior** of the v2 zoo (``data.name: gp-composite``), its composite tasks
    only (``composite_prob = 1``).

A model trained on ``gp-composite`` is scored on (a) with the plain ``gp`` sampler and its
config's single-kernel options. The composite sampler with ``composite_prob = 0`` has the same
prior but draws its composite hyper-parameters too (then discards them), so its tasks are other
draws than today's; the ``gp`` sampler gives today's tasks themselves. A model trained on ``gp``
is scored on (b) with the v2 zoo's composite prior (:data:`REFERENCE`).

Metrics per target point (LL, higher is better); the gap is oracle − model, paired over tasks.
"""

from __future__ import annotations

from pathlib import Path

from tnpx.checkpoint import load
from tnpx.config import ExperimentConfig, load_config
from tnpx.data import TaskSampler, build_sampler
from tnpx.data.gp_composite import single_kernel_options
from tnpx.evaluation.protocol import Metrics, build_test_sampler, evaluate
from tnpx.models import NeuralProcess
from tnpx.training.state import experiment_of

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ["rbf", "matern12", "matern32", "matern52", "periodic"]
REFERENCE = ROOT / "configs" / "pretrained-gp1d-v2-tnp.yaml"  # the v2 zoo's composite prior
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


def composite_sampler(cfg: ExperimentConfig) -> TaskSampler:
    """Prior (b)'s test sampler: ``cfg``'s composite prior if it trains on ``gp-composite``,
    else the v2 zoo's (:data:`REFERENCE`); composite tasks only."""
    if cfg.data["name"] != "gp-composite":
        cfg = load_config(REFERENCE)
    return build_test_sampler(cfg, composite_prob=1.0)


def _entry(m: Metrics, keys: tuple[str, ...]) -> dict:
    return {k: getattr(m, k) for k in keys}


def score(
    model: NeuralProcess, cfg: ExperimentConfig, n_batches: int, progress: bool = False
) -> dict:
    """Prior (a) overall (``eval``) and per kernel (``per_kernel``, a quarter of the batches
    each, as today's cards), and prior (b) (``eval_composite``), each on batches
    ``0..n-1`` of the test split. Entries as in today's zoo cards."""
    overall = evaluate(model, single_kernel_sampler(cfg), n_batches, progress=progress)
    per_kernel = {
        k: _entry(
            evaluate(model, single_kernel_sampler(cfg, kernels=[k]), max(1, n_batches // 4)),
            METRIC_KEYS,
        )
        for k in KERNELS
    }
    return {
        "eval": _entry(overall, FULL_KEYS),
        "per_kernel": per_kernel,
        "eval_composite": composite_score(model, cfg, n_batches, progress),
    }


def composite_score(
    model: NeuralProcess, cfg: ExperimentConfig, n_batches: int, progress: bool = False
) -> dict:
    """Prior (b) alone: a card's ``eval_composite`` entry (batches ``0..n-1``)."""
    return _entry(evaluate(model, composite_sampler(cfg), n_batches, progress=progress), FULL_KEYS)


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
    cfg = experiment(path)
    return score(load(path).eval(), cfg, n_batches or cfg.eval.n_batches)
