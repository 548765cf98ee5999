"""The worked examples' README (``../shared/RESULTS.md``'s order): what, command, budget,
hardware, the tables with mean ± s.e. and paired differences, and a reading that says where
the model does not beat a baseline and why. :mod:`examples.runner` computes the numbers; this
module only words them."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from tnpx.config import ExperimentConfig
from tnpx.evaluation import TaskMetrics, format_task_table

if TYPE_CHECKING:  # pragma: no cover
    from examples.runner import Example

ROOT = Path(__file__).resolve().parents[1]
FIGURE = "tasks.png"
# What the figure of a 1D example (examples.runner._figure) shows.
CAPTION_1D = (
    "`{figure}`: the first test batch's tasks (context as in training) in {unit}: the context "
    "(red), the rest of the task (grey), the trained model's and the per-task GP's mean ± 2σ. "
    "`metrics.json`: every number above, per-split task counts, the test tasks' keys, the "
    "validation curve and the config."
)
Rows = list[TaskMetrics]


def readme(
    example: Example,
    cfg: ExperimentConfig,
    record: dict,
    scores: tuple[Rows, dict[int, Rows]],
    other: tuple[Rows, dict[int, Rows]] | None = None,
) -> str:
    """The README of one run: ``record`` as written to ``metrics.json``; ``scores`` the
    headline rows and the rows by context size; ``other`` the same on ``example.other_data``."""
    headline, by_size = scores
    t, n = record["times"], headline[0].n_tasks
    run_dir, m = Path(cfg.train.out_dir), cfg.model
    tasks = record["tasks"]
    sizes = ", ".join(f"{k}={m[k]}" for k in ("dim_model", "n_layers", "n_heads") if k in m)
    quick = (
        "\n> **--quick smoke run**: a few training steps and a couple of small test batches; "
        "nothing here is a result.\n"
        if record["quick"]
        else ""
    )
    reads = "reads the package's file as it comes"
    if example.write_table:
        reads = "writes the table from the package's data"
    plots = "" if example.draw else f" and `tnpx plot {_shown(run_dir)}/model.pt` draws test tasks"
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
        *_control_text(example, record),
        f"**Command**: `{record['command']}` at commit `{record['commit']}` ({reads}, trains "
        f"from `{example.config.relative_to(ROOT)}`, scores, plots; "
        f"nothing to download). Afterwards `tnpx eval {_shown(run_dir)}/model.pt` prints the "
        f"first table again{plots}.",
        "",
        f"**Budget** (a worked example, no paper to match): `{m['name']}` ({sizes}), "
        f"{cfg.train.steps} steps of batch {cfg.data.get('batch_size')} tasks, "
        f"{cfg.optim.name} {cfg.optim.lr:g} with {cfg.schedule.warmup(cfg.train.steps)} warm-up "
        "steps and "
        f"{cfg.schedule.name} decay, seed {cfg.train.seed}, one run. Tasks: "
        f"{tasks['train']:,} train, {tasks['val']:,} validation, {tasks['test']:,} test "
        f"({example.held_out}). Test: {_test_rule(cfg, record, n)}; then the same test tasks "
        f"with a fixed number of context points. Steps and sizes were set before any test "
        f"score and not tuned on them. Validation LL (model units) during training: "
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
    if other is not None:
        lines += _other_data_text(example, *other)
    reading = [
        f"On the {n} held-out test tasks the trained model "
        f"{'; it '.join(_verdict(headline[0], example.unit))}.",
        _size_summary(by_size, example.unit),
    ]
    if transfer and "not_run" not in transfer:
        reading.append(_transfer_reading(transfer, headline, example.unit))
    if other is not None:
        reading += [
            f"On {example.other_data.name} the same model "
            f"{'; it '.join(_verdict(other[0][0], example.unit))}.",
            _size_summary(other[1], example.unit),
        ]
    reading.append(example.about)
    caption = example.caption or CAPTION_1D
    lines += ["## Reading", "", " ".join(r for r in reading if r), ""]
    lines += [f"![held-out test tasks]({FIGURE})", ""]
    lines += [caption.format(figure=FIGURE, unit=example.unit), ""]
    return "\n".join(lines)


def _control_text(example: Example, record: dict) -> list[str]:
    """The control's paragraph: what it is and how it was trained; none without one."""
    control = record.get("control")
    if not control:
        return []
    return [
        f"**Control** (`{control['name']}`): the same config, data, steps and seed with "
        f"`{' '.join(control['overrides'])}`, trained into "
        f"`{_shown(Path(control['out_dir']))}` and scored on the same test tasks and contexts "
        "in its own units (validation LL in its model units: "
        f"{_curve_text(control['validation_ll'])}). {example.control.about} The CRPS (data "
        "units, lower is better) compares every row whatever its likelihood; the LL only "
        "where both are densities.",
        "",
    ]


def _test_rule(cfg: ExperimentConfig, record: dict, n: int) -> str:
    """How the test tasks were drawn: every one once (a list of tasks), or at random."""
    data = cfg.data_options(test=True)
    if "min_ctx_frac" in data:  # one context size per batch (the grid source)
        lo, hi = data["min_ctx_frac"], data["max_ctx_frac"]
        context = f"a random {lo:g} to {hi:g} of its points (one size per batch)"
    else:
        context = f"a random {data.get('ctx_fraction')} fraction of its points"
    scored, n_test = record["scored_tasks"], record["tasks"]["test"]
    if record["task_list"]:
        which = f"{scored} of the {n_test:,} test tasks, each once"
    else:
        which = (
            f"{n} test tasks ({n // cfg.eval.batch_size} batches of {cfg.eval.batch_size}) "
            f"drawn uniformly, with replacement, from the {n_test:,} ({scored} distinct)"
        )
    return f"{which}, each task's context {context} as in training, the rest its targets"


