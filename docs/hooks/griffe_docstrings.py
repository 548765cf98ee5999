"""Griffe extension for the API pages: tnpx's docstring conventions, rendered and checked.

The docstrings are Google style with Sphinx cross-reference roles (``:func:`predict```,
``:class:`~tnpx.user_files.DataError```). mkdocstrings would show those roles as text
(":func:" before the name); this extension rewrites each into an optional cross-reference:
a link where the object has a page on the site, the name in code where it has none (so a
reference to an undocumented helper never fails the strict build). A name without a dot is
looked up beside the object, then in its module; ``~`` shows the last component only.

``Example:`` sections are read as ``Examples:`` (their ``>>>`` lines then render as code),
``Fitted attributes:`` as ``Attributes:``.

Arguments documented together (``xc, yc: the context``) are one row of the parameters table;
mkdocstrings' own check of the names is off for that reason (``warn_unknown_params: false``),
and this extension makes it instead: each name of such a row must be a parameter of the
signature, or the (strict) build fails with a warning naming the file and line.

Registered in ``mkdocs.yml`` (``plugins.mkdocstrings.handlers.python.options.extensions``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(class|func|meth|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")


class SphinxRoles(griffe.Extension):
    """``:func:`name``` and the other roles as optional cross-references (module docstring)."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any):
        if obj.docstring is None or ":`" not in obj.docstring.value:
            return

        def replace(m: re.Match) -> str:
            role, short, name = m.group(1), m.group(2), m.group(3).strip().removesuffix("()")
            shown = name.rsplit(".", 1)[-1] if short else name
            path = _resolve(obj, name, loader)
            if path and role != "mod" and _is_module(path, loader):
                # `tnpx.predict` names the function and, as a path, its module
                path = _resolve(obj, f"{name}.{name.rsplit('.', 1)[-1]}", loader) or path
            code = f"<code>{shown}</code>"
            if path is None:
                return f"`{shown}`"
            return f'<autoref identifier="{path}" optional>{code}</autoref>'

        obj.docstring.value = ROLE.sub(replace, obj.docstring.value)


# Section titles the docstrings use -> the Google titles griffe parses: ``Example:`` holds
# ``>>>`` lines (griffe renders them as code only in ``Examples:``; in any other section they
# are markdown, and ``>>>`` a nested quotation); ``Fitted attributes:`` is scikit-learn's
# ``Attributes:`` (a list of names; under another title the names run into one paragraph).
SECTION_TITLES = {"Example": "Examples", "Fitted attributes": "Attributes"}
SECTION = re.compile(
    r"^(\s*)(" + "|".join(map(re.escape, SECTION_TITLES)) + r"):[ \t]*$", re.MULTILINE
)


GROUPED = re.compile(r"^(\s+\w+(?:, \w+)+):")  # an item naming several: ``X_, y_: ...``


class SectionTitles(griffe.Extension):
    """The docstrings' section titles read as the Google titles (:data:`SECTION_TITLES`).

    In an ``Attributes:`` section, an item naming several attributes (``X_, y_:``) keeps its
    names together: griffe takes what follows the first space as a type."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any):
        if obj.docstring is None:
            return
        text = SECTION.sub(
            lambda m: f"{m.group(1)}{SECTION_TITLES[m.group(2)]}:", obj.docstring.value
        )
        lines, section = text.split("\n"), None
        for i, line in enumerate(lines):
            if line.strip() and not line[:1].isspace():
                section = line.strip()
            elif section == "Attributes:":
                lines[i] = GROUPED.sub(lambda m: m.group(1).replace(", ", ",\u00a0") + ":", line)
        obj.docstring.value = "\n".join(lines)


class ParameterNames(griffe.Extension):
    """Each name an ``Args:`` row documents (``a, b:`` rows name several) is a parameter."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any):
        if obj.docstring is None or not (obj.is_function or obj.is_class):
            return
        try:
            known = {p.name for p in obj.parameters}
        except Exception:  # noqa: BLE001 - a class whose __init__ griffe cannot see
            return
        if not known:
            return
        sections = obj.docstring.parse(
            "google", warn_unknown_params=False, warn_missing_types=False
        )
        for section in sections:
            if section.kind is not griffe.DocstringSectionKind.parameters:
                continue
            for param in section.value:
                for name in (n.strip().lstrip("*") for n in param.name.split(",")):
                    if name and name not in known:
                        griffe.logger.warning(
                            f"{obj.relative_filepath}:{obj.docstring.lineno}: parameter "
                            f"{name!r} of {obj.path}'s docstring is not in its signature"
                        )


def _resolve(obj: griffe.Object, name: str, loader: griffe.GriffeLoader) -> str | None:
    """The full path of the object ``name`` names from ``obj``'s docstring, or None."""
    scopes = [obj, *_parents(obj)]
    candidates = [name] + [f"{scope.path}.{name}" for scope in scopes]
    for path in candidates:
        try:
            found = loader.modules_collection.get_member(path)
        except Exception:  # noqa: BLE001 - not there, or an alias to an unloaded package
            continue
        if found is not None:
            return path
    # a package's docstring naming what it exports lazily (`tnpx.bo`: `NPSurrogate`)
    if obj.is_module and "." not in name:
        for sub in obj.modules.values():
            if name in sub.members and not sub.members[name].is_alias:
                return f"{sub.path}.{name}"
    return None


def _is_module(path: str, loader: griffe.GriffeLoader) -> bool:
    try:
        return loader.modules_collection.get_member(path).is_module
    except Exception:  # noqa: BLE001
        return False


def _parents(obj: griffe.Object):
    parent = obj.parent
    while parent is not None:
        yield parent
        parent = parent.parent
