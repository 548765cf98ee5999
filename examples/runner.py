"""The worked examples' shared runner: data -> training -> held-out scores -> results folder.

An :class:`Example` says where its data come from (a function writing a long table from a
package's data, or the path of a file a package ships, read as it comes) and what its config
is (``configs/examples/<name>.yaml``). :func:`run`:

1. writes the table as CSV under the run folder (``runs/examples/<name>/``, ignored by git),
   or takes the file's path;
2. trains from the config (:func:`tnpx.training.loop.fit`), ``data.path`` and ``train.out_dir`` set;
3. scores the model on the held-out test tasks in the data's units beside a GP fitted per task
   and the context's moments (:func:`tnpx.evaluation.user_tasks.evaluate_tasks`), with the LL
   differences paired over tasks: once with the training's random context sizes (the config's
   ``eval`` section: a source with a list of tasks, a table, must hold each test task once in
   it; a grid's windows are drawn at random), once per fixed context size on the same tasks;
4. optionally scores another example's trained model zero-shot on these test tasks (transfer),
   and this model on another file of the same layout (``other_data``), the same tasks cut from
   it, mapped with the model's stored normalisation;
5. draws held-out test tasks (default :func:`tnpx.plot.plot_1d_tasks`: the model and the
   per-task GP; an example may draw its own);
6. writes ``README.md`` (:mod:`examples.report`), ``metrics.json`` and the figure under
   ``results/examples/<name>/``.

``--quick`` runs every step in seconds into ``--out`` (a few training steps, two small test
batches, one context size): what ``tests/examples/test_examples.py`` and
``tests/examples/test_example_iris.py`` run so the examples cannot rot.
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
from functools import partial
from pathlib import Path

import numpy as np
import torch

from examples.report import FIGURE, ROOT, readme
from tnpx.batch import Batch
from tnpx.checkpoint import load, read_checkpoint
from tnpx.config import ExperimentConfig, config_to_yaml, load_config
from tnpx.data import SAMPLERS, TaskSampler, batch_at
from tnpx.evaluation import (
    BASELINES,
    TaskMetrics,
    build_test_sampler,
    evaluate_tasks,
    format_task_table,
    per_task,
    summarise,
)
from tnpx.models import NeuralProcess, build_model
from tnpx.plot import plot_1d_tasks
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.training import fit

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
Scores = tuple[list[TaskMetrics], dict[int, list[TaskMetrics]]]  # headline, by context size


def table_context(cfg: ExperimentConfig, k: int) -> dict:
    """A table's data options giving every task exactly ``k`` context points (fraction 1,
    capped at ``k``)."""
    return {"ctx_fraction": [1.0, 1.0], "max_ctx": k}


@dataclass
class OtherData:
    """Another file of the same layout (names, coordinates) that the trained model is scored
    on, unchanged: ``name`` as printed, ``path()`` the file, ``about`` how it differs."""

    name: str
    path: Callable[[], Path]
    about: str = ""


@dataclass
class Control:
    """A second model trained on the same data with ``overrides`` (a Gaussian head beside a
    family's: ``("model.likelihood=heteroscedastic",)``), scored on the same test tasks and
    contexts in its own units, as the row ``name``."""

    name: str
    overrides: tuple[str, ...]
    about: str = ""


@dataclass
class Example:
    """One worked example.

    Attributes:
        name: ``runs/examples/<name>/``, ``results/examples/<name>/``.
        config_name: ``configs/examples/<config_name>.yaml`` (default: ``name``).
        script: ``examples/<script>.py`` (default: ``name`` with underscores).
        title: the README's heading.
        source: where the data come from (package, dataset, what was measured, units).
        task: what one task is, in words ("a day: 24 hourly readings").
        unit: the output's unit as printed ("°F").
        context_sizes: the fixed context sizes of the second table.
        write_table: writes the long table (CSV) to the path given; or
        data_file: the path of the data as a package ships it (``data.path``).
        fixed_context: ``(cfg, k)`` -> the data options giving every task ``k`` context points.
        held_out: how the splits hold tasks out, in words.
        about: what the reading should know about the data, whatever the numbers.
        transfer_from: another example whose trained model is also scored zero-shot here.
        other_data: another file the trained model is also scored on.
        control: a second model trained on the same data and scored beside this one.
        draw: ``(model, sampler, path, n_tasks)`` -> the figure written (default: 1D tasks);
            with a control, also ``control=(its model, its test sampler)``.
        caption: the figure's caption (``{figure}``, ``{unit}`` filled in; default: 1D's).
    """

    name: str
    title: str
    source: str
    task: str
    unit: str
    context_sizes: tuple[int, ...]
    write_table: Callable[[Path], None] | None = None
    data_file: Callable[[], Path] | None = None
    fixed_context: Callable[[ExperimentConfig, int], dict] = table_context
    held_out: str = "split by task, by a hash of its key"
    about: str = ""
    transfer_from: str | None = None
    other_data: OtherData | None = None
    control: Control | None = None
    draw: Callable[[NeuralProcess, TaskSampler, Path, int], Path] | None = None
    caption: str | None = None
    config_name: str = ""
    script: str = ""

    def __post_init__(self):
        if (self.write_table is None) == (self.data_file is None):
            raise ValueError(f"example {self.name}: give write_table or data_file (one)")

    @property
    def config(self) -> Path:
        return ROOT / "configs" / "examples" / f"{self.config_name or self.name}.yaml"

    def data_path(self, run_dir: Path) -> Path:
        """``data.path``: the table written under ``run_dir``, or the package's file."""
        if self.data_file is not None:
            return Path(self.data_file())
        table = run_dir / "table.csv"
        self.write_table(table)
        return table


