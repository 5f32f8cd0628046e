#!/usr/bin/env bash
# Stop 40's GPU evidence, from the repository root on the device machine; each phase is one call.
# Issue 29: masked rowwise gradients with exact operations (no out-of-line mask function); float32/float64
# matmul through cuBLAS's product and an epilogue pass; matmul epilogues drawn from the grammar (seed 40).
# Issue 28: the rowwise forward evaluates float16/bfloat16 expressions in opmath::fast_float.
# The packages are generated and built on the dev machine (nvcc 13.0, sm_90/sm_90a, the stable ABI: the
# binaries load on the device's torch 2.11) and carried:
#   python docs/device/rowwise_sweep.py generate .device/rbw40 --manifest docs/results/backward/h100_v14/rbw36_expressions.json \
#       --only r00,r02,r04,r06,r05,range4 --backward fused --backends cuda       # masked gradients (seed 36's)
#   python docs/device/rowwise_sweep.py generate .device/rw40b --manifest docs/results/rowwise/sweep38_expressions.json \
#       --only r04,r18,r20,r13,softmax,layernorm --backends cuda                 # issue 28's arithmetic-bound cells (seed 38's)
#   python docs/device/matmul_epilogue_sweep.py .device/mm40 --seed 40 --count 8 # epilogues drawn with seed 40
#   kernelgen new mm40f --op lg --kind matmul --bias --epilogue "(acc + bias) * sigmoid(1.702 * (acc + bias))" --defaults --output .device
#   kernelgen add relu2 --kind matmul --bias --epilogue "max(acc + bias, 0) ** 2" --defaults --package .device/mm40f
#   kernelgen add mm --kind matmul --defaults --package .device/mm40f
#   (cd <each package> && TORCH_CUDA_ARCH_LIST=9.0 NVCC_APPEND_FLAGS="-Xptxas -v" python setup.py build_ext --inplace > build.log 2>&1)
#
#   bash docs/device/stop40.sh tests      # the suites of every op of the four packages (CPU halves too: they are not in CI)
#   bash docs/device/stop40.sh examples   # build the examples; their GPU suites, the large tests, memcheck and racecheck
#   bash docs/device/stop40.sh bench      # masked rowwise fwd+bwd, issue 28's cells, float32 linear+GELU, drawn epilogues
# Logs land in $OUT.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs40; mkdir -p "$FINAL_OUT" "$LOGS"
export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 CXX=/usr/bin/g++ CC=/usr/bin/gcc MAX_JOBS=16 KERNELGEN_REQUIRE_CUDA=1
start=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - start) )); }
MM=.device/mm40/mmsweep; RW=.device/rbw40/rsweep-ops; RF=.device/rw40b/rsweep-ops; MF=.device/mm40f

suite() {  # root test-file label [-k expression]
  local root=$1 what=$2 label=$3 k=${4:-}
  (cd "$root" && timeout "$(left "${TEST_END:-560}")" python3 -m pytest -q -rfE -p no:cacheprovider "$what" ${k:+-k "$k"} \
     > "$LOGS/test_$label.log" 2>&1; echo "$label: $(tail -1 "$LOGS/test_$label.log")")
}
export -f suite left; export start LOGS

