#!/usr/bin/env bash
# Runs the elementwise kernel experiment on the device machine (repository root):
#   nvcc ... -o .device/ew_micro.so docs/device/ew_micro.cu   (on the dev machine, carried)
#   bash docs/device/ew_micro.sh [sizes] [ncu variant names...]
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
SIZES=${1:-268435456}; shift || true
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
python3 docs/device/ew_micro.py --lib .device/ew_micro.so --sizes "$SIZES" > "$OUT/micro.txt" 2>"$OUT/micro.err"
echo "micro rc=$?"; tail -5 "$OUT/micro.err"
for v in "$@"; do
  echo "=== ncu: $v" >> "$OUT/ncu.txt"
  ncu --kernel-name-base function --kernel-name kernel --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
      --section WarpStateStats --section SchedulerStats \
      python3 docs/device/ew_micro.py --lib .device/ew_micro.so --only "$v" --reps 2 >> "$OUT/ncu.txt" 2>&1
done
cat "$OUT/micro.txt"
