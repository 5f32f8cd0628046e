#!/usr/bin/env bash
# Issue 13's next step, measured before it is designed: how much of the gap on math-bound expressions
# (e31, e32, e17 in float16/bfloat16) do approximate math functions close? The same 40 sweep ops built
# three times, differing only in nvcc flags, timed side by side (ab_time.py also prints how far each
# build's outputs are from the accurate one's):
#   fmacc-ops  the template as it is (accurate expf/logf, IEEE division)
#   fmdiv-ops  -prec-div=false (approximate division only)
#   fmfast-ops --use_fast_math (approximate exp/log/sin/cos/division, flush-to-zero)
# Dev machine first:
#   for n in fmacc fmdiv fmfast; do python docs/device/sweep.py generate .device/fm/$n --name $n-ops; done
# then on the device (carry .device/fm): bash docs/device/fastmath_ab.sh
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"
export TORCH_CUDA_ARCH_LIST=9.0 KERNELGEN_REQUIRE_CUDA=1 CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc} PYTHONUNBUFFERED=1
build() {  # name, extra nvcc flags
  (cd .device/fm/$1/$1-ops && NVCC_APPEND_FLAGS="$2" MAX_JOBS=5 python3 setup.py build_ext --inplace > /tmp/build_$1.log 2>&1; echo "build $1 ($2) rc=$?")
}
build fmacc "" & build fmdiv "-prec-div=false" & build fmfast "--use_fast_math" &
wait
for b in fmdiv fmfast; do
  timeout 150 python3 docs/device/ab_time.py .device/fm/fmacc/fmacc-ops .device/fm/$b/$b-ops --dtypes float16,bfloat16 \
    --sizes 268435456 > "$FINAL_OUT/fastmath_$b.log" 2>&1; echo "A/B fmacc vs $b rc=$?"
  sed -n '/^B \/ A per dtype/,$p' "$FINAL_OUT/fastmath_$b.log"
  grep -E "^e(31|32|17|35|19|13|04) " "$FINAL_OUT/fastmath_$b.log"
done
