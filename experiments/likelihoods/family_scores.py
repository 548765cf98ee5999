"""Each likelihood family on its own synthetic tasks, against a Gaussian head on the same tasks
(issue 52's results table).

For each family, ``configs/likelihoods/<family>.yaml`` trains a ``tnp`` with that family's head
on the ``gp-link`` tasks of that family (GP draws pushed through the family's link), and the
same config with ``model.likelihood=gaussian`` trains the control: the same model, data, steps
and seed, with a Gaussian head. Both are scored on the same held-out test tasks (``eval``
batches of the ``test`` split):

- LL per target point (a density for continuous outputs, a probability for counts and 0/1;
  where the family's LL is partly a probability, counts, 0/1, dry days, the Gaussian head's
  density does not compare and is not printed), beside the law that generated the targets
  given the latent function
  (``true_predictive_log_prob``: an upper reference no model reaches);
- CRPS per target point and output (lower is better): comparable across heads on any data;
- coverage of the central 50 % and 90 % intervals by the randomised PIT (Czado, Gneiting and
  Held 2009): ``u = F(y-) + V (F(y) - F(y-))`` with ``V ~ U(0, 1)``, covered when
  ``|u - 1/2| <= level / 2``. For a continuous prediction this is the central interval between
  the quantiles; for counts, 0/1 and the point masses of rain and fractions it makes coverage
  exact for a calibrated prediction (a quantile interval of a discrete law covers more than
  its level);
- the model's CRPS less the control's, paired over tasks (mean ± s.e.): the issue asks for a
  gap of more than 2 s.e. on every non-Gaussian family.

More rows (``VARIANTS``): the Poisson tasks with a plain Poisson head (``overdispersion: none``;
``poisson.yaml``'s head carries the log rate's uncertainty) and with a negative-binomial head
(whether a head that can spread further covers counts whose latent rate the context leaves
uncertain), and skewed fractions near 0 (``beta-skewed.yaml``).

Beside them, where GPyTorch has the family's likelihood (all but ``mixture``,
``lowrank-gaussian`` and ``bernoulli-gamma``), the ``per-task GP``: a GP fitted to each test
task's context with that likelihood by variational inference (:mod:`tnpx.gp.approx_fit`: 100
steps, RBF kernel; its fit counts in its time), scored the same way from its predictive law
(quadrature for LL and the PIT, exact draws for the CRPS) on the first 16 test batches (256
tasks: the fit takes 10-20 s a batch), and compared with the family's head on those tasks.

    python -m experiments.likelihoods.family_scores          # every family; results/likelihoods/
    python -m experiments.likelihoods.family_scores --families poisson --quick --out /tmp/x
    python -m experiments.likelihoods.family_scores --add-gp   # GP rows beside a saved study
    python -m experiments.likelihoods.family_scores --add-gp --families beta  # GP rows again
    python -m experiments.likelihoods.family_scores --update --families poisson  # re-score some

Runs are trained once into ``runs/likelihoods/`` (a finished run is loaded, not retrained).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from experiments.kit import mean_se, paired_mean_se, pm, pm_small
from experiments.likelihoods.scoring import (
    GP_HEAD,
    reference_ll,
    score_gp,
    score_head,
)
from tnpx.config import load_config
from tnpx.evaluation import build_test_sampler
from tnpx.likelihoods import family_of, is_continuous
from tnpx.provenance import command_line, git_commit, hardware
from tnpx.training import train_or_load

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs" / "likelihoods"
FAMILIES = (
    "gaussian",
    "student-t",
    "mixture",
    "lowrank-gaussian",
    "bernoulli",
    "bernoulli-gamma",
    "poisson",
    "negative-binomial",
    "beta",
)
# Other tasks or heads beside each family's own: name -> (config stem, overrides). A plain
# Poisson head (variance = mean) cannot spread as far as counts whose latent rate the context
# leaves uncertain (their predictive is overdispersed), which poisson.yaml's log-normal
# overdispersion and the negative binomial can; on fractions near 0 a Beta's skew matters where
# on the near-symmetric fractions of beta.yaml it does not.
VARIANTS = {
    "poisson-tasks-plain-head": ("poisson", ("model.likelihood=poisson",)),
    "poisson-tasks-nb-head": ("poisson", ("model.likelihood=negative-binomial",)),
    "beta-skewed": ("beta-skewed", ()),
}
TASKS = FAMILIES + tuple(VARIANTS)
QUICK = ["train.steps=30", "train.val_every=30", "eval.n_batches=2"]


def run_family(task: str, runs: Path, extra: list[str], gp: bool = True) -> dict:
    """Train (or load) the task's model (its family's head, or a variant's) and its
    Gaussian-head control; score both, and the per-task GP where the family has one and
    ``gp``. ``task``: a family, or a name in :data:`VARIANTS`."""
    stem, overrides = VARIANTS.get(task, (task, ()))
    config = CONFIGS / f"{stem}.yaml"
    likelihood = load_config(config, [*overrides, *extra]).model.get("likelihood", "gaussian")
    family = family_of(likelihood)
    heads = {family: [*overrides, f"train.out_dir={runs / task}"]}
    if family != "gaussian":
        heads["gaussian"] = [
            "model.likelihood=gaussian",
            f"train.out_dir={runs / (task + '-gaussian-head')}",
        ]
    scores, n_batches = {}, None
    for head, head_overrides in heads.items():
        cfg = load_config(config, [*head_overrides, *extra])
        print(f"== {task}: the {head} head ({cfg.train.steps} steps) ==", flush=True)
        model, train_s = train_or_load(cfg)
        n_batches = cfg.eval.n_batches
        sampler = build_test_sampler(cfg)
        scores[head] = score_head(model.eval(), sampler, n_batches, train_s)
    if gp and family in gp_families():
        print(f"== {task}: the {GP_HEAD} ({family}) ==", flush=True)
        scores[GP_HEAD] = score_gp(sampler, n_batches, family)
    return {
        "task": task,
        "family": family,
        "config": str(config.relative_to(ROOT)),
        "overrides": list(overrides),
        "likelihood": likelihood,
        "n_batches": n_batches,
        "batch_size": int(cfg.eval.batch_size),
        "reference_ll": reference_ll(sampler, n_batches),
        "heads": {head: {**asdict(s), **provenance()} for head, s in scores.items()},
    }


def gp_families() -> tuple[str, ...]:
    """The families GPyTorch has a likelihood for (the per-task GP rows)."""
    from tnpx.gp import APPROX_FAMILIES  # needs the gp extra

    return APPROX_FAMILIES


def provenance() -> dict:
    """What scored a head: the command and the commit (a results file may join heads scored
    by two commands, as ``--add-gp`` does)."""
    return {"command": command_line(), "commit": git_commit()}


def add_gp(out: Path, again: Sequence[str] = ()) -> list[dict]:
    """The study's saved entries (``out/results.json``) with the per-task GP scored on each
    family's test tasks where it has no GP row or its task is in ``again`` (the GP changed),
    checked to be the tasks its heads were scored on (the generating law's LL on them, equal
    to 1e-9); the heads as they were (heads saved without their provenance take the command
    and commit the README names)."""
    entries = saved_study(out)
    for e in entries:
        if e["family"] not in gp_families() or (GP_HEAD in e["heads"] and e["task"] not in again):
            continue  # no GP for the family, or scored already
        cfg = load_config(ROOT / e["config"], list(e["overrides"]))
        sampler = build_test_sampler(cfg)
        if not np.allclose(reference_ll(sampler, e["n_batches"]), e["reference_ll"], atol=1e-9):
            raise SystemExit(
                f"{e['task']}: the test tasks differ from those its heads were scored on; "
                "re-run the whole study instead"
            )
        print(f"== {e['task']}: the {GP_HEAD} ({e['family']}) ==", flush=True)
        e["heads"][GP_HEAD] = {**asdict(score_gp(sampler, e["n_batches"], e["family"])),
                               **provenance()}  # fmt: skip
    return entries


def saved_study(out: Path) -> list[dict]:
    """The entries of the study saved in ``out``, each head with the command and commit that
    scored it (heads saved without them take those the README names)."""
    entries = json.loads((out / "results.json").read_text())
    saved = _readme_provenance(out / "README.md")
    for e in entries:
        for head in e["heads"].values():
            for key, value in saved.items():
                head.setdefault(key, value)
    return entries


def merged(saved: list[dict], new: list[dict]) -> list[dict]:
    """The ``saved`` study's entries with ``new`` ones in place of those of the same task, in
    the order of :data:`TASKS`."""
    by_task = {e["task"]: e for e in saved}
    by_task.update({e["task"]: e for e in new})
    return [by_task[t] for t in TASKS if t in by_task]


def _readme_provenance(readme: Path) -> dict:
    """The command and commit a results README's ``**Command**`` line names."""
    found = re.search(r"\*\*Command\*\*: `([^`]+)`, commit `([0-9a-f+dirty]+)`", readme.read_text())
    if found is None:
        raise SystemExit(f"{readme}: no **Command** line naming a command and a commit")
    return {"command": found.group(1), "commit": found.group(2)}


