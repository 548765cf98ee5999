"""The reports of the 2D zoo model's experiments, in RESULTS.md's order:
``experiments/zero_shot/fields.py`` (the markdown file, and the map of one window: its context
on the truth, each model's mean and the fitted GP's) and ``experiments/zero_shot/shifts.py``
(:func:`shift_report`)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from experiments.kit import paired_mean_se, pm_units
from experiments.zero_shot.series_report import GP, named_models
from tnpx.data.synthetic import GP2DCompositeConfig
from tnpx.provenance import command_line, git_commit, hardware


def run_header() -> dict:
    """What a results file states of its run, taken at the start (RESULTS.md): the command,
    the commit, the hardware and the load average."""
    return {
        "command": command_line(),
        "commit": git_commit(),
        "hardware": hardware(),
        "load_average": os.getloadavg()[0],
    }


def _rows(run: dict, head: list[str], cells) -> list[str]:
    """A markdown table: ``head``, then per field and context size ``cells(summary)``."""
    rows = ["| field, N | " + " | ".join(head) + " |", "|" + " --- |" * (len(head) + 1)]
    for key, result in run["results"].items():
        field, n = key.split("/")
        rows.append(f"| {field}, {n} | " + " | ".join(cells(result["summary"])) + " |")
    return rows


def paired_gap(windows: list[dict], model: str, metric: str) -> tuple[float, float]:
    """Mean ± s.e. over the windows of ``model``'s metric less the fitted GP's (same windows)."""
    scores = [w["scores"] for w in windows]
    return paired_mean_se([s[model][metric] for s in scores], [s[GP][metric] for s in scores])


def _verdicts(run: dict, models: list[str]) -> list[str]:
    """Per model: the (field, N) cells where its NLL is level with the fitted GP's or better
    (paired difference within two standard errors of 0), and its median speed-up."""
    parts = []
    for model in models:
        level, ratios = [], []
        for key, result in run["results"].items():
            diff, se = paired_gap(result["windows"], model, "nll")
            if diff <= 2 * se:
                level.append(key.replace("/", ", N = "))
            s = result["summary"]
            ratios.append(s[GP]["seconds"] / s[model]["seconds"])
        parts.append(
            f"`{model}`: NLL level with the fitted GP or better in {len(level)} of "
            f"{len(run['results'])} cells ({'; '.join(level) or 'none'}); "
            f"{np.median(ratios):.0f}x faster than fitting it (median)."
        )
    return parts


def write_report(run: dict, labels: list[str], figure: str, path: Path) -> str:
    """Write the markdown report to ``path`` and return it."""
    models = [lab for lab in labels if lab != GP]
    named = named_models(run)
    fields = "; ".join(
        f"{n} ({d['description']}; {d['grid']} grid, {d['extent_km'][0]} x {d['extent_km'][1]} "
        f"km, windows of {d['window_km']} km; {d['y_range'][0]:g} to {d['y_range'][1]:g} "
        f"{d['y_units']}; {d['source']})"
        for n, d in run["fields"].items()
    )
    quality = _rows(
        run,
        [f"{lab} RMSE (m)" for lab in labels] + [f"{lab} NLL" for lab in labels],
        lambda s: [pm_units(s[lab][m]) for m in ("rmse", "nll") for lab in labels],
    )
    calibration = _rows(
        run,
        [f"{lab} cov." for lab in labels] + [f"{lab} >5σ %" for lab in labels],
        lambda s: (
            [f"{s[lab]['coverage95']:.2f}" for lab in labels]
            + [f"{100 * s[lab]['beyond_5sd']:.1f}" for lab in labels]
        ),
    )
    latency = _rows(
        run,
        [f"{lab} ms" for lab in labels] + [f"GP / {m}" for m in models],
        lambda s: (
            [f"{1000 * s[lab]['seconds']:.1f}" for lab in labels]
            + [f"{s[GP]['seconds'] / s[m]['seconds']:.0f}x" for m in models]
        ),
    )
    sizes = ", ".join(str(n) for n in run["context_sizes"])
    text = f"""# Pretrained 2D models zero-shot on measured fields, against a GP fitted per window

