"""The core install (``pip install tnpx``, no extras) predicts, trains, evaluates and runs the
zoo; a feature that needs an extra fails with one line naming ``pip install 'tnpx[...]'``.

Each check runs in a subprocess in which the packages only the extras bring cannot be
imported: a ``sitecustomize`` on ``PYTHONPATH`` hides them from every import finder, so
``import matplotlib`` raises ModuleNotFoundError and ``importlib.util.find_spec`` answers None,
as in an environment without them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers.tiny import write_tiny

# End to end through the lab's scripts or a subprocess: `make test-slow` (CI runs it).
pytestmark = pytest.mark.slow

# What only the extras install (scipy and pillow arrive with several of them).
OPTIONAL = (
    "matplotlib botorch gpytorch linear_operator tensorboard xarray netCDF4 statsmodels "
    "sklearn skimage mlxtend scipy PIL pyarrow zarr"
).split()

HIDE = f"""
import sys

OPTIONAL = {set(OPTIONAL)!r}


class _Hide:
    def __init__(self, finder):
        self._finder = finder

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in OPTIONAL:
            return None
        return self._finder.find_spec(name, path, target)

    def __getattr__(self, attr):
        return getattr(self._finder, attr)


sys.meta_path[:] = [_Hide(f) if hasattr(f, "find_spec") else f for f in sys.meta_path]
"""

CONTEXT = "x,y\n0.0,0.1\n0.5,0.4\n1.0,0.8\n1.5,0.6\n2.0,0.2\n"
TARGETS = "x\n0.25\n0.75\n1.25\n1.75\n"


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    """A folder with the context and target CSVs, and the environment that hides the extras."""
    folder = tmp_path_factory.mktemp("core")
    hide = folder / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(HIDE)
    (folder / "ctx.csv").write_text(CONTEXT)
    (folder / "tgt.csv").write_text(TARGETS)
    path = os.pathsep.join([str(hide), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return folder, {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}


def _run(core, *args):
    folder, env = core
    return subprocess.run(
        [sys.executable, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=240
    )


def _tnpx(core, *args):
    return _run(core, "-m", "tnpx.cli", *args)


API = textwrap.dedent(
    """
    import importlib.util, json, sys

    hidden = [m for m in OPTIONAL if importlib.util.find_spec(m) is not None]
    try:
        import matplotlib  # noqa: F401
        hidden.append("import matplotlib")
    except ModuleNotFoundError:
        pass

    import pandas as pd
    import tnpx

    # The README's zoo example, by name and in the user's units; then DataFrames.
    by_file = tnpx.predict("gp1d-v2-te-tnp-rope", "ctx.csv", "tgt.csv")
    frames = tnpx.predict("gp1d-v2-tnp", pd.read_csv("ctx.csv"), pd.read_csv("tgt.csv"))

    def error(call):
        try:
            call()
        except ImportError as err:
            return str(err)
        return None

    def plot():
        import tnpx.plot
        tnpx.plot.plot_prediction(frames, "p.png", "x", ["y"])

    print(json.dumps({
        "not hidden": hidden,
        "rows": [len(by_file), len(frames)],
        "finite": bool(by_file.notna().all().all() and frames.notna().all().all()),
        "columns": list(frames.columns),
        "models": tnpx.list_models(),
        "gp": error(lambda: tnpx.build_model("gp")),
        "mt-gp": error(lambda: tnpx.build_model("mt-gp", dim_y=2)),
        "bo": error(lambda: __import__("tnpx.bo")),
        "plot": error(plot),
        "loaded": sorted({m.split(".")[0] for m in sys.modules} & set(OPTIONAL)),
    }))
    """
)


def test_the_python_api_without_extras(core):
    out = _run(core, "-c", f"OPTIONAL = {OPTIONAL!r}\n{API}")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["not hidden"] == [], "the extras are not hidden: the test would prove nothing"
    assert got["rows"] == [4, 4] and got["finite"]
    assert got["columns"] == ["x", "y_mean", "y_std", "y_lower", "y_upper"]
    assert {"gp", "mt-gp", "gp-oracle", "tnp"} <= set(got["models"])
    assert got["gp"] == "model 'gp' needs gpytorch: pip install 'tnpx[gp]'"
    assert got["mt-gp"] == "model 'mt-gp' needs gpytorch: pip install 'tnpx[gp]'"
    assert got["bo"] == "tnpx.bo needs botorch: pip install 'tnpx[bo]'"
    assert got["plot"] == "plotting needs matplotlib: pip install 'tnpx[plot]'"
    assert got["loaded"] == []


@pytest.mark.slow
def test_the_command_line_without_extras(core):
    folder, _ = core
    out = _tnpx(core, "predict", "gp1d-v2-tnp", "--context", "ctx.csv", "--targets", "tgt.csv")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "x,y_mean,y_std,y_lower,y_upper"
    assert len(out.stdout.splitlines()) == 5

    cfg, run = write_tiny(folder), folder / "run"
    steps = ["train.steps=10", "train.val_every=10", "train.checkpoint_every=10"]
    out = _tnpx(core, "train", str(cfg), f"train.out_dir={run}", *steps)
    assert out.returncode == 0, out.stderr
    assert "trained 10 steps" in out.stdout and (run / "metrics.csv").exists()
    assert not (run / "tensorboard").exists()  # no tensorboard: the metrics log skips it

    out = _tnpx(core, "eval", str(run / "model.pt"), "--out", "eval.json")
    assert out.returncode == 0, out.stderr
    assert json.loads((folder / "eval.json").read_text())["n_tasks"] == 12

    # What needs an extra: exit code 2 and one line naming it.
    plot = "tnpx plot: error: plotting needs matplotlib: pip install 'tnpx[plot]'\n"
    bo = "tnpx bo: error: tnpx.bo needs botorch: pip install 'tnpx[bo]'\n"
    for args, line in [
        (["plot", str(run / "model.pt"), "--out", "p.png"], plot),
        (["bo", "suggest", "gp1d-v2-tnp", "--observations", "ctx.csv", "--bounds", "0", "2"], bo),
    ]:
        out = _tnpx(core, *args)
        assert (out.returncode, out.stderr) == (2, line), args
    assert not (folder / "p.png").exists()
