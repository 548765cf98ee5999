"""The zoo's card pages of the documentation site (``docs/hooks/zoo_cards.py`` and
``zoo_cards_2d.py``), rendered without MkDocs: a 2D model's card (``dim_x: 2``,
``experiments/zoo/ship_2d.py``'s) gets its own 2D prior, its shifts and its measured
fields; every shipped 1D card's page, and the overview, come out as they did before 2D cards
(less what the v3 prior added since: its score row, its overview column, its prior's name).

The 2D card is a shipped 1D card turned 2D as the 2D pipeline ships one: its shift rows are
``experiments.zero_shot.shifts.summarise``'s on made-up per-task LLs (re-derived here in
float64), its measured fields in ``experiments.zoo.scored.scored_summary``'s shape.
"""

from __future__ import annotations

import importlib.util
import json
import posixpath
import subprocess
import sys
from dataclasses import asdict
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch

import tnpx
from experiments.zero_shot import shifts

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / "docs" / "hooks"
# The last commit whose zoo_cards.py rendered 1D cards only: the 1D pages must read as they did
# then, byte for byte (move the pin when a 1D page changes on purpose).
BEFORE_2D = "9e56ee310ae8095e911d03cc5b874ee8d29a938b"
BASE_CARD = "gp1d-v2-tnp"  # a shipped 1D card with every 1D field
N_TASKS = 64
link = partial(posixpath.relpath, start="zoo")  # as docs/hooks/pages.py links from zoo/


@pytest.fixture
def hooks(monkeypatch):
    """The hook modules, imported as MkDocs imports them (their folder on sys.path), and the
    package's own zoo only (as the site build has it)."""
    monkeypatch.syspath_prepend(str(HOOKS))
    monkeypatch.delenv("TNPX_ZOO", raising=False)
    import zoo_cards
    import zoo_cards_2d

    return zoo_cards, zoo_cards_2d


def _shipped_cards() -> dict[str, dict]:
    # the site pages every shipped card, the retired ones too
    return {name: tnpx.zoo.model_card(name) for name in tnpx.list_pretrained(include_retired=True)}


def _cards_1d() -> dict[str, dict]:
    """The shipped 1D models' cards (the package ships a 2D model too)."""
    return {name: c for name, c in _shipped_cards().items() if c.get("dim_x", 1) == 1}


def _bayes() -> dict | None:
    path = ROOT / "results" / "pretrained" / "bayes-reference.json"
    return json.loads(path.read_text()) if path.is_file() else None


# -- the 1D pages -------------------------------------------------------------------------------


