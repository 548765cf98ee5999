"""Pretrained 2D models on their own prior translated and at changed density, beside the oracle.

BSA-TNP's shifts: the LL per target point in each condition beside the unshifted one, with the
GP oracle's beside each.

Each model (a zoo name, or a checkpoint that records its training experiment, whose data is
``gp2d-composite``) is scored on that experiment's held-out test tasks (seed ``eval.seed``, split
``test``, the first ``ceil(--tasks / eval.batch_size)`` batches) in every condition:

- ``unshifted``: the prior as trained;
- ``translated +D``: every input ``+ D`` on both axes (the sampler's ``shift``). ``D = 10`` by
  default: the context box ``[-2, 2]²`` moves to ``[8, 12]²``, disjoint from the training box
  and 2.5 box widths beyond it. BSA-TNP's suite translates far beyond the training box, so that
  any dependence on absolute position shows; the tasks stay the same (their kernels see
  differences of inputs only), so a translation-equivariant model should score as unshifted;
- ``density xF``: the same functions on a domain ``1/sqrt(F)`` times as wide, lengthscales
  alike (the sampler's ``scale = 1/sqrt(F)``), so the same number of points lie ``F`` times as
  densely: ``F = 2`` (the field shrunk: every lengthscale 0.71 times as long, the shortest
  below any the prior draws) and ``F = 1/2`` (stretched: the inputs reach 2.83, beyond the
  training box ``[-2, 2]²``).

Both shifts act after every draw, so each condition holds the same tasks (the same function
values and noise), only placed elsewhere: the scores are paired across conditions, and the
report gives the largest difference of a target output between conditions as a check. The model
is evaluated on each batch's inputs as they are, with no ``tnpx.predict`` scaling (which would
map each context's range onto the training domain and undo the shift), so the shift is what the
model sees. The oracle is the exact posterior under each task's generating kernel
(``gp-oracle`` reads ``Batch.info``): the best any model can do on the task.

    python -m experiments.zero_shot.shifts --models gp2d-te-tnp-rope
    python -m experiments.zero_shot.shifts --models long-runs/gp2d-te-tnp-rope/model.pt

Writes ``results/pretrained/shifts-2d.md`` (+ ``.json``) unless ``--out`` / ``--name`` say
otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from experiments.zero_shot.fields_report import run_header, shift_report
from experiments.zero_shot.scoring import distinct_labels, model_label
from tnpx.batch import Batch, observed_mean
from tnpx.checkpoint import experiment_from_record, model_from_record, read_checkpoint
from tnpx.config import ExperimentConfig
from tnpx.data import batch_at
from tnpx.evaluation import Z95, build_test_sampler, mean_se
from tnpx.models import NeuralProcess, build_model
from tnpx.zoo import checkpoint_file

PRIOR = "gp2d-composite"
SHIFT, DENSITIES, TASKS = 10.0, (2.0, 0.5), 256  # the defaults (the 2D card's shifts too)


@dataclass(frozen=True)
class Condition:
    """A shift of the test tasks: ``shift`` added to the config's, ``scale`` times its."""

    name: str
    shift: float = 0.0
    scale: float = 1.0


def conditions(shift: float, densities: list[float]) -> list[Condition]:
    """Unshifted, translated by ``shift``, and each density factor (``scale = 1/sqrt(F)``)."""
    out = [Condition("unshifted"), Condition(f"translated {shift:+g}", shift=shift)]
    return out + [Condition(f"density x{f:g}", scale=1 / math.sqrt(f)) for f in densities]


def condition_batch(cfg: ExperimentConfig, condition: Condition, index: int) -> Batch:
    """Test batch ``index`` of ``cfg``'s prior under ``condition``."""
    data = cfg.data_options(test=True)
    sampler = build_test_sampler(
        cfg,
        shift=data.get("shift", 0.0) + condition.shift,
        scale=data.get("scale", 1.0) * condition.scale,
    )
    return batch_at(sampler, index, split="test")


