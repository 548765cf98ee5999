"""Model checkpoints: the config needed to rebuild a model plus its state dict.

A checkpoint is a plain dict of tensors, numbers and strings, read back with
``torch.load(..., weights_only=True)``: loading never unpickles code. A file is read once
(:func:`read_checkpoint`); the model (:func:`model_from_record`) and the experiment it was
trained on (:func:`experiment_from_record`) both come from that record.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .._version import __version__
from ..models.base import NeuralProcess
from ..models.registry import REGISTRY, build_model

if TYPE_CHECKING:
    from ..config import ExperimentConfig

FORMAT = "tnpx-checkpoint"
# 2: the transformer-NP skeleton's parameter names (models declare the renames from 1).
FORMAT_VERSION = 2


class CheckpointError(ValueError):
    """A file is not a readable tnpx checkpoint."""


def model_record(model: NeuralProcess) -> dict:
    """The dict :func:`save` writes: format tag, version, model config, state dict."""
    ref = next(model.parameters(), None)
    dtype = str(ref.dtype).removeprefix("torch.") if ref is not None else "float32"
    return {
        "dtype": dtype,
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "tnpx_version": __version__,
        "model": model.config,
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
    }


def atomic_save(obj: dict, path: str | os.PathLike) -> None:
    """``torch.save`` to a temporary file in the same folder, then rename over ``path``, so a
    crash mid-write never leaves a truncated checkpoint."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(model: NeuralProcess, path: str | os.PathLike, **extra) -> None:
    """Save ``model`` (config + weights) to ``path``; ``extra`` entries are stored beside them."""
    atomic_save({**model_record(model), **extra}, path)


def _unreadable(path: Path, err: Exception) -> str:
    """Why ``torch.load`` refused ``path``, in tnpx's words. Torch's own message for a file
    holding code suggests retrying with ``weights_only=False``, which would run that code: it
    is never passed on."""
    if isinstance(err, PermissionError):
        return f"{path}: cannot read the file (permission denied)"
    if "GLOBAL" in str(err):  # the weights-only unpickler met a class or function
        return (
            f"{path}: not a readable tnpx checkpoint: it holds Python objects besides tensors, "
            "numbers and strings, which tnpx refuses to load (loading them could run code)"
        )
    if isinstance(err, EOFError):
        return f"{path}: not a readable tnpx checkpoint: the file is empty or cut short"
    return f"{path}: not a readable tnpx checkpoint: not a torch file, or corrupted or cut short"


def _torch_load(path: Path) -> object:
    """``torch.load`` with weights only; its warnings (pickle protocol, say) stay quiet."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # truncated, not a torch file, or contains pickled code
        raise CheckpointError(_unreadable(path, err)) from None


def read_checkpoint(path: str | os.PathLike) -> dict:
    """Load and check a checkpoint dict; raise :class:`CheckpointError` with the reason."""
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"{path}: is a folder, not a checkpoint file")
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    record = _torch_load(path)
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a tnpx checkpoint (no '{FORMAT}' format tag)")
    version = record.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise CheckpointError(
            f"{path}: checkpoint format version {version!r} is newer than this tnpx "
            f"understands ({FORMAT_VERSION}); upgrade tnpx"
        )
    model = record.get("model")
    if not isinstance(model, dict):
        raise CheckpointError(f"{path}: checkpoint has no model config")
    name = model.get("name")
    if name not in REGISTRY:
        raise CheckpointError(
            f"{path}: unknown model name {name!r}; this tnpx has {', '.join(sorted(REGISTRY))}"
        )
    return record


def upgrade_state_dict(model: NeuralProcess, state: dict, version: int) -> dict:
    """A state dict saved under checkpoint format ``version``, with the parameter names of
    this format: each older version's prefix renames (``model.legacy_renames``) in turn."""
    for step in range(version, FORMAT_VERSION):
        renames = model.legacy_renames(step)
        upgraded = {}
        for key, value in state.items():
            for old, new in renames:
                if key.startswith(old):
                    key = None if new is None else new + key[len(old) :]
                    break
            if key is not None:
                upgraded[key] = value
        state = upgraded
    return state


def model_from_record(record: dict, source: str | os.PathLike) -> NeuralProcess:
    """The model a checkpoint record (:func:`read_checkpoint`) describes, with its weights, on
    the CPU; ``source`` (the file) names it in messages. The one place a checkpoint's state
    dict goes into a model.

    Raises:
        CheckpointError: the weights or dtype do not match the recorded model.
    """
    cfg, version = record["model"], record["format_version"]
    try:
        model = build_model(cfg["name"], cfg["dim_x"], cfg["dim_y"], **cfg.get("hyper", {}))
        dtype = getattr(torch, record.get("dtype", "float32"))
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError(f"unknown dtype {record.get('dtype')!r}")
        model = model.to(dtype)
        state = upgrade_state_dict(model, record["state_dict"], version)
        mismatch = state_mismatch(state, model.state_dict())
        if mismatch:
            raise ValueError(mismatch)
        model.load_state_dict(state)
    except (ValueError, RuntimeError, KeyError, TypeError, AttributeError) as err:
        raise CheckpointError(
            f"{source}: checkpoint does not match model {cfg['name']!r}: {err}"
        ) from err
    bad = first_non_finite(state)
    if bad is not None:
        raise CheckpointError(
            f"{source}: checkpoint holds non-finite weights (NaN or Inf) in {bad}"
        )
    return model


