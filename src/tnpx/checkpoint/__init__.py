"""Model checkpoints, a room of its own: above ``models`` and ``config`` (a record rebuilds a
model and the experiment it was trained on), below ``zoo``, ``training`` and ``apply`` (which
all read and write them). :mod:`.records` holds the format; its names are re-exported here
because ``from tnpx.checkpoint import read_checkpoint`` is public (examples, the lab).

A checkpoint is a plain dict of tensors, numbers and strings read with ``weights_only=True``:
it stores no module path, so where this code lives is no part of the format.
"""

from .records import (
    FORMAT,
    FORMAT_VERSION,
    CheckpointError,
    atomic_save,
    experiment_from_record,
    first_non_finite,
    load,
    model_from_record,
    model_record,
    read_checkpoint,
    save,
    state_mismatch,
    stored_exposure,
    stored_input_units,
    stored_units,
    upgrade_state_dict,
)

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "CheckpointError",
    "atomic_save",
    "experiment_from_record",
    "first_non_finite",
    "load",
    "model_from_record",
    "model_record",
    "read_checkpoint",
    "save",
    "state_mismatch",
    "stored_exposure",
    "stored_input_units",
    "stored_units",
    "upgrade_state_dict",
]
