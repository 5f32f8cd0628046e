#!/usr/bin/env bash
# Issue 13's evidence in one device call (carry .device/sweep), about 6 minutes:
#   bash docs/device/sweep_final.sh a   # build the sweep package and the examples; run the examples'
#                                       # elementwise GPU suites (ROWWISE=1: and the rowwise ones) while
#                                       # Inductor's caches are prewarmed; then sweep runs 1 and 2 (2^28,
#                                       # every dtype)
#   bash docs/device/sweep_final.sh b   # the rowwise benchmarks of softmax, LayerNorm and RMSNorm
# A second call that carries .device/sweep again replaces the built package with the unbuilt one.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"
export TORCH_CUDA_ARCH_LIST=9.0 KERNELGEN_REQUIRE_CUDA=1 CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc} PYTHONUNBUFFERED=1
case "${1:-a}" in
  a)
    (MAX_JOBS=8 bash docs/device/sweep.sh build) &
    for ex in muladd:3 myteam-ops:5; do
      name=${ex%%:*}
      (cd examples/$name && mkdir -p build && echo "$CXX" > build/.kg_cxx \
        && MAX_JOBS=${ex##*:} python3 setup.py build_ext --inplace > /tmp/build_$name.log 2>&1; echo "build $name rc=$?") &
    done
    wait
    run_tests() {  # example, log name, pytest arguments
      (cd examples/$1 && python3 -m pytest -q -rs -p no:cacheprovider "${@:3}" > "/tmp/test_$2.log" 2>&1; echo "examples/$1 ($2) rc=$?: $(tail -1 /tmp/test_$2.log)")
    }
    run_tests muladd muladd &
    run_tests myteam-ops myteam_elementwise tests/test_muladd.py tests/test_gelu.py tests/test_silu_mul.py &
    if [ -n "${ROWWISE:-}" ]; then
      run_tests myteam-ops myteam_rowwise tests/test_softmax.py tests/test_log_softmax.py tests/test_layernorm.py tests/test_softmax_tl.py tests/test_layernorm_tl.py &
      run_tests rmsnorm rmsnorm &
    fi
    bash docs/device/sweep.sh prewarm 1 float32,float64,float16,bfloat16 268435456 &
    wait
    grep -hE "^(FAILED|ERROR)" /tmp/test_*.log | head -20
    tar -czf "$FINAL_OUT/tests.tar.gz" -C /tmp $(cd /tmp && ls test_*.log)
    timeout 200 bash docs/device/sweep.sh time 1 float32,float64,float16,bfloat16 268435456
    timeout 200 bash docs/device/sweep.sh time 2 float32,float64,float16,bfloat16 268435456
    ;;
  b)
    OPS="rmsnorm:rmsnorm myteam-ops:softmax myteam-ops:layernorm" timeout 150 bash docs/device/rowwise.sh bench float32,float16,bfloat16 67108864 \
      | grep -vE "^(torch|NVIDIA)"
    ;;
esac
