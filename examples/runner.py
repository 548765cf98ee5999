"""The worked examples' shared runner: table -> training -> held-out scores -> results folder.

An :class:`Example` says where its data come from (a function writing the long table from a
package's data) and what its config is (``configs/examples/<name>.yaml``). :func:`run`:

1. writes the table as CSV under the run folder (``runs/examples/<name>/``, ignored by git);
2. trains from the config (:func:`tnpx.train.fit`), ``data.path`` and ``train.out_dir`` set;
3. scores the model on **every** held-out test task in the data's units beside a GP fitted per
   task and the context's moments (:func:`tnpx.evaluate_tasks.evaluate_tasks`), with the LL
   differences paired over tasks: once with the training's random context sizes (the config's
   ``eval`` section: one batch holding each test task once), once per fixed context size;
4. optionally scores another example's trained model zero-shot on these test tasks (transfer);
5. draws held-out test tasks (:func:`tnpx.plot.plot_1d_tasks`: the model and the per-task GP);
6. writes ``README.md`` (``../shared/RESULTS.md``'s order), ``metrics.json`` and the figure
   under ``results/examples/<name>/``.

``--quick`` runs every step in seconds into ``--out`` (a few training steps, two small test
batches, one context size): what ``tests/app/test_examples.py`` runs so the examples cannot rot.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from tnpx.batch import Batch
from tnpx.checkpoint import load, read_checkpoint
from tnpx.config import ExperimentConfig, config_to_yaml, load_config
from tnpx.data import batch_at
from tnpx.evaluate import build_test_sampler
from tnpx.evaluate_tasks import (
    BASELINES,
    TaskMetrics,
    evaluate_tasks,
    format_task_table,
    per_task,
    summarise,
)
from tnpx.experiments.provenance import command_line, git_commit, hardware
from tnpx.models import build_model
from tnpx.plot import plot_1d_tasks
from tnpx.train import fit

ROOT = Path(__file__).resolve().parents[1]
FIGURE = "tasks.png"
# --quick: every step of the full run, in seconds; nothing here is to be read as a result.
QUICK_OVERRIDES = [
    "train.steps=10",
    "train.log_every=5",
    "train.val_every=10",
    "train.val_batches=1",
    "train.checkpoint_every=10",
    "eval.batch_size=4",
    "eval.n_batches=2",
]


@dataclass
class Example:
    """One worked example.

    Attributes:
        name: ``configs/examples/<name>.yaml``, ``runs/examples/<name>/``,
            ``results/examples/<name>/``.
        title: the README's heading.
        source: where the data come from (package, dataset, what was measured, units).
        task: what one task is, in words ("a day: 24 hourly readings").
        unit: the output's unit as printed ("°F").
        write_table: writes the long table (CSV) to the path given.
        context_sizes: the fixed context sizes of the second table.
        about: what the reading should know about the data, whatever the numbers.
        transfer_from: another example whose trained model is also scored zero-shot here.
    """

    name: str
    title: str
    source: str
    task: str
    unit: str
    write_table: Callable[[Path], None]
    context_sizes: tuple[int, ...]
    about: str = ""
    transfer_from: str | None = None

    @property
    def config(self) -> Path:
        return ROOT / "configs" / "examples" / f"{self.name}.yaml"


def main(example: Example, argv: list[str] | None = None) -> Path:
    """The command line of one example; returns its results folder."""
    parser = argparse.ArgumentParser(
        prog=f"python examples/{example.name.replace('-', '_')}.py",
        description=f"Worked example: {example.title}. Trains from "
        f"{example.config.relative_to(ROOT)}, scores all held-out test tasks beside "
        f"per-task baselines, writes results/examples/{example.name}/.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run in seconds (tests); needs --out"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="put results/ and runs/ under this folder (default: the repository's)",
    )
    parser.add_argument("overrides", nargs="*", help="config key=value overrides")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.quick and args.out is None:
        parser.error("--quick writes nothing to be read as a result: give --out (a tmp folder)")
    command = shlex.join(["python", parser.prog.split()[-1], *argv])
    return run(example, args.out, args.quick, args.overrides, command)


def paths(name: str, out: Path | None) -> tuple[Path, Path]:
    """Example ``name``'s results folder and run folder (under ``out`` if given, else the
    repository's)."""
    base = ROOT if out is None else Path(out)
    return base / "results" / "examples" / name, base / "runs" / "examples" / name


