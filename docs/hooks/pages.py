"""MkDocs hook: the site's generated pages, made at build time from the files they describe.

- ``zoo/``: an overview and one card page per shipped model, from ``src/tnpx/zoo/NAME.json``
  (a card whose ``NAME.pt`` is beside it, as ``tnpx.list_pretrained`` counts them), written by
  ``docs/hooks/zoo_cards.py``.
- ``reproductions/``: every markdown file under ``results/`` (the ``cells/`` caches left out),
  ``README.md`` as its folder's index, with the images and files they link copied beside them;
  an overview, and a list of pages for a folder of several pages without a README.
- ``design-notes.md``, ``fidelity.md``: ``docs/design-notes.md`` and ``docs/fidelity.md``.
- the registered models' table on ``guide/models.md``, in place of its marker line.

The copied files' words are theirs; only two things change on the way. A link to a repository
file the site does not carry (a config, a script) becomes the path in code, and a link to a
file it does carry points at the site's copy. And the GitHub-flavoured markdown is laid out as
Python-Markdown (which MkDocs uses) reads it the same (:func:`_as_python_markdown`).

The nav in ``mkdocs.yml`` names a generated section by an entry ``generated: zoo`` (or
``reproductions``), which :func:`on_config` replaces by that section's pages. Built-in MkDocs
hooks (no plugin to install): ``hooks: [docs/hooks/pages.py]``.
"""

from __future__ import annotations

import ast
import json
import posixpath
import re
from functools import partial
from pathlib import Path, PurePosixPath

import zoo_cards  # docs/hooks/zoo_cards.py (MkDocs puts a hook's folder on sys.path to load it)
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "src" / "tnpx" / "zoo"
RESULTS = ROOT / "results"
SKIPPED_DIRS = {"cells"}  # per-cell JSON caches of the tables, not pages
MODELS_MARKER = "<!-- generated: tnpx models --markdown -->"
# The README's order: the papers' tables first, then everything else (unknown folders last).
PAPER_TABLES = [
    "kr1",
    "kr1-exact",
    "kr3",
    "kr4",
    "bo",
    "scaling",
    "te1",
    "te2",
    "te3",
    "te4",
    "te_ablation",
    "thesis",
]
OTHERS = [
    "pretrained",
    "demo",
    "samples",
    "incremental",
    "scaling-rope-ab",
    "perf",
    "convcnp-equivariance",
    "setconv-speed",
]
FOLDER_TITLES = {"bo": "Bayesian optimisation (KR-2, TNP-D)", "perf": "Speed and memory"}
OVERVIEW = "reproductions/index.md"
MEASUREMENTS = "reproductions/measurements/index.md"
OVERVIEW_TEXT = [
    "Each results folder of the repository (`results/<experiment>/`) holds tables and figures "
    "written by the command named at its top, with the commit, the hardware and the wall time. "
    "The pages here are those files, copied when the site is built. Budget runs (trained for a "
    "CPU, with far fewer steps than the papers) say so at their top; [fidelity to the "
    "papers](../fidelity.md) lists which preset of each model each table uses.",
    "",
    "The commands are the repository's lab: experiments under `experiments/` and speed and "
    "memory measurements under `benchmarks/`, each run from the repository root as `python -m "
    "experiments.STUDY.NAME` or `python -m benchmarks.NAME`; each table is rebuilt cell by "
    "cell and resumes where it stopped. The real-data tables (KR-4, TE-2, TE-3, TE-4) carry a "
    "`context-moments` row, with no model: every target gets the mean and variance of its "
    "task's context outputs, so a trained model that does not beat it has not yet learnt to "
    "use the input locations.",
]
COPIED_DOCS = {"design-notes.md": ROOT / "docs" / "design-notes.md",
               "fidelity.md": ROOT / "docs" / "fidelity.md"}  # fmt: skip
# Repository files that are pages of the site under another name.
SITE_NAMES = {"README.md": "index.md", **{f"docs/{k}": k for k in COPIED_DOCS}}

LINK = re.compile(r"(!?\[(?:[^\[\]]|\[[^\[\]]*\])*\])\(\s*<?([^)\s>]+)>?(\s+\"[^\"]*\")?\s*\)")
HTML_SRC = re.compile(r"""(<(?:img|a|source)\b[^>]*?\b(?:src|href)=)(["'])([^"']+)\2""")
FENCE = re.compile(r"^\s*(```|~~~)")

_state: dict = {}


# --- what is generated ------------------------------------------------------------------------


def _cards() -> dict[str, dict]:
    """The shipped models' cards, by name (only the package's own folder, not ``$TNPX_ZOO``)."""
    return {
        p.stem: json.loads(p.read_text())
        for p in sorted(ZOO.glob("*.json"))
        if (ZOO / f"{p.stem}.pt").is_file()
    }


