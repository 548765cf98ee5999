"""A zoo model's rows in the zero-shot studies' results files (``results/pretrained/<stem>*.json``),
which its card and the zoo's goals quote."""

from __future__ import annotations

import json
from pathlib import Path


def scored_run(name: str, results: Path, stem: str) -> tuple[dict, str, Path] | None:
    """The last by name of ``results/<stem>*.json`` that scored zoo model ``name``: the run,
    the model's label in it, and its path; None if none scored it."""
    # by stem: "real-series.json" sorts after "real-series-v2.json" ('.' > '-'), its stem before
    for path in sorted(results.glob(f"{stem}*.json"), key=lambda p: p.stem, reverse=True):
        run = json.loads(path.read_text())
        label = next((lab for lab, spec in run.get("models", {}).items() if spec == name), None)
        if label is not None:
            return run, label, path
    return None


def scored_summary(name: str, results: Path, stem: str, count: str) -> dict | None:
    """Zoo model ``name``'s summary row and the fitted GP's for every result key of the last by
    name of ``results/<stem>*.json`` that scored ``name`` (``count``: the file's number of
    splits or windows per key), with the file's name and commit; None if none scored it."""
    from experiments.zero_shot.series_report import GP

    found = scored_run(name, results, stem)
    if found is None:
        return None
    run, label, path = found
    rows = {
        key: {"model": r["summary"][label], GP: r["summary"][GP]}
        for key, r in run["results"].items()
    }
    return {"file": path.name, "commit": run["commit"], count: run[count], **rows}