def run(
    example: Example,
    out: Path | None = None,
    quick: bool = False,
    overrides: list[str] = (),
    command: str | None = None,
) -> Path:
    """Every step of the module docstring; returns the results folder. ``command``: what the
    README names as the command (default: this process's command line)."""
    start, load_avg = time.perf_counter(), os.getloadavg()[0]
    results, run_dir = paths(example.name, out)
    run_dir.mkdir(parents=True, exist_ok=True)
    table = run_dir / "table.csv"
    example.write_table(table)
    cfg = load_config(
        example.config,
        [
            f"data.path={table}",
            f"train.out_dir={run_dir}",
            *(QUICK_OVERRIDES if quick else []),
            *overrides,
        ],
    )
    print(f"== {example.title}: training {cfg.model['name']} for {cfg.train.steps} steps ==")
    t0 = time.perf_counter()
    model = fit(cfg).model.eval()
    train_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    sampler = build_test_sampler(cfg)
    keys = sampler.task_keys("test")
    counts = {split: len(sampler.task_keys(split)) for split in ("train", "val", "test")}
    covered = _covered_tasks(sampler, cfg.eval.n_batches)
    if not quick and covered != len(keys):
        raise ValueError(
            f"{example.config}: eval ({cfg.eval.n_batches} batch(es) of {cfg.eval.batch_size}) "
            f"covers {covered} of the {len(keys)} test tasks; set eval.batch_size: {len(keys)}"
        )
    _check_stored_normalisation(run_dir / "model.pt", sampler)
    print(f"== scoring on the test tasks ({covered} of {len(keys)}) ==")
    headline = evaluate_tasks(model, sampler, cfg.eval.n_batches)
    print(format_task_table(headline))
    sizes = example.context_sizes[:1] if quick else example.context_sizes
    by_size = {}
    for k in sizes:  # every task's context exactly k points (fraction 1, capped at k)
        fixed = build_test_sampler(cfg, ctx_fraction=[1.0, 1.0], max_ctx=k)
        if fixed.task_keys("test") != keys:
            raise AssertionError("a fixed context size changed the test tasks")
        by_size[k] = evaluate_tasks(model, fixed, cfg.eval.n_batches)
        print(f"-- {k} context points --\n{format_task_table(by_size[k])}")
    transfer = _transfer(example, out, model, sampler, cfg.eval.n_batches)
    eval_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    figure = _figure(model, sampler, results / FIGURE, n_tasks=2 if quick else 4)
    plot_s = time.perf_counter() - t0
    times = {"train_s": train_s, "eval_s": eval_s, "plot_s": plot_s}
    times["total_s"] = time.perf_counter() - start
    record = {
        "example": example.name,
        "command": command or command_line(),
        "commit": git_commit(),
        "hardware": hardware(),
        "load_average_at_start": load_avg,
        "quick": quick,
        "config": config_to_yaml(cfg),
        "tasks": counts,
        "test_tasks": [str(k) for k in keys],
        "scored_tasks": covered,
        "validation_ll": _validation_curve(run_dir / "metrics.csv"),
        "times": times,
        "headline": [r.as_dict() for r in headline],
        "by_context_size": {str(k): [r.as_dict() for r in rows] for k, rows in by_size.items()},
        "transfer": transfer,
    }
    results.mkdir(parents=True, exist_ok=True)
    (results / "metrics.json").write_text(json.dumps(record, indent=2))
    (results / "README.md").write_text(_report(example, cfg, record, headline, by_size))
    print(f"wrote {results / 'README.md'}, {results / 'metrics.json'}, {figure}")
    return results


