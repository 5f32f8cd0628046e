#!/usr/bin/env bash
# The elementwise expression sweep (issue 13) on the GPU machine, from the repository root.
# Needs .device/sweep (made on the dev machine, where copier is: python docs/device/sweep.py generate
# .device/sweep --seed 13 --count 40), named in the device call's `carry`.
#   bash docs/device/sweep.sh [SIZES] [DTYPES]
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=16
export CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc}   # docs/design.md, trap 23
# ptxas -v: registers per thread and spills of every kernel, read back by sweep.py run --build-log
(cd .device/sweep/sweep-ops && NVCC_APPEND_FLAGS="-Xptxas -v" python3 setup.py build_ext --inplace > "$FINAL_OUT/sweep_build.log" 2>&1; echo "build rc=$?")
python3 docs/device/sweep.py run .device/sweep/sweep-ops --sizes "${1:-16777216,268435456}" \
  --dtypes "${2:-float32,float64,float16,bfloat16}" --json "$FINAL_OUT/sweep.json" \
  --build-log "$FINAL_OUT/sweep_build.log" 2>&1 | tee "$FINAL_OUT/sweep.log" | tail -20
gzip -f "$FINAL_OUT/sweep_build.log"