def verdict(entry: dict) -> dict:
    """The issue's two goals for one family: 90 % coverage in [0.87, 0.93]; CRPS below the
    Gaussian head's by more than 2 s.e. (paired over tasks)."""
    own = entry["heads"][entry["family"]]
    cov = own["coverage"]["0.9"]
    out = {"coverage_ok": 0.87 <= cov <= 0.93}
    control = entry["heads"].get("gaussian") if entry["family"] != "gaussian" else None
    if control is not None:
        diff, se = paired_mean_se(own["crps"], control["crps"])
        out.update(crps_diff=diff, crps_diff_se=se, crps_ok=diff < -2 * se)
    return out


def rows(entry: dict) -> list[str]:
    family, ref = entry["family"], mean_se(entry["reference_ll"])
    check = verdict(entry)
    # where the family's LL is partly a probability (counts, 0/1, dry days, spikes), the
    # Gaussian head's log-density on the same values does not compare: not printed
    compares = is_continuous(entry.get("likelihood", family))
    lines = []
    for head, s in entry["heads"].items():
        own = head == family
        ll = "—" if (head == "gaussian" and not own and not compares) else pm(*mean_se(s["ll"]))
        diff = "—"
        if own and "crps_diff" in check:
            ratio = (
                abs(check["crps_diff"]) / check["crps_diff_se"]
                if check["crps_diff_se"]
                else math.inf
            )
            diff = f"{pm_small((check['crps_diff'], check['crps_diff_se']))} ({ratio:.1f} s.e.)"
        per_batch = 1e3 * s["score_s"] * entry["batch_size"] / len(s["crps"])
        train = "—" if s["train_s"] is None else f"{s['train_s']:.0f}"
        lines.append(
            f"| {entry.get('task', family)} | {head} | {ll} | {pm(*ref) if own else ''} "
            f"| {pm(*mean_se(s['crps']))} "
            f"| {s['coverage']['0.5']:.3f} | {s['coverage']['0.9']:.3f} | {diff} | {train} "
            f"| {per_batch:.0f} |"
        )
    return lines


