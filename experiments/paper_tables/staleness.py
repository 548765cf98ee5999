"""What a table cell's numbers depend on (its ``settings``), and why a cached cell or a run
directory no longer belongs to the current table spec (a preset or size changed since): the
caches of ``experiments/paper_tables/build.py`` and ``experiments/paper_tables/te_ablation.py``
refuse such files rather than mix them into a table."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict
from pathlib import Path

from omegaconf import OmegaConf

from experiments.paper_tables.specs import ORACLE, is_trained
from tnpx.checkpoint import read_checkpoint
from tnpx.config import ExperimentConfig, config_to_yaml, load_config
from tnpx.models import PRESETS, resolve_hyper
from tnpx.training import run_files

# Config keys that do not change a cell's numbers whatever their value (so a cached cell stays
# valid without them).
NEUTRAL_TRAIN_KEYS = ("out_dir", "progress", "device", "prefetch")
# The keys of each section that cells have recorded since they recorded settings, kept at any
# value (seed, steps, lr ...). A key added to a section since is recorded only away from its
# default in the section's dataclass, so a key added at a default that changes nothing leaves
# every cached cell current. Frozen: a key added to the config is not added here.
RECORDED_KEYS = {
    "optim": ("name", "lr", "weight_decay", "betas"),
    "schedule": ("name", "warmup_steps", "min_lr_ratio"),
    "train": (
        "steps", "seed", "clip_value", "clip_norm", "log_every", "val_every", "val_batches",
        "checkpoint_every",
    ),
}  # fmt: skip


def cached_settings(cell: Path) -> dict:
    """The settings a cached cell (``cells/<column>-<label>.json``) records (``{}`` in cells
    written before settings were recorded)."""
    return json.loads(cell.read_text()).get("settings", {})


def as_json_values(value):
    """``value`` as it reads back from JSON (tuples become lists), to compare with a cache."""
    return json.loads(json.dumps(value))


def preset_options(model: dict) -> dict:
    """The hyper-parameters the model section's ``preset`` sets (``{}`` without a preset):
    what the preset's name stands for today, so a cell computed before a preset changed is
    not taken for one of the new preset."""
    preset = model.get("preset")
    if preset is None:
        return {}
    return as_json_values(PRESETS.get(model["name"], {}).get(preset, {}))


def model_settings(model: dict) -> dict:
    """The model section with, where it names a preset, the options that preset resolves to
    (``preset_options``). ``preset: null`` and a preset of no options (``context-moments``'
    ``kr-code``) build the model that naming none builds, and read as none."""
    if "preset" not in model:
        return dict(model)
    resolved = preset_options(model)
    if not resolved:
        return {k: v for k, v in model.items() if k != "preset"}
    return {**model, "preset_options": resolved}


def settings_difference(old: dict, new: dict) -> str:
    """What differs between two cells' settings, briefly: the model options by name, other
    sections by name (``a -> b`` for a model option; absent: ``-``)."""
    parts = []
    for section in sorted(set(old) | set(new)):
        a, b = old.get(section), new.get(section)
        if a == b:
            continue
        if section == "model" and isinstance(a, dict) and isinstance(b, dict):
            keys = sorted(k for k in set(a) | set(b) if a.get(k, "-") != b.get(k, "-"))
            parts += [
                f"model.{k} changed" if isinstance(a.get(k, b.get(k)), dict) else
                f"model.{k} {a.get(k, '-')!r} -> {b.get(k, '-')!r}"
                for k in keys
            ]  # fmt: skip
        else:
            parts.append(f"{section} differs")
    return "; ".join(parts)


def settings(cfg: ExperimentConfig) -> dict:
    """The config keys a cell's numbers depend on: the test set only for the oracle, the test
    set and the model for the other untrained models (fitted GPs); everything but where and
    how verbosely the run goes otherwise, a key added since cells recorded settings only away
    from its default (``RECORDED_KEYS``). A named preset is resolved into its options
    (``model_settings``)."""
    values = OmegaConf.to_container(OmegaConf.create(config_to_yaml(cfg)))
    values["model"] = model_settings(values["model"])
    if cfg.model["name"] == ORACLE:
        return {"data": values["data"], "eval": values["eval"]}
    if not is_trained(cfg.model["name"]):
        return {"model": values["model"], "data": values["data"], "eval": values["eval"]}
    for key in NEUTRAL_TRAIN_KEYS:
        values["train"].pop(key, None)
    for key in ("name", "description"):
        values.pop(key, None)
    for section, recorded in RECORDED_KEYS.items():
        defaults = section_defaults(getattr(cfg, section))
        for key in set(values[section]) - set(recorded):
            if key in defaults and values[section][key] == defaults[key]:
                values[section].pop(key)
    return values


def section_defaults(section) -> dict:
    """Each field's default in the dataclass of a config section (``cfg.train`` ...), as it
    reads back from JSON; a field without a default is left out."""
    defaults = {}
    for f in dataclasses.fields(section):
        if f.default is not dataclasses.MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = f.default_factory()
    return as_json_values(defaults)


def resolved_hyper(cfg: ExperimentConfig) -> dict:
    """The hyper-parameters the model of ``cfg`` is built with (its preset's, then the
    config's own), as its ``Hyper`` resolves them: a preset's ``dim_head: None`` reads as the
    number a checkpoint records (``dim_model // n_heads``)."""
    return as_json_values(asdict(resolve_hyper(cfg.model["name"], **cfg.model_options())))


def recorded_model_mismatch(cfg: ExperimentConfig) -> list[str]:
    """The model options of ``cfg`` (its preset's, then the config's own) that a model saved
    in its run directory (``model.pt``, ``checkpoints/last.pt``) records with another value:
    a run's ``config.yaml`` names a preset, the checkpoint holds what the preset was then."""
    want = resolved_hyper(cfg)
    mismatched = []
    for path in run_files(Path(cfg.train.out_dir)):
        if not path.exists():
            continue
        recorded = read_checkpoint(path)["model"]
        hyper = as_json_values(recorded.get("hyper", {}))
        if recorded["name"] != cfg.model["name"]:
            mismatched.append(f"{path}: model {recorded['name']}")
        mismatched += [
            f"{path}: {k} = {hyper.get(k)!r}, not {v!r}"
            for k, v in want.items()
            if hyper.get(k) != v
        ]
    return mismatched


def run_stale_reason(cfg: ExperimentConfig) -> str | None:
    """Why the run directory of ``cfg`` does not belong to it (a model saved there with other
    options, or trained with other settings), or None when it matches or does not exist."""
    if not is_trained(cfg.model["name"]):
        return None
    if mismatch := recorded_model_mismatch(cfg):
        return (
            f"{cfg.train.out_dir} holds a model built with other options ({'; '.join(mismatch)});"
            " delete it or pass --runs"
        )
    run_config = Path(cfg.train.out_dir) / "config.yaml"
    if run_config.exists():
        # Training never reads the eval section, so columns that differ only there (TE-4's
        # test regions) share one run.
        trained_with = {k: v for k, v in settings(load_config(run_config)).items() if k != "eval"}
        if trained_with != {k: v for k, v in settings(cfg).items() if k != "eval"}:
            return f"{run_config.parent} was trained with other settings; delete it or pass --runs"
    return None


def stale_reason(cfg: ExperimentConfig, cell: Path) -> str | None:
    """Why the cached cell or the run directory of ``cfg`` does not belong to ``cfg`` (a
    different ``--steps``, protocol, size or preset, or a preset whose options changed since),
    or None when both match or do not exist yet."""
    want = settings(cfg)
    if cell.exists() and (had := cached_settings(cell)) != want:
        return (
            f"{cell} was computed with other settings ({settings_difference(had, want)}); "
            "delete it or pass another --out"
        )
    return run_stale_reason(cfg)


def model_stale_reason(cfg: ExperimentConfig, cell: Path) -> str | None:
    """Why a cached cell that this command does not compute is still not the current spec's:
    its model (options, preset and what the preset resolves to) differs; None otherwise."""
    if not cell.exists():
        return None
    had = cached_settings(cell).get("model")
    want = settings(cfg).get("model")
    if had == want:
        return None
    difference = settings_difference({"model": had}, {"model": want})
    return (
        f"{cell} holds a model other than the table's row ({difference}): a cell from before "
        "the presets; delete it or pass another --out"
    )