case "${1:-}" in
  tests)  # the suites of every op of the carried packages (CPU halves too: they are not in CI)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    {
      for pkg in ${PKGS:-$RW $RF $MF $MM}; do
        [ -d "$pkg" ] || continue
        for f in $pkg/tests/test_*.py; do echo "$pkg tests/$(basename "$f") $(echo $pkg | cut -d/ -f2)_$(basename "$f" .py)"; done
      done
    } | xargs -P "${JOBS:-4}" -L 1 bash -c 'suite "$0" "$1" "$2" "not large"' | sort > "$LOGS/tests_summary.txt"
    cat "$LOGS/tests_summary.txt" ;;
  examples)  # build the examples here; their GPU suites, the large tests, and compute-sanitizer
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    # The CUTLASS headers come as the nvidia-cutlass wheel carried in .whl (the machine has no network)
    if ls .whl/nvidia_cutlass-*.whl > /dev/null 2>&1 && [ ! -d /tmp/cutlass ]; then
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
    fi
    export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
    for ex in examples/myteam-ops examples/rmsnorm examples/matmul; do
      (cd $ex && t=$(date +%s) && python3 setup.py build_ext --inplace > "$LOGS/build_$(basename $ex).log" 2>&1
       echo "build $ex: rc=$? in $(( $(date +%s) - t )) s") &
    done
    for tool in ${SAN_TOOLS:-memcheck racecheck}; do  # the masked backward and the fast_float forward, while the examples build
      timeout "$(left 150)" compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $RW --ops ${SAN_OPS:-r02,r04} --dtypes float32,bfloat16 > "$LOGS/sanitize_rows_$tool.log" 2>&1
      echo "rows $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/sanitize_rows_$tool.log" | tail -1)"
    done
    timeout "$(left 200)" compute-sanitizer --tool memcheck --error-exitcode 9 python3 docs/device/sanitize_matmul.py \
      $MF --ops lg,relu2 --dtypes float32,float64 > "$LOGS/sanitize_mm_memcheck.log" 2>&1
    echo "matmul memcheck: rc=$? $(grep -E 'ERROR SUMMARY' "$LOGS/sanitize_mm_memcheck.log" | tail -1)"
    wait
    {  # the examples' suites on the GPU (CI runs their CPU halves), and the masked ops' again
      for t in linear_gelu matmul softmax log_softmax layernorm; do echo "examples/myteam-ops tests/test_$t.py ex_$t"; done
      echo "examples/rmsnorm tests/test_rmsnorm.py ex_rmsnorm"
      echo "examples/matmul tests/test_matmul.py ex_matmul_pkg"
      for f in $RW/tests/test_*.py; do echo "$RW tests/$(basename "$f") rbw40_$(basename "$f" .py)"; done
    } | xargs -P "${JOBS:-5}" -L 1 bash -c 'suite "$0" "$1" "$2" "not cpu and not large"' | sort | tee -a "$LOGS/tests_summary.txt"
    # the >2**31-element tests, one at a time
    suite $RW tests/test_r02.py rbw40_r02_large "large" | tee -a "$LOGS/tests_summary.txt"
    suite examples/myteam-ops tests/test_linear_gelu.py ex_linear_gelu_large "large" | tee -a "$LOGS/tests_summary.txt" ;;
  bench)
    timeout "$(left 200)" python3 docs/device/backward_bench.py $RW --ops ${RW_OPS:-r02,r04,r06,r00} --dtypes float32,bfloat16 \
      --cols ${COLS:-4096,16384} --rounds 2 --json "$LOGS/bench_rbw40.json" 2>&1 | grep -v Warning | tee "$LOGS/bench_rbw40.txt"
    timeout "$(left 330)" python3 docs/device/rowwise_sweep.py run $RF --sizes 67108864 --cols 1024,4096,16384 \
      --dtypes float16,bfloat16 --rounds 2 --build-log $RF/build.log --json "$LOGS/rsweep_rw40b.json" 2>&1 | grep -v Warning \
      | tee "$LOGS/rsweep_rw40b.txt"
    timeout "$(left 450)" python3 docs/device/matmul_backward_bench.py $MF --op lg --dtypes float32 \
      --shapes 4096x4096x4096,8192x1024x8192 --autotune float32 --rounds 2 --json "$LOGS/bench_lg_f32.json" 2>&1 \
      | grep -v Warning | tee "$LOGS/bench_lg_f32.txt"
    for op in ${MM_OPS:-m00,m02,m07}; do
      timeout "$(left 585)" python3 docs/device/matmul_backward_bench.py $MM --op $op --dtypes bfloat16,float32 \
        --shapes 4096x4096x4096 --autotune none --rounds 2 --json "$LOGS/bench_mm40_$op.json" 2>&1 | grep -v Warning \
        | tee "$LOGS/bench_mm40_$op.txt"
    done ;;
  *) echo "usage: bash docs/device/stop40.sh tests|examples|bench"; exit 2 ;;
esac
cp "$LOGS"/*.txt "$LOGS"/*.json "$FINAL_OUT"/ 2>/dev/null
tar czf "$FINAL_OUT/logs_${1}.tgz" -C "$LOGS" . 2>/dev/null
echo "done at $(( $(date +%s) - start )) s"
