#!/usr/bin/env bash
# Template version 11 (the rowwise kernels in the package header, issue 27) against version 10 on the GPU
# machine, from the repository root, in one call. Carry .device/v11, made on the dev machine by
#     git archive 90ded24 | tar -x -C /tmp/old && python docs/device/v11_speed.py generate .device/v11 --old /tmp/old
# Builds both packages side by side (sm_90, ptxas -v kept), then docs/device/v11_speed.py run: every op,
# dtype and row length, v10 against v11 on the same inputs (bitwise equality and the time ratio).
# Everything lands in $OUT: v11_speed.json (rewritten after every cell), v11_speed.txt, the build logs.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 TORCH_CUDA_ARCH_LIST=9.0
export CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc}   # docs/design.md, trap 23
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for v in 10 11; do
  (cd ".device/v11/v$v/rlean$v-ops" && t=$(date +%s) &&
   MAX_JOBS=8 NVCC_APPEND_FLAGS="-Xptxas -v" python3 setup.py build_ext --inplace > "$FINAL_OUT/build_v$v.log" 2>&1
   echo "build v$v rc=$? in $(( $(date +%s) - t )) s; kernels with spills: $(grep -c '[1-9][0-9]* bytes spill stores' "$FINAL_OUT/build_v$v.log")") &
done
wait
timeout $(( ${LIMIT:-570} - ($(date +%s) - start) )) python3 docs/device/v11_speed.py run .device/v11 --cols "${COLS:-1024,4096,16384,65536}" \
  --dtypes "${DTYPES:-float32,float16,bfloat16}" --rounds "${ROUNDS:-3}" --json "$FINAL_OUT/v11_speed.json" \
  > "$FINAL_OUT/v11_speed.txt" 2>&1
echo "run rc=$? at $(( $(date +%s) - start )) s"
tail -25 "$FINAL_OUT/v11_speed.txt"
gzip -f "$FINAL_OUT"/build_v*.log
