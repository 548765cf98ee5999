#!/usr/bin/env bash
# The release check: build the sdist and the wheel (the wheel from the sdist), `twine check`
# them, install the wheel WITHOUT extras into a fresh virtual environment, and from a folder
# outside the repository (so the source tree cannot be imported) run what `pip install tnpx`
# promises: import, the README's zoo prediction (command line and Python), a tiny training run
# and its evaluation. Exits non-zero on the first failure; removes its temporary folder.
#
#   bash .ci/wheel_smoke.sh            (or `make wheel-smoke`)
#   PYTHON=python3.12 bash .ci/wheel_smoke.sh     the interpreter of the fresh environment
#   BUILD_PYTHON=...                   the interpreter that runs `build` and `twine`
#                                      (default .venv/bin/python; they are installed there if missing)
#   KEEP=1                             keep the temporary folder (printed) for a look afterwards
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
BUILD_PYTHON="${BUILD_PYTHON:-$REPO/.venv/bin/python}"
CONSTRAINTS="$REPO/constraints.txt"
START=$SECONDS
PASSED=0  # checks passed; the last line says "N passed, N failed" (CI reads it as a test count)

TMP="$(mktemp -d "${TMPDIR:-/tmp}/tnpx-wheel-smoke.XXXXXX")"
cleanup() {
    rc=$?
    if [ "${KEEP:-0}" = 1 ]; then
        echo "wheel-smoke: kept $TMP"
    else
        echo "wheel-smoke: removing $TMP (about 1 GB, mostly torch: a minute on a slow disk)"
        rm -rf "$TMP"
    fi
    if [ $rc -ne 0 ]; then
        echo "wheel-smoke: FAILED (exit $rc) after $((SECONDS - START)) s" >&2
        echo "wheel-smoke: $PASSED passed, 1 failed"
    else
        echo "wheel-smoke: done in $((SECONDS - START)) s"
        echo "wheel-smoke: $PASSED passed, 0 failed"
    fi
}
trap cleanup EXIT
trap "exit 130" INT
trap "exit 143" TERM

step() { printf '\n== wheel-smoke [%3d s]: %s\n' "$((SECONDS - START))" "$*"; }
passed() { PASSED=$((PASSED + 1)); }

# --- build and check -----------------------------------------------------------------------
if ! "$BUILD_PYTHON" -c 'import build, twine' 2>/dev/null; then
    step "installing build and twine into $BUILD_PYTHON"
    "$BUILD_PYTHON" -m pip install --quiet -c "$CONSTRAINTS" build twine
fi