**What**: the pretrained 2D models ({named}) interpolating measured elevation fields they never
saw, through `tnpx.predict` with two input columns (km east and north; each column's context
range mapped onto the training domain, outputs standardised by the context), against a GPyTorch
exact GP fitted to the same context (scaled ARD RBF + scaled ARD Matérn-ν with Gaussian noise,
ν ∈ {{1/2, 3/2}} and the rough lengthscale's start chosen over 4 L-BFGS starts by the marginal
likelihood: `experiments/zero_shot/fields.py`). Per field, {run["n_windows"]} random square
windows; per window {run["n_targets"]} random grid points as targets and N ∈ {{{sizes}}} other
random points as the context (nested, same targets for every N). Metrics per target point in
the field's units: RMSE of the predictive mean (m) and Gaussian NLL of the observations (both
lower is better), mean ± s.e. over the windows; 95 % coverage and the share beyond 5σ pooled
over them; wall time per prediction (median). Fields: {fields}. Coordinates: equirectangular
km from degrees at each field's mean latitude (`experiments/zero_shot/field_data.py`).

**Command**: `{run["command"]}`, commit `{run["commit"]}` (recorded at start).

**Protocol or budget**: not a paper experiment (no paper number applies); zero-shot: the models
are used as shipped, nothing is fitted to these fields except the GP baseline.

**Hardware and time**: {run["hardware"]}; {run["wall_s"] / 60:.1f} min for the whole table;
load average {run["load_average"]:.1f} at the start (other processes slow both columns alike;
compare the ratio). Timings: one torch thread; a model's time is the median of 5
`tnpx.predict` calls per window (DataFrames in and out, unit maps included; the checkpoint
loaded once beforehand), the GP's is one fit (all starts) plus its prediction per window; both
are medians over the windows.

## RMSE and NLL

{chr(10).join(quality)}

## Calibration: 95 % coverage and targets beyond 5σ

{chr(10).join(calibration)}

## Wall time per prediction

{chr(10).join(latency)}

`{figure}`: one window: the truth with the context marked, each model's mean and the fitted GP's
(one colour scale, in metres).

