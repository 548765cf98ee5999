"""The zoo from its long runs: ship a finished run into the zoo (an interim report on the runs
still training: :mod:`experiments.zoo.interim`).

A zoo model is trained as a long run (``experiments/long_runs/driver.py``, folder
``long-runs/<name>/``); shipping it writes ``<zoo>/<name>.pt`` (weights and the experiment
config, no optimiser state, at most :data:`MAX_BYTES`) and ``<zoo>/<name>.json``, a card in the
schema of today's (``src/tnpx/zoo/gp1d-tnp.json``) with the scores of
:mod:`experiments.zoo.score` on the zoo's shared priors, whatever the run trained on
(``eval`` and ``per_kernel``: the single-kernel prior on today's tasks; ``eval_composite``: the
composite prior; ``eval_v3``: the wide prior) and, when
``results/pretrained/real-series*.json`` scored the model by its zoo name, the real-series
summary. ``experiments/zoo/train.py --ship`` / ``--interim`` run these (a 2D prior's run
ships with its own card from the same helpers: :mod:`experiments.zoo.ship_2d`). When a
run finishes (here a wide-prior one; ``--ship`` alone ships :data:`COMPOSITE_MODELS`):

    python -m experiments.zoo.train --ship gp1d-v3-te-tnp-rope   # card, safe range, zoo.md
    python -m experiments.zero_shot.series --models gp1d-tnp gp1d-te-tnp gp1d-v2-tnp \
        gp1d-v2-te-tnp-rope gp1d-v3-te-tnp-rope --name real-series-v4
    python -m experiments.zero_shot.functions --models gp1d-v2-tnp gp1d-v2-te-tnp-rope \
        gp1d-v3-te-tnp-rope
    python -m experiments.bayes.reference         # each zoo model's gap split: irreducible + own
    python -m experiments.zoo.safe_range    # every card's safe range, one table
    python -m experiments.zoo.train --ship gp1d-v3-te-tnp-rope   # again: the card takes the
                                                   # real-series rows; zoo.md and the README
"""

from __future__ import annotations

import time
from pathlib import Path

from experiments.long_runs.driver import RUNS
from experiments.zoo.card_file import dirty_commits, write_card
from experiments.zoo.score import FULL_KEYS, ROOT, _entry, experiment, score
from experiments.zoo.scored import scored_summary
from tnpx.checkpoint import atomic_save, load, read_checkpoint
from tnpx.config import ExperimentConfig, load_config
from tnpx.data.synthetic import CompositeGPConfig
from tnpx.evaluation import build_test_sampler, evaluate, likelihood_of
from tnpx.provenance import hardware
from tnpx.training import RunStatus, last_checkpoint, run_status

COMPOSITE_MODELS = ["gp1d-v2-tnp", "gp1d-v2-te-tnp-rope"]  # zoo names (their long runs: STAGES)
WIDE_MODELS = ["gp1d-v3-tnp", "gp1d-v3-te-tnp-rope"]
# A zoo name -> its long runs in training order (experiments/long_runs): the last is shipped,
# each earlier one a stage it was fine-tuned from (train.init_from). The second stage trains
# the composite-prior models on targets a context width out, half the tasks scaled as predict
# scales them, so that their calibration holds where predict is used.
STAGES = {name: [name, f"{name}-far"] for name in COMPOSITE_MODELS}
# The wide-prior models are fine-tuned from the composite ones' last stage (their configs).
STAGES |= {name: [*STAGES[name.replace("-v3-", "-v2-")], name] for name in WIDE_MODELS}
# The 2D model: its second stage as the 1D models' (experiments/zoo/ship_2d.py ships it).
STAGES["gp2d-te-tnp-rope"] = ["gp2d-te-tnp-rope", "gp2d-te-tnp-rope-far"]
MAX_BYTES = 5_000_000  # a shipped checkpoint (the repository keeps no larger .pt)
CHECK_BATCHES = 2  # the check evaluation tests/zoo/test_zoo.py repeats
TARGET_GAP = 0.15  # the zoo's goal on the single-kernel prior, nats per target point