def reading(entries: list[dict]) -> str:
    parts = []
    for e in entries:
        check, cov = verdict(e), e["heads"][e["family"]]["coverage"]["0.9"]
        where = "in" if check["coverage_ok"] else "outside"
        text = f"`{e.get('task', e['family'])}`: 90 % coverage {cov:.3f} ({where} 0.87-0.93)"
        if "crps_ok" in check:
            text += ", CRPS " + _gap(
                check["crps_diff"], check["crps_diff_se"], "the Gaussian head's"
            )
        gp = e["heads"].get(GP_HEAD)
        if gp is not None:  # paired over the tasks the GP was scored on (the first ones)
            own = e["heads"][e["family"]]["crps"][: len(gp["crps"])]
            diff, se = paired_mean_se(own, gp["crps"])
            text += f"; against the {GP_HEAD}, CRPS " + _gap(diff, se, "its")
        parts.append(text)
    return "; ".join(parts) + "."


def _gap(diff: float, se: float, whose: str) -> str:
    """``below <whose> by 0.0123 ± 0.0010 (more than 2 s.e.)``: a paired CRPS difference."""
    side = "below" if diff < 0 else "above"
    more = "more" if abs(diff) > 2 * se else "not more"
    return f"{side} {whose} by {abs(diff):.4f} ± {se:.4f} ({more} than 2 s.e.)"


