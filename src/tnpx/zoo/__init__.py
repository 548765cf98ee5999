"""The model zoo: small trained models shipped inside the package, ``tnpx.pretrained(name)``.

Each model is a checkpoint ``NAME.pt`` (weights + the experiment config it was trained with,
so :func:`tnpx.predict` knows its training domain) and a card ``NAME.json``: what data it was
trained on, the config and command that trained it, the hardware and time, and its held-out
evaluation (LL per target, the GP oracle's on the same tasks, the gap). The repository's
``python -m experiments.zoo.train`` trains, evaluates and packages them (``--ship`` packages
the v2 long runs); ``tnpx models --pretrained`` lists them.

Models are looked up in this package's folder first, then in the folders named by the
environment variable ``TNPX_ZOO`` (``os.pathsep``-separated), where a model shipped into
another folder can be tried before it is committed. A shipped name always resolves to the
package's own file, so no extra folder can change what ``gp1d-tnp`` loads.

Retired models (:data:`RETIRED`): the first zoo's ``gp1d-tnp`` and ``gp1d-te-tnp`` are
confidently wrong beyond their context, so :func:`list_pretrained` and ``tnpx models
--pretrained`` no longer offer them. They still load by name or path (a checkpoint is a
contract), with a warning naming the model that replaces them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..user_files import warn_user

HERE = Path(__file__).parent
EXTRA_FOLDERS = "TNPX_ZOO"  # environment variable: more folders of NAME.pt + NAME.json

# Retired shipped model -> its replacement. Why (issue 53): beyond the context their intervals
# are far too narrow. Forecasting the later half of held-out growth curves, 28 % of the hidden
# points fell beyond 5 predicted standard deviations (a per-curve GP: 12.5 %; the v2 and v3
# models: 0-0.7 %), and on their own prior their coverage falls below 0.9 at once outside the
# context (safe range 0 widths, results/pretrained/safe-range.md).
RETIRED = {"gp1d-tnp": "gp1d-v2-tnp", "gp1d-te-tnp": "gp1d-v2-te-tnp-rope"}


def zoo_folders() -> list[Path]:
    """Where models are looked up, in order: this package's folder, then ``$TNPX_ZOO``'s."""
    extra = os.environ.get(EXTRA_FOLDERS, "")
    return [HERE, *(Path(p) for p in extra.split(os.pathsep) if p)]


def _models() -> dict[str, Path]:
    """Each model's name -> the folder holding it (the first folder that has the name)."""
    found: dict[str, Path] = {}
    for folder in zoo_folders():
        for card in sorted(folder.glob("*.json")):
            if (folder / f"{card.stem}.pt").is_file():
                found.setdefault(card.stem, folder)
    return found


def list_pretrained(include_retired: bool = False) -> list[str]:
    """Names of the shipped models, sorted; the :data:`RETIRED` ones (which still load) only
    with ``include_retired``."""
    names = sorted(_models())
    return names if include_retired else [n for n in names if not is_retired(n)]


def is_retired(name: str) -> bool:
    """Whether ``name`` is a retired model of this package (not of an extra folder)."""
    return name in RETIRED and _models().get(name) == HERE


def warn_if_retired(name: str) -> None:
    """The warning a retired model gives when it is loaded by name."""
    if is_retired(name):
        warn_user(
            f"{name} is retired from the zoo: beyond its context its intervals are far too "
            f"narrow (its safe range is 0 context widths); use {RETIRED[name]} "
            "(results/pretrained/safe-range.md)"
        )


def model_card(name: str) -> dict:
    """The card of pretrained model ``name`` (see the module docstring)."""
    return json.loads((_folder(name) / f"{name}.json").read_text())


def pretrained_path(name: str) -> Path:
    """The checkpoint file of pretrained model ``name``."""
    return _folder(name) / f"{name}.pt"


def checkpoint_file(model: str | os.PathLike) -> Path:
    """The checkpoint ``model`` names: the file at that path, else the shipped model of that
    name (``gp1d-v2-tnp``). Every command and function taking "a checkpoint path or a pretrained
    model's name" resolves it here.

    Raises:
        CheckpointError: ``model`` is neither a file nor a shipped model's name (the message
            lists the shipped names).
    """
    path = Path(model)
    if path.is_file():
        return path
    if isinstance(model, str) and model in _models():
        warn_if_retired(model)
        return pretrained_path(model)
    from ..checkpoint import CheckpointError

    raise CheckpointError(
        f"{model}: no such checkpoint file (give the path of a model written by `tnpx train` "
        f"or tnpx.save, or a pretrained model's name: {', '.join(list_pretrained()) or 'none'})"
    )