class UnfinishedRun(RuntimeError):
    """A run has not reached its last step (ship it with ``force`` as an interim model)."""


def shippable_checkpoint(folder: Path, force: bool = False) -> tuple[Path, RunStatus]:
    """The checkpoint to ship from run ``folder``: ``model.pt`` of a finished run, else with
    ``force`` the weights of ``checkpoints/last.pt``.

    Raises:
        UnfinishedRun: the run is unfinished and ``force`` is not set, or has no checkpoint.
        ValueError: ``folder`` holds no run.
    """
    status = run_status(folder)
    if status.finished:
        return folder / "model.pt", status
    where = f"{folder}: unfinished run (step {status.steps_done:,} of {status.steps_total:,})"
    if not last_checkpoint(folder).exists():
        raise UnfinishedRun(f"{where}: no checkpoint yet, nothing to ship")
    if not force:
        raise UnfinishedRun(
            f"{where}; a zoo model is a finished run: advance it with `python -m "
            f"experiments.long_runs.driver advance`, or pass --force to ship step "
            f"{status.steps_done:,}'s weights as an interim model"
        )
    return last_checkpoint(folder), status


def trained_on(cfg: ExperimentConfig) -> str:
    """The training prior in words: a ``gp-composite`` mixture
    (:mod:`tnpx.data.synthetic.gp_composite`; a ``gp`` config is its single-kernel part alone)."""
    composite = cfg.data["name"] == "gp-composite"
    c = CompositeGPConfig(**cfg.data_options(), **({} if composite else {"composite_prob": 0.0}))
    single = (
        f"{', '.join(c.kernels)}; lengthscale log-U[{c.lengthscale_a}, {c.lengthscale_b}]; "
        f"period U[{c.period_min}, {c.period_max}]; variance {c.variance:g}; noise std "
        f"log-U[{c.noise_range[0]}, {c.noise_range[1]}]"
    )
    count = " (their number log-uniform)" if c.ctx_size == "log-uniform" else ""
    scaled = (
        f", {c.context_scaling:g} of tasks scaled as `tnpx.predict` scales a user's"
        if c.context_scaling
        else ""
    )
    inputs = (
        f"{c.min_ctx}–{c.max_ctx} context points{count} on {list(c.ctx_range)}, {c.n_tgt} "
        f"targets on {list(c.tgt_range)}{scaled}"
    )
    if not composite:
        return f"1D GP samples: kernels {single}; {inputs}"
    p = c.component_probs
    return (
        f"1D GPs, a mixture: with probability {1 - c.composite_prob:g} a single kernel "
        f"({single}), else a sum of a trend (RBF, lengthscale log-U{c.trend_lengthscale}), a "
        f"periodic component (period log-U{c.periodic_period}, lengthscale "
        f"log-U{c.periodic_lengthscale}) and rough variation ({', '.join(c.rough_kernels)}, "
        f"lengthscale log-U{c.rough_lengthscale}), present with probability {p[0]:g} / "
        f"{p[1]:g} / {p[2]:g}, weights log-U{c.component_weight}, output std "
        f"log-U{c.output_scale_range}, noise std log-U{c.composite_noise_range} times it"
        f"{wide_prior_parts(c)}; {inputs}"
    )


def wide_prior_parts(c: CompositeGPConfig) -> str:
    """The wide prior's additions to a composite prior's sentence ("" when it has none)."""
    parts = []
    if c.polynomial_prob:
        parts.append(
            f"in {c.polynomial_prob:g} of the sums a polynomial trend of degree "
            f"{'/'.join(map(str, c.polynomial_degrees))} (lengthscale "
            f"log-U{c.polynomial_lengthscale})"
        )
    if c.locally_periodic_prob:
        parts.append(
            f"in {c.locally_periodic_prob:g} of them the periodic component times an RBF "
            f"envelope (lengthscale log-U{c.envelope_lengthscale})"
        )
    if c.quiet_prob:
        parts.append(f"{c.quiet_prob:g} of all tasks near noise-free (noise std {c.quiet_noise:g} "
                     "times the output scale)")  # fmt: skip
    return "".join(f"; {p}" for p in parts)


