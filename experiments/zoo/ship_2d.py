"""What a 2D zoo model's card adds when :func:`experiments.zoo.ship.ship` ships a finished
``gp2d-composite`` long run with ``dim=2``: the prior in words, its shifts, its measured fields.

The card has the fields every shipped card has (:func:`experiments.zoo.ship.card_fields`:
size, steps, times, provenance, ``finished``; ``check``, which tests/zoo/test_zoo.py repeats),
``dim_x: 2``, and:

- ``eval``: LL per target point on held-out tasks of its own prior (test split,
  ``eval.seed``, ``eval.n_batches``) beside the GP oracle's (the exact posterior under each
  task's kernel), the gap paired over the tasks (the key every card's own prior scores have);
- ``shifts``: BSA-TNP's shifts of that prior (:mod:`experiments.zero_shot.shifts`, its
  defaults): unshifted, translated, density x2 and x0.5, model and oracle LL per condition;
- ``safe_range``: the 1D cards' entry (:func:`experiments.zoo.safe_range.measure`) on
  2D tasks with targets out to 3 context widths on both axes
  (:func:`tnpx.evaluation.extrapolation.profile_targets`); ``tnpx.predict`` warns past it and
  refuses past its hard limit as for a 1D model (distance: the largest over input columns);
- ``real_fields``: when ``results/pretrained/real-fields-2d*.json`` scored the model by its zoo
  name, its summary per field and context size beside the fitted GP.

    python -m experiments.zoo.train --ship gp2d-te-tnp-rope      # the finished long run
    python -m experiments.zero_shot.fields --models gp2d-te-tnp-rope
    python -m experiments.zoo.train --ship gp2d-te-tnp-rope      # again: with the field rows
"""

from __future__ import annotations

from pathlib import Path

from experiments.kit import pm_key
from experiments.zoo.scored import scored_summary
from tnpx.config import ExperimentConfig, load_config
from tnpx.data.synthetic import GP2DCompositeConfig
from tnpx.evaluation import PRIOR_2D as PRIOR


def is_2d(folder: Path, config: str | None = None) -> bool:
    """Whether the run at ``folder`` (trained from ``config``, default its copy) trains on the
    2D prior; False when neither file exists."""
    path = Path(config) if config else folder / "config.yaml"
    return path.is_file() and load_config(path).data.get("name") == PRIOR


def trained_on(cfg: ExperimentConfig) -> str:
    """The 2D training prior in words (:mod:`tnpx.data.synthetic.gp2d_composite`)."""
    c = GP2DCompositeConfig(**cfg.data_options())
    p = c.component_probs
    return (
        f"2D GPs: per task a sum of a smooth RBF (long lengthscale log-U{c.smooth_lengthscale}) "
        f"and a rough {' / '.join(c.rough_kernels)} (long lengthscale "
        f"log-U{c.rough_lengthscale}), present with probability {p[0]:g} / {p[1]:g}, each "
        f"anisotropic (short lengthscale = long / log-U{c.anisotropy}) and rotated (direction "
        f"U[0, pi)), weights log-U{c.component_weight}, output std log-U{c.output_scale_range}, "
        f"noise std log-U{c.noise_range} times it; {c.min_ctx}–{c.max_ctx} context points on "
        f"{c.box}², {c.n_tgt} targets on {c.tgt_box}²"
        + (
            f"; {c.context_scaling:g} of the tasks mapped as tnpx.predict maps a user's table"
            if c.context_scaling
            else ""
        )
    )


def shift_entry(source: Path, tasks: int | None = None) -> dict:
    """A card's ``shifts``: :func:`experiments.zero_shot.shifts.run_model` on its default
    conditions and ``tasks`` (default its default), each row without its per-task lists."""
    # imported here: the harness needs the lab's extras (pandas, GPyTorch), zoo.md does not
    from experiments.zero_shot import shifts

    plan = shifts.conditions(shifts.SHIFT, list(shifts.DENSITIES))
    run = shifts.run_model(str(source), plan, tasks or shifts.TASKS)
    rows = {
        name: {k: v for k, v in row.items() if k != "tasks"}
        for name, row in run["conditions"].items()
    }
    return {"n_tasks": run["n_tasks"], "eval_seed": run["eval_seed"], "conditions": rows}


def real_fields_summary(name: str, results: Path) -> dict | None:
    """Per field and context size, zoo model ``name``'s RMSE / NLL (mean, s.e.), coverage and
    seconds and the fitted GP's, from the last by name of ``results/real-fields-2d*.json`` that
    scored ``name`` (:mod:`experiments.zero_shot.fields`), or None."""
    return scored_summary(name, results, "real-fields-2d", "n_windows")


def headline(card: dict) -> str:
    """One line of a shipped 2D card's scores: the gap to the oracle and each shift's LL."""
    e = card["eval"]
    conditions = card["shifts"]["conditions"].values()
    moved = ", ".join(f"{c['name']} {c['ll'][0]:.3f}" for c in conditions)
    return f"prior gap {pm_key(e)}; LL {moved}"