def card_of_checkpoint(path: str | os.PathLike) -> dict | None:
    """The card of the zoo model whose checkpoint file ``path`` is, or None for any other
    file (a user's checkpoint has no card)."""
    path = Path(path).resolve()
    folder = _models().get(path.stem)
    if folder is None or (folder / f"{path.stem}.pt").resolve() != path:
        return None
    return model_card(path.stem)


def pretrained(name: str):
    """Load pretrained model ``name`` (in eval mode).

    Example:
        >>> import tnpx
        >>> model = tnpx.pretrained("gp1d-v2-tnp")  # doctest: +SKIP
    """
    from ..checkpoint import load

    warn_if_retired(name)
    return load(pretrained_path(name)).eval()


def _folder(name: str) -> Path:
    """The folder holding model ``name``; a ValueError listing the shipped names if none."""
    models = _models()
    if name not in models:
        raise ValueError(
            f"no pretrained model {name!r}; shipped: {', '.join(sorted(models)) or 'none'} "
            "(`tnpx models --pretrained` describes them)"
        )
    return models[name]


def trained_on_composite(card: dict) -> bool:
    """Whether a card's model trained on the composite prior (its ``trained_on`` sentence,
    written by ``experiments/zoo/ship.trained_on``, then reads "a mixture")."""
    return "a mixture" in card["trained_on"]


def _prior(card: dict) -> str:
    if card.get("dim_x", 1) == 2:
        return "2D composite GPs"
    return "single + composite GPs" if trained_on_composite(card) else "single-kernel GPs"


def _steps(card: dict) -> str:
    """A card's training steps, all stages together (a fine-tuned model says how many)."""
    stages = card.get("stages", [])
    if not stages:
        return f"{card['steps']:,}"
    return f"{card['steps_total']:,} ({len(stages) + 1} stages)"


def describe() -> str:
    """A markdown table of the shipped models for ``tnpx models --pretrained``, each model's
    training prior in full below it. The LL and gap columns are each card's ``eval``; the
    table says they share their tasks only when the cards' oracle LLs agree."""
    cards = {name: model_card(name) for name in list_pretrained()}
    lines = [
        "| name | model | params | steps | trained on | LL | GP oracle LL | gap |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, c in cards.items():
        e = c["eval"]
        lines.append(
            f"| {name} | {c['model']} | {c['params']:,} | {_steps(c)} | {_prior(c)} | "
            f"{e['ll']:.3f} ± {e['ll_se']:.3f} | {e['oracle_ll']:.3f} | "
            f"{e['gap']:.3f} ± {e['gap_se']:.3f} |"
        )
    evals = [c["eval"] for c in cards.values() if c.get("dim_x", 1) == 1]
    # the same tasks give the same oracle LL: say "the same" only when they do
    same = len({(e["n_tasks"], round(e["oracle_ll"], 9)) for e in evals}) == 1
    where = (
        f"the same {evals[0]['n_tasks']:,} held-out 1D single-kernel GP tasks for every 1D "
        "model (a 2D model: its own prior's)"
        if same
        else "each card's held-out tasks (see its `config`)"
    )
    lines += [
        "",
        f"LL per target point on {where}; gap = GP oracle − model (lower is better). "
        "Training priors:",
        *(f"- {name}: {c['trained_on']}" for name, c in cards.items()),
    ]
    retired = [n for n in list_pretrained(include_retired=True) if is_retired(n)]
    if retired:
        lines += ["", "Retired (too narrow beyond the context; they load by name, with a warning):"]
        lines += [f"- {name}: use {RETIRED[name]}" for name in retired]
    return "\n".join(lines)


__all__ = [
    "EXTRA_FOLDERS",
    "RETIRED",
    "card_of_checkpoint",
    "checkpoint_file",
    "describe",
    "is_retired",
    "list_pretrained",
    "model_card",
    "pretrained",
    "pretrained_path",
    "trained_on_composite",
    "warn_if_retired",
    "zoo_folders",
]