def real_series_summary(name: str, results: Path) -> dict | None:
    """The per series and kind RMSE / NLL (mean, s.e.) of zoo model ``name`` and of the fitted
    GP from the last by name of ``results/real-series*.json`` that scored ``name`` (so
    ``real-series-v2`` before ``real-series``), or None."""
    return scored_summary(name, results, "real-series", "n_splits")


def shipped_run(name: str) -> str:
    """The long run whose weights zoo model ``name`` ships (its last stage)."""
    return STAGES.get(name, [name])[-1]


def earlier_stages(name: str, root: Path) -> list[dict]:
    """Each finished run zoo model ``name`` was fine-tuned from: run, steps, training seconds."""
    stages = []
    for run in STAGES.get(name, [name])[:-1]:
        st = run_status(root / run)
        hours = st.train_hours
        stages.append(
            {
                "run": repo_relative(root / run),
                "steps": st.steps_done,
                "train_s": hours and hours * 3600,
            }
        )
    return stages


def card_fields(
    name: str,
    folder: Path,
    model,
    cfg: ExperimentConfig,
    config: str,
    status: RunStatus,
    provenance: tuple[str, str],
    prior: str,
) -> dict:
    """The fields every card shipped from run ``folder`` opens with, in the cards' order
    (``prior``: its ``trained_on`` sentence). ``eval_s`` is None until the scores are in."""
    return {
        "name": name,
        "model": model.name,
        "params": sum(p.numel() for p in model.parameters()),
        "trained_on": prior,
        "config": config,
        "steps": status.steps_done,
        "batch_size": cfg.data["batch_size"],
        "command": provenance[1],
        "train_command": (
            f"python -m experiments.long_runs advance --runs {' '.join(STAGES.get(name, [name]))} "
            "--minutes M"
        ),
        "commit": provenance[0],
        "hardware": hardware(),  # where this card was evaluated; the run trained in slices
        "train_s": None if status.train_hours is None else status.train_hours * 3600,
        "eval_s": None,
        "translation_equivariant": model.translation_equivariant,
        "likelihood": likelihood_of(model),  # the card page names it
        "finished": status.finished,
        "steps_planned": status.steps_total,
        "run": repo_relative(folder),
    }


def check_entry(model, config: str) -> dict:
    """A card's ``check``: the first :data:`CHECK_BATCHES` test batches of ``config``'s prior,
    without the oracle (tests/zoo/test_zoo.py repeats it on the shipped model)."""
    check = evaluate(model, build_test_sampler(load_config(config)), CHECK_BATCHES, oracle=False)
    return {"batches": CHECK_BATCHES, "n_tasks": check.n_tasks, "ll": check.ll}


def add_stages(card: dict, name: str, folder: Path) -> None:
    """Record in ``card`` the earlier stages zoo model ``name`` was fine-tuned from, when
    ``folder`` is its last stage: the card's steps and time are that stage's, the totals all."""
    stages = earlier_stages(name, folder.parent) if folder.name == shipped_run(name) else []
    if stages:
        card["stages"] = stages
        card["steps_total"] = card["steps"] + sum(st["steps"] for st in stages)
        card["train_s_total"] = (card["train_s"] or 0) + sum(st["train_s"] or 0 for st in stages)


def write_zoo(name: str, source: Path, card: dict, zoo: Path, allow_dirty: bool = False) -> None:
    """Write ``zoo/name.pt`` (``source``'s record without its training state) and the card.

    Raises:
        ValueError: the checkpoint would exceed :data:`MAX_BYTES` (nothing is left written).
        experiments.zoo.card_file.DirtyTree: the card names uncommitted code and
            ``allow_dirty`` is False (nothing is written).
    """
    if dirty_commits(card) and not allow_dirty:  # before the weights, so nothing is written
        write_card(zoo / f"{name}.json", card)  # raises, naming the dirty commits
    record = {k: v for k, v in read_checkpoint(source).items() if k != "train_state"}
    zoo.mkdir(parents=True, exist_ok=True)
    atomic_save(record, zoo / f"{name}.pt")
    size = (zoo / f"{name}.pt").stat().st_size
    if size > MAX_BYTES:
        (zoo / f"{name}.pt").unlink()
        raise ValueError(f"{name}: {size:,} bytes, over the zoo's {MAX_BYTES:,} per model")
    write_card(zoo / f"{name}.json", card, allow_dirty)