# -- scoring -----------------------------------------------------------------------------------
def _covered_tasks(sampler, n_batches: int) -> int:
    """How many distinct test tasks batches ``0..n_batches-1`` hold."""
    seen = set()
    for i in range(n_batches):
        seen.update(batch_at(sampler, i, split="test").info["task"].tolist())
    return len(seen)


def _check_stored_normalisation(model_path: Path, sampler) -> None:
    """The test sampler maps units as the trained model's checkpoint says (same table, same
    training tasks): else the scores would be in the wrong units."""
    stored = read_checkpoint(model_path).get("normalisation")
    if stored != sampler.normalisation:
        raise AssertionError(f"{model_path}: stored normalisation {stored} is not the test's")


class _InOtherUnits:
    """``sampler``'s batches mapped into another model's units: from ``sampler``'s
    normalisation to ``normalisation`` (the other model's, stored in its checkpoint), input
    and output columns alike; masks and task order unchanged."""

    splits_tasks = True

    def __init__(self, sampler, normalisation: dict):
        self.sampler, self.seed, self.batch_size = sampler, sampler.seed, sampler.batch_size
        self.dim_x, self.dim_y = sampler.dim_x, sampler.dim_y
        self.normalisation = normalisation
        self.maps = {}
        for part in ("x", "y"):  # new = (old * scale_old + loc_old - loc_new) / scale_new
            old, new = sampler.normalisation[part], normalisation[part]
            scale = torch.tensor(old["scale"]) / torch.tensor(new["scale"])
            shift = (torch.tensor(old["loc"]) - torch.tensor(new["loc"])) / torch.tensor(
                new["scale"]
            )
            self.maps[part] = (scale.float(), shift.float())

    def _map(self, part: str, v: torch.Tensor) -> torch.Tensor:
        scale, shift = self.maps[part]
        return v * scale + shift

    def sample(self, generator, batch_size=None, split="train") -> Batch:
        b = self.sampler.sample(generator, batch_size, split=split)
        x, y = (lambda v: self._map("x", v)), (lambda v: self._map("y", v))
        return Batch(x(b.xc), y(b.yc), x(b.xt), y(b.yt), b.mask_c, b.info, b.mask_t)


def _transfer(example: Example, out: Path | None, model, sampler, n_batches: int) -> dict:
    """``example.transfer_from``'s trained model zero-shot on this example's test tasks, in
    the data's units, paired over the same tasks and contexts with this example's model and
    the baselines; ``{}`` without a transfer, ``{"not_run": why}`` without that model."""
    if example.transfer_from is None:
        return {}
    path = paths(example.transfer_from, out)[1] / "model.pt"
    if not path.exists():
        why = f"no trained model at {path}: run examples/{example.transfer_from}.py first"
        print(f"transfer: not run ({why})")
        return {"from": example.transfer_from, "not_run": why}
    other = load(path).eval()
    stored = read_checkpoint(path)["normalisation"]
    mapped = _InOtherUnits(sampler, stored)
    shift = math.log(mapped.maps["y"][0].double().prod())  # LL: other units -> this source's
    theirs = per_task(other, mapped, n_batches)
    theirs["ll"] = theirs["ll"] + shift  # + log(scale_new / scale_old): same density, units
    theirs["mse"] = theirs["mse"] / mapped.maps["y"][0].double().numpy() ** 2
    scale_y = np.asarray(sampler.normalisation["y"]["scale"], dtype=np.float64)
    row = summarise(f"{example.transfer_from} (zero-shot)", theirs, scale_y)
    for name, m in [("trained here", model)] + [(b, build_model(b, 1, 1)) for b in BASELINES]:
        base = per_task(m, sampler, n_batches)["ll"]
        row.vs[name] = _mean_se(theirs["ll"] - base)
    print(f"transfer: {row.model}: LL {row.ll:.3f} ± {row.ll_se:.3f}; vs {row.vs}")
    return {"from": example.transfer_from, "checkpoint": str(path), **row.as_dict()}


def _mean_se(values: np.ndarray) -> tuple[float, float]:
    n = len(values)
    se = float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    return float(values.mean()), se