**Reading** ("level": the paired difference over the same windows, model − GP, is at most two
standard errors above 0): {" ".join(_verdicts(run, models))}
"""
    path.write_text(text)
    return text


def plot_window(example: tuple, models: list, path: Path) -> Path:
    """One row of maps of a window on its grid (thinned): the truth with the context marked,
    each model's mean and the fitted GP's, on one colour scale. ``example``: (field, window,
    context indices into the field, the GP fitted to that context)."""
    from tnpx.extras import pyplot

    plt = pyplot("the 2D real-field report")
    field, window, ctx, fitted = example
    shown, shape = window.grid(field.grid_shape[1])
    xc, yc, grid = field.x[ctx], field.y[ctx], field.x[shown]
    maps = {f"truth, {len(ctx)} context points": field.y[shown]}
    maps |= {f"{m.label} mean": m.predict(xc, yc, grid)[0] for m in models}
    maps[f"{GP} mean"] = fitted.predict(grid)[0]
    east, north = grid[:, 0].reshape(shape), grid[:, 1].reshape(shape)
    low, high = np.percentile(field.y[shown], [1, 99])
    fig, axes = plt.subplots(
        1, len(maps), figsize=(3.6 * len(maps) + 1, 3.6), squeeze=False, layout="constrained"
    )
    for ax, (title, values) in zip(axes[0], maps.items()):
        image = ax.pcolormesh(
            east, north, values.reshape(shape), vmin=low, vmax=high, cmap="terrain", shading="auto"
        )
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("km east", fontsize=8)
        ax.set_aspect("equal")
        ax.tick_params(labelsize=7)
    axes[0, 0].scatter(xc[:, 0], xc[:, 1], s=8, c="black", label="context")
    axes[0, 0].set_ylabel("km north", fontsize=8)
    fig.colorbar(image, ax=axes[0].tolist(), label=f"{field.name} ({field.y_units})")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _input_box(data: dict, condition: dict) -> str:
    """The context box a condition puts the inputs on (``data``: the prior's config)."""
    low, high = data.get("box", GP2DCompositeConfig().box)
    scale = data.get("scale", 1.0) * condition["scale"]
    shift = data.get("shift", 0.0) + condition["shift"]
    return f"[{scale * low + shift:.2f}, {scale * high + shift:.2f}]²"


def _shift_table(result: dict) -> list[str]:
    """One row per condition: model LL, its change from unshifted, the oracle's, the gap."""
    rows = [
        "| condition | inputs | LL | change from unshifted | oracle LL | oracle's change "
        "| gap to oracle | 95 % cov. |",
        "|" + " --- |" * 8,
    ]
    for name, c in result["conditions"].items():
        cells = [_input_box(result["data"], c)]
        cells += [pm_units(c[k]) for k in ("ll", "change", "oracle_ll", "oracle_change", "gap")]
        rows.append(f"| {name} | " + " | ".join(cells) + f" | {c['coverage95']:.3f} |")
    return rows


def _shift_reading(label: str, result: dict) -> str:
    """Each shifted condition's change in LL and gap to the oracle, beside the unshifted gap."""
    conditions = list(result["conditions"].values())
    base = conditions[0]["gap"]
    parts = [
        f"{c['name']}: LL {c['change'][0]:+.3f} ± {c['change'][1]:.3f} from unshifted, gap to "
        f"the oracle {pm_units(c['gap'])} (unshifted {pm_units(base)})"
        for c in conditions[1:]
    ]
    paired = max(c["max_output_difference"] for c in conditions)
    return (
        f"`{label}`: " + "; ".join(parts) + f". Same tasks in every condition: the largest "
        f"difference of a target output from the unshifted one is {paired:.1e}."
    )


def shift_report(run: dict, path: Path) -> str:
    """Write the markdown report of ``experiments/zero_shot/shifts.py`` to ``path``."""
    tables, readings = [], []
    for label, result in run["results"].items():
        tables += [f"### `{label}` (`{result['spec']}`), {result['n_tasks']} tasks", ""]
        tables += _shift_table(result) + [""]
        readings.append(_shift_reading(label, result))
    seconds = [c["seconds"] for r in run["results"].values() for c in r["conditions"].values()]
    text = f"""# Pretrained 2D models under translation and density shifts of their prior

**What**: BSA-TNP's shifts on each model's own prior (`gp2d-composite`, the data section of the
config its checkpoint records): the held-out test tasks (seed `eval.seed`, split `test`) scored
unshifted, with every input translated on both axes, and with the points' density changed
(the same functions on a domain 1/√F as wide, lengthscales alike). LL per target point (higher
is better), mean ± s.e. over the tasks; the change from unshifted and the gap to the GP oracle
(the exact posterior under each task's kernel) are paired over the same tasks. The model sees
each batch's inputs as they are (no `tnpx.predict` scaling, which would undo the shift).

**Command**: `{run["command"]}`, commit `{run["commit"]}` (recorded at start).

**Protocol or budget**: not a paper experiment (no paper number applies); the shifts follow
BSA-TNP's suite (`experiments/zero_shot/shifts.py` says how each was chosen).

**Hardware and time**: {run["hardware"]}; {run["wall_s"] / 60:.1f} min in all,
{np.median(seconds):.0f} s per condition (median); load average {run["load_average"]:.1f} at
the start.

## LL per condition

{chr(10).join(tables)}
**Reading**: {" ".join(readings)}
"""
    path.write_text(text)
    return text