step "building the sdist and the wheel into $TMP/dist"
"$BUILD_PYTHON" -m build --outdir "$TMP/dist" "$REPO" >"$TMP/build.log" 2>&1 || {
    cat "$TMP/build.log" >&2
    exit 1
}
shopt -s nullglob
wheels=("$TMP"/dist/tnpx-*.whl)
sdists=("$TMP"/dist/tnpx-*.tar.gz)
shopt -u nullglob
if [ ${#wheels[@]} -ne 1 ] || [ ${#sdists[@]} -ne 1 ]; then
    echo "wheel-smoke: expected one wheel and one sdist, got: $(ls "$TMP/dist")" >&2
    exit 1
fi
WHEEL="${wheels[0]}"
ls -l "$TMP"/dist
passed

step "twine check --strict"
"$BUILD_PYTHON" -m twine check --strict "$TMP"/dist/*
passed

step "checking the wheel's files"
"$BUILD_PYTHON" - "$WHEEL" <<'PY'
import sys
import zipfile

names = zipfile.ZipFile(sys.argv[1]).namelist()
need = ["tnpx/py.typed", "tnpx/cli/commands.py", "tnpx/zoo/gp1d-v2-tnp.pt", "tnpx/zoo/gp1d-v2-tnp.json"]
need += [f"tnpx/{sub}/__init__.py" for sub in ("bo", "data", "models", "nn", "zoo")]
need += ["tnpx/demo/run.py", "tnpx/provenance.py"]  # `tnpx demo` is the library's
missing = [n for n in need if n not in names]
stray = [n for n in names if n.split("/")[0] not in ("tnpx",) and ".dist-info/" not in n]
stray += [n for n in names if n.startswith("tnpx/experiments/")]  # the lab is not shipped
zoo = sorted(n for n in names if n.startswith("tnpx/zoo/") and n.endswith((".pt", ".json")))
if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
    missing.append("*.dist-info/licenses/LICENSE")
if missing or stray:
    sys.exit(f"wheel-smoke: the wheel lacks {missing} / holds files outside tnpx: {stray}")
print(f"{len(names)} files; zoo: {', '.join(n.rsplit('/', 1)[1] for n in zoo)}")
PY
passed

# --- a fresh environment with the wheel and no extras ----------------------------------------
VENV="$TMP/venv"
step "creating a fresh virtual environment ($("$PYTHON" --version 2>&1))"
"$PYTHON" -m venv "$VENV"
PY="$VENV/bin/python"

step "installing torch==2.13.0 (the pinned CPU build)"
"$PY" -m pip install --quiet --no-compile -c "$CONSTRAINTS" torch==2.13.0

step "installing $(basename "$WHEEL") without extras"
"$PY" -m pip install --quiet --no-compile -c "$CONSTRAINTS" "$WHEEL"

# Everything below runs outside the repository with nothing of it on the path.
WORK="$TMP/work"
mkdir -p "$WORK"
cd "$WORK"
unset PYTHONPATH
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export PATH="$VENV/bin:$PATH"

step "import tnpx"
"$PY" - "$VENV" <<'PY'
import importlib.metadata
import importlib.util
import os
import sys

import tnpx

venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(tnpx.__file__)
if not where.startswith(venv + os.sep):
    sys.exit(f"wheel-smoke: tnpx imported from {where}, not from the fresh environment")
if tnpx.__version__ != importlib.metadata.version("tnpx"):
    sys.exit(f"wheel-smoke: tnpx.__version__ {tnpx.__version__} != the installed "
             f"distribution's {importlib.metadata.version('tnpx')}")
extras = [m for m in ("matplotlib", "gpytorch", "botorch", "tensorboard", "xarray", "sklearn")
          if importlib.util.find_spec(m) is not None]
if extras:
    sys.exit(f"wheel-smoke: the core install brought extras' packages: {extras}")
print(f"tnpx {tnpx.__version__} from {os.path.dirname(where)}")
PY
passed

# The README's zoo example: a context and targets in the user's units.
cat >ctx.csv <<'CSV'
x,y
0.0,0.1
0.5,0.4
1.0,0.8
1.5,0.6
2.0,0.2
CSV
cat >tgt.csv <<'CSV'
x
0.25
0.75
1.25
1.75
CSV

step "tnpx predict gp1d-v2-tnp --context ctx.csv --targets tgt.csv --out pred.csv"
tnpx predict gp1d-v2-tnp --context ctx.csv --targets tgt.csv --out pred.csv
cat pred.csv
passed

step "tnpx.predict(\"gp1d-v2-tnp\", \"ctx.csv\", \"tgt.csv\")"
"$PY" - <<'PY'
import sys

import numpy as np
import pandas as pd

import tnpx

columns = ["x", "y_mean", "y_std", "y_lower", "y_upper"]
pred = tnpx.predict("gp1d-v2-tnp", "ctx.csv", "tgt.csv")
cli = pd.read_csv("pred.csv")
print(pred.to_string(index=False))
for name, frame in (("tnpx.predict", pred), ("tnpx predict", cli)):
    values = frame.to_numpy(dtype=float)
    if list(frame.columns) != columns or len(frame) != 4 or not np.isfinite(values).all():
        sys.exit(f"wheel-smoke: {name} returned\n{frame}")
    if not (frame["y_std"] > 0).all():
        sys.exit(f"wheel-smoke: {name} returned a standard deviation that is not positive")
if not np.allclose(pred.to_numpy(dtype=float), cli.to_numpy(dtype=float), rtol=1e-4, atol=1e-5):
    sys.exit(f"wheel-smoke: the command line and the Python API disagree:\n{cli}\n{pred}")
print("finite; the command line and the Python API agree")
PY
passed

# A tiny training run on GP data (seconds) and its evaluation.
cat >tiny.yaml <<'YAML'
name: wheel-smoke
model: {name: tnp, dim_x: 1, dim_y: 1, dim_model: 16, n_layers: 1, n_heads: 2, dim_head: 8,
        dim_ff: 16, n_embed_hidden: 1, n_decoder_hidden: 1}
data: {name: gp, batch_size: 4, kernels: [rbf], n_random: 12, n_grid: 12, min_ctx: 3, max_ctx: 10}
optim: {name: adamw, lr: 3.0e-3}
schedule: {name: cosine, warmup_steps: 5}
train: {steps: 20, clip_norm: 3.0, log_every: 10, val_every: 10, val_batches: 2,
        checkpoint_every: 10, progress: false}
eval: {n_batches: 2, batch_size: 4}
YAML

step "tnpx train tiny.yaml train.out_dir=$WORK/run (20 steps)"
tnpx train tiny.yaml "train.out_dir=$WORK/run" | tee train.log
grep -q "trained 20 steps" train.log || { echo "wheel-smoke: training did not report 20 steps" >&2; exit 1; }
[ -f run/model.pt ] || { echo "wheel-smoke: no run/model.pt" >&2; exit 1; }
passed

step "tnpx eval run/model.pt --n-batches 2"
tnpx eval run/model.pt --n-batches 2 --out eval.json
"$PY" - <<'PY'
import json
import math
import sys

result = json.load(open("eval.json"))
numbers = [v for v in result.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
if not result.get("n_tasks") or not all(math.isfinite(v) for v in numbers):
    sys.exit(f"wheel-smoke: eval.json is not a finite evaluation: {result}")
print(f"eval.json: {result['n_tasks']} tasks, {len(numbers)} numbers, all finite")
PY
passed

# cleanup (on exit) removes the folder and prints the count.