def _shape(value: object) -> str:
    return str(list(value.shape)) if torch.is_tensor(value) else type(value).__name__


def state_mismatch(saved: dict, expected: dict) -> str | None:
    """The first difference between a saved state dict and a model's (a key one lacks, or a
    shape), in one line; None if they fit. torch's own message lists every key over many
    lines."""
    for key, value in expected.items():
        if key not in saved:
            return f"{key} is in the model but not in the file"
        if _shape(saved[key]) != _shape(value):
            return f"{key} has shape {_shape(saved[key])} in the file, {_shape(value)} in the model"
    extra = next((k for k in saved if k not in expected), None)
    return None if extra is None else f"{extra} is in the file but not in the model"


def first_non_finite(state: dict) -> str | None:
    """The name of the first floating-point tensor of ``state`` holding NaN or Inf, or None."""
    for key, value in state.items():
        if torch.is_tensor(value) and value.is_floating_point() and not value.isfinite().all():
            return key
    return None


def experiment_from_record(record: dict) -> ExperimentConfig | None:
    """The experiment config a checkpoint record stores (training writes it), or None.

    Raises:
        CheckpointError: the stored config is malformed or not one this tnpx can read (another
            version's, say).
    """
    from ..config import ConfigError, config_from_yaml  # omegaconf only where a config is read

    text = record.get("experiment")
    if text is None or text == "":
        return None
    try:
        return config_from_yaml(text)
    except ConfigError as err:
        raise CheckpointError(f"the checkpoint's stored experiment config: {err}") from err


def load(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> NeuralProcess:
    """Rebuild a model saved by :func:`save` (or a training checkpoint) and load its weights.

    Raises:
        CheckpointError: the file is missing, truncated, not a tnpx checkpoint, from a newer
            format, or names a model this version does not have.
    """
    return model_from_record(read_checkpoint(path), path).to(map_location).eval()


def stored_units(record: dict, source: str | os.PathLike):
    """The unit map a checkpoint trained on a user's data stores (``record["normalisation"]``,
    written by training from its data source: ``value_model = (value - loc) / scale`` per
    input and output column) as ``(UnitMap, x_columns, y_columns)``; None if it stores none.

    Raises:
        CheckpointError: the record is there but cannot be read (one line).
    """
    import numpy as np

    from ..units import Affine, UnitMap

    stored = record.get("normalisation")
    if stored is None:
        return None
    dims = {"x": record["model"]["dim_x"], "y": record["model"]["dim_y"]}
    maps, columns = {}, {}
    try:
        for side, dim in dims.items():
            part = stored[side]
            loc = np.asarray(part["loc"], dtype=np.float64)
            scale = np.asarray(part["scale"], dtype=np.float64)
            names = list(part["columns"])
            if loc.shape != (dim,) or scale.shape != (dim,) or len(names) != dim:
                raise ValueError(f"{side}: expected {dim} columns")
            if not (np.isfinite(loc).all() and np.isfinite(scale).all() and (scale > 0).all()):
                raise ValueError(f"{side}: loc and scale must be finite, scale > 0")
            maps[side], columns[side] = Affine(loc, scale), names
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(
            f"{source}: its stored normalisation cannot be read ({err}); retrain or re-save it"
        ) from None
    return UnitMap(maps["x"], maps["y"]), columns["x"], columns["y"]


def stored_exposure(record: dict, source: str | os.PathLike) -> str | None:
    """The exposure column a count model trained on a user's data was given
    (``record["normalisation"]["exposure"]["column"]``: the ``table`` source's option
    ``exposure``); None where it records none (every other checkpoint: exposure 1).

    Raises:
        CheckpointError: the record is there but names no column (one line).
    """
    part = (record.get("normalisation") or {}).get("exposure")
    if part is None:
        return None
    column = part.get("column") if isinstance(part, dict) else None
    if not isinstance(column, str) or not column:
        raise CheckpointError(
            f"{source}: its stored exposure column cannot be read (expected {{column: <name>}}, "
            f"got {part!r}); retrain or re-save it"
        )
    return column


def stored_input_units(record: dict, source: str | os.PathLike) -> dict[str, str] | None:
    """The unit of each input column a checkpoint's stored normalisation records
    (``record["normalisation"]["x"]["units"]``: ``"hours since 1970-01-01"`` for a time input,
    ``""`` for a plain number), as ``{column: unit}``; None where it records none (an older
    checkpoint, a table source's: prediction then takes numbers, as it always did).

    Raises:
        CheckpointError: the units are there but are not one string per input column.
    """
    part = (record.get("normalisation") or {}).get("x")
    units = part.get("units") if isinstance(part, dict) else None
    if units is None:
        return None
    columns = list(part.get("columns") or [])
    if not isinstance(units, list) or len(units) != len(columns):
        bad = f"expected one per input column ({len(columns)})"
    elif not all(isinstance(u, str) for u in units):
        bad = "expected strings"
    else:
        return dict(zip(columns, units))
    raise CheckpointError(
        f"{source}: its stored input units cannot be read ({bad}); retrain or re-save it"
    )