def _validation_curve(metrics_csv: Path) -> list[list[float]]:
    """``[[step, validation LL], ...]`` from the training's ``metrics.csv`` (model units)."""
    import pandas as pd

    frame = pd.read_csv(metrics_csv).dropna(subset=["val_ll"])
    return [[int(s), float(v)] for s, v in zip(frame["step"], frame["val_ll"])]


def _figure(model, sampler, path: Path, n_tasks: int) -> Path:
    """``n_tasks`` held-out test tasks in the data's units: context, targets, the model's and a
    per-task GP's mean ± 2σ."""
    batch = batch_at(sampler, 0, split="test", batch_size=n_tasks)  # the tasks plot_1d_tasks draws
    keys = sampler.task_keys("test")
    n_ctx = batch.mask_c.sum(1) if batch.mask_c is not None else [batch.xc.shape[1]] * n_tasks
    titles = [f"{keys[int(t)]}: {int(n)} context points" for t, n in zip(batch.info["task"], n_ctx)]
    models = {f"{model.name} (trained)": model, "GP fitted to the task": build_model("gp", 1, 1)}
    return plot_1d_tasks(models, sampler, path, n_tasks=n_tasks, oracle=False, titles=titles)


# -- the README --------------------------------------------------------------------------------
def _verdict(row: TaskMetrics, n: int) -> list[str]:
    """One clause per baseline: beaten, not separated, or better, by the paired LL difference
    over ``n`` tasks and 2 standard errors."""
    out = []
    for name, (diff, se) in row.vs.items():
        if diff > 2 * se:
            word = "beats"
        elif diff < -2 * se:
            word = "is beaten by"
        else:
            word = "does not separate from"
        out.append(f"{word} `{name}` ({diff:+.3f} ± {se:.3f} nats per point, paired over {n})")
    return out


def _size_summary(by_size: dict[int, list[TaskMetrics]], unit: str) -> str:
    """Which fixed context sizes the model beats both baselines at (by > 2 s.e.), why not
    where it does not, and its 95 % coverage by context size."""
    won, lost, why = [], [], []
    for k, rows in by_size.items():
        ours, named = rows[0], {r.model: r for r in rows[1:]}
        short = {b: ours.vs[b] for b in ours.vs if not ours.vs[b][0] > 2 * ours.vs[b][1]}
        if not short:
            won.append(str(k))
            continue
        lost.append(f"{k} ({'; '.join(f'{b}: {d:+.3f} ± {e:.3f}' for b, (d, e) in short.items())})")
        gp = named.get("gp")
        if "gp" in short and short["gp"][0] > 0 and gp is not None:
            reason = (
                f"at {k} the difference from `gp` is positive but the GP's LL varies by "
                f"{gp.ll_se * math.sqrt(gp.n_tasks):.3g} nats (sd) between tasks: hyper-parameters "
                f"fitted to {k} point(s) are now and then far too confident (its coverage "
                f"{gp.coverage95:.2f})"
            )
            if ours.rmse[0] < gp.rmse[0]:
                reason += (
                    f", while the model's RMSE is {ours.rmse[0]:.3g} {unit} against the "
                    f"GP's {gp.rmse[0]:.3g}"
                )
            why.append(reason)
    parts = []
    if won:
        parts.append(f"beats both baselines at {', '.join(won)} context points")
    if lost:
        parts.append(f"does not beat both at {', '.join(lost)}")
    text = ("By context size it " + "; ".join(parts) + ".") if parts else ""
    if why:
        joined = "; ".join(why)
        text += f" {joined[0].upper()}{joined[1:]}."
    coverage = ", ".join(f"{rows[0].coverage95:.2f} ({k})" for k, rows in by_size.items())
    if coverage:
        low = min(rows[0].coverage95 for rows in by_size.values()) < 0.9
        text += f" The model's 95 % coverage by context size: {coverage}" + (
            ": its intervals are too narrow when it has seen only a few of a task's points."
            if low
            else "."
        )
    return text