def what() -> str:
    """The module docstring's account of the study, up to its command lines, as one paragraph
    with its list."""
    text = __doc__.split("    python -m")[0].strip()
    return text.split("\n\n", 1)[1].replace("\n- ", "\n\n- ").replace("\n  ", " ")


def write(entries: list[dict], out: Path, started: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    first = entries[0]
    head = (
        "| task | head | LL per target ± s.e. | generating law's LL | CRPS ± s.e. | 50 % cov. "
        "| 90 % cov. | CRPS − Gaussian head's (paired) | train s | ms per test batch |"
    )
    text = [
        "# Likelihood families on their own tasks, against a Gaussian head",
        "",
        "**What**: " + what(),
        "",
        "**Command**: " + _commands(entries, started) + ".",
        "",
        f"**Protocol or budget**: `configs/likelihoods/<family>.yaml` (a budget: `tnp`, 64 wide, "
        f"3 layers; the configs' steps, one seed); test: {first['n_batches']} batches of "
        f"{first['batch_size']} tasks of the `test` split per family, the same tasks for both "
        "heads; s.e. over tasks (independent draws), which leaves out a second training's "
        "randomness (`results/likelihoods/head-seeds/` trains the beta and student-t heads again "
        "over seeds). No paper reports these: the reference is "
        "the law that "
        "generated the targets (given the latent function), which no model reaches, and the "
        "Gaussian head on the same tasks. LL is per target point, summed over outputs; a "
        "Gaussian head's LL where the family's is partly a probability (counts, 0/1, dry days, "
        "spikes) is a density that does not compare, and is left out.",
        "",
        f"**Hardware**: {hardware()}.",
        "",
        head,
        "|" + " --- |" * 10,
        *[line for e in entries for line in rows(e)],
        "",
        "**Reading**: " + reading(entries),
        "",
    ]
    (out / "README.md").write_text("\n".join(text))
    (out / "results.json").write_text(json.dumps(entries, indent=1) + "\n")
    print("\n".join(text))


def _commands(entries: list[dict], started: str) -> str:
    """Each command and commit that scored the heads of ``entries`` (``started``: this run's
    commit, for heads without their own), in order of first use."""
    seen: dict[tuple[str, str], list[str]] = {}
    for e in entries:
        for name, head in e["heads"].items():
            key = (head.get("command", command_line()), head.get("commit", started))
            kind = GP_HEAD + " rows" if name == GP_HEAD else "the trained heads"
            seen.setdefault(key, [])
            if kind not in seen[key]:
                seen[key].append(kind)
    return "; ".join(f"`{cmd}`, commit `{commit}` ({', '.join(kinds)})"
                     for (cmd, commit), kinds in seen.items())  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = "the tasks to score (default all); with --add-gp, those whose GP rows to score again"
    parser.add_argument("--families", nargs="*", choices=TASKS, help=which)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "likelihoods")
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "likelihoods")
    parser.add_argument("--quick", action="store_true", help="a smoke run (tests); needs --out")
    only_gp = f"score only the {GP_HEAD} rows, on the test tasks of the study saved in --out"
    parser.add_argument("--add-gp", action="store_true", help=only_gp)
    again = "score only --families and put them into the study saved in --out, the rest as saved"
    parser.add_argument("--update", action="store_true", help=again)
    args = parser.parse_args(argv)
    if args.quick and args.out == parser.get_default("out"):
        parser.error("--quick writes nothing to be read as a result: give --out (a tmp folder)")
    torch.set_num_threads(1)
    started = git_commit()  # the code that trains and scores
    extra = QUICK if args.quick else []
    runs = args.out / "runs" if args.quick else args.runs
    if args.add_gp:
        entries = add_gp(args.out, again=args.families or ())
    else:
        entries = [run_family(f, runs, extra) for f in args.families or TASKS]
        if args.update:
            entries = merged(saved_study(args.out), entries)
    write(entries, args.out, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
