"""The demo's ``README.md``: what was run, on what, how long, the table and its reading
(the sections /work/shared/RESULTS.md asks of every results file)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import ExperimentConfig
from ..evaluation.protocol import Metrics
from ..models import NeuralProcess
from ..provenance import command_line, git_commit, hardware

if TYPE_CHECKING:
    from .settings import DemoSettings
    from .zero_shot import ZeroShot

# KR Table 3, RBF, NLL per target (100,000 batches of 32, the paper's sizes); the paper's
# TNP-D is tnpx's ``tnp``.
PAPER_KR1_RBF_NLL = {"tnp": ("TNP-D", -0.455), "cnp": ("CNP", 0.238)}
# The reference row: the context outputs' mean and variance at every target (no training).
REFERENCE_MODEL = "context-moments"
# How far a model's share of the GP posterior mean must beat the reference's (a flat line at
# the context's average) before its mean is said to follow the context (follows_context).
FOLLOWS_MARGIN = 0.1


@dataclass
class Scored:
    """A model's test metrics and how much of the exact GP's posterior mean it reproduces
    (the demo's ``gp_mean_share``)."""

    metrics: Metrics
    gp_mean_share: float


@dataclass
class TrainedModel(Scored):
    """A model trained by the demo, its scores and wall times."""

    config: ExperimentConfig
    model: NeuralProcess
    train_s: float
    eval_s: float

    def as_dict(self) -> dict:
        return {
            "steps": self.config.train.steps,
            "lr": self.config.optim.lr,
            "model_options": self.config.model_options(),
            "train_seconds": self.train_s,
            "eval_seconds": self.eval_s,
            "gp_mean_share": self.gp_mean_share,
            "metrics": self.metrics.as_dict(),
        }


def _row(name: str, steps: str, scored: Scored, paper: str) -> str:
    m = scored.metrics
    return (
        f"| {name} | {steps} | {m.n_tasks} | {m.ll:.3f} ± {m.ll_se:.3f} | {paper} | "
        f"{m.gap:.3f} ± {m.gap_se:.3f} | {scored.gp_mean_share:.2f} | {m.coverage95:.3f} |"
    )


def results_table(trained: dict[str, TrainedModel], prior: float, reference: Scored) -> str:
    """One row per trained model with the paper's LL beside it, then on the same test tasks
    the ``reference`` (``context-moments``: the context's mean and variance at every target,
    what a model stuck at the plateau scores), the exact GP, and the GP prior (LL ``prior``:
    the context ignored)."""
    rows = [
        "| model | steps | tasks | LL ± s.e. | paper LL (100k steps) | gap to exact GP ± s.e. "
        "| share of GP mean | 95% coverage |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, t in trained.items():
        paper_name, paper_nll = PAPER_KR1_RBF_NLL.get(name, ("", None))
        paper = f"{-paper_nll:.3f} ({paper_name})" if paper_nll is not None else "—"
        rows.append(_row(name, str(t.config.train.steps), t, paper))
    rows.append(_row(f"{REFERENCE_MODEL} (reference)", "none", reference, "—"))
    m = reference.metrics
    rows.append(
        f"| exact GP | — | {m.n_tasks} | {m.oracle_ll:.3f} ± {m.oracle_ll_se:.3f} | — | 0 | 1 | — |"
    )
    rows.append(
        f"| GP prior (no context) | — | {m.n_tasks} | {prior:.3f} | — | "
        f"{m.oracle_ll - prior:.3f} | 0 | — |"
    )
    return "\n".join(rows)


def _budget(trained: dict[str, TrainedModel], settings: DemoSettings) -> str:
    parts = []
    for name, t in trained.items():
        c = t.config
        parts.append(
            f"{name}: {c.train.steps} steps of batch {c.data.get('batch_size')}, "
            f"{c.optim.name} {c.optim.lr} with {c.schedule.warmup(c.train.steps)} warm-up steps "
            f"and {c.schedule.name} decay, options {c.model_options()}"
        )
    cfg = next(iter(trained.values())).config
    quick = (
        " **--quick: a smoke run, nothing here is trained to be read.**" if settings.quick else ""
    )
    given = f", overrides {settings.overrides}" if settings.overrides else ""
    return (
        f"budget (`{settings.config}`{given}): {'; '.join(parts)}. Tested on "
        f"{cfg.eval.n_batches} batches of {cfg.eval.batch_size}. The paper (KR Table 3) "
        f"trains 100,000 batches of 32 with full-size models and tests on 5,000 batches of "
        f"32.{quick}"
    )


def follows_context(share: float, reference_share: float) -> bool:
    """Whether a model's mean follows its context beyond shifting to the context's average:
    its share of the GP posterior mean beats the reference's (:data:`REFERENCE_MODEL`, a flat
    line there) by :data:`FOLLOWS_MARGIN`."""
    return share >= reference_share + FOLLOWS_MARGIN


def _reading(shot: ZeroShot, trained: dict[str, TrainedModel], reference: Scored) -> str:
    average = reference.gp_mean_share
    tnp, cnp = trained["tnp"], trained["cnp"]
    order = "reproduced" if tnp.metrics.ll > cnp.metrics.ll else "NOT reproduced"
    context = "; ".join(
        f"{name}'s mean reproduces {t.gp_mean_share:.2f} of the exact GP's posterior mean, so it "
        + (
            "follows its context"
            if follows_context(t.gp_mean_share, average)
            else "barely moves beyond the context's average"
        )
        for name, t in trained.items()
    )
    if follows_context(cnp.gp_mean_share, average) and tnp.gp_mean_share - cnp.gp_mean_share > 0.2:
        context += (
            ". CNP, one mean-pooled vector for the whole context, follows its broad shape but "
            "not the short wiggles TNP tracks (`predictions.png`): the underfitting attention "
            "was brought into NPs to fix"
        )
    z = shot.metrics
    return (
        f"The shipped {shot.name} is {z.gap:.2f} ± {z.gap_se:.2f} nats per target below the "
        f"exact GP on tasks of its own prior, zero-shot (its card: {shot.card['eval']['gap']:.2f} "
        f"over {shot.card['eval']['n_tasks']} tasks). Trained here, the paper's ordering (TNP "
        f"above CNP) is {order} (TNP {tnp.metrics.ll:.3f}, CNP {cnp.metrics.ll:.3f}). The "
        f"{REFERENCE_MODEL} reference, a flat line at the context's average, scores "
        f"{reference.metrics.ll:.3f} and reproduces {average:.2f}; {context}. Both stay well below "
        f"the exact GP ({tnp.metrics.oracle_ll:.3f}) and the paper's numbers, as expected of "
        "budget runs a few percent as long."
    )


def report(
    settings: DemoSettings,
    shot: ZeroShot,
    trained: dict[str, TrainedModel],
    references: tuple[float, Scored],
    total_s: float,
    cnp_why: str,
    load: float,
) -> str:
    """The README of a demo run. ``references``: the GP prior's LL and the
    :data:`REFERENCE_MODEL` row (see :func:`results_table`); ``cnp_why``: why CNP
    trains for the steps it does; ``load``: the machine's load average when the demo began."""
    prior, reference = references

    times = "; ".join(
        f"{n} train {t.train_s:.0f} s, eval {t.eval_s:.0f} s" for n, t in trained.items()
    )
    tasks = "\n".join(
        [
            f"| kernel | lengthscale | noise std | context points | {shot.name} LL | exact GP LL |",
            "| --- | --- | --- | --- | --- | --- |",
            *(
                f"| {t.kernel} | {t.lengthscale:.2f} | {t.noise:.2f} | {t.n_ctx} | "
                f"{t.model_ll:.3f} | {t.oracle_ll:.3f} |"
                for t in shot.tasks
            ),
        ]
    )
    card = shot.card
    cores = os.cpu_count() or 1
    busy = f" (over the {cores} cores: other jobs shared them, stretching every time)"
    busy = busy if load > cores else ""
    return f"""# Demo: a shipped TNP zero-shot, then TNP and CNP trained here, against the exact GP

**What**: (1) zero-shot: the pretrained `{shot.name}` (`tnpx.pretrained("{shot.name}")`,
trained on {shot.card["trained_on"]}) on {shot.metrics.n_tasks} held-out tasks of that prior,
beside the exact GP posterior under each task's generating kernel and hyper-parameters.
(2) `tnp` and (3) `cnp` trained here on KR-1 data (1D GP, RBF kernel, lengthscale ~
Beta(3, 7), 3–49 noisy context points, 150 noiseless targets). Metric: log-likelihood per
target point (LL, higher is better), mean ± standard error over test tasks; the gap is exact
GP LL − model LL, paired over the same tasks; the *share of GP mean* is
1 − Σ(μ_model − μ_GP)² / Σμ_GP² over all targets (0: a flat line at the prior mean, i.e. the
context ignored; 1: the exact GP's mean); coverage is the fraction of targets inside the 95%
predictive interval.

**Command**: `{command_line()}`, commit `{git_commit()}`. `make demo` runs `tnpx demo`,
which writes `runs/demo/` (ignored by git); `results/demo/` is rebuilt only by
`make demo-results`.

**Protocol or budget**: zero-shot: `{shot.name}` as shipped ({card["steps"]} steps of batch
{card["batch_size"]}, `{card["config"]}`), scored on {shot.metrics.n_tasks} tasks of its
experiment's test set (its card's number is over {card["eval"]["n_tasks"]}); no paper
reports this experiment. Trained here: {_budget(trained, settings)} CNP gets {cnp_why}; a
CNP step costs about a quarter of a TNP step.

**Hardware and time**: {hardware()}; 1-minute load average {load:.1f} at the
start{busy}. Zero-shot {shot.seconds:.0f} s; {times}; whole demo {total_s:.0f} s.

## 1. Zero-shot: `{shot.name}` beside the exact GP

![zero-shot predictions](zero_shot.png)

{tasks}

{shot.summary()[0].upper() + shot.summary()[1:]}.

## 2–3. TNP and CNP trained here

![predictions](predictions.png) ![validation LL](validation.png)

{results_table(trained, prior, reference)}

**Reading**: {_reading(shot, trained, reference)}
"""
