#!/usr/bin/env bash
# The one-pack kernel of 85 registers for ops of 5+ inputs (template version 5), on the GPU: build the
# sweep's 5+-input ops with it (capn) and without (capa), run two ops' generated suites, time both.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"
export TORCH_CUDA_ARCH_LIST=9.0 KERNELGEN_REQUIRE_CUDA=1 CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc} PYTHONUNBUFFERED=1
for p in capa-ops capn-ops; do
  (cd .device/ab/$p && MAX_JOBS=8 python3 setup.py build_ext --inplace > /tmp/build_$p.log 2>&1; echo "build $p rc=$?") &
done
wait
(cd .device/ab/capn-ops && timeout 70 python3 -m pytest -q -p no:cacheprovider -x tests/test_e11.py tests/test_e24.py > "$FINAL_OUT/test_capn.log" 2>&1; echo "capn e11, e24 suites rc=$?: $(tail -1 "$FINAL_OUT/test_capn.log")")
timeout 60 python3 docs/device/ab_time.py .device/ab/capa-ops .device/ab/capn-ops --dtypes float16,bfloat16 --sizes 268435456 > "$FINAL_OUT/ab_wide.log" 2>&1; echo "A/B rc=$?"
grep -v "^  note" "$FINAL_OUT/ab_wide.log" | tail -20
