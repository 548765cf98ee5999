"""The ``tnpx`` command line: ``tnpx {train,runs,eval,plot,predict,models,demo,data,bo} --help``.

Builds the parser, runs a command (every error in one line) and holds train, runs and models;
the other subcommands live beside it: ``eval`` and ``plot`` in :mod:`tnpx.cli.evaluate`,
``predict`` in :mod:`tnpx.cli.predict`, ``data`` and ``demo`` in :mod:`tnpx.cli.tools`,
``bo`` in :mod:`tnpx.cli.bo` (arguments several of them take: :mod:`tnpx.cli.arguments`).
The lab's commands (paper tables, the BO and scaling benchmarks, the zoo pipeline) are not
here: they run from a clone of the repository as ``python -m experiments.NAME`` and
``python -m benchmarks.NAME``.
"""

from __future__ import annotations

import argparse
import sys
from argparse import SUPPRESS

from ..extras import MissingExtraError
from .evaluate import add_eval, add_plot
from .predict import add_predict
from .tools import add_data, add_demo

DEBUG_HELP = "on an error, show the full traceback instead of one line"


def _train(args) -> int:
    from ..training.entry import train

    result = train(
        args.config, args.overrides, resume=args.resume, overwrite=args.overwrite,
        max_minutes=args.max_minutes,
    )  # fmt: skip
    if result.stopped_early:
        print(f"checkpoint: {result.out_dir / 'checkpoints' / 'last.pt'}")
    else:
        print(f"trained {result.steps_done} steps; model: {result.out_dir / 'model.pt'}")
    return 0


def _runs(args) -> int:
    from ..training.runs import find_runs, run_status, status_table

    folders = find_runs(args.folders)
    if not folders:
        print(f"no runs under {', '.join(args.folders)}")
        return 0
    print(status_table([run_status(f) for f in folders]))
    return 0


def _positive_minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of minutes > 0, got {text!r}")
    return value


def models_table(markdown: bool = True) -> str:
    """The registered models with their equivariances (the README's model list)."""
    from ..models import REGISTRY

    rows = [
        "| model | what it is | translation equivariant | rotation equivariant |",
        "| --- | --- | --- | --- |",
    ]
    for name in sorted(REGISTRY):
        cls = REGISTRY[name]
        doc = cls.summary
        yes = lambda b: "yes" if b else "no"  # noqa: E731
        translation = yes(cls.translation_equivariant)
        if cls.equivariance_note:
            translation += f" ({cls.equivariance_note})"
        rows.append(f"| `{name}` | {doc} | {translation} | {yes(cls.rotation_equivariant)} |")
    if markdown:
        return "\n".join(rows)
    return "\n".join(f"{n:12s} {REGISTRY[n].summary}" for n in sorted(REGISTRY))