@torch.no_grad()
def score_condition(
    model: NeuralProcess, cfg: ExperimentConfig, condition: Condition, n_batches: int
) -> dict[str, torch.Tensor]:
    """Per task ``[n_batches * batch_size]``: the model's LL per target point, the oracle's, and
    the model's 95 % coverage, on the raw inputs; and the tasks' target outputs ``yt``."""
    oracle = build_model("gp-oracle", 2, 1)
    parts: dict[str, list[torch.Tensor]] = {"model": [], "oracle": [], "coverage": [], "yt": []}
    for i in range(n_batches):
        batch = condition_batch(cfg, condition, i)
        pred = model.predict_batch(batch)
        parts["model"].append(model.log_likelihood(batch, pred).double())
        inside = (batch.yt - pred.mean).abs() <= Z95 * pred.stddev
        parts["coverage"].append(observed_mean(inside.double(), batch.mask_t, batch.mask_yt))
        parts["oracle"].append(oracle.log_likelihood(batch).double())
        parts["yt"].append(batch.yt)
    return {name: torch.cat(values) for name, values in parts.items()}


def summarise(scored: dict[str, torch.Tensor], base: dict[str, torch.Tensor]) -> dict:
    """Mean ± s.e. over the tasks of the model's and the oracle's LL, the gap (oracle - model)
    and the change from the unshifted condition ``base`` (both paired over the same tasks); the
    coverage, and the largest difference of a target output from ``base`` (0: the same tasks)."""
    model, oracle = scored["model"], scored["oracle"]
    return {
        "ll": mean_se(model),
        "oracle_ll": mean_se(oracle),
        "gap": mean_se(oracle - model),
        "change": mean_se(model - base["model"]),
        "oracle_change": mean_se(oracle - base["oracle"]),
        "coverage95": scored["coverage"].mean().item(),
        "max_output_difference": (scored["yt"] - base["yt"]).abs().max().item(),
        "tasks": {"model_ll": model.tolist(), "oracle_ll": oracle.tolist()},
    }


def load_prior_model(spec: str) -> tuple[NeuralProcess, ExperimentConfig]:
    """The model a zoo name or checkpoint holds, and its recorded experiment (on ``PRIOR``)."""
    path = checkpoint_file(spec)
    record = read_checkpoint(path)
    cfg = experiment_from_record(record)
    if cfg is None or cfg.data.get("name") != PRIOR:
        found = "no experiment" if cfg is None else f"data {cfg.data.get('name')!r}"
        raise SystemExit(f"{spec}: records {found}; the shift harness needs a {PRIOR} model")
    return model_from_record(record, path).eval(), cfg


def run_model(spec: str, plan: list[Condition], tasks: int) -> dict:
    """One model's scores in every condition of ``plan`` (the first is the base)."""
    model, cfg = load_prior_model(spec)
    n_batches = math.ceil(tasks / cfg.eval.batch_size)
    scored, rows = {}, {}
    for condition in plan:
        start = time.perf_counter()
        scored[condition.name] = score_condition(model, cfg, condition, n_batches)
        rows[condition.name] = {
            **asdict(condition),
            **summarise(scored[condition.name], scored[plan[0].name]),
            "seconds": time.perf_counter() - start,
        }
        print(f"{spec} {condition.name}: LL {rows[condition.name]['ll'][0]:.3f}", flush=True)
    return {
        "spec": spec,
        "n_tasks": n_batches * cfg.eval.batch_size,
        "eval_seed": cfg.eval.seed,
        "data": cfg.data,
        "conditions": rows,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["gp2d-te-tnp-rope"])
    parser.add_argument("--tasks", type=int, default=TASKS, help="held-out tasks per condition")
    parser.add_argument("--shift", type=float, default=SHIFT, help="translation on both axes")
    parser.add_argument(
        "--densities", nargs="*", type=float, default=list(DENSITIES), help="density factors"
    )
    parser.add_argument("--out", default="results/pretrained")
    parser.add_argument("--name", default="shifts-2d", help="file name stem under --out")
    args = parser.parse_args(argv)
    if args.tasks < 1 or any(not f > 0 for f in args.densities):
        parser.error("--tasks must be at least 1 and every density factor positive")
    torch.set_num_threads(1)
    labels = distinct_labels([model_label(spec) for spec in args.models])
    plan = conditions(args.shift, args.densities)
    header, started = run_header(), time.perf_counter()
    results = {label: run_model(spec, plan, args.tasks) for label, spec in zip(labels, args.models)}
    run = {
        **header,
        "wall_s": time.perf_counter() - started,
        "conditions": [asdict(c) for c in plan],
        "results": results,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps(run, indent=1) + "\n")
    report = shift_report(run, out / f"{args.name}.md")
    print(report)
    return run


if __name__ == "__main__":
    main()
