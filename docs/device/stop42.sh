#!/usr/bin/env bash
# Stop 42's GPU evidence, from the repository root on the device machine; each phase is one call.
# Issue 28, long rows: the cluster kernel holds 128 bytes of each input a thread (64 float16/bfloat16
# elements, not 32), and computes the kept argument again for the output where keeping it would halve that.
# The packages are generated and built on the dev machine (nvcc 13.0, sm_90, the stable ABI) and carried:
#   OPS=softmax,log_softmax,rmsnorm,layernorm,resrms,lse,wsoftmax,r04,r13,r18,r20,r21
#   python docs/device/rowwise_sweep.py generate .device/cl42<a|c> --manifest docs/results/rowwise/sweep38_expressions.json \
#       --only $OPS --backends cuda     # a: the templates of cb94777 (before); c: this stop's
#   (cd .device/cl42<a|c>/rsweep-ops && TORCH_CUDA_ARCH_LIST=9.0 NVCC_APPEND_FLAGS="-Xptxas -v" python setup.py build_ext --inplace > build.log 2>&1)
#
#   bash docs/device/stop42.sh cluster   # cl42a against cl42c at long rows, then the Triton long-row experiment
#   (the same for s42<a|c> (seed 42's single-input draws: --manifest docs/results/stop42/sweep42_expressions.json
#    --only r00,r04,r05,r15,r17,r21,r22,r25,r27,r28,r37,r42) and x38<a|c> (seed 38's r02,r19,r03,r11,csilu))
#   bash docs/device/stop42.sh rule      # s42a/s42c/x38a/x38c: where 64 elements a thread stop paying
#   The shipped templates: cl42d (cl42's ops) and s42d (seed 42's r00,r05,r17,r22,r27,r42), generated and built as above.
#   bash docs/device/stop42.sh final     # cl42d and s42d at long rows; memcheck and racecheck over cl42d's kernels
#   bash docs/device/stop42.sh rows      # the rowwise examples built here and their GPU suites; cl42d's suites
#   The Triton variants (tl42v0: python docs/device/rowwise_sweep.py generate .device/tl42v0 --manifest
#   docs/results/rowwise/sweep38_expressions.json --only softmax,log_softmax,rmsnorm,layernorm,resrms,lse,wsoftmax,csilu,gated,r04,r11,r19
#   --backends triton; v1-v3 are its copies with the long kernels edited as the phase says):
#   bash docs/device/stop42.sh triton
#   TESTS="examples/myteam-ops/tests/test_softmax_tl.py ..." bash docs/device/stop42.sh examples   # the examples' GPU suites
#   (TRITON_TIMING=1: tl42g, generated as tl42v0 with the shipped templates, against tl42v0 while they build)
#   All 40 of seed 38's expressions with the shipped templates, both backends, in two packages:
#   python docs/device/rowwise_sweep.py generate .device/sw42a --manifest docs/results/rowwise/sweep38_expressions.json \
#       --only softmax,log_softmax,rmsnorm,layernorm,resrms,csilu,wrms,xbyy,gated,lse,lsm_lse,wsoftmax,resln,quad4,range4,r00,r01,r02,r03,r04
#   (sw42b: --only r05,...,r24), built as above
#   PACK=sw42a bash docs/device/stop42.sh sweep; PACK=sw42b bash docs/device/stop42.sh sweep
#   python docs/device/rowwise_sweep.py generate .device/nwa --manifest docs/results/stop42/noweights_expressions.json --backends cuda
#   (.device/nwb: a copy with the deep build taken whenever Op::kWeights == 0)
#   bash docs/device/stop42.sh noweights
#   PKGS=... bash docs/device/stop42.sh tests
# Logs land in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs42; mkdir -p "$OUT" "$LOGS"; export OUT LOGS
export PYTHONUNBUFFERED=1
case "${1:-}" in
  cluster)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for v in ${VARIANTS:-a c}; do
      timeout ${LIMIT:-200} python3 docs/device/rowwise_sweep.py run .device/cl42$v/rsweep-ops --sizes 67108864 --cols ${COLS:-65536,262144} \
        --dtypes ${DTYPES:-bfloat16} --rounds 2 --build-log .device/cl42$v/rsweep-ops/build.log \
        --json "$OUT/cl42$v${TAG:-}.json" > "$LOGS/cl42$v.txt" 2>&1
      echo "cl42$v: rc=$?"
    done
    if [ -z "${NO_TRITON:-}" ]; then
      timeout 150 python3 docs/device/triton_long_rows.py --cols 65536,262144 --dtypes bfloat16,float32 --rounds 2 \
        --json "$OUT/triton_long.json" 2>&1 | grep -v Warning > "$OUT/triton_long.txt"
      echo "triton_long: rc=$?"
    fi ;;
  rule)
    # Where 64 elements a thread stop paying: single-input expressions (the only ones the change reaches in
    # bfloat16) of seed 42 (s42, drawn fresh) and seed 38 (x38), each built both ways as cl42.
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for p in ${PACKS:-s42a s42c x38a x38c}; do
      timeout ${LIMIT:-150} python3 docs/device/rowwise_sweep.py run .device/$p/rsweep-ops --sizes 67108864 --cols ${COLS:-65536,262144} \
        --dtypes ${DTYPES:-bfloat16} --rounds 2 --build-log .device/$p/rsweep-ops/build.log --json "$OUT/$p.json" > "$LOGS/$p.txt" 2>&1
      echo "$p: rc=$?"
    done ;;
  final)
    # The shipped rule (cl42d: cl42's ops, s42d: six of seed 42's): long rows against torch.compile, then
    # memcheck and racecheck over every forward kernel of four ops (the deep build at 262144 and 524288).
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for p in cl42d s42d; do
      timeout 150 python3 docs/device/rowwise_sweep.py run .device/$p/rsweep-ops --sizes 67108864 --cols 65536,262144 \
        --dtypes ${DTYPES:-bfloat16} --rounds 2 --build-log .device/$p/rsweep-ops/build.log --json "$OUT/$p.json" > "$LOGS/$p.txt" 2>&1
      echo "$p: rc=$?"
    done
    for tool in memcheck racecheck; do
      timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_rows.py \
        .device/cl42d/rsweep-ops --ops softmax,layernorm,r04,rmsnorm --dtypes bfloat16,float16,float32 > "$LOGS/san_$tool.log" 2>&1
      echo "deep $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/san_$tool.log" | tail -1)" | tee -a "$OUT/final_summary.txt"
    done
    grep -h -v "^=========\s*$" "$LOGS"/san_*.log | grep -v Warning | tail -30 > "$OUT/sanitizer_tail.txt" ;;
  rows)
    # The rowwise examples built here, with their GPU suites, and cl42d's suites.
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    export TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 CXX=/usr/bin/g++ CC=/usr/bin/gcc KERNELGEN_NO_CUTLASS=1
    for ex in examples/myteam-ops examples/rmsnorm; do
      (cd $ex && t=$(date +%s) && python3 setup.py build_ext --inplace > "$LOGS/build_$(basename $ex).log" 2>&1
       echo "build $ex: rc=$? in $(( $(date +%s) - t )) s") &
    done
    (PKGS=.device/cl42d/rsweep-ops JOBS=4 TEST_LIMIT=240 K="not cpu and not large" bash "$0" tests > /dev/null)
    wait
    { for t in softmax log_softmax layernorm; do echo "examples/myteam-ops tests/test_$t.py"; done
      echo "examples/rmsnorm tests/test_rmsnorm.py"; } | xargs -P 4 -L 1 bash -c 'cd "$0" && timeout 300 python3 -m pytest -q -rfE \
        -p no:cacheprovider "$1" > "$LOGS/rows_$(basename "$1" .py).log" 2>&1; \
        echo "$0 $1: $(tail -1 "$LOGS/rows_$(basename "$1" .py).log")"' | sort | tee "$OUT/rows_summary.txt"
    grep -h -B2 -A30 "^FAILED\|^ERROR" $LOGS/rows_*.log | head -200 > "$OUT/rows_failures.txt" ;;
  triton)
    # Triton long rows: tl42v0 as generated; v1 with eviction hints (the passes before the last keep the
    # row in L2, the last pass and the output stream); v2 with chunks of 8192 (16 warps); v3 both.
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for v in ${VARIANTS:-0 1 2 3}; do
      timeout 150 python3 docs/device/rowwise_sweep.py run .device/tl42v$v/rsweep-ops --sizes 67108864 --cols ${COLS:-65536,262144} \
        --dtypes ${DTYPES:-bfloat16} --backends triton --rounds 2 --json "$OUT/tl42v$v.json" > "$LOGS/tl42v$v.txt" 2>&1
      echo "tl42v$v: rc=$? $(grep -E '^triton' "$LOGS/tl42v$v.txt" | tr -s ' ' | tr '\n' ';')"
    done ;;
  examples)
    # The examples built here (CUTLASS from the carried wheel) and the GPU suites of TESTS (package/tests/file
    # pairs); while they build, the Triton forward of tl42g (the shipped templates) against tl42v0 at long rows.
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    if ls .whl/nvidia_cutlass-*.whl > /dev/null 2>&1 && [ ! -d /tmp/cutlass ]; then
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
    fi
    export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 CXX=/usr/bin/g++ CC=/usr/bin/gcc
    for ex in ${EXAMPLES:-examples/myteam-ops examples/rmsnorm examples/matmul examples/muladd}; do
      (cd $ex && t=$(date +%s) && python3 setup.py build_ext --inplace > "$LOGS/build_$(basename $ex).log" 2>&1
       echo "build $ex: rc=$? in $(( $(date +%s) - t )) s") &
    done
    if [ -n "${TRITON_TIMING:-}" ]; then
      for v in v0 g; do
        timeout 150 python3 docs/device/rowwise_sweep.py run .device/tl42$v/rsweep-ops --sizes 67108864 --cols 65536,262144 \
          --dtypes bfloat16,float32 --backends triton --rounds 2 --json "$OUT/tl42${v}_final.json" > "$LOGS/tl42${v}_final.txt" 2>&1
        echo "tl42$v: rc=$? $(grep -E '^triton' "$LOGS/tl42${v}_final.txt" | tr -s ' ' | tr '\n' ';')"
      done
    fi
    wait
    echo "$TESTS" | tr ' ' '\n' | grep . | xargs -P ${JOBS:-6} -L 1 bash -c 'd=$(dirname "$(dirname "$0")"); f=$(basename "$0"); \
        cd "$d" && timeout ${TEST_LIMIT:-420} python3 -m pytest -q -rfE -p no:cacheprovider "tests/$f" -k "${K:-not cpu}" \
        > "$LOGS/ex_$(basename "$d")_${f%.py}.log" 2>&1; echo "$d $f: $(tail -1 "$LOGS/ex_$(basename "$d")_${f%.py}.log")"' \
        | sort | tee "$OUT/examples_summary.txt"
    grep -h -B2 -A30 "^FAILED\|^ERROR" $LOGS/ex_*.log | head -200 > "$OUT/examples_failures.txt" ;;
  sweep)
    # All 40 expressions of seed 38's sweep at long rows with the shipped templates, both backends, in two
    # packages (sw42a: the first 20, sw42b: the rest; PACK picks one), against torch.compile and a copy.
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    timeout 560 python3 docs/device/rowwise_sweep.py run .device/${PACK:-sw42a}/rsweep-ops --sizes 67108864 --cols ${COLS:-65536,262144} \
      --dtypes ${DTYPES:-bfloat16} --rounds 2 --build-log .device/${PACK:-sw42a}/rsweep-ops/build.log \
      --json "$OUT/${PACK:-sw42a}.json" > "$LOGS/${PACK:-sw42a}.txt" 2>&1
    echo "${PACK:-sw42a}: rc=$?"; grep -A12 "^backend" "$LOGS/${PACK:-sw42a}.txt" | cut -c1-160 ;;
  noweights)
    # Rows of 2-8 blocks: the deep build for ops without weights? nwa: the shipped templates; nwb: the same
    # with the deep build whenever Op::kWeights == 0 (launch_cluster_rows edited). 15 fresh single-input draws
    # without weights (seeds 44-47, math cost <= 80: docs/results/stop42/noweights_expressions.json), built here.
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for v in a b; do
      (cd .device/nw$v/rsweep-ops && TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 CXX=/usr/bin/g++ CC=/usr/bin/gcc NVCC_APPEND_FLAGS="-Xptxas -v" \
        python3 setup.py build_ext --inplace > build.log 2>&1; echo "build nw$v: rc=$?")
    done
    for v in a b; do
      timeout 200 python3 docs/device/rowwise_sweep.py run .device/nw$v/rsweep-ops --sizes 67108864 --cols ${COLS:-32768,65536,131072} \
        --dtypes ${DTYPES:-bfloat16} --rounds 2 --build-log .device/nw$v/rsweep-ops/build.log --json "$OUT/nw$v.json" > "$LOGS/nw$v.txt" 2>&1
      echo "nw$v: rc=$?"; grep -A4 "^backend" "$LOGS/nw$v.txt"
    done ;;
  tests)
    for pkg in ${PKGS:-.device/cl42c/rsweep-ops}; do
      for f in $pkg/tests/test_*.py; do echo "$pkg $(basename "$f")"; done
    done | xargs -P "${JOBS:-4}" -L 1 bash -c 'cd "$0" && timeout ${TEST_LIMIT:-400} python3 -m pytest -q -rfE -p no:cacheprovider \
        "tests/$1" -k "${K:-not cpu}" > "$LOGS/test_$(basename "$0")_${1%.py}.log" 2>&1; \
        echo "$(basename "$0") $1: $(tail -1 "$LOGS/test_$(basename "$0")_${1%.py}.log")"' | sort | tee "$OUT/tests_summary.txt"
    grep -h -B2 -A30 "^FAILED\|^ERROR\|Error" $LOGS/test_*.log | head -300 > "$OUT/tests_failures.txt" ;;
  *) echo "usage: bash docs/device/stop42.sh cluster|rule|final|rows|triton|examples|sweep|noweights|tests" >&2; exit 2 ;;
esac
