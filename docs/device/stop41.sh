#!/usr/bin/env bash
# Stop 41's GPU evidence, from the repository root on the device machine; each phase is one call.
# Issue 29: where float16/bfloat16 matmuls apply a heavy epilogue (fused into the product, or a pass of its
# own after cuBLAS's product: kernelgen.cost.heavy_epilogue). The packages are generated and built on the dev
# machine (nvcc 13.0, sm_90/sm_90a, the stable ABI: the binaries load on the device's torch 2.11) and carried:
#   for path in fused library; do
#     python docs/device/matmul_epilogue_sweep.py .device/mmab/${path}40 --seed 40 --count 8 --named \
#         --name mm40_$path --dtypes bfloat16 --path $path          # seed 40's draws and five common epilogues
#     python docs/device/matmul_epilogue_sweep.py .device/mmab/${path}41 --seed 41 --count 10 \
#         --name mm41_$path --dtypes bfloat16 --path $path          # fresh draws, to check the rule
#   done
#   (cd <each package> && TORCH_CUDA_ARCH_LIST=9.0 NVCC_APPEND_FLAGS="-Xptxas -v" python setup.py build_ext --inplace > build.log 2>&1)
#
#   Builds of the library package with other backward-kernel constants (copies of .device/mmab/library40 with
#   gemm.cuh edited: bwd_r1, bwd_r2: kRowsPerStep 1 and 2; bwd_lb3: __launch_bounds__(kThreads, 3)) in .device/mmab/bw_*.
#
# The shipped rule, and the templates' final state (kRowsPerStep by Op::kHeavy, ipow<N, true>):
#   for s in 40 41 42; do python docs/device/matmul_epilogue_sweep.py .device/mmab/rule$s --seed $s \
#       --count <8 with --named for 40, else 10> --name mm${s}_rule --dtypes bfloat16,float16 --path rule; done
#   python docs/device/rowwise_sweep.py generate .device/rbw41 --manifest docs/results/backward/h100_v14/rbw36_expressions.json \
#       --only r02,r04 --backward fused --backends cuda                             # masked gradients
#   kernelgen new maxgap --op max_gap --kind rowwise --inputs x,y --weights w \
#       --expr "(x * y - max(x * y * w + x ** 3)) * w" --defaults --output .device/mg41   # a mask with ipow<3, true>
#
#   SET=40 bash docs/device/stop41.sh paths   # both paths of every op, against torch.compile (then SET=41, 42)
#   bash docs/device/stop41.sh bwd            # the epilogue's backward kernel alone, in each build
#   bash docs/device/stop41.sh rule           # the rule's builds against torch.compile, and their backward kernels
#   bash docs/device/stop41.sh final          # their GPU suites, the masked rowwise suites, memcheck
#   bash docs/device/stop41.sh examples       # build the examples here; the matmul and rowwise GPU suites
#   bash docs/device/stop41.sh rows           # after the cluster change: the rowwise examples built here, their GPU
#       suites, memcheck and racecheck over the cluster kernels of cl41b
#   bash docs/device/stop41.sh cluster        # rowwise long rows: the cluster kernel at 64 registers (cl41a: the
#       templates of 062f09a) against the build for three blocks an SM where it does not spill (cl41b), both from
#       python docs/device/rowwise_sweep.py generate .device/cl41<a|b> --manifest docs/results/rowwise/sweep38_expressions.json \
#         --only r20,quad4,resrms,softmax,layernorm,csilu,r04,r13,r18,r06 --backends cuda
#   VARIANTS="b c" COLS=1024,4096,16384 bash docs/device/stop41.sh cluster   # the register kernel built the same
#       two ways (cl41c) against one build (cl41b)
#   PKGS=... bash docs/device/stop41.sh tests # the GPU suites of the ops of PKGS
# Logs land in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs41; mkdir -p "$OUT" "$LOGS"; export OUT LOGS
export PYTHONUNBUFFERED=1
case "${1:-}" in
  paths)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    S=${SET:-40}
    timeout "${LIMIT:-560}" python3 docs/device/matmul_paths_bench.py .device/mmab/fused$S/mm${S}_fused \
      .device/mmab/library$S/mm${S}_library --dtypes bfloat16 --shapes ${SHAPES:-4096x4096x4096,8192x1024x8192} \
      --compile bfloat16 --rounds 2 ${OPS:+--ops $OPS} --json "$OUT/paths$S.json" 2>&1 | grep -v Warning | tee "$OUT/paths$S.txt" ;;
  bwd)
    for build in library40/mm40_library ${BUILDS:-bw_r1/mm40_library bw_r2/mm40_library bw_lb3/mm40_library}; do
      [ -d .device/mmab/$build ] || continue
      timeout 120 python3 docs/device/matmul_bwd_kernel_bench.py .device/mmab/$build --label "$(dirname $build)" \
        --json "$OUT/bwd_$(dirname $build).json" 2>&1 | grep -v Warning | tee -a "$OUT/bwd.txt"
    done ;;
  tests)
    for pkg in ${PKGS:-.device/mmab/library40/mm40_library}; do
      for f in $pkg/tests/test_*.py; do echo "$pkg $(basename "$f")"; done
    done | xargs -P "${JOBS:-4}" -L 1 bash -c 'cd "$0" && timeout ${TEST_LIMIT:-400} python3 -m pytest -q -rfE -p no:cacheprovider \
        "tests/$1" -k "${K:-not cpu and not large}" > "$LOGS/test_$(basename "$0")_${1%.py}.log" 2>&1; \
        echo "$(basename "$0") $1: $(tail -1 "$LOGS/test_$(basename "$0")_${1%.py}.log")"' | sort | tee "$OUT/tests_summary.txt"
    grep -h -B2 -A30 "^FAILED\|^ERROR\|Error" $LOGS/test_*.log | head -300 > "$OUT/tests_failures.txt" ;;
  rule)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for S in 40 41 42; do
      timeout 170 python3 docs/device/matmul_paths_bench.py .device/mmab/rule$S/mm${S}_rule --dtypes bfloat16 \
        --shapes 4096x4096x4096,8192x1024x8192 --compile bfloat16 --rounds 2 --json "$OUT/rule$S.json" 2>&1 \
        | grep -v Warning | tee "$OUT/rule$S.txt"
    done
    timeout 60 python3 docs/device/matmul_bwd_kernel_bench.py .device/mmab/rule40/mm40_rule --label rule40 \
      --json "$OUT/bwd_rule40.json" 2>&1 | grep -v Warning | tee "$OUT/bwd_rule40.txt" ;;
  final)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    (PKGS="${PKGS:-.device/mmab/rule40/mm40_rule .device/mmab/rule41/mm41_rule .device/mmab/rule42/mm42_rule .device/rbw41/rsweep-ops .device/mg41/maxgap}" \
      JOBS=6 TEST_LIMIT=300 bash "$0" tests)
    timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 python3 docs/device/sanitize_matmul.py \
      .device/mmab/rule40/mm40_rule --ops m00,m07,n00 --dtypes bfloat16,float16 > "$LOGS/memcheck_rule.log" 2>&1
    echo "matmul memcheck: rc=$? $(grep -E 'ERROR SUMMARY' "$LOGS/memcheck_rule.log" | tail -1)" | tee -a "$OUT/tests_summary.txt"
    for tool in memcheck racecheck; do
      timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        .device/mg41/maxgap --ops max_gap --dtypes float32,bfloat16 > "$LOGS/san_mg_$tool.log" 2>&1
      echo "max_gap $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/san_mg_$tool.log" | tail -1)" | tee -a "$OUT/tests_summary.txt"
    done
    tail -5 "$LOGS/memcheck_rule.log" "$LOGS"/san_mg_*.log > "$OUT/sanitizer_tails.txt" ;;
  examples)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    if ls .whl/nvidia_cutlass-*.whl > /dev/null 2>&1 && [ ! -d /tmp/cutlass ]; then
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
    fi
    export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 CXX=/usr/bin/g++ CC=/usr/bin/gcc
    for ex in examples/myteam-ops examples/rmsnorm examples/matmul; do
      (cd $ex && t=$(date +%s) && python3 setup.py build_ext --inplace > "$LOGS/build_$(basename $ex).log" 2>&1
       echo "build $ex: rc=$? in $(( $(date +%s) - t )) s") &
    done
    # While the examples build: r20 (seed 38) at rows of 16384, before and after the fast_float forward
    # (.device/r20old: templates of 9bdf959~1; .device/r20new: this stop's), one process each, twice.
    for round in 1 2; do
      for v in old new; do
        [ -d .device/r20$v ] || continue
        timeout 100 python3 docs/device/rowwise_sweep.py run .device/r20$v/rsweep-ops --sizes 67108864 --cols 4096,16384 \
          --dtypes float16,bfloat16 --rounds 2 --build-log .device/r20$v/rsweep-ops/build.log \
          --json "$OUT/r20${v}_$round.json" > "$LOGS/r20${v}_$round.txt" 2>&1
        echo "r20 $v round $round: rc=$?"; grep -E "^ *r20|r20 " "$LOGS/r20${v}_$round.txt" | head -8
      done
    done
    wait
    {
      for t in linear_gelu matmul softmax layernorm; do echo "examples/myteam-ops tests/test_$t.py"; done
      echo "examples/rmsnorm tests/test_rmsnorm.py"; echo "examples/matmul tests/test_matmul.py"
    } | xargs -P 6 -L 1 bash -c 'cd "$0" && timeout 400 python3 -m pytest -q -rfE -p no:cacheprovider "$1" \
        -k "not cpu and not large" > "$LOGS/ex_$(basename "$1" .py).log" 2>&1; echo "$0 $1: $(tail -1 "$LOGS/ex_$(basename "$1" .py).log")"' \
      | sort | tee "$OUT/examples_summary.txt"
    grep -h -B2 -A30 "^FAILED\|^ERROR" $LOGS/ex_*.log | head -200 > "$OUT/examples_failures.txt" ;;
  cluster)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for v in ${VARIANTS:-a b}; do
      timeout 280 python3 docs/device/rowwise_sweep.py run .device/cl41$v/rsweep-ops --sizes 67108864 --cols ${COLS:-16384,65536} \
        --dtypes ${DTYPES:-bfloat16,float32} --rounds 2 --build-log .device/cl41$v/rsweep-ops/build.log \
        --json "$OUT/cl41$v.json" > "$LOGS/cl41$v.txt" 2>&1
      echo "cl41$v: rc=$?"
    done ;;
  rows)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    export TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 CXX=/usr/bin/g++ CC=/usr/bin/gcc KERNELGEN_NO_CUTLASS=1
    for ex in examples/myteam-ops examples/rmsnorm; do
      (cd $ex && t=$(date +%s) && python3 setup.py build_ext --inplace > "$LOGS/build_$(basename $ex).log" 2>&1
       echo "build $ex: rc=$? in $(( $(date +%s) - t )) s") &
    done
    for tool in memcheck racecheck; do  # while the examples build
      timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_rows.py \
        .device/cl41b/rsweep-ops --ops r20,softmax,layernorm,r13 --dtypes bfloat16,float32 > "$LOGS/san_rows_$tool.log" 2>&1
      echo "rows $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/san_rows_$tool.log" | tail -1)" | tee -a "$OUT/rows_summary.txt"
    done
    wait
    { for t in softmax log_softmax layernorm; do echo "examples/myteam-ops tests/test_$t.py"; done
      echo "examples/rmsnorm tests/test_rmsnorm.py"; } | xargs -P 4 -L 1 bash -c 'cd "$0" && timeout 300 python3 -m pytest -q -rfE \
        -p no:cacheprovider "$1" -k "not cpu and not large" > "$LOGS/rows_$(basename "$1" .py).log" 2>&1; \
        echo "$0 $1: $(tail -1 "$LOGS/rows_$(basename "$1" .py).log")"' | sort | tee -a "$OUT/rows_summary.txt"
    grep -h -v "^=========\s*$" "$LOGS"/san_rows_*.log | grep -v Warning | tail -30 > "$OUT/rows_sanitizer_tail.txt" ;;
  *) echo "usage: bash docs/device/stop41.sh paths|bwd|tests|rule|final|examples|cluster|rows" >&2; exit 2 ;;
esac
