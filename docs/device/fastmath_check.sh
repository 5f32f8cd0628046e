#!/usr/bin/env bash
# Stop 20, one device call (carry .device/sweepP64 and .device/rwexp):
#   * the elementwise examples' GPU suites with opmath::fast_float (template version 6);
#   * e04, e13, e17, e31 of the sweep with packs per thread forced to 1, 2 and 4, in float64 and the
#     16-bit dtypes at 2^28 (.device/sweepP64: sweep.py generate --only e04,e13,e17,e31, then
#     force-packs): is the 0.91x of e13 in float64 a launch-shape problem?
#   * the LayerNorm kernel variants of docs/device/rowwise_variants.py (mp, h32, lb3, na_wl).
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"
export TORCH_CUDA_ARCH_LIST=9.0 KERNELGEN_REQUIRE_CUDA=1 CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc} PYTHONUNBUFFERED=1
for ex in muladd myteam-ops; do
  (cd examples/$ex && MAX_JOBS=4 python3 setup.py build_ext --inplace > /tmp/build_$ex.log 2>&1; echo "build $ex rc=$?") &
done
(SWEEP_PKG=.device/sweepP64/sweep-ops MAX_JOBS=4 bash docs/device/sweep.sh build) &
wait
(cd examples/muladd && python3 -m pytest -q -p no:cacheprovider > "$FINAL_OUT/test_muladd.log" 2>&1; echo "examples/muladd rc=$?: $(tail -1 "$FINAL_OUT/test_muladd.log")") &
(cd examples/myteam-ops && python3 -m pytest -q -p no:cacheprovider tests/test_muladd.py tests/test_gelu.py tests/test_silu_mul.py > "$FINAL_OUT/test_myteam_elementwise.log" 2>&1; echo "examples/myteam-ops muladd, gelu, silu_mul rc=$?: $(tail -1 "$FINAL_OUT/test_myteam_elementwise.log")") &
(cd .device/rwexp && for d in */; do (cd "$d" && MAX_JOBS=2 python3 setup.py build_ext --inplace > /tmp/build_rw_${d%/}.log 2>&1; echo "build ${d%/} rc=$?"); done) &
wait
grep -hE "^(FAILED|ERROR)" "$FINAL_OUT"/test_*.log | head -20
timeout 150 python3 docs/device/sweep.py run .device/sweepP64/sweep-ops --sizes 268435456 --dtypes float64,float16,bfloat16 \
  --packs 1,2,4 --build-log /tmp/sweep_build.log --json "$FINAL_OUT/packs64.json" > "$FINAL_OUT/packs64.log" 2>&1
grep -E "^e[0-9]+ " "$FINAL_OUT/packs64.log"
SKIP_BUILD=1 timeout 200 bash docs/device/rowwise_variants.sh 2>&1 | tail -60
