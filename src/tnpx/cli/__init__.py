"""The ``tnpx`` command line (``tnpx --help``; ``python -m tnpx.cli`` is the same): the parser
and the train / runs / eval / plot / models commands (:mod:`tnpx.cli.commands`), ``tnpx
predict`` (:mod:`tnpx.cli.predict`), ``tnpx bo suggest`` (:mod:`tnpx.cli.bo`), ``tnpx data``
and ``tnpx demo`` (:mod:`tnpx.cli.tools`).
"""

from .commands import main

__all__ = ["main"]
