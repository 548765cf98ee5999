"""Writing a command's output files without losing data.

- :func:`refuse_overwriting`: an output path that is one of the command's inputs (the same
  file: compared with ``os.path.samefile`` where both exist, so symbolic and hard links
  count, else by the resolved path) is refused before anything is written.
- :func:`atomic_write`: a file is written under a temporary name in its own folder and
  renamed onto its path only when complete (``os.replace``: atomic on one file system), so a
  command that fails midway leaves neither a partial file nor the temporary one.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether paths ``a`` and ``b`` name one file (existing or not)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): compare where the paths lead
        return Path(a).resolve() == Path(b).resolve()


def refuse_overwriting(outputs: dict, inputs: dict) -> None:
    """Raise ``ValueError`` if an output path is an input path or another output's.
    ``outputs``, ``inputs``: option name (``"--out"``) -> path, or None where not given."""
    given_out = [(k, v) for k, v in outputs.items() if v is not None]
    given_in = [(k, v, "an input") for k, v in inputs.items() if v is not None]
    for i, (name, path) in enumerate(given_out):
        earlier = [(k, v, "another output") for k, v in given_out[:i]]
        for other, source, what in [*given_in, *earlier]:
            if same_file(path, source):
                raise ValueError(
                    f"{name} {path} is the {other} file {source}: refusing to overwrite "
                    f"{what}; choose another path for {name}"
                )


@contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (same suffix, so writers that read the format
    from it still can); on success it is renamed onto ``path``, on failure removed."""
    path = Path(path)
    tmp = _reserve(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _reserve(path: Path) -> Path:
    """Create an empty, new file ``.<stem>.tmp-<random><suffix>`` beside ``path``; the mode
    is the one a new file gets (``0o666`` less the umask), as ``path`` itself would."""
    while True:
        tmp = path.with_name(f".{path.stem}.tmp-{secrets.token_hex(4)}{path.suffix}")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp


__all__ = [
    "atomic_write",
    "refuse_overwriting",
    "same_file",
]
