#!/usr/bin/env bash
# Stop 23's GPU evidence, from the repository root on the device machine, one call per mode:
#   bash docs/device/stop23.sh sweep   # issue 13 (carry .device/sweep, made by `python docs/device/sweep.py
#                                      # generate .device/sweep --seed 13 --count 40`): build the sweep package
#                                      # and examples/muladd; muladd's full suite while Inductor's caches are
#                                      # prewarmed; then sweep runs at 2^28 (every dtype) until the time is up
#   bash docs/device/stop23.sh rounds  # issue 13 again (carry .device/sweep): sweep runs whose cells are the best of
#                                      # 3 interleaved rounds (sweep.py run --rounds), and ncu of e07 and e28
#                                      # against Inductor's kernels in float32
#   bash docs/device/stop23.sh final   # after the float32 access-width change (carry .device/sweep): build the
#                                      # sweep package, examples/muladd and examples/myteam-ops; the elementwise
#                                      # suites, memcheck of muladd's, muladd_tl's float32 table, sweep runs
#   bash docs/device/stop23.sh f64     # the float64 pack cap: a force-packs build of the sweep (carry .device/sweep),
#                                      # float64 with 1, 2, 4 packs and the template's choice, then a whole sweep run
#   bash docs/device/stop23.sh tests   # issue 12: build examples/myteam-ops (no CUTLASS path); host time per
#                                      # call (docs/device/triton_host.py); first-call and warm-call latency; the
#                                      # full suites of its Triton ops, of their CUDA C++ twins and of every
#                                      # other op; memcheck of two Triton suites
#   bash docs/device/stop23.sh bench   # issue 12: the benchmark tables of the four Triton ops (builds first
#                                      # unless the machine still has the build)
# Logs and JSON land in $OUT.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kg23; mkdir -p "$FINAL_OUT" "$LOGS"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 TORCH_CUDA_ARCH_LIST=9.0
# The system g++ (docs/design.md, trap 14), and no CUTLASS path: no issue here touches the matmul kind.
export CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc} KERNELGEN_NO_CUTLASS=1
now() { date +%s; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
start=$(now)
run_tests() {  # example, log name, pytest arguments...
  (cd "examples/$1" && python3 -m pytest -q -rs -p no:cacheprovider "${@:3}" > "$LOGS/test_$2.log" 2>&1
   echo "examples/$1 ($2) rc=$?: $(tail -1 "$LOGS/test_$2.log")")
}
case "${1:-}" in
  sweep)
    (MAX_JOBS=10 bash docs/device/sweep.sh build) &
    (cd examples/muladd && t=$(now) && MAX_JOBS=6 python3 setup.py build_ext --inplace > "$LOGS/build_muladd.log" 2>&1
     echo "build muladd rc=$? in $(( $(now) - t )) s") &
    wait
    run_tests muladd muladd &
    bash docs/device/sweep.sh prewarm 2 float32,float64,float16,bfloat16 268435456 &
    wait
    grep -hE "^(FAILED|ERROR)" "$LOGS"/test_*.log | head -20
    for run in 2 3; do
      left=$(( 560 - ($(now) - start) ))
      [ "$left" -gt 90 ] || { echo "no time left for sweep run $run"; break; }
      timeout "$left" bash docs/device/sweep.sh time "$run" float32,float64,float16,bfloat16 268435456
    done
    ;;
  rounds)
    MAX_JOBS=16 bash docs/device/sweep.sh build
    bash docs/device/sweep.sh prewarm 4 float32,float64,float16,bfloat16 268435456
    # ncu: the generated kernel against Inductor's on two memory-bound float32 ops (e07 a * b + c, e28 x3 + (x2 + x1)).
    timeout 120 ncu --kernel-name regex:"e07_kernel|e28_kernel|triton_" --metrics \
gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,\
sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,launch__block_size,\
smsp__inst_executed.sum,lts__t_sectors_srcunit_tex_op_read.sum \
      python3 docs/device/ncu_sweep_ops.py e07 e28 > "$FINAL_OUT/ncu_e07_e28.txt" 2>&1; echo "ncu rc=$?"
    for run in 4 5; do
      left=$(( 570 - ($(now) - start) ))
      [ "$left" -gt 120 ] || { echo "no time left for sweep run $run"; break; }
      ROUNDS=3 timeout "$left" bash docs/device/sweep.sh time "$run" float32,float64,float16,bfloat16 268435456
    done
    ;;
  final)
    # After the float32 access width change: the elementwise suites, memcheck, and two sweep runs.
    (MAX_JOBS=8 bash docs/device/sweep.sh build) &
    for ex in muladd:4 myteam-ops:4; do
      (cd "examples/${ex%%:*}" && t=$(now) && MAX_JOBS=${ex##*:} python3 setup.py build_ext --inplace > "$LOGS/build_${ex%%:*}.log" 2>&1
       echo "build ${ex%%:*} rc=$? in $(( $(now) - t )) s") &
    done
    wait
    run_tests muladd muladd &
    run_tests myteam-ops myteam_elementwise tests/test_muladd.py tests/test_gelu.py tests/test_silu_mul.py &
    bash docs/device/sweep.sh prewarm 6 float32,float64,float16,bfloat16 268435456 &
    wait
    grep -hE "^(FAILED|ERROR)" "$LOGS"/test_*.log | head -20
    (cd examples/muladd && compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
       tests -k "cuda and not large and not compile and not opcheck and not gradcheck" > "$LOGS/memcheck_muladd.log" 2>&1
     echo "memcheck muladd rc=$?: $(grep -E 'ERROR SUMMARY|passed|failed' "$LOGS/memcheck_muladd.log" | tr '\n' ' ')")
    (cd examples/myteam-ops && python3 benchmarks/bench_muladd_tl.py --dtypes float32 --sizes 16777216,67108864,268435456 \
       --json "$FINAL_OUT/bench_muladd_tl_float32.json" > "$LOGS/bench_muladd_tl_float32.txt" 2>&1; tail -5 "$LOGS/bench_muladd_tl_float32.txt")
    for run in 6 7; do
      left=$(( ${STOP23_DEADLINE:-570} - ($(now) - start) ))   # docs/device/v9_speed.sh runs it inside a wrapper
      [ "$left" -gt 120 ] || { echo "no time left for sweep run $run"; break; }
      ROUNDS=3 timeout "$left" bash docs/device/sweep.sh time "$run" float32,float64,float16,bfloat16 268435456
    done
    ;;
  f64)
    # The float64 pack cap (kVeryHeavyCostPerByte): carry .device/sweep made with `sweep.py force-packs`, so that
    # one build runs the template's choice and 1, 2 and 4 packs forced; then a whole sweep run (every dtype).
    MAX_JOBS=16 bash docs/device/sweep.sh build
    bash docs/device/sweep.sh prewarm 8 float32,float64,float16,bfloat16 268435456
    PACKS=1,2,4 ROUNDS=3 timeout 240 bash docs/device/sweep.sh time 8 float64 268435456
    left=$(( 575 - ($(now) - start) ))
    if [ "$left" -gt 110 ]; then ROUNDS=3 timeout "$left" bash docs/device/sweep.sh time 9 float32,float64,float16,bfloat16 268435456
    else echo "no time left for sweep run 9"; fi
    ;;
  tests|bench)
    if ! ls examples/myteam-ops/myteam_ops/_C*.so > /dev/null 2>&1; then
      (cd examples/myteam-ops && t=$(now) && MAX_JOBS=16 python3 setup.py build_ext --inplace > "$LOGS/build_myteam.log" 2>&1
       echo "build myteam-ops rc=$? in $(( $(now) - t )) s")
    fi
    ;;&
  tests)
    # Host time per call first, on a quiet machine.
    timeout 100 python3 docs/device/triton_host.py examples/myteam-ops > "$FINAL_OUT/host.txt" 2>&1
    grep "^host" "$FINAL_OUT/host.txt"
    # First call (Triton compiles the kernel) and a warm call, in a fresh process with an empty Triton cache.
    TRITON_CACHE_DIR=$(mktemp -d) timeout 60 python3 - <<'PYEOF' 2>&1 | tee "$FINAL_OUT/first_call.txt"
import sys, time
import torch
sys.path.insert(0, "examples/myteam-ops")
import myteam_ops
for name, n_in in (("gelu_tl", 1), ("muladd_tl", 3)):
    xs = [torch.randn(1 << 20, device="cuda") for _ in range(n_in)]
    torch.cuda.synchronize()
    t = time.perf_counter(); getattr(myteam_ops, name)(*xs); torch.cuda.synchronize(); first = time.perf_counter() - t
    t = time.perf_counter(); getattr(myteam_ops, name)(*xs); torch.cuda.synchronize(); warm = time.perf_counter() - t
    print(f"{name}: first call {first * 1e3:.0f} ms (Triton compiles), warm call {warm * 1e6:.0f} us (host + 1 Mi elements + sync)")
PYEOF
    TRITON_SUITES="tests/test_gelu_tl.py tests/test_muladd_tl.py tests/test_softmax_tl.py tests/test_layernorm_tl.py"
    TWIN_SUITES="tests/test_gelu.py tests/test_muladd.py tests/test_softmax.py tests/test_layernorm.py"
    OTHER_SUITES="tests/test_silu_mul.py tests/test_log_softmax.py tests/test_matmul.py tests/test_linear_gelu.py"
    run_tests myteam-ops triton $TRITON_SUITES &
    run_tests myteam-ops twins $TWIN_SUITES &
    run_tests myteam-ops others $OTHER_SUITES &
    wait
    grep -hE "^(FAILED|ERROR)" "$LOGS"/test_*.log | head -20
    for op in gelu_tl layernorm_tl; do
      (cd examples/myteam-ops && compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
         "tests/test_$op.py" -k "cuda and not large and not compile and not opcheck and not gradcheck" > "$LOGS/memcheck_$op.log" 2>&1
       echo "memcheck $op rc=$?: $(grep -E 'ERROR SUMMARY|passed|failed' "$LOGS/memcheck_$op.log" | tr '\n' ' ')")
    done
    ;;
  bench)
    cd examples/myteam-ops
    for op in gelu_tl muladd_tl; do
      python3 benchmarks/bench_$op.py --dtypes float32,float64,float16,bfloat16 --sizes 16777216,67108864,268435456 \
        --json "$FINAL_OUT/bench_$op.json" > "$LOGS/bench_$op.txt" 2>&1; echo "bench $op rc=$?"; cat "$LOGS/bench_$op.txt"
    done
    for op in layernorm_tl softmax_tl; do
      python3 benchmarks/bench_$op.py --dtypes float32,float16,bfloat16 --sizes 67108864 --cols 1024,4096,16384 \
        --json "$FINAL_OUT/bench_$op.json" > "$LOGS/bench_$op.txt" 2>&1; echo "bench $op rc=$?"; cat "$LOGS/bench_$op.txt"
    done
    cd ../..
    ;;
  *)
    echo "usage: bash docs/device/stop23.sh sweep|rounds|final|f64|tests|bench" >&2; exit 2
    ;;
esac
tar -czf "$FINAL_OUT/logs_${1}.tar.gz" -C "$LOGS" .
echo "done in $(( $(now) - start )) s"