def _retired() -> dict[str, str]:
    """``RETIRED`` of ``src/tnpx/zoo/__init__.py``: each retired model's replacement (read,
    not imported, as ``TARGET_GAP`` below)."""
    for node in ast.parse((ZOO / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "RETIRED" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    return {}


def _target_gap() -> float:
    """Issue 20's gap goal, ``TARGET_GAP`` of ``experiments/zoo/ship.py`` (read, not
    imported: the experiment imports the whole zoo pipeline)."""
    source = ROOT / "experiments" / "zoo" / "ship.py"
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "TARGET_GAP" for t in node.targets
        ):
            return float(ast.literal_eval(node.value))
    raise RuntimeError(f"{source}: no TARGET_GAP")


def _results_pages() -> dict[str, Path]:
    """Site path -> markdown file under results/ (README.md -> the folder's index.md)."""
    pages = {}
    for md in sorted(RESULTS.rglob("*.md")):
        rel = md.relative_to(RESULTS)
        if SKIPPED_DIRS & set(rel.parts[:-1]):
            continue
        name = "index.md" if md.name == "README.md" else md.name
        if md.parent == RESULTS and md.name == "README.md":
            name = "about-results.md"  # the section's own index.md is the overview
        pages[str(PurePosixPath("reproductions", *rel.parts[:-1], name))] = md
    return pages


def _title(md: Path) -> str:
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip().replace("`", "")
    return md.stem


def _uri(folder: Path) -> str:
    """The site folder of a results folder."""
    return str(PurePosixPath("reproductions", *folder.relative_to(RESULTS).parts))


def _folder_title(folder: Path) -> str:
    readme = folder / "README.md"
    rel = folder.relative_to(RESULTS).as_posix()
    return _title(readme) if readme.is_file() else FOLDER_TITLES.get(rel, f"results/{rel}/")


def _in(folder: Path, pages: dict[str, Path]) -> list[str]:
    """The site paths of the pages in ``folder`` and below."""
    return [uri for uri, md in pages.items() if md.is_relative_to(folder)]


def _folder_nav(folder: Path, pages: dict[str, Path], landings: dict[str, str]):
    """A results folder in the nav: its one page, or a section whose first page (the section's
    own page) is its README, or a generated list of its pages where it has no README."""
    below = _in(folder, pages)
    if len(below) == 1:
        return below[0]
    index = f"{_uri(folder)}/index.md"
    if index not in pages:
        landings[index] = _landing(folder, below, pages)
    items: list = [index]
    items += _named_apart(
        [u for u, md in pages.items() if md.parent == folder and u != index], pages
    )
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and p.name not in SKIPPED_DIRS):
        if _in(sub, pages):
            items.append(_folder_nav(sub, pages, landings))
    return {_folder_title(folder): items}


def _named_apart(uris: list[str], pages: dict[str, Path]) -> list:
    """Nav entries for ``uris``: a page whose title another of them shares gets its file's stem
    after the title (``real-series-v2``, ``-v3``: the same script's reports, one H1), where the
    nav would otherwise show the same line twice; the rest stay bare (MkDocs titles them)."""
    titles = [_title(pages[u]) for u in uris]
    return [
        {f"{t} ({pages[u].stem})": u} if titles.count(t) > 1 else u for u, t in zip(uris, titles)
    ]


def _landing(folder: Path, uris: list[str], pages: dict[str, Path]) -> str:
    here = _uri(folder)
    rows = [
        f"| `{pages[u].relative_to(ROOT).as_posix()}` | [{_title(pages[u])}]"
        f"({posixpath.relpath(u, here)}) |"
        for u in uris
    ]
    return "\n".join(
        [f"# {_folder_title(folder)}", "", "| file | page |", "| --- | --- |", *rows, ""]
    )


def _reproductions(pages: dict[str, Path]) -> tuple[list, dict[str, str]]:
    """The reproductions' nav, and the generated pages it needs (site path -> markdown): the
    section's overview, a page for the other measurements, a list for each results folder
    of several pages without a README."""
    folders = sorted({md.relative_to(RESULTS).parts[0] for md in pages.values()})
    papers = [f for f in PAPER_TABLES if f in folders]
    others = [f for f in OTHERS if f in folders]
    others += [f for f in folders if f not in PAPER_TABLES and f not in OTHERS]
    for uri in (OVERVIEW, MEASUREMENTS):
        if uri in pages:
            raise RuntimeError(f"results/ has a page at {uri}, which docs/hooks/pages.py makes")
    landings: dict[str, str] = {}
    nav: list = [OVERVIEW]
    nav += [_folder_nav(RESULTS / f, pages, landings) for f in papers]
    nav.append(
        {
            "Other measurements": [
                MEASUREMENTS,
                *(_folder_nav(RESULTS / f, pages, landings) for f in others),
            ]
        }
    )
    landings[OVERVIEW] = _overview(
        pages, {"The papers' tables": papers, "Other measurements": others}
    )
    landings[MEASUREMENTS] = _overview(pages, {"": others}, title="Other measurements")
    return nav, landings


