"""Table cells and sections the zoo reports share (zoo.md's 1D and 2D parts): a card's
training, safe-range and shift cells, and the measured-data tables beside a fitted GP (a value
± its standard error: :func:`experiments.kit.pm_key`)."""

from __future__ import annotations

from experiments.zero_shot.series_report import GP


def stage_steps(card: dict) -> str:
    """A card's training steps, stage by stage (``100,000 + 20,000``: ``stages``, then its own)."""
    return " + ".join(f"{st['steps']:,}" for st in [*card.get("stages", []), card])


def train_hours(card: dict) -> str:
    """A card's training time over every stage, in hours ("—" where not recorded)."""
    seconds = card.get("train_s_total", card.get("train_s"))
    return f"{seconds / 3600:.1f} h" if seconds else "—"


def table_head(columns: list[str]) -> list[str]:
    """A markdown table's header and separator lines for ``columns``."""
    return ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]


def shift_names(cards: dict[str, dict]) -> list[str]:
    """The shift conditions of 2D cards (the first card's: every 2D card has the same)."""
    return list(next(iter(cards.values()))["shifts"]["conditions"])


def shift_cell(row: dict) -> str:
    """A 2D card's shift row (``shifts.conditions[name]``): the model's LL, the oracle's in
    brackets."""
    return f"{row['ll'][0]:.3f} ({row['oracle_ll'][0]:.3f})"


def generation(name: str) -> int:
    """The zoo generation of 1D model ``name``: 3 for ``gp1d-v3-*``, 2 for ``gp1d-v2-*``, else 1."""
    return next((g for g in (3, 2) if name.startswith(f"gp1d-v{g}-")), 1)


def safe_cells(card: dict) -> str:
    """A card's safe range, hard limit (context widths) and its lowest 95 % coverage within
    one width beyond the context (``experiments/zoo/safe_range.py``)."""
    sr = card.get("safe_range")
    if not sr:
        return "not measured | — | —"
    return f"{sr['widths']:g} | {sr['hard_limit']:g} | {near_coverage(sr):.3f}"


def near_coverage(safe_range: dict) -> float:
    """The lowest 95 % coverage of a card's ``safe_range`` profile within one width beyond the
    context (zoo.md's "far cov.")."""
    return min(b["coverage95"] for b in safe_range["profile"] if b["n"] and 0 < b["high"] <= 1.0)


def sig3(x: float) -> str:
    """Three significant digits, trailing zeros kept (14.0, 0.520), whole numbers from 100."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:#.3g}"


def real_rows(scored: dict[str, dict], kind: str, what: str = "series") -> list[str]:
    """RMSE and NLL per series (``what``: or field) of ``kind`` (the key's part after "/") for
    each model of ``scored`` (name -> :func:`real_series_summary`), and the fitted GP (from the
    first), with the GP's latency over the model's."""
    if not scored:
        return []
    names = list(scored)
    rows = [
        f"| {what} | "
        + " | ".join(f"`{n}` RMSE" for n in names)
        + f" | {GP} RMSE | "
        + " | ".join(f"`{n}` NLL" for n in names)
        + f" | {GP} NLL | "
        + " | ".join(f"GP time / `{n}`" for n in names)
        + " |",
        "|" + " --- |" * (3 * len(names) + 3),
    ]
    first = scored[names[0]]
    series = [key.split("/")[0] for key in first if key.endswith(f"/{kind}")]
    for s in series:
        key = f"{s}/{kind}"
        gp = first[key][GP]
        cells = [sig3(scored[n][key]["model"]["rmse"][0]) for n in names]
        cells.append(sig3(gp["rmse"][0]))
        cells += [f"{scored[n][key]['model']['nll'][0]:.3f}" for n in names]
        cells.append(f"{gp['nll'][0]:.3f}")
        cells += [f"{gp['seconds'] / scored[n][key]['model']['seconds']:.0f}x" for n in names]
        rows.append(f"| {s} | " + " | ".join(cells) + " |")
    return rows


def real_section(
    real: dict[str, dict], kind: str, label: str, what: str = "series", per: str = "series",
    over: str = "splits",
) -> list[str]:  # fmt: skip
    """The lines of :func:`real_rows` under a sentence that says what they are (``label``: of
    ``kind``; ``what``, ``per``, ``over``: the data, what a GP is fitted to, what the means
    are over); none when no model was scored on ``kind``."""
    rows = real_rows(real, kind, what)
    if not rows:
        return []
    files = sorted({f"`{r['file']}` (commit `{r['commit']}`)" for r in real.values()})
    return [
        "",
        f"Zero-shot on measured {what}, {label}, against a GP fitted per {per} (RMSE and NLL "
        f"per target point in the {what}' units, means over {over}; the s.e. and the details "
        f"in {', '.join(files)}):",
        "",
        *rows,
    ]