def ship(
    name: str,
    folder: Path,
    zoo: Path,
    config: str | None = None,
    force: bool = False,
    n_batches: int | None = None,
    provenance: tuple[str, str] = ("", ""),
    results: Path | None = None,
    dim: int = 1,
    shift_tasks: int | None = None,
    profile_batches: int | None = None,
    allow_dirty: bool = False,
) -> dict:
    """Evaluate run ``folder``'s model and write it into ``zoo`` as ``name`` (.pt + .json).

    Every card has :func:`card_fields`, ``check``, its stages, ``safe_range`` and, when a
    result scored the model by ``name``, its measured data. A 1D model (``dim`` 1) is scored
    on the zoo's shared priors (:func:`experiments.zoo.score.score`) and measured series; a 2D
    one (``dim`` 2, :mod:`experiments.zoo.ship_2d`) on its own prior, under its shifts and on
    measured fields.

    Args:
        config: the config file the run was trained from (its card's ``config``; the zoo's
            test repeats the check evaluation on its test sampler); default the run's copy.
        force: ship an unfinished run's latest weights (the card says ``finished: false``).
        n_batches: test batches per prior (default: the config's ``eval.n_batches``).
        provenance: (commit, command) of this shipping.
        results: where to look for measured-data results (see :func:`real_series_summary`).
        dim: the model's number of inputs, 1 or 2.
        shift_tasks: 2D: tasks per shift condition (default the harness's).
        profile_batches: test batches for the safe range (default
            :func:`~experiments.zoo.safe_range.measure`'s).
        allow_dirty: write a card that names uncommitted code (marked; see
            :mod:`experiments.zoo.card_file`).

    Raises:
        UnfinishedRun: see :func:`shippable_checkpoint`.
        ValueError: a 2D run trains on another prior, or the shipped checkpoint would exceed
            :data:`MAX_BYTES`; ``DirtyTree`` (a ValueError): the card would name uncommitted
            code (the shipping's commit or a measured-data result's).
    """
    # imported here: ship_2d imports this module's helpers; the safe range needs lab extras
    from experiments.zoo import safe_range as safe
    from experiments.zoo import ship_2d

    source, status = shippable_checkpoint(folder, force)
    config = config or str(folder / "config.yaml")
    cfg = experiment(source)
    if dim == 2 and cfg.data["name"] != ship_2d.PRIOR:
        raise ValueError(
            f"{folder}: trains on {cfg.data['name']!r}, not the 2D prior {ship_2d.PRIOR!r}"
        )
    model = load(source).eval()
    described = ship_2d.trained_on(cfg) if dim == 2 else trained_on(cfg)
    card = card_fields(name, folder, model, cfg, config, status, provenance, described)
    start = time.perf_counter()
    n_batches = n_batches or cfg.eval.n_batches
    if dim == 2:
        card["dim_x"] = 2
        card["eval"] = _entry(evaluate(model, build_test_sampler(cfg), n_batches), FULL_KEYS)
    else:
        card.update(score(model, n_batches))
    card["check"] = check_entry(model, config)
    card["eval_s"] = time.perf_counter() - start
    add_stages(card, name, folder)
    if dim == 2:
        card["shifts"] = ship_2d.shift_entry(source, shift_tasks)
    found = safe.measure(source, profile_batches or safe.BATCHES)
    card["safe_range"] = {**found, "commit": provenance[0], "command": provenance[1]}
    key, summary = (
        ("real_fields", ship_2d.real_fields_summary)
        if dim == 2
        else ("real_series", real_series_summary)
    )
    real = summary(name, results) if results else None
    if real is not None:
        card[key] = real
    write_zoo(name, source, card, zoo, allow_dirty)
    return card


def repo_relative(path: Path) -> str:
    """``path`` relative to the repository root where it lies inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def run_config(name: str) -> str:
    """The config file long run ``name`` trains from (relative to the repository root)."""
    return RUNS[name][0]