def _models(args) -> int:
    if args.pretrained:
        from ..zoo import describe

        print(describe())
        print("\nLoad one with tnpx.pretrained(NAME); predict with `tnpx predict NAME ...`.")
        return 0
    print(models_table(markdown=args.markdown))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tnpx", description="Transformer neural processes.")
    parser.add_argument("--version", action="version", version=f"tnpx {_version()}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "train",
        help="train a model from a YAML config",
        description="Train from CONFIG with section.key=value overrides, e.g. "
        "`tnpx train configs/kr1-rbf-budget.yaml model.dim_model=64 train.steps=2000`.",
    )
    p.add_argument("config", help="YAML experiment config (configs/*.yaml)")
    p.add_argument("overrides", nargs="*", help="section.key=value overrides")
    again = p.add_mutually_exclusive_group()
    again.add_argument(
        "--resume", action="store_true", help="continue from the run's last checkpoint"
    )
    again.add_argument(
        "--overwrite",
        action="store_true",
        help="train afresh into a folder that already holds a run (its checkpoint and model "
        "are removed); without it or --resume such a folder is refused",
    )
    p.add_argument(
        "--max-minutes",
        type=_positive_minutes,
        metavar="M",
        help="train for M minutes of wall clock, then checkpoint and exit 0 (continue with "
        "--resume: the run ends exactly as an uninterrupted one); a finished run does nothing",
    )
    p.set_defaults(func=_train)

    p = sub.add_parser(
        "runs",
        help="where long training runs stand: steps, speed, ETA, validation LL",
        description="A table of each run folder's progress, read from its files "
        "(config.yaml, metrics.csv, checkpoints/last.pt). Advance a run with "
        "`tnpx train CONFIG --resume --max-minutes M`.",
    )
    p.add_argument(
        "folders", nargs="*", default=["long-runs"], help="run folders, or folders of runs"
    )
    p.set_defaults(func=_runs)

    add_eval(sub)
    add_plot(sub)

    p = sub.add_parser("models", help="list the registered models (or the pretrained ones)")
    p.add_argument("--markdown", action="store_true", help="as a markdown table")
    p.add_argument(
        "--pretrained",
        action="store_true",
        help="list the models shipped with tnpx: data, held-out LL, gap to the GP oracle",
    )
    p.set_defaults(func=_models)

    add_demo(sub)
    add_predict(sub)
    add_data(sub)
    from .bo import add_bo_parser

    add_bo_parser(sub)
    _add_debug_flag(parser)
    return parser


def _add_debug_flag(parser: argparse.ArgumentParser) -> None:
    """``--debug`` on every (sub)command, so ``tnpx bo suggest MODEL ... --debug`` works as well
    as ``tnpx --debug bo suggest MODEL ...``; only the top level sets its default."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                command.add_argument(
                    "--debug", action="store_true", default=SUPPRESS, help=DEBUG_HELP
                )
                _add_debug_flag(command)


def _version() -> str:
    from .. import __version__

    return __version__


def error_line(err: Exception) -> str:
    """One line saying what went wrong. Errors tnpx raises for bad input (ValueError and its
    subclasses: configs, checkpoints, data), the OS's (a missing or unreadable file) and a
    missing optional package (the extra to install) speak for themselves; anything else is
    named by its type, with a pointer to ``--debug``."""
    text = str(err).strip()
    first = text.splitlines()[0] if text else ""
    if isinstance(err, (ValueError, OSError, RuntimeError, MissingExtraError)) and first:
        return first
    hint = " (run with --debug for the traceback)"
    return f"{type(err).__name__}: {first}{hint}" if first else f"{type(err).__name__}{hint}"


# Commands that moved to the repository's lab: where they are now, in one line,
# rather than argparse's "invalid choice". Their options are unchanged.
MOVED_TO_LAB = {
    ("bench",): "python -m benchmarks.scaling",
    ("bo", "run"): "python -m experiments.bo.run",
}


def moved_to_lab(argv: list[str]) -> str | None:
    """The line for a command of ``argv`` that moved to the lab, else None."""
    words = tuple(a for a in argv if not a.startswith("-"))
    for command, replacement in MOVED_TO_LAB.items():
        if words[: len(command)] == command:
            return (
                f"tnpx {' '.join(command)}: error: moved to the repository's lab; from the root "
                f"of a clone run `{replacement} ...` (same options)"
            )
    return None


def main(argv: list[str] | None = None) -> int:
    """Run a command. Every error ends in one line ``tnpx CMD: error: ...`` and exit code 2;
    ``--debug`` re-raises it, traceback and all. KeyboardInterrupt is never caught here
    (training turns SIGINT into a checkpoint and a clean stop itself)."""
    moved = moved_to_lab(sys.argv[1:] if argv is None else argv)
    if moved:
        print(moved, file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except Exception as err:
        if getattr(args, "debug", False):
            raise
        print(f"tnpx {args.command}: error: {error_line(err)}", file=sys.stderr)
        return 2