def _overview(pages: dict[str, Path], groups: dict[str, list[str]], title: str = "") -> str:
    here = posixpath.dirname(MEASUREMENTS if title else OVERVIEW)
    lines = [f"# {title}", ""] if title else ["# Paper reproductions", "", *OVERVIEW_TEXT, ""]
    for group, folders in groups.items():
        if group:
            lines += [f"## {group}", ""]
        lines += ["| results | page |", "| --- | --- |"]
        for folder in folders:
            for uri in _in(RESULTS / folder, pages):
                where = pages[uri].relative_to(ROOT).as_posix()
                rel = posixpath.relpath(uri, here)
                lines.append(f"| `{where}` | [{_title(pages[uri])}]({rel}) |")
        lines.append("")
    return "\n".join(lines)


# --- links of a copied page -----------------------------------------------------------------


def _site_path(target: Path) -> str | None:
    """The site path of a repository file the site carries as a page, else None."""
    rel = target.relative_to(ROOT).as_posix()
    if rel in SITE_NAMES:
        return SITE_NAMES[rel]
    if target.suffix == ".md" and rel.startswith("results/"):
        for uri, md in _state["results"].items():
            if md == target:
                return uri
    return None


def _rewrite(text: str, source: Path, uri: str, assets: dict[str, Path]) -> str:
    """``text`` (the file ``source``, shown at site path ``uri``) with each relative link made
    to point at the site's copy: a page's site path, or a file under results/ copied beside
    its page (added to ``assets``). A link to any other repository file becomes its path in
    code; a link to nothing is left for the strict build to report."""
    here = posixpath.dirname(uri)

    def resolve(target: str) -> str | None:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return target
        path, _, anchor = target.partition("#")
        file = (source.parent / path).resolve()
        if not file.exists() or not file.is_relative_to(ROOT):
            return target  # a broken link: the strict build names it
        site = _site_path(file)
        if site is None and file.is_file() and file.is_relative_to(RESULTS):
            site = "reproductions/" + file.relative_to(RESULTS).as_posix()
            assets[site] = file
        if site is None:
            return None
        return posixpath.relpath(site, here) + (f"#{anchor}" if anchor else "")

    def link(m: re.Match) -> str:
        label, target, title = m.group(1), m.group(2), m.group(3) or ""
        new = resolve(target)
        if new is None:  # not on the site: say where it is in the repository
            file = (source.parent / target.partition("#")[0]).resolve()
            path = f"`{file.relative_to(ROOT).as_posix()}`"
            text = label[1:-1]
            return path if text.strip("`") == target else f"{text} ({path})"
        return f"{label}({new}{title})"

    def html(m: re.Match) -> str:
        new = resolve(m.group(3))
        return m.group(0) if new is None else f"{m.group(1)}{m.group(2)}{new}{m.group(2)}"

    out, fenced = [], False
    for line in text.splitlines(keepends=True):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            line = HTML_SRC.sub(html, LINK.sub(link, line))
        out.append(line)
    return "".join(out)


LIST_ITEM = re.compile(r"^ *(?:[-*+]|\d{1,3}[.)]) +\S")
TOP_ITEM = re.compile(r"^((?:[-*+]|\d{1,3}[.)]) +)\S")
BLOCK_START = re.compile(r"^ {0,3}(?:#|>|\||```|~~~)")