def main(example: Example, argv: list[str] | None = None) -> Path:
    """The command line of one example; returns its results folder."""
    parser = argparse.ArgumentParser(
        prog=f"python examples/{example.script or example.name.replace('-', '_')}.py",
        description=f"Worked example: {example.title}. Trains from "
        f"{example.config.relative_to(ROOT)}, scores held-out test tasks beside "
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
    commit = git_commit()  # the code that trains and scores, not what HEAD is when it ends
    results, run_dir = paths(example.name, out)
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg = load_config(
        example.config,
        [
            f"data.path={example.data_path(run_dir)}",
            f"train.out_dir={run_dir}",
            *(QUICK_OVERRIDES if quick else []),
            *overrides,
        ],
    )
    print(f"== {example.title}: training {cfg.model['name']} for {cfg.train.steps} steps ==")
    t0 = time.perf_counter()
    model = fit(cfg).model.eval()
    control = _train_control(example, cfg, run_dir, quick, overrides)
    train_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    n_batches = cfg.eval.n_batches
    sampler = build_test_sampler(cfg)
    task_list = hasattr(sampler, "task_keys")  # a table's tasks; a grid's windows are drawn
    counts = {split: _count_tasks(sampler, split) for split in ("train", "val", "test")}
    drawn = _drawn_tasks(sampler, n_batches)
    covered = len(set(drawn))
    if task_list and not quick and covered != counts["test"]:
        raise ValueError(
            f"{example.config}: eval ({n_batches} batch(es) of {cfg.eval.batch_size}) "
            f"covers {covered} of the {counts['test']} test tasks; set eval.batch_size: "
            f"{counts['test']}"
        )
    stored = _check_stored_normalisation(run_dir / "model.pt", sampler)
    sizes = example.context_sizes[:1] if quick else example.context_sizes
    fixed = partial(example.fixed_context, cfg)
    print(f"== scoring on {len(drawn)} test tasks ({covered} distinct of {counts['test']}) ==")
    scores = _score(
        model, partial(build_test_sampler, cfg), fixed, sizes, n_batches, drawn, control
    )
    transfer = _transfer(example, out, model, sampler, n_batches)
    other = None
    if example.other_data is not None:
        path = example.other_data.path()
        print(f"== the same model on {example.other_data.name} ({path}) ==")
        make = partial(_test_sampler, cfg, stored, path=str(path))
        other = _score(model, make, fixed, sizes, n_batches, drawn)
    eval_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    draw = example.draw or _figure
    extra = {} if control is None else {"control": (control[1], control[2]())}
    figure = draw(model, sampler, results / FIGURE, 2 if quick else 3, **extra)
    plot_s = time.perf_counter() - t0
    times = {"train_s": train_s, "eval_s": eval_s, "plot_s": plot_s}
    times["total_s"] = time.perf_counter() - start
    record = {
        "example": example.name,
        "command": command or command_line(),
        "commit": commit,
        "hardware": hardware(),
        "load_average_at_start": load_avg,
        "quick": quick,
        "config": config_to_yaml(cfg),
        "tasks": counts,
        "task_list": task_list,
        # a table's test tasks (all scored); a grid's scored windows, in batch order
        "test_tasks": [str(k) for k in sampler.task_keys("test")] if task_list else drawn,
        "scored_tasks": covered,
        "validation_ll": _validation_curve(run_dir / "metrics.csv"),
        "times": times,
        **_as_dicts(scores),
        "transfer": transfer,
    }
    if control is not None:
        record["control"] = {
            "name": control[0],
            "overrides": list(example.control.overrides),
            "out_dir": str(run_dir / "control"),
            "validation_ll": _validation_curve(run_dir / "control" / "metrics.csv"),
        }
    if other is not None:
        record["other_data"] = {"name": example.other_data.name, "path": str(path)}
        record["other_data"].update(_as_dicts(other))
    results.mkdir(parents=True, exist_ok=True)
    (results / "metrics.json").write_text(json.dumps(record, indent=2))
    (results / "README.md").write_text(readme(example, cfg, record, scores, other))
    print(f"wrote {results / 'README.md'}, {results / 'metrics.json'}, {figure}")
    return results


# -- scoring -----------------------------------------------------------------------------------
def _score(
    model: NeuralProcess,
    make: Callable[..., TaskSampler],
    fixed: Callable[[int], dict],
    sizes: tuple[int, ...],
    n_batches: int,
    drawn: list[str],
    control: tuple[str, NeuralProcess, Callable[..., TaskSampler]] | None = None,
) -> Scores:
    """``model`` and the baselines on the test batches of ``make()``, then of ``make(**fixed(k))``
    (every task ``k`` context points) for each of ``sizes``; each sampler's batches must hold
    the tasks ``drawn`` (:func:`_drawn_tasks`), so all rows pair over the same tasks. A
    ``control`` (name, model, its sampler factory) is scored beside on its own sampler's
    batches, which must hold the same tasks and contexts."""
    rows = {}
    for k in (None, *sizes):
        sampler = make() if k is None else make(**fixed(k))
        if _drawn_tasks(sampler, n_batches) != drawn:
            raise AssertionError(f"the test tasks changed (context size {k or 'as in training'})")
        against = None
        if control is not None:
            name, other, make_other = control
            theirs = make_other() if k is None else make_other(**fixed(k))
            _check_same_contexts(sampler, theirs, n_batches)
            against = {name: (other, theirs)}
        rows[k] = evaluate_tasks(model, sampler, n_batches, against=against)
        print(f"-- context: {k or 'as in training'} --\n{format_task_table(rows[k])}")
    headline = rows.pop(None)
    return headline, rows


def _train_control(
    example: Example, cfg: ExperimentConfig, run_dir: Path, quick: bool, overrides: list[str]
) -> tuple[str, NeuralProcess, Callable[..., TaskSampler]] | None:
    """The example's control trained into ``run_dir/control`` (the example's config, the same
    data, steps and seed, then the control's overrides): (its row name, the model, its test
    sampler factory); None without a control."""
    if example.control is None:
        return None
    control_cfg = load_config(
        example.config,
        [
            f"data.path={cfg.data['path']}",
            f"train.out_dir={run_dir / 'control'}",
            *(QUICK_OVERRIDES if quick else []),
            *overrides,
            *example.control.overrides,
        ],
    )
    print(f"== the control, {example.control.name}: {' '.join(example.control.overrides)} ==")
    model = fit(control_cfg).model.eval()
    return example.control.name, model, partial(build_test_sampler, control_cfg)


def _check_same_contexts(ours: TaskSampler, theirs: TaskSampler, n_batches: int) -> None:
    """Both samplers' test batches hold the same tasks, context points and targets: the same
    masks and inputs (the input maps do not depend on the likelihood), whatever each does to
    the outputs."""
    for i in range(n_batches):
        a, b = (batch_at(s, i, split="test") for s in (ours, theirs))
        same = a.info.get("task") is None or torch.equal(a.info["task"], b.info["task"])
        for u, v in ((a.xc, b.xc), (a.xt, b.xt), (a.mask_c, b.mask_c), (a.mask_t, b.mask_t)):
            same = same and (u is None) == (v is None) and (u is None or torch.equal(u, v))
        if not same:
            raise AssertionError(f"the control's test batch {i} is not the model's tasks")


def _as_dicts(scores: Scores) -> dict:
    headline, by_size = scores
    return {
        "headline": [r.as_dict() for r in headline],
        "by_context_size": {str(k): [r.as_dict() for r in rows] for k, rows in by_size.items()},
    }


def _test_sampler(cfg: ExperimentConfig, normalisation: dict, **overrides) -> TaskSampler:
    """:func:`build_test_sampler`'s sampler mapping units with ``normalisation`` (a trained
    model's) instead of fitting its own: for a source that takes fixed maps (``grid``)."""
    cls, config_cls = SAMPLERS[cfg.data["name"]]
    options = config_cls(**{**cfg.data_options(test=True), **overrides})
    return cls(options, cfg.eval.batch_size, cfg.eval.seed, normalisation=normalisation)


def _count_tasks(sampler, split: str) -> int:
    """How many tasks ``split`` holds: a table's tasks, a grid's windows."""
    if hasattr(sampler, "task_keys"):
        return len(sampler.task_keys(split))
    return len(sampler.windows(split))


def _drawn_tasks(sampler, n_batches: int) -> list[str]:
    """The test tasks of batches ``0..n_batches-1`` in order: a table's task keys, or a grid
    window's first grid point (its input coordinates, ``info["origin"]``)."""
    drawn = []
    for i in range(n_batches):
        info = batch_at(sampler, i, split="test").info
        if "task" in info:
            keys = sampler.task_keys("test")
            drawn += [str(keys[int(t)]) for t in info["task"]]
        else:
            drawn += [",".join(f"{v:g}" for v in origin) for origin in info["origin"].tolist()]
    return drawn


def _covered_tasks(sampler, n_batches: int) -> int:
    """How many distinct test tasks batches ``0..n_batches-1`` hold."""
    return len(set(_drawn_tasks(sampler, n_batches)))


def _check_stored_normalisation(model_path: Path, sampler) -> dict:
    """The test sampler maps units as the trained model's checkpoint says (same data, same
    training tasks): else the scores would be in the wrong units. Returns the stored maps."""
    stored = read_checkpoint(model_path).get("normalisation")
    if _maps(stored) != _maps(sampler.normalisation):
        raise AssertionError(f"{model_path}: stored normalisation {stored} is not the test's")
    return stored


def _maps(normalisation: dict | None) -> dict | None:
    """The affine maps of a stored normalisation (columns, loc, scale per side), without what
    training records beside them (the training range, units, measured limits)."""
    if normalisation is None:
        return None
    keys = ("columns", "loc", "scale")
    return {side: {k: part.get(k) for k in keys} for side, part in normalisation.items()}


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
