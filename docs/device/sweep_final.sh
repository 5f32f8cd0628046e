#!/usr/bin/env bash
# One device call for issue 13 (carry .device/sweep): build the sweep package and the elementwise
# examples, run the examples' GPU suites while Inductor's caches are prewarmed, then time the sweep
# twice: run 1 at 2^24 and 2^28 in every dtype, run 2 at 2^28 (the target size) in every dtype.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"
export TORCH_CUDA_ARCH_LIST=9.0 KERNELGEN_REQUIRE_CUDA=1 CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc}
(MAX_JOBS=10 bash docs/device/sweep.sh build) &
for ex in muladd myteam-ops; do
  (cd examples/$ex && MAX_JOBS=3 python3 setup.py build_ext --inplace > /tmp/build_$ex.log 2>&1; echo "build $ex rc=$?") &
done
wait
(cd examples/muladd && python3 -m pytest -q -p no:cacheprovider > "$FINAL_OUT/test_muladd.log" 2>&1; echo "examples/muladd rc=$?: $(tail -1 "$FINAL_OUT/test_muladd.log")") &
(cd examples/myteam-ops && python3 -m pytest -q -p no:cacheprovider tests/test_muladd.py tests/test_gelu.py tests/test_silu_mul.py > "$FINAL_OUT/test_myteam_elementwise.log" 2>&1; echo "examples/myteam-ops muladd, gelu, silu_mul rc=$?: $(tail -1 "$FINAL_OUT/test_myteam_elementwise.log")") &
bash docs/device/sweep.sh prewarm 1 &
wait
timeout 270 bash docs/device/sweep.sh time 1
timeout 140 bash docs/device/sweep.sh time 2 float32,float64,float16,bfloat16 268435456