def _as_python_markdown(text: str) -> str:
    """GitHub-flavoured ``text`` made to read the same to Python-Markdown, which MkDocs uses:

    - a list item's content indented to its text (2 spaces after ``- ``) is indented to 4, as
      Python-Markdown wants it (else a paragraph, table or list nested in the item after a
      blank line leaves the item);
    - a blank line goes before a list or table that follows a line of text directly (GitHub
      starts one there; Python-Markdown would continue the paragraph and show ``-`` and ``|``),
      and before each item of a list whose items hold blank lines (a loose list, to both).

    Nothing else changes: the words, code and tables are the file's."""
    out: list[str] = []
    item = 0  # the text column of the top-level list item being read, 0 outside one
    loose = False  # that item has held a blank line
    fenced, prev = False, ""
    for line in text.splitlines(keepends=True):
        if not line.strip():
            loose = loose or bool(item)
            out.append(line)
            prev = "" if not fenced else prev
            continue
        indent = len(line) - len(line.lstrip(" "))
        top = None if fenced else TOP_ITEM.match(line)
        if not fenced and not top and indent < item:
            item, loose = 0, False  # a line left of the item's text ends the item
        if not fenced and prev.strip():
            is_text = not (LIST_ITEM.match(prev) or BLOCK_START.match(prev.lstrip()))
            if LIST_ITEM.match(line):
                apart = loose if item else is_text
            else:
                apart = line.lstrip().startswith("|") and is_text
            if apart:
                out.append("\n")
        if top:
            item = len(top.group(1))  # a loose list stays loose
        elif item and indent >= item and item < 4:
            line = " " * (4 - item) + line
        if FENCE.match(line):
            fenced = not fenced
        out.append(line)
        prev = "" if fenced else line
    return "".join(out)


# --- MkDocs events ------------------------------------------------------------------------------


def _expand(nav, generated: dict[str, list]):
    if isinstance(nav, list):
        out = []
        for item in nav:
            if isinstance(item, dict) and list(item) == ["generated"]:
                out.extend(generated[item["generated"]])
            else:
                out.append(_expand(item, generated))
        return out
    if isinstance(nav, dict):
        return {k: _expand(v, generated) for k, v in nav.items()}
    return nav


def on_config(config):
    cards = _cards()
    pages = _results_pages()
    _state.update(cards=cards, results=pages)
    reproductions, landings = _reproductions(pages)
    _state["landings"] = landings
    generated = {
        "zoo": ["zoo/index.md", *(f"zoo/{name}.md" for name in cards)],
        "reproductions": reproductions,
    }
    config["nav"] = _expand(config["nav"], generated)
    return config


def on_files(files: Files, config) -> Files:
    def add(uri: str, **source) -> None:
        if files.get_file_from_path(uri) is not None:
            raise RuntimeError(f"docs/hooks/pages.py generates {uri}, which docs/site/ has too")
        files.append(File.generated(config, uri, **source))

    assets: dict[str, Path] = {}
    for uri, path in COPIED_DOCS.items():
        text = _rewrite(path.read_text(encoding="utf-8"), path, uri, assets)
        add(uri, content=_as_python_markdown(text))

    bayes_file = RESULTS / "pretrained" / "bayes-reference.json"
    bayes = json.loads(bayes_file.read_text()) if bayes_file.is_file() else None
    gap = _target_gap()
    cards, retired = _state["cards"], _retired()
    reported_file = RESULTS / "pretrained" / "zoo.json"
    reported = json.loads(reported_file.read_text()) if reported_file.is_file() else None
    add(
        "zoo/index.md",
        content=zoo_cards.index_page(cards, gap, partial(_relative, "zoo"), reported, retired),
    )
    for name, card in cards.items():
        page = zoo_cards.card_page(card, gap, bayes, partial(_relative, "zoo"), retired.get(name))
        add(f"zoo/{name}.md", content=page)

    for uri, md in _state["results"].items():
        add(
            uri,
            content=_as_python_markdown(_rewrite(md.read_text(encoding="utf-8"), md, uri, assets)),
        )
    for uri, page in _state["landings"].items():
        add(uri, content=page)
    for uri, path in sorted(assets.items()):
        if files.get_file_from_path(uri) is None:
            add(uri, abs_src_path=str(path))
    return files


def _relative(here: str, page: str) -> str:
    """A link from a page in folder ``here`` to the site page ``page``."""
    return posixpath.relpath(page, here)


def _models_table() -> str:
    """The registered models, as ``tnpx models --markdown`` lists them (``tnpx.cli.
    commands.models_table``: name, summary, equivariances), with a ``|`` inside a cell escaped (a
    summary may hold one: ``|x_n - x_m|``)."""
    from tnpx.models import REGISTRY

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    def yes(flag: bool) -> str:
        return "yes" if flag else "no"

    rows = [
        "| model | what it is | translation equivariant | rotation equivariant |",
        "| --- | --- | --- | --- |",
    ]
    for name in sorted(REGISTRY):
        cls = REGISTRY[name]
        translation = yes(cls.translation_equivariant)
        if cls.equivariance_note:
            translation += f" ({cls.equivariance_note})"
        rows.append(
            f"| `{name}` | {cell(cls.summary)} | {cell(translation)} | "
            f"{yes(cls.rotation_equivariant)} |"
        )
    return "\n".join(rows)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MODELS_MARKER in markdown:
        markdown = markdown.replace(MODELS_MARKER, _models_table())
    return markdown
