#!/usr/bin/env bash
# Issue 11 on the GPU machine: the CUTLASS sm_90a path of the matmul examples (carry .device/cutlass, which holds the
# nvidia-cutlass wheel: pip download nvidia-cutlass==4.2.0.0 --no-deps -d .device/cutlass):
#   bash docs/device/cutlass_branch.sh test    # build examples/matmul and examples/myteam-ops (the
#                                              # CUTLASS sm_90a path of matmul and linear_gelu), run their
#                                              # matmul suites, then compute-sanitizer memcheck over the CUDA tests
#   bash docs/device/cutlass_branch.sh all     # test (without racecheck), then bench, in one call
#   (test and all first time 512^3-2048^3 several rounds against cuBLAS: docs/device/mm_repeat.py)
#   bash docs/device/cutlass_branch.sh bench   # the matmul benchmark (cuBLAS, compile) and linear_gelu's
#                                              # (eager unfused, max-autotune), float16/bfloat16/float32
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kgcut; mkdir -p "$FINAL_OUT" "$LOGS"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0
export CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc}   # docs/design.md, trap 23
python3 -m pip install -q --no-deps .device/cutlass/nvidia_cutlass-*.whl 2>&1 | tail -1
if [ "${1:-test}" = all ]; then  # beside the builds: does --split-compile change the CUTLASS kernels' SASS?
  python3 docs/device/sass_split_check.py examples/matmul/matmul > "$LOGS/sass_split.log" 2>&1 &
fi
for ex in matmul myteam-ops; do
  (cd examples/$ex && t=$(date +%s) && python3 setup.py build_ext --inplace > "$LOGS/build_$ex.log" 2>&1
   echo "build $ex rc=$? in $(( $(date +%s) - t )) s; sm_90a objects: $(grep -c 'code=sm_90a' "$LOGS/build_$ex.log")") &
done
wait
[ -f "$LOGS/sass_split.log" ] && tail -3 "$LOGS/sass_split.log"
MODE=${1:-test}
if [ "$MODE" != bench ]; then  # is 1024^3 float16 slow, or was it noise? (stop 21 left it at 0.68x)
  (cd examples/matmul && python3 ../../docs/device/mm_repeat.py --sizes 512,1024,2048 --rounds 5 2>&1 | tee "$LOGS/mm_repeat.log" | grep -E "median|ours:")
fi
RACE_K="cuda and not compile and not gradcheck and not opcheck and not large"
if [ "$MODE" = all ]; then RACE_K="hopper"; fi  # all: racecheck over the CUTLASS-path tests only
case "$MODE" in
  test|all)
    (cd examples/matmul && python3 -m pytest -q -p no:cacheprovider > "$LOGS/test_matmul.log" 2>&1; echo "examples/matmul rc=$?: $(tail -1 "$LOGS/test_matmul.log")") &
    (cd examples/myteam-ops && python3 -m pytest -q -p no:cacheprovider tests/test_matmul.py tests/test_linear_gelu.py > "$LOGS/test_myteam_matmul.log" 2>&1; echo "myteam matmul + linear_gelu rc=$?: $(tail -1 "$LOGS/test_myteam_matmul.log")") &
    wait
    grep -hE "^(FAILED|ERROR)" "$LOGS"/test_*.log | head -20
    (cd examples/myteam-ops && compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
       -k "cuda and not compile and not gradcheck and not opcheck" tests/test_linear_gelu.py > "$LOGS/memcheck.log" 2>&1
     echo "memcheck linear_gelu rc=$?: $(grep -E 'ERROR SUMMARY|passed|failed' "$LOGS/memcheck.log" | tr '\n' ' ')")
    (cd examples/matmul && compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
       -k "cuda and not compile and not gradcheck and not opcheck" tests > "$LOGS/memcheck_matmul.log" 2>&1
     echo "memcheck matmul rc=$?: $(grep -E 'ERROR SUMMARY|passed|failed' "$LOGS/memcheck_matmul.log" | tr '\n' ' ')")
    (cd examples/myteam-ops && compute-sanitizer --tool racecheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
       -k "$RACE_K" tests/test_linear_gelu.py > "$LOGS/racecheck.log" 2>&1
     echo "racecheck linear_gelu rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|passed|failed' "$LOGS/racecheck.log" | tr '\n' ' ')")
    ;;
esac
case "$MODE" in
  bench|all)
    (cd examples/matmul && python3 benchmarks/bench_matmul.py --dtypes float16,bfloat16,float32 --sizes 512,1024,2048,4096,8192,8192x8192x1024 \
       --json "$LOGS/bench_matmul.json" --plot "$LOGS/bench_matmul.png" 2>/dev/null | grep -v "^wrote")
    (cd examples/myteam-ops && python3 benchmarks/bench_linear_gelu.py --dtypes float16,bfloat16 --sizes 1024,4096,8192x8192x1024 \
       --json "$LOGS/bench_linear_gelu.json" --plot "$LOGS/bench_linear_gelu.png" 2>/dev/null | grep -v "^wrote")
    cp "$LOGS"/*.png "$FINAL_OUT/" 2>/dev/null
    ;;
esac
tar -czf "$FINAL_OUT/cutlass_logs.tar.gz" -C "$LOGS" .
