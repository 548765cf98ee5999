"""Optional dependencies, imported where they are used.

The core install (``pip install tnpx``) predicts, trains, evaluates and runs the zoo; the rest
comes with an extra of ``pyproject.toml``: ``bo`` (BoTorch, GPyTorch), ``gp`` (GPyTorch: the
``gp`` / ``mt-gp`` baselines), ``plot`` (matplotlib), ``xarray`` (NetCDF), ``tensorboard``,
``images``, ``real-data``, ``sklearn``, and ``lab`` / ``all`` for everything. A feature that
needs one calls :func:`require`, so a missing package is one line naming the extra to install.
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

#: pip's name of a package whose importable name differs.
PACKAGES = {
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "PIL": "pillow",
    "iris_sample_data": "iris-sample-data",
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message is one line naming its extra."""


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import and return ``module``, or raise :class:`MissingExtraError` (an ImportError)
    ``"<what> needs <package>: pip install 'tnpx[<extra>]'"``."""
    top = module.split(".")[0]
    try:
        with warnings.catch_warnings():  # linear_operator (gpytorch, botorch) at import
            warnings.filterwarnings(
                "ignore", "`torch.jit.script` is deprecated", DeprecationWarning
            )
            importlib.import_module(top)  # first, as ``import top.sub`` does
            return importlib.import_module(module)
    except ImportError as err:
        message = f"{what} needs {PACKAGES.get(top, top)}: pip install 'tnpx[{extra}]'"
        raise MissingExtraError(message, name=module) from err


def pyplot(what: str) -> ModuleType:
    """``matplotlib.pyplot`` on the file-only Agg backend (the ``plot`` extra)."""
    require("matplotlib", "plot", what).use("Agg")
    return importlib.import_module("matplotlib.pyplot")


def names_on_first_use(package: str, homes: dict[str, str]):
    """A package's module ``__getattr__`` (PEP 562) that imports each public name of ``homes``
    (name -> the package's module defining it) on first use, so that importing the package,
    or one module of it, pays for no other module."""

    def __getattr__(name: str):
        if name in homes:
            return getattr(importlib.import_module(f".{homes[name]}", package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


__all__ = [
    "MissingExtraError",
    "names_on_first_use",
    "pyplot",
    "require",
]
