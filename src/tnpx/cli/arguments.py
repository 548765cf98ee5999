"""Arguments that several ``tnpx`` commands take, defined once so that their spelling and help
read the same everywhere: the model positional (``eval``, ``plot``, ``predict``, ``bo
suggest``) and the input columns of a user's table (``predict``, ``bo suggest``)."""

from __future__ import annotations

import argparse


def add_model_argument(parser: argparse.ArgumentParser, dest: str = "model") -> None:
    """The model to use, as ``args.<dest>``: a checkpoint file or a pretrained model's name
    (resolved by :func:`tnpx.zoo.checkpoint_file` in the command)."""
    parser.add_argument(
        dest,
        metavar=dest.upper(),
        help="checkpoint path (e.g. runs/NAME/model.pt) or a pretrained model's name "
        "(`tnpx models --pretrained`)",
    )


def add_x_cols(parser: argparse.ArgumentParser) -> None:
    """``--x-cols COL ...``: the input columns of a user's table (``args.x_cols``, None: the
    command's default)."""
    parser.add_argument("--x-cols", nargs="+", metavar="COL", help="input columns")
