"""Writing a zoo card: never one that names uncommitted code.

A card records the commit that produced each of its numbers (its own ``commit``, its safe
range's, its measured data's). :func:`tnpx.provenance.git_commit` marks a working tree with
uncommitted code ``+dirty``: no one can check such a commit out and re-run it, so a card
that names one cannot be reproduced (the 2D card shipped as ``417111a+dirty``, issue 53).
:func:`write_card` refuses such a card unless asked (``--allow-dirty``), and then marks it
(``"dirty": true``) and says so on stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DIRTY = "+dirty"  # tnpx.provenance.git_commit's mark of uncommitted code


class DirtyTree(ValueError):
    """A card would name a commit with uncommitted code."""


def dirty_commits(card: dict) -> list[str]:
    """Where ``card`` names uncommitted code: ``"key.path: commit"`` for every ``commit``
    entry, at any depth, that ends in ``+dirty``."""
    found: list[str] = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                here = f"{where}.{key}" if where else str(key)
                if key == "commit" and isinstance(value, str) and value.endswith(DIRTY):
                    found.append(f"{here}: {value}")
                walk(value, here)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}[{i}]")

    walk(card, "")
    return found


def check_clean(commit: str, what: str, allow_dirty: bool = False) -> None:
    """Refuse to start work whose result would name ``commit`` when it is dirty.

    Raises:
        DirtyTree: ``commit`` ends in ``+dirty`` and ``allow_dirty`` is False.
    """
    if commit.endswith(DIRTY) and not allow_dirty:
        raise DirtyTree(
            f"{what}: the working tree has uncommitted code (commit {commit}); commit it and "
            "re-run, so the card names a commit anyone can check out (--allow-dirty writes "
            "it anyway, marked dirty)"
        )


def write_card(path: Path, card: dict, allow_dirty: bool = False) -> dict:
    """Write ``card`` to ``path`` (JSON); returns what was written.

    Raises:
        DirtyTree: the card names uncommitted code (:func:`dirty_commits`) and
            ``allow_dirty`` is False; nothing is written.
    """
    dirty = dirty_commits(card)
    if dirty and not allow_dirty:
        raise DirtyTree(
            f"{path}: not written: the card names uncommitted code ({'; '.join(dirty)}); "
            "commit the code, re-run what produced those numbers, then write the card "
            "(--allow-dirty writes it anyway, marked dirty)"
        )
    if dirty:
        card = {**card, "dirty": True}
        print(f"WARNING: {path} names uncommitted code: {'; '.join(dirty)}", file=sys.stderr)
    path.write_text(json.dumps(card, indent=1) + "\n")
    return card
