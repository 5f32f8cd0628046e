#!/usr/bin/env bash
# Same-run A/B timings for issue 13 (carry .device/ab; made on the dev machine, see docs/archive/benchmarks-history.md,
# "Expression sweep"): the elementwise kernel of template version 4 (ewold) against version 5 (ewnew)
# at 2^12-2^28 in every dtype, and the register cap of ops with 5+ inputs (capa: 64 registers, capb: 85).
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"
export TORCH_CUDA_ARCH_LIST=9.0 KERNELGEN_REQUIRE_CUDA=1 CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc} PYTHONUNBUFFERED=1
for p in ewold-ops ewnew-ops capa-ops capb-ops; do
  (cd .device/ab/$p && MAX_JOBS=4 python3 setup.py build_ext --inplace > /tmp/build_$p.log 2>&1; echo "build $p rc=$?") &
done
wait
timeout 240 python3 docs/device/ab_time.py .device/ab/ewold-ops .device/ab/ewnew-ops > "$FINAL_OUT/ab_template.log" 2>&1; echo "template A/B rc=$?"
sed -n '/^B \/ A per dtype/,$p' "$FINAL_OUT/ab_template.log"
timeout 200 python3 docs/device/ab_time.py .device/ab/capa-ops .device/ab/capb-ops --dtypes float32,float16,bfloat16 \
  --sizes 16777216,268435456 > "$FINAL_OUT/ab_regcap.log" 2>&1; echo "register cap A/B rc=$?"
grep -v "^  note" "$FINAL_OUT/ab_regcap.log" | tail -28
