#!/usr/bin/env bash
# The prepared GPU check (issue 53, item 5): on one GPU, within 8 minutes, with no network.
#
#   bash benchmarks/gpu_check.sh               # on a GPU machine, from the repository root
#   bash benchmarks/gpu_check.sh --dry-run     # anywhere: the same steps on the CPU, tiny
#
# 1. the tests marked `cuda` (tests/helpers/devices.py), pytest -m cuda on CUDA_TESTS below;
# 2. the KR-5 scaling points at 1e5 and 1e6 in float32 and bfloat16 (python -m
#    benchmarks.scaling), into results/scaling/<gpu>.md beside the paper's RTX 4090 numbers;
# 3. a short KR-1 training run (configs/kr1-rbf-budget.yaml, tnp-kr-full at its paper size)
#    on the GPU and, in the background from the start, on the CPU, from the same seed;
# 4. the results page: benchmarks/gpu_check_template.md filled in by
#    benchmarks/gpu_check_report.py (the curves compared, nvidia-smi's output) into
#    results/gpu-check/<gpu>.md.
#
# --dry-run: every step on the CPU at tiny sizes (under a minute or two), results into
# --out DIR (default: a new temporary folder), never into results/. The slow test
# tests/benchmarks/test_gpu_check.py runs it. Exit code: 0 if every step succeeded, else 1
# (the page is written either way, and says which step failed). Each step has a time limit
# (tests 200 s, scaling 180 s, KR-1 on the GPU 120 s; the CPU run overlaps them).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python}"
export PYTHONPATH="$ROOT/src:$ROOT${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's tnpx
export PYTHONDONTWRITEBYTECODE=1

# The test files with device-parametrised cases (tests/benchmarks/test_gpu_check.py checks
# that every file using tests/helpers/devices.py is listed).
CUDA_TESTS=(
  tests/models/test_device_agnostic.py
  tests/training/test_on_devices.py
  tests/apply/test_on_devices.py
)

DRY=0
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --out) OUT="$2"; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "gpu_check.sh: unknown argument $1 (--dry-run, --out DIR)" >&2; exit 2 ;;
  esac
  shift
done

# Time limits (s) per step: the GPU run's sum to under 8 minutes; a dry run is a check of the
# plumbing on what may be a busy CPU, so it waits longer.
T_TESTS=200 T_SCALING=180 T_KR1_GPU=120 T_KR1_CPU=420
if [ "$DRY" = 1 ]; then
  T_TESTS=900 T_SCALING=900 T_KR1_GPU=900 T_KR1_CPU=900
  DEVICE=cpu
  OUT="${OUT:-$(mktemp -d -t tnpx-gpu-check.XXXXXX)}"
  WORK="$OUT/work"
  PAGE="$OUT/gpu-check.md"
  SCALING_OUT="$OUT/scaling"
  SCALING=(--models tnp-kr-fast --sizes 10 --sweeps targets --dtype bfloat16 --timeout 60
           --repeats 1)
  KR1=(train.steps=10 train.val_every=5 train.log_every=5 train.val_batches=2
       data.batch_size=4 model.n_layers=1 model.dim_model=16 model.n_heads=2 model.dim_head=8
       model.dim_ff=16)
else
  DEVICE=cuda
  if ! "$PYTHON" -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then
    echo "gpu_check.sh: torch sees no CUDA device; run with --dry-run to check the script" >&2
    exit 2
  fi
  LABEL="$("$PYTHON" -c "from benchmarks.scaling_points import device_label; print(device_label('cuda'))")"
  OUT="${OUT:-results/gpu-check}"
  WORK="$OUT/$LABEL-work"
  PAGE="$OUT/$LABEL.md"
  SCALING_OUT="results/scaling"
  # TNP-KR (full and fast), the paper's own: tnp-d and tnp run out of its memory at 1e5 context.
  SCALING=(--models tnp-kr-full tnp-kr-fast --sizes 100000 1000000
           --dtype float32 bfloat16 --timeout 60 --repeats 1 --memory-gb 24)
  KR1=(train.steps=300 train.val_every=50 train.log_every=50 train.val_batches=8)
fi

rm -rf "$WORK"
mkdir -p "$WORK"
: >"$WORK/status.txt"
record() { echo "$1 $2" >>"$WORK/status.txt"; echo "== $1: exit $2"; }

# 0. the machine
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi >"$WORK/nvidia-smi.txt" 2>&1
  record nvidia-smi $?
else
  echo "nvidia-smi: not on this machine (dry run: $DRY)" >"$WORK/nvidia-smi.txt"
fi

# 3a. KR-1 on the CPU, in the background while the GPU steps run (the same seed as 3b)
kr1() {  # kr1 RUN DEVICE: a short KR-1 training run into $WORK/kr1-RUN
  timeout "$3" "$PYTHON" -m tnpx.cli train --overwrite configs/kr1-rbf-budget.yaml \
    model.name=tnp-kr-full train.device="$2" train.progress=false \
    train.checkpoint_every=100000 train.out_dir="$WORK/kr1-$1" "${KR1[@]}" \
    >"$WORK/kr1-$1.txt" 2>&1
}
kr1 cpu cpu "$T_KR1_CPU" &
CPU_RUN=$!

# 1. the tests marked cuda (their CPU cases run in the ordinary suite)
timeout "$T_TESTS" "$PYTHON" -m pytest -m cuda -q -rs -p no:cacheprovider "${CUDA_TESTS[@]}" \
  >"$WORK/cuda-tests.txt" 2>&1
code=$?
[ "$code" = 5 ] && code=0  # none selected: no cuda test collected on this torch
record cuda-tests "$code"
tail -n 3 "$WORK/cuda-tests.txt"

# 2. KR-5 scaling points
timeout "$T_SCALING" "$PYTHON" -m benchmarks.scaling --device "$DEVICE" "${SCALING[@]}" \
  --out "$SCALING_OUT" >"$WORK/scaling.txt" 2>&1
record scaling $?
tail -n 1 "$WORK/scaling.txt"

# 3b. KR-1 on the device, then the CPU run's end
kr1 gpu "$DEVICE" "$T_KR1_GPU"
record kr1-gpu $?
wait "$CPU_RUN"
record kr1-cpu $?

# 4. the page
DRY_FLAG=()
[ "$DRY" = 1 ] && DRY_FLAG=(--dry-run)
"$PYTHON" -m benchmarks.gpu_check_report --work "$WORK" --out "$PAGE" "${DRY_FLAG[@]}" \
  --command "bash benchmarks/gpu_check.sh${DRY_FLAG:+ --dry-run}"
record report $?

if grep -qv ' 0$' "$WORK/status.txt"; then
  echo "gpu_check.sh: a step failed (see $PAGE and $WORK)" >&2
  exit 1
fi
echo "gpu_check.sh: every step passed; the page is $PAGE"