def _other_data_text(example: Example, headline: Rows, by_size: dict[int, Rows]) -> list[str]:
    other = example.other_data
    return [
        f"## The same model on {other.name}",
        "",
        f"{other.about} The model trained above, unchanged, on the same test tasks and "
        f"contexts as the first table, cut from {other.name}; its values mapped into the "
        "model's units with the normalisation its checkpoint stores (fitted on the training "
        "split above), the baselines fitted to each task's context as before.",
        "",
        format_task_table(headline),
        "",
        f"By context size ({other.name}):",
        "",
        _size_table(by_size),
        "",
    ]


def _comparisons(row: TaskMetrics) -> dict[str, tuple[float, float, str]]:
    """Other row -> (difference, s.e., metric), paired over tasks, positive where ``row`` is
    better: the LL difference where the LLs compare (``vs``), else the first output's CRPS
    difference (``crps_vs``: theirs less ours)."""
    out = {name: (d, se, "LL") for name, (d, se) in row.vs.items()}
    for name, per_output in row.crps_vs.items():
        if name not in out:
            out[name] = (*per_output[0], "CRPS")
    return out


def _verdict(row: TaskMetrics, unit: str = "") -> list[str]:
    """One clause per other row: beaten, not separated, or better, by the paired LL
    difference over the row's tasks and 2 standard errors (the CRPS where no LL compares)."""
    out = []
    for name, (diff, se, metric) in _comparisons(row).items():
        if diff > 2 * se:
            word = "beats"
        elif diff < -2 * se:
            word = "is beaten by"
        else:
            word = "does not separate from"
        if metric == "LL":
            by = f"{diff:+.3f} ± {se:.3f} nats per point"
        else:
            by = f"its CRPS less theirs {-diff:+.3g} ± {se:.2g}" + (f" {unit}" if unit else "")
        out.append(f"{word} `{name}` ({by}, paired over {row.n_tasks})")
    return out


def _size_summary(by_size: dict[int, list[TaskMetrics]], unit: str) -> str:
    """Which fixed context sizes the model beats every other row at (by > 2 s.e.), why not
    where it does not, and its 95 % coverage by context size."""
    won, lost, why = [], [], []
    for k, rows in by_size.items():
        ours, named = rows[0], {r.model: r for r in rows[1:]}
        compared = _comparisons(ours)
        short = {b: c for b, c in compared.items() if not c[0] > 2 * c[1]}
        if not short:
            won.append(str(k))
            continue
        lost.append(
            f"{k} ({'; '.join(f'{b}: {m} {d:+.3g} ± {e:.2g}' for b, (d, e, m) in short.items())})"
        )
        gp = named.get("gp")
        if "gp" in short and short["gp"][2] == "LL" and short["gp"][0] > 0 and gp is not None:
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
        parts.append(f"beats every other row at {', '.join(won)} context points")
    if lost:
        parts.append(f"does not beat every other row at {', '.join(lost)}")
    text = ("By context size it " + "; ".join(parts) + ".") if parts else ""
    if why:
        joined = "; ".join(why)
        text += f" {joined[0].upper()}{joined[1:]}."
    coverage = ", ".join(f"{rows[0].coverage95:.2f} ({k})" for k, rows in by_size.items())
    if coverage:
        shares = [rows[0].coverage95 for rows in by_size.values()]
        text += f" The model's 95 % coverage by context size: {coverage}"
        if max(shares) < 0.9:
            text += ": its intervals are too narrow at every context size."
        elif min(shares) < 0.9:
            text += ": its intervals are too narrow when it has seen only a few of a task's points."
        else:
            text += "."
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
        f"Zero-shot, `{transfer['from']}`'s model {'; it '.join(_verdict(row))}. "
        f"Its RMSE is {row.rmse[0]:.3g} {unit} ({rmse}) and its 95 % coverage {row.coverage95:.2f}"
    )
    if row.coverage95 < 0.8:
        text += (
            ": its intervals, as narrow as its own tasks taught it, are too narrow for these, so "
            "its LL falls below the baselines'; what it learnt does not carry over zero-shot: "
            "train on these tasks, or fine-tune it on them (`train.init_from`)"
        )
    return text + "."


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
    first = next(iter(by_size.values()), [None])[0]
    if first is not None and (not first.ll_is_density or set(first.crps_vs) - set(first.vs)):
        return _crps_size_table(by_size)
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


def _crps_size_table(by_size: dict[int, list[TaskMetrics]]) -> str:
    """By context size: each row's CRPS (first output), the others' less the model's paired
    over tasks (positive: the model's is lower), and each row's 95 % coverage."""
    rows0 = next(iter(by_size.values()))
    names = [r.model for r in rows0]
    lines = [
        "| context points | tasks | "
        + " | ".join(f"{n} CRPS" for n in names)
        + " | "
        + " | ".join(f"{n} − model" for n in names[1:])
        + " | "
        + " | ".join(f"{n} coverage" for n in names)
        + " |",
        "| ---: | ---: |" + " --- |" * (3 * len(names) - 1),
    ]
    for k, rows in by_size.items():
        ours = rows[0]
        cells = [str(k), str(ours.n_tasks)]
        cells += [f"{r.crps[0]:.4g} ± {r.crps_se[0]:.2g}" for r in rows]
        cells += [_diff_cell(ours.crps_vs.get(r.model, [None])[0]) for r in rows[1:]]
        cells += [f"{r.coverage95:.3f}" for r in rows]
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