def _transfer_reading(transfer: dict, headline: list[TaskMetrics], unit: str) -> str:
    """The zero-shot model's verdicts, its RMSE beside this example's model's and the GP's,
    and what its coverage says."""
    row = TaskMetrics(**{k: v for k, v in transfer.items() if k not in ("from", "checkpoint")})
    named = {r.model: r for r in headline[1:]}
    rmse = f"{headline[0].rmse[0]:.3g} for the model trained here"
    if "gp" in named:
        rmse += f", {named['gp'].rmse[0]:.3g} for the GP"
    text = (
        f"Zero-shot, `{transfer['from']}`'s model {'; it '.join(_verdict(row, row.n_tasks))}. "
        f"Its RMSE is {row.rmse[0]:.3g} {unit} ({rmse}) and its 95 % coverage {row.coverage95:.2f}"
    )
    if row.coverage95 < 0.8:
        text += (
            ": its intervals, as narrow as its own tasks taught it, are too narrow for these, so "
            "its LL falls below the baselines'; what it learnt does not carry over zero-shot: "
            "train on these tasks, or fine-tune it on them (`train.init_from`)"
        )
    return text + "."


def _report(
    example: Example,
    cfg: ExperimentConfig,
    record: dict,
    headline: list[TaskMetrics],
    by_size: dict[int, list[TaskMetrics]],
) -> str:
    t, n = record["times"], headline[0].n_tasks
    run_dir = Path(cfg.train.out_dir)
    tasks = record["tasks"]
    m = cfg.model
    sizes = ", ".join(f"{k}={m[k]}" for k in ("dim_model", "n_layers", "n_heads") if k in m)
    quick = (
        "\n> **--quick smoke run**: a few training steps and a couple of small test batches; "
        "nothing here is a result.\n"
        if record["quick"]
        else ""
    )
    lines = [
        f"# Worked example: {example.title}",
        quick,
        f"**What**: {example.source} A task is {example.task}. The model (`{m['name']}`) is "
        f"trained on the training tasks and scored on held-out test tasks (whole tasks, never "
        f"seen in training) beside a GP fitted to each task's context alone (`gp`) and the "
        f"context's mean and std (`context-moments`). Metric: log-likelihood per target point "
        f"in the data's units ({example.unit}; higher is better), RMSE ({example.unit}) and "
        f"the share of targets inside the central 95 % interval; mean ± standard error over "
        f"test tasks, and the model's LL less each baseline's, paired over the same tasks and "
        f"contexts.",
        "",
        f"**Command**: `{record['command']}` at commit `{record['commit']}` (writes the table "
        f"from the package's data, trains from `{example.config.relative_to(ROOT)}`, scores, "
        f"plots; nothing to download). Afterwards `tnpx eval {_shown(run_dir)}/model.pt` prints "
        f"the first table again and `tnpx plot {_shown(run_dir)}/model.pt` draws test tasks.",
        "",
        f"**Budget** (a worked example, no paper to match): `{m['name']}` ({sizes}), "
        f"{cfg.train.steps} steps of batch {cfg.data.get('batch_size')} tasks, "
        f"{cfg.optim.name} {cfg.optim.lr:g} with {cfg.schedule.warmup_steps} warm-up steps and "
        f"{cfg.schedule.name} decay, seed {cfg.train.seed}, one run. Tasks: "
        f"{tasks['train']} train, {tasks['val']} validation, {tasks['test']} test (split by "
        f"task, by a hash of its key). Test: {record['scored_tasks']} of the {tasks['test']} "
        f"test tasks, each once, its context a random {cfg.data.get('ctx_fraction')} fraction "
        f"of its points as in training, the rest its targets; then each test task with a fixed "
        f"number of context points. Steps and sizes were set before any test score and not "
        f"tuned on them. Validation LL (model units) during training: "
        f"{_curve_text(record['validation_ll'])}.",
        "",
        f"**Hardware and time**: {record['hardware']}; load average "
        f"{record['load_average_at_start']:.1f} at the start. Training {t['train_s']:.0f} s, "
        f"scoring {t['eval_s']:.0f} s, figure {t['plot_s']:.0f} s; {t['total_s']:.0f} s in all.",
        "",
        f"## Held-out test tasks ({n}), contexts as in training",
        "",
        format_task_table(headline),
        "",
        "## By context size (every test task, exactly k context points)",
        "",
        _size_table(by_size),
        "",
    ]
    transfer = record["transfer"]
    if transfer:
        lines += ["## Transfer: another example's model, zero-shot", "", _transfer_text(transfer)]
        lines.append("")
    clauses = _verdict(headline[0], n)
    reading = [
        f"On the {n} held-out test tasks the trained model {'; it '.join(clauses)}.",
        _size_summary(by_size, example.unit),
    ]
    if transfer and "not_run" not in transfer:
        reading.append(_transfer_reading(transfer, headline, example.unit))
    reading.append(example.about)
    lines += ["## Reading", "", " ".join(r for r in reading if r), ""]
    lines += [
        f"![held-out test tasks]({FIGURE})",
        "",
        f"`{FIGURE}`: the first test batch's tasks (context as in training) in {example.unit}: "
        "the context (red), the rest of the task (grey), the trained model's and the per-task "
        "GP's mean ± 2σ. `metrics.json`: every number above, per-split task counts, the test "
        "tasks' keys, the validation curve and the config.",
        "",
    ]
    return "\n".join(lines)


