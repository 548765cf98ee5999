"""Model-card pages for the documentation site, written from the zoo's cards (``src/tnpx/zoo/
NAME.json``) at build time: nothing here is written by hand about any one model.

A card may lack any field but its name (cards gain fields as models are re-shipped; the first
zoo has no composite-prior score, no measured series and no training stages): a section whose
field is missing says so in one line instead of failing. A 2D model's card (``dim_x: 2``) is
scored on its own 2D prior instead of the 1D ones, and adds its shifts and measured fields: those
sections are ``docs/hooks/zoo_cards_2d.py``'s. Read by ``docs/hooks/pages.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import zoo_card_limits  # docs/hooks/ (MkDocs puts a hook's folder on sys.path to load it)
import zoo_cards_2d
from card_cells import (
    KERNEL_NAMES,
    SERIES_NAMES,
    all_seconds,
    all_steps,
    code,
    hours,
    in_widths,
    index_row,
    integer,
    is_2d,
    measured_table,
    num,
    pm,
    prior_kind,
    scored_on,
    table,
)

# --- the page -----------------------------------------------------------------------------------


def card_page(
    card: dict,
    target_gap: float,
    bayes: dict | None,
    link: Callable[[str], str],
    replaced_by: str | None = None,
) -> str:
    """The markdown page of one card (``replaced_by``: a retired model's replacement).

    Args:
        card: the card (``tnpx.zoo.model_card(name)``).
        target_gap: the zoo's goal for the gap to the GP oracle on the single-kernel prior.
        bayes: ``results/pretrained/bayes-reference.json`` (the irreducible part of the gap),
            or None.
        link: a site page's path (from the docs root) -> a link relative to this card's page.
    """
    name = card["name"]
    out = [f"# {name}", ""]
    if replaced_by:
        out += [
            '!!! warning "Retired"',
            f"    `tnpx.list_pretrained()` no longer offers this model: beyond its context its "
            f"intervals are far too narrow (safe range 0 widths, below). It still loads by name "
            f"or path, with a warning. Use [`{replaced_by}`]({replaced_by}.md).",
            "",
        ]
    out += _glance(card, link)
    out += ["", "## Prior: what it was trained on", "", card.get("trained_on", "Not recorded."), ""]
    out += _training(card)
    out += _scores(card, link)
    if is_2d(card):
        out += zoo_cards_2d.shifts(card, link)
    out += _safe_range(card, link)
    out += zoo_cards_2d.real_fields(card, link) if is_2d(card) else _real_series(card, link)
    out += zoo_card_limits.limits(card, target_gap, bayes, link)
    out += [
        "",
        "---",
        "",
        f"*Generated from the card `src/tnpx/zoo/{name}.json` when this site was built "
        f'(`tnpx.zoo.model_card("{name}")` returns it).*',
        "",
    ]
    return "\n".join(out)


def _glance(card: dict, link: Callable[[str], str]) -> list[str]:
    name = card["name"]
    te = card.get("translation_equivariant")
    rows = [
        ["architecture", f"{code(card.get('model'))} ([the models]({link('guide/models.md')}))"],
        ["parameters", integer(card.get("params"))],
        [
            "prior",
            f"{prior_kind(card)}{' GPs' if card.get('trained_on') else ''} "
            "([below](#prior-what-it-was-trained-on))",
        ],
        ["translation equivariant", "—" if te is None else ("yes" if te else "no")],
        ["likelihood", _likelihood(card.get("likelihood"), link)],
    ]
    if "eval" in card:
        e, prior = card["eval"], scored_on(card).removeprefix("the ")
        rows.append(["gap to the GP oracle", f"{pm(e, 'gap')} nats per target point ({prior})"])
    sr = card.get("safe_range")
    if sr:
        rows.append(
            [
                "safe range",
                f"{in_widths(sr['widths'])} beyond the context (warned past it, refused past "
                f"{in_widths(sr['hard_limit'])})",
            ]
        )
    if card.get("finished") is False:
        rows.append(["finished", "**no**: interim weights of an unfinished run"])
    out = table(["", name], rows)
    out += [
        "",
        "```python",
        "import tnpx",
        f'model = tnpx.pretrained("{name}")  # a NeuralProcess, in eval mode',
        f'pred = tnpx.predict("{name}", "ctx.csv", "tgt.csv")  # in your units',
        "```",
        "```bash",
        f"tnpx predict {name} --context ctx.csv --targets tgt.csv --out pred.csv",
        "```",
    ]
    return out


# the Gaussian options' words; any other family is named as its option reads
GAUSSIAN_WORDS = {
    "heteroscedastic": "Gaussian, a mean and a std per target",
    "homoscedastic": "Gaussian, a mean per target and one std",
}


def _likelihood(option: str | dict | None, link: Callable[[str], str]) -> str:
    """The card's ``likelihood`` (the model's option) in words, linked to the families' page;
    "not recorded" on a card written before cards named it."""
    if option is None:
        return "not recorded"
    words = GAUSSIAN_WORDS.get(option) if isinstance(option, str) else None
    name = option if isinstance(option, str) else option.get("name")
    named = f"{words} ({code(name)})" if words else code(name)
    return f"{named} ([likelihoods]({link('likelihoods.md')}))"


def _training(card: dict) -> list[str]:
    out = ["## Training", ""]
    stages = card.get("stages") or []
    if stages:
        rows = [
            [f"{i + 1}", code(st.get("run")), integer(st.get("steps")), hours(st.get("train_s"))]
            for i, st in enumerate(stages)
        ]
        rows.append(
            [
                f"{len(stages) + 1} (shipped)",
                code(card.get("run")),
                integer(card.get("steps")),
                hours(card.get("train_s")),
            ]
        )
        rows.append(
            ["all", "", f"**{integer(all_steps(card))}**", f"**{hours(all_seconds(card))}**"]
        )
        out += [
            "Trained in stages, each fine-tuned from the one before (`train.init_from`):",
            "",
            *table(["stage", "run", "steps", "time"], rows),
            "",
        ]
    rows = [["steps", integer(all_steps(card))]]
    if card.get("steps_planned") and card.get("steps_planned") != card.get("steps"):
        rows.append(["steps planned (last stage)", integer(card["steps_planned"])])
    rows += [
        ["batch", "—" if not card.get("batch_size") else f"{integer(card['batch_size'])} tasks"],
        ["training time", hours(all_seconds(card))],
        ["config", code(card.get("config"))],
        ["trained by", code(card.get("train_command") or card.get("command"))],
    ]
    if card.get("train_command") and card.get("command"):
        rows.append(["shipped (scored, packaged) by", code(card["command"])])
    if card.get("run") and not stages:
        rows.append(["run folder", code(card["run"])])
    rows += [
        ["commit", code(card.get("commit"))],
        ["hardware", card.get("hardware") or "—"],
    ]
    if card.get("finished") is not None:
        rows.append(["finished", "yes" if card["finished"] else "no (interim weights)"])
    out += [f"- **{label}**: {value}" for label, value in rows]
    out += [""]
    return out


def _scores(card: dict, link: Callable[[str], str]) -> list[str]:
    out = [
        "## Scores",
        "",
        "Log-likelihood (LL) per target point on held-out tasks of each prior, in nats; the "
        "GP oracle is the exact GP posterior under each task's own kernel and "
        "hyper-parameters (which no model is told), on the same tasks; the gap is the "
        "oracle's LL less the model's (lower is better); ± one standard error over tasks. "
        "95 % coverage is the share of targets inside the central 95 % interval (calibrated: "
        "0.95).",
        "",
    ]
    priors = [
        ("single-kernel GPs", card.get("eval")),
        ("composite GPs", card.get("eval_composite")),
        ("v3 prior GPs", card.get("eval_v3")),  # a card shipped since the v3 prior
    ]
    if is_2d(card):  # scored on its own prior alone
        priors = [(f"{prior_kind(card)} GPs", card.get("eval"))]
    rows = [
        [
            label,
            integer(e.get("n_tasks")),
            pm(e, "ll"),
            num(e.get("oracle_ll")),
            pm(e, "gap"),
            num(e.get("coverage95")),
        ]
        for label, e in priors
        if e
    ]
    if rows:
        out += table(["prior", "tasks", "LL", "GP oracle LL", "gap", "95 % coverage"], rows)
    else:
        out += ["No held-out score is recorded on this card."]
    if card.get("eval") and not card.get("eval_composite") and not is_2d(card):
        out += ["", "Not scored on the composite prior (the card has no `eval_composite`)."]
    per = card.get("per_kernel")
    if per:
        out += [
            "",
            "Single-kernel prior, by kernel:",
            "",
            *table(
                ["kernel", "LL", "GP oracle LL", "gap"],
                [
                    [KERNEL_NAMES.get(k, k), pm(v, "ll"), num(v.get("oracle_ll")), pm(v, "gap")]
                    for k, v in per.items()
                ],
            ),
        ]
    out += [
        "",
        f"Every shipped model on the same tasks: [the zoo's scores]"
        f"({link('reproductions/pretrained/zoo.md')}).",
        "",
    ]
    return out


def _safe_range(card: dict, link: Callable[[str], str]) -> list[str]:
    out = ["## Safe range", ""]
    sr = card.get("safe_range")
    if not sr:
        return out + [
            "Not measured for this card: `tnpx.predict` warns for targets beyond one context "
            "width and refuses none.",
            "",
        ]
    widths, hard = sr["widths"], sr["hard_limit"]
    least, floor = sr.get("min_coverage", 0.9), sr.get("floor_coverage", 0.8)
    # a 2D model's distance: as tnpx.predict measures it (tnpx.apply.unit_choice.target_distance)
    inside = "0 inside it" + (
        "; with two inputs, the larger of the two columns'" if is_2d(card) else ""
    )
    out += [
        "A target's *distance* is how far it lies outside the context's input range, in widths "
        f"of that range ({inside}). On held-out tasks "
        f"({sr.get('tasks', 'of its prior')}; {integer(sr.get('n_tasks'))} tasks) this model's "
        "95 % "
        f"interval kept a coverage of at least {least:g} up to **{in_widths(widths)}** (its safe "
        f"range) and at least {floor:g} up to **{in_widths(hard)}** (its hard limit), with a "
        f"predicted std that did not shrink below {sr.get('shrink', 0.8):g} of the bin before. "
        f"`tnpx.predict` warns once for targets beyond {in_widths(widths)} and refuses targets "
        f"beyond {in_widths(hard)} unless `allow_extrapolation=True` (`--allow-extrapolation`).",
        "",
    ]
    profile = sr.get("profile") or []
    if profile:
        rows = []
        for b in profile:
            lo, hi = b.get("low", 0.0), b.get("high", 0.0)
            where = "inside the range" if hi == 0 else f"{lo:g}–{hi:g}"
            if hi == 0 or hi <= widths:
                verdict = "safe"
            elif hi <= hard:
                verdict = "warned"
            else:
                verdict = "refused"
            rows.append(
                [
                    where,
                    integer(b.get("n")),
                    num(b.get("coverage95")),
                    num(b.get("beyond_5sd"), 4),
                    num(b.get("mean_std")),
                    num(b.get("ll")),
                    verdict,
                ]
            )
        out += [
            "Its profile by distance (targets per bin; 95 % coverage; share of targets beyond 5 "
            "predicted standard deviations; mean predicted std and LL, in the tasks' units):",
            "",
            *table(
                [
                    "distance (widths)",
                    "targets",
                    "95 % coverage",
                    "beyond 5 sd",
                    "mean std",
                    "LL",
                    "`tnpx.predict`",
                ],
                rows,
            ),
            "",
        ]
    out += [
        f"Measured by {code(sr.get('command'))} at commit {code(sr.get('commit'))}; every "
        f"model side by side: [the zoo's safe range]"
        f"({link('reproductions/pretrained/safe-range.md')}). `tnpx.evaluation.extrapolation."
        "distance_profile` measures any model's profile.",
        "",
    ]
    return out


def _real_series(card: dict, link: Callable[[str], str]) -> list[str]:
    real = card.get("real_series")
    out = ["## Measured series", ""]
    if not real:
        return out + [
            "Not on this card (it has no `real_series`); [the measured-series results]"
            f"({link('reproductions/pretrained/real-series-v2.md')}) may score it.",
            "",
        ]
    out += [
        "Zero-shot on measured series it never saw (shipped in statsmodels), beside a GPyTorch GP "
        "fitted to each context, in the series' own units; mean ± s.e. over "
        f"{real.get('n_splits', '?')} splits. *interpolation*: targets inside the context's "
        "range; *extrapolation*: beyond it.",
        "",
        *measured_table(real, ["series", "targets"], lambda s, k: [SERIES_NAMES.get(s, s), k]),
        "",
        f"From `results/pretrained/{real.get('file', '?')}` (commit {code(real.get('commit'))}); "
        f"the full table: [measured series]({link('reproductions/pretrained/real-series-v2.md')}).",
        "",
    ]
    return out


def v3_score(name: str, card: dict, reported: dict | None) -> tuple[dict, bool]:
    """A 1D model's score on the v3 prior (c): its card's, or, for a card shipped before that
    prior existed, the zoo report's (``results/pretrained/zoo.json``, which scores it on the
    same tasks); the flag says the score came from the report."""
    if card.get("eval_v3"):
        return card["eval_v3"], False
    entry = ((reported or {}).get(name) or {}).get("eval_v3") or {}
    return entry, bool(entry)


def index_page(
    cards: dict[str, dict],
    target_gap: float,
    link,
    reported: dict | None = None,
    retired: dict[str, str] | None = None,
) -> str:
    """The zoo's overview: every shipped model in a table, each linking to its card (the 2D
    models in a table of their own). ``reported``: the zoo report's cards
    (``results/pretrained/zoo.json``), which score older cards on the v3 prior too;
    ``retired``: retired model -> its replacement (marked in the table)."""
    retired = retired or {}
    rows, any_reported = [], False
    for name, c in cards.items():
        if is_2d(c):
            continue
        v3, from_report = v3_score(name, c, reported)
        any_reported |= from_report
        row = index_row(name, c, [c.get("eval") or {}, c.get("eval_composite") or {}, v3])
        row[-2] += " *" if from_report else ""
        row[0] += f" (retired: use `{retired[name]}`)" if name in retired else ""
        rows.append(row)
    lines = [
        "# The zoo",
        "",
        "Small models shipped inside the package as zero-shot stand-ins for 1D GP regression. "
        "Load one by name (`tnpx.pretrained(NAME)`), predict with it on your data "
        "(`tnpx.predict(NAME, context, targets)`, `tnpx predict NAME --context ... --targets ...`) "
        "or list them (`tnpx models --pretrained`). Each page below is generated from the "
        "model's card, `src/tnpx/zoo/NAME.json`, when the site is built.",
        "",
        *table(
            [
                "model",
                "architecture",
                "prior",
                "training",
                "gap, single-kernel",
                "gap, composite",
                "gap, v3 prior",
                "safe range / hard limit (widths)",
            ],
            rows,
        ),
        "",
        "Gap: the GP oracle's LL per target point less the model's, on held-out tasks of each "
        f"prior, ± one standard error (the zoo's goal: at most {target_gap:g} on the "
        "single-kernel prior). Safe range: how far beyond the context's input range (in widths "
        "of that range) the 95 % interval stayed calibrated; past the hard limit `tnpx.predict` "
        "refuses unless `allow_extrapolation=True`."
        + (
            " Retired models are no longer offered by `tnpx.list_pretrained()` (too narrow "
            "beyond their context); they still load by name or path, with a warning."
            if retired
            else ""
        ),
        *(
            [
                "",
                "\\* scored on the v3 prior's tasks by [the zoo report]"
                f"({link('reproductions/pretrained/zoo.md')}) "
                "(`python -m experiments.zoo.train --report`): the model was shipped before "
                "that prior existed, so its card has no such score.",
            ]
            if any_reported
            else []
        ),
        "",
        *zoo_cards_2d.index_section({n: c for n, c in cards.items() if is_2d(c)}),
        "Models in other folders listed in the environment variable `TNPX_ZOO` load by name too; "
        f"[the zoo's results]({link('reproductions/pretrained/index.md')}) score them side by "
        "side.",
        "",
    ]
    return "\n".join(lines)