def _module_before_2d(tmp_path: Path):
    """docs/hooks/zoo_cards.py as of ``BEFORE_2D``, imported under another name."""
    try:
        source = subprocess.run(
            ["git", "show", f"{BEFORE_2D}:docs/hooks/zoo_cards.py"],
            cwd=ROOT, capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        pytest.skip(f"no git checkout holding commit {BEFORE_2D[:7]}")
    path = tmp_path / "zoo_cards_before_2d.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("zoo_cards_before_2d", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_shipped_1d_page_is_byte_identical_to_before_2d_cards(hooks, tmp_path):
    zoo_cards, _ = hooks
    before = _module_before_2d(tmp_path)
    cards, bayes = _cards_1d(), _bayes()
    assert cards and all(not zoo_cards.is_2d(c) for c in cards.values())
    for name, card in cards.items():
        # the v3 prior (c), scored on cards shipped since, is one row the pin's pages lack
        without_v3 = {k: v for k, v in card.items() if k != "eval_v3"}
        for gap in (0.15, 0.5):  # the goal met and missed
            new = _v3_prior_unnamed(zoo_cards.card_page(without_v3, gap, bayes, link))
            assert new == before.card_page(without_v3, gap, bayes, link), name
            lines = _v3_prior_unnamed(zoo_cards.card_page(card, gap, bayes, link)).splitlines()
            extra = [line for line in lines if line.startswith("| v3 prior GPs |")]
            assert len(extra) == ("eval_v3" in card), name
            assert [line for line in lines if line not in extra] == new.splitlines(), name
    # the overview gained the v3 prior's gap column, and names the v3 model's prior as such
    assert _without_v3_column(zoo_cards.index_page(cards, 0.15, link)) == before.index_page(
        cards, 0.15, link
    )


def _without_v3_column(page: str) -> str:
    """The overview as it read before its v3 prior's column: that column dropped from every
    table row and a v3 model's prior named "composite", as it then was."""
    lines = page.split("\n")
    header = next(line for line in lines if "gap, v3 prior" in line)
    column = [c.strip() for c in header.split("|")].index("gap, v3 prior")
    out = []
    for line in lines:
        if line.startswith("|") and line.count("|") == header.count("|"):
            cells = line.split("|")
            del cells[column]
            line = "|".join(cells)
        out.append(line)
    return _v3_prior_unnamed("\n".join(out))


def _v3_prior_unnamed(page: str) -> str:
    """A page with the v3 model's prior named "composite", as pages named it before the v3
    prior was told apart (``card_cells.prior_kind``), and the goal named by its issue number,
    as it then was."""
    page = page.replace("the zoo's goal", "issue 20's goal")
    page = page.replace("| v3 composite", "| composite")
    # the likelihood row came with issue 52's families: one row the pin's pages lack
    return "\n".join(line for line in page.split("\n") if not line.startswith("| likelihood |"))


def test_a_1d_page_keeps_its_1d_priors_and_measured_series(hooks):
    zoo_cards, _ = hooks
    for name, card in _cards_1d().items():
        page = zoo_cards.card_page(card, 0.15, _bayes(), link)
        assert "(single-kernel prior) |" in page and "| single-kernel GPs |" in page
        composite = "Not scored on the composite prior" in page
        assert composite == ("eval_composite" not in card), name
        assert "## Measured series" in page and "## Shifts" not in page
        assert "## Measured fields" not in page and "2D" not in page
        assert "It takes one input and one output column (1D regression)" in page


# -- a 2D card ----------------------------------------------------------------------------------


def _shift_rows(translated_cost: float, seed: int = 0) -> tuple[dict, dict]:
    """A card's ``shifts`` (as ``experiments.zoo.ship_2d.shift_entry`` writes it) from made-up
    per-task LLs, and those LLs (condition -> (model, oracle) ``[N_TASKS]`` float64): the
    translated condition costs the model ``translated_cost`` nats per task, the density
    conditions move model and oracle alike."""
    gen = torch.Generator().manual_seed(seed)
    base_model = -0.5 + 0.2 * torch.randn(N_TASKS, generator=gen, dtype=torch.float64)
    base_oracle = base_model + 0.3 + 0.05 * torch.rand(N_TASKS, generator=gen, dtype=torch.float64)
    yt = torch.randn(N_TASKS, 16, 1, generator=gen)
    plan = shifts.conditions(shifts.SHIFT, list(shifts.DENSITIES))
    lls, rows = {}, {}
    for i, condition in enumerate(plan):
        move = 0.1 * i * torch.randn(N_TASKS, generator=gen, dtype=torch.float64)
        model = base_model + move - (translated_cost if condition.shift else 0.0)
        lls[condition.name] = (model, base_oracle + move)
        scored = {"model": model, "oracle": base_oracle + move, "coverage": torch.rand(N_TASKS)}
        base = {"model": base_model, "oracle": base_oracle, "yt": yt}
        row = {**asdict(condition), **shifts.summarise({**scored, "yt": yt}, base), "seconds": 1.0}
        rows[condition.name] = {k: v for k, v in row.items() if k != "tasks"}
    return {"n_tasks": N_TASKS, "eval_seed": 0, "conditions": rows}, lls


def _field(model: tuple[float, float], gp: tuple[float, float]) -> dict:
    """One field and context size of a card's ``real_fields``: RMSE and NLL, mean and s.e."""

    def entry(nll: tuple[float, float], rmse: float, seconds: float) -> dict:
        return {"rmse": [rmse, rmse / 10], "nll": list(nll), "seconds": seconds,
                "coverage95": 0.9, "beyond_5sd": 0.0}  # fmt: skip

    return {"model": entry(model, 41.5, 0.01), "fitted GP": entry(gp, 20.25, 1.5)}


def _card_2d(translated_cost: float = 1.0) -> tuple[dict, dict]:
    """A shipped 1D card turned 2D as experiments/zoo/ship_2d.py ships one, and its
    shift rows' per-task LLs."""
    card = tnpx.zoo.model_card(BASE_CARD)
    for key in ("per_kernel", "eval_composite", "stages", "steps_total", "train_s_total"):
        card.pop(key)
    card.pop("real_series")
    card.update(name="gp2d-test", model="te-tnp-rope", dim_x=2)
    card["trained_on"] = "2D GPs: per task a sum of a smooth RBF and a rough Matérn"
    card["safe_range"]["tasks"] = "gp2d-composite prior, test split, eval.seed 0"
    card["shifts"], lls = _shift_rows(translated_cost)
    card["real_fields"] = {
        "file": "real-fields-2d.json", "commit": "f1e1d00", "n_windows": 16,
        "topobathy/30": _field((6.5, 0.1), (4.5, 0.1)),  # worse than the GP
        "topobathy/100": _field((4.4, 0.1), (4.5, 0.1)),  # as good
        "jacksboro/30": _field((5.0, 0.5), (4.5, 0.5)),  # within two s.e.
    }  # fmt: skip
    return card, lls


def _section(page: str, title: str) -> str:
    """The text of the page's section ``## title``, to the next section."""
    return page.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _pm(mean: float, se: float) -> str:
    return f"{mean:.3f} ± {se:.3f}"


def _mean_se(values: torch.Tensor) -> tuple[float, float]:
    """Mean and standard error over tasks, in float64 numpy (not the pipeline's mean_se)."""
    v = values.numpy().astype(np.float64)
    return v.mean(), v.std(ddof=1) / np.sqrt(len(v))


def test_a_2d_page_names_its_own_2d_prior(hooks):
    zoo_cards, _ = hooks
    card, _ = _card_2d()
    page = zoo_cards.card_page(card, 0.15, _bayes(), link)
    e = card["eval"]
    assert "| prior | 2D composite GPs ([below](#prior-what-it-was-trained-on)) |" in page
    assert f"| gap to the GP oracle | {_pm(e['gap'], e['gap_se'])} nats per target point " in page
    assert "per target point (its own 2D prior) |" in page
    scores = _section(page, "Scores")
    rows = [line for line in scores.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[1:] == [
        f"| 2D composite GPs | {e['n_tasks']:,} | {_pm(e['ll'], e['ll_se'])} | "
        f"{e['oracle_ll']:.3f} | {_pm(e['gap'], e['gap_se'])} | {e['coverage95']:.3f} |"
    ]
    for wrong in ("single-kernel GPs", "the composite prior", "Gap goal", "gap goal", "(1D regr"):
        assert wrong not in page, wrong
    assert "the zoo's goal of at most 0.15 is on the 1D single-kernel prior" in page
    assert (
        f"On held-out tasks of its own 2D prior its 95 % intervals cover {e['coverage95']:.3f}"
        in page
    )
    assert "It takes two input columns and one output column (2D regression)" in page
    assert "with two inputs, the larger of the two columns'" in _section(page, "Safe range")


def test_a_2d_page_tables_its_shifts(hooks):
    zoo_cards, _ = hooks
    card, lls = _card_2d()
    shifted = _section(zoo_cards.card_page(card, 0.15, None, link), "Shifts")
    assert f"on {N_TASKS} held-out tasks (eval seed 0)" in shifted
    base_model, base_oracle = lls["unshifted"]
    for name, (model, oracle) in lls.items():
        cov = card["shifts"]["conditions"][name]["coverage95"]
        change = "—" if name == "unshifted" else _pm(*_mean_se(model - base_model))
        oracle_change = "—" if name == "unshifted" else _pm(*_mean_se(oracle - base_oracle))
        row = (
            f"| {name} | {_pm(*_mean_se(model))} | {_pm(*_mean_se(oracle))} | {change} | "
            f"{oracle_change} | {cov:.3f} |"
        )
        assert row in shifted, row
    assert "- *translated +10*: every input moved by +10 on both axes, far beyond" in shifted
    assert "- *density x2*: the points twice as dense: the same tasks on a domain 0.71 " in shifted
    assert "- *density x0.5*: the points half as dense: the same tasks on a domain 1.41 " in shifted
    assert "- *unshifted*: the prior as trained." in shifted


def test_the_shifts_link_their_page_only_where_the_site_carries_it(hooks, tmp_path, monkeypatch):
    zoo_cards, zoo_cards_2d = hooks
    card, _ = _card_2d()
    monkeypatch.setattr(zoo_cards_2d, "RESULTS", tmp_path)
    page = zoo_cards.card_page(card, 0.15, None, link)
    zoo_link = "[the zoo's scores](../reproductions/pretrained/zoo.md)."
    assert f"Every 2D model under the same shifts: {zoo_link}" in page
    assert "shifts-2d.md" not in page and "real-fields-2d.md" not in page
    (tmp_path / "pretrained").mkdir()
    for stem in ("shifts-2d", "real-fields-2d"):
        (tmp_path / "pretrained" / f"{stem}.md").write_text("# results\n")
    page = zoo_cards.card_page(card, 0.15, None, link)
    assert "[the shifts](../reproductions/pretrained/shifts-2d.md)." in page
    assert "[measured fields](../reproductions/pretrained/real-fields-2d.md)." in page


def test_a_2d_page_shows_its_measured_fields_in_the_1d_tables_place(hooks):
    zoo_cards, _ = hooks
    card, _ = _card_2d()
    page = zoo_cards.card_page(card, 0.15, None, link)
    assert "## Measured series" not in page
    assert page.index("## Safe range") < page.index("## Measured fields") < page.index("## Limits")
    fields = _section(page, "Measured fields")
    assert "over 16 windows" in fields and "commit `f1e1d00`" in fields
    header = "| field | context points | RMSE (m) | fitted GP RMSE (m) | NLL | fitted GP NLL |"
    assert header in fields
    real = card["real_fields"]
    for key, name in (("topobathy/30", "Vancouver Island"), ("jacksboro/30", "Jacksboro fault")):
        m, g = real[key]["model"], real[key]["fitted GP"]
        cells = [f"{v[0]:#.3g} ± {v[1]:#.3g}" for v in (m["rmse"], g["rmse"], m["nll"], g["nll"])]
        row = f"| {name} | {key.split('/')[1]} | {' | '.join(cells)} | {1.5 / 0.01:.0f}× |"
        assert row in fields, row
    # the same table code as the 1D series: the 1D page's header is the same but for the unit
    one_d = zoo_cards.card_page(tnpx.zoo.model_card(BASE_CARD), 0.15, None, link)
    assert "| RMSE | fitted GP RMSE | NLL | fitted GP NLL | GP time / model time |" in one_d


def test_the_2d_limits_say_what_the_shifts_and_fields_show(hooks):
    zoo_cards, _ = hooks
    card, _ = _card_2d(translated_cost=1.0)
    limits = _section(zoo_cards.card_page(card, 0.15, None, link), "Limits")
    assert "its gap to the GP oracle widens" in limits and "translated +10: " in limits
    assert "density x" not in limits  # the density rows move model and oracle alike
    assert "worse than a GP fitted to each window" in limits
    assert "Vancouver Island with 30 context points." in limits  # not 100, not Jacksboro
    assert "Jacksboro" not in limits
    equivariant, _ = _card_2d(translated_cost=0.0)
    equivariant["real_fields"]["topobathy/30"] = _field((4.4, 0.1), (4.5, 0.1))
    limits = _section(zoo_cards.card_page(equivariant, 0.15, None, link), "Limits")
    assert "widens" not in limits and "fitted to each window" not in limits


def test_the_hooks_render_a_2d_card_as_mkdocs_loads_them(tmp_path):
    """MkDocs puts a hook's folder on sys.path only while it runs the hook's module: the 2D
    sections must be imported then, not when a page is rendered."""
    script = f"""
import importlib.util, json, sys
sys.path.insert(0, {str(HOOKS)!r})
spec = importlib.util.spec_from_file_location("pages_like", {str(HOOKS / "zoo_cards.py")!r})
module = importlib.util.module_from_spec(spec)
sys.modules["zoo_cards"] = module
spec.loader.exec_module(module)
sys.path.pop(0)
card = {{"name": "gp2d-bare", "dim_x": 2}}
print(module.card_page(card, 0.15, None, str) + module.index_page({{"gp2d-bare": card}}, 0.15, str))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "## Shifts" in done.stdout and "## Measured fields" in done.stdout
    assert "[`gp2d-bare`](gp2d-bare.md)" in done.stdout


def test_every_shipped_2d_page_has_its_shifts_fields_and_safe_range(hooks):
    zoo_cards, _ = hooks
    cards = {n: c for n, c in _shipped_cards().items() if zoo_cards.is_2d(c)}
    assert cards, "the package ships a 2D model"
    for name, card in cards.items():
        page = zoo_cards.card_page(card, 0.15, _bayes(), link)
        assert "## Shifts" in page and "## Measured fields" in page, name
        assert "Not on this card" not in page and "## Measured series" not in page, name
        assert f"{card['safe_range']['widths']:g}" in page, name


def test_a_bare_2d_card_still_renders(hooks):
    zoo_cards, _ = hooks
    page = zoo_cards.card_page({"name": "bare-2d", "dim_x": 2}, 0.15, None, link)
    assert "Not on this card (it has no `shifts`)." in page
    assert "Not on this card (it has no `real_fields`)." in page
    assert "No held-out score" in page and "the composite prior" not in page


def test_the_overview_lists_2d_models_in_a_table_of_their_own(hooks):
    zoo_cards, _ = hooks
    cards = _cards_1d()
    card, _ = _card_2d()
    alone = zoo_cards.index_page(cards, 0.15, link)
    both = zoo_cards.index_page({**cards, card["name"]: card}, 0.15, link)
    e, sr = card["eval"], card["safe_range"]
    row = (
        f"| [`gp2d-test`](gp2d-test.md) | `te-tnp-rope`, {card['params']:,} parameters | 2D "
        f"composite | {card['steps']:,} steps, {card['train_s'] / 3600:.1f} h | "
        f"{_pm(e['gap'], e['gap_se'])} | {sr['widths']:g} / {sr['hard_limit']:g} |"
    )
    assert row in both and "| gap, own 2D prior |" in both
    # the 1D table and text are as without the 2D card: the 2D table is inserted whole
    start = both.index("Zero-shot stand-ins for 2D GP regression")
    end = both.index("Models in other folders")
    assert both[:start] + both[end:] == alone


def test_a_retired_models_page_and_row_say_so_and_name_its_replacement(hooks, monkeypatch):
    """Issue 53: the first zoo is retired (docs/hooks/pages.py reads ``tnpx.zoo.RETIRED``)."""
    zoo_cards, _ = hooks
    pytest.importorskip("mkdocs")  # pages.py is an MkDocs hook
    import pages

    assert pages._retired() == tnpx.zoo.RETIRED
    cards = _cards_1d()
    page = zoo_cards.card_page(cards["gp1d-tnp"], 0.15, _bayes(), link, "gp1d-v2-tnp")
    head = page.split("\n")[:4]
    assert head[2] == '!!! warning "Retired"' and "[`gp1d-v2-tnp`](gp1d-v2-tnp.md)" in head[3]
    plain = zoo_cards.card_page(cards["gp1d-tnp"], 0.15, _bayes(), link)
    assert "Retired" not in plain and page.replace("\n".join(head[2:4]) + "\n\n", "") == plain
    index = zoo_cards.index_page(cards, 0.15, link, None, tnpx.zoo.RETIRED)
    assert "| [`gp1d-tnp`](gp1d-tnp.md) (retired: use `gp1d-v2-tnp`) |" in index
    assert "| [`gp1d-v2-tnp`](gp1d-v2-tnp.md) |" in index
    assert "still load by name or path, with a warning" in index
