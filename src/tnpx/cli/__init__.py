"""The ``tnpx`` command line (``tnpx --help``; ``python -m tnpx.cli`` is the same): the parser
and the train / runs / models commands (:mod:`tnpx.cli.commands`), ``tnpx eval`` and ``tnpx
plot`` (:mod:`tnpx.cli.evaluate`), ``tnpx predict`` (:mod:`tnpx.cli.predict`), ``tnpx bo
suggest`` (:mod:`tnpx.cli.bo`), ``tnpx data`` and ``tnpx demo`` (:mod:`tnpx.cli.tools`); the
arguments several take in :mod:`tnpx.cli.arguments`.
"""

from .commands import main

__all__ = ["main"]