def _shown(path: Path) -> str:
    """``path`` relative to the repository where it lies inside it."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _curve_text(curve: list[list[float]]) -> str:
    if not curve:
        return "none recorded"
    shown = curve if len(curve) <= 6 else [*curve[:2], *curve[-4:]]
    text = ", ".join(f"{v:.3f} (step {s})" for s, v in shown)
    best = max(curve, key=lambda sv: sv[1])
    return f"{text}; best {best[1]:.3f} at step {best[0]}"


def _size_table(by_size: dict[int, list[TaskMetrics]]) -> str:
    lines = [
        "| context points | tasks | model LL | gp LL | context-moments LL | model − gp "
        "| model − context-moments | model RMSE | gp RMSE |",
        "| ---: | ---: | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for k, rows in by_size.items():
        ours, named = rows[0], {r.model: r for r in rows[1:]}
        gp, moments = named.get("gp"), named.get("context-moments")
        cells = [
            str(k),
            str(ours.n_tasks),
            *(_ll_cell(r) for r in (ours, gp, moments)),
            *(_diff_cell(ours.vs.get(name)) for name in ("gp", "context-moments")),
            f"{ours.rmse[0]:.3g}",
            f"{gp.rmse[0]:.3g}" if gp else "—",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ll_cell(row: TaskMetrics | None) -> str:
    return f"{row.ll:.3f} ± {row.ll_se:.3f}" if row else "—"


def _diff_cell(diff: tuple[float, float] | None) -> str:
    return f"{diff[0]:+.3f} ± {diff[1]:.3f}" if diff else "—"


def _transfer_text(transfer: dict) -> str:
    if "not_run" in transfer:
        return f"Not run: {transfer['not_run']}."
    names = list(transfer["vs"])
    diffs = " | ".join(f"{d:+.3f} ± {s:.3f}" for d, s in transfer["vs"].values())
    rows = [
        "| model | tasks | LL | RMSE | 95% coverage | "
        + " | ".join(f"its LL − {n}" for n in names)
        + " |",
        "| --- | ---: | --- | --- | ---: | " + " | ".join("---" for _ in names) + " |",
        f"| {transfer['model']} | {transfer['n_tasks']} | {transfer['ll']:.3f} ± "
        f"{transfer['ll_se']:.3f} | {transfer['rmse'][0]:.4g} ± {transfer['rmse_se'][0]:.2g} | "
        f"{transfer['coverage95']:.3f} | {diffs} |",
    ]
    return (
        f"`{transfer['from']}`'s trained model, not trained on these tasks, on the same test "
        f"tasks and contexts as the first table (the data's units mapped into its own by the "
        f"normalisation its checkpoint stores); its LL less each other model's (`trained "
        f"here`: this example's model), paired over tasks:\n\n" + "\n".join(rows)
    )
