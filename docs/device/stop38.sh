#!/usr/bin/env bash
# Stop 38's GPU evidence (issue 28: long rows in a thread-block cluster), from the repository root on the
# device machine; each phase is one call and builds what it needs (the machine does not stay warm).
# Carry .device/long38, made on the dev machine with
#   python docs/device/rowwise_sweep.py generate .device/long38 --seed 38 --count 40 \
#     --only softmax,log_softmax,rmsnorm,layernorm,resrms,csilu,xbyy,lse,wsoftmax,quad4,r03,r11,r14,r19
# (ten of the sweep's fixed expressions and four drawn with seed 38, as CUDA C++ and Triton ops).
# PKG names another package (tests: its CUDA ops' suites; bench: the sweep's timing, TAG names the JSON).
#   bash docs/device/stop38.sh tests   # build long38 and examples/rmsnorm; the CUDA suites of long38's CUDA
#                                      # ops and of rmsnorm; memcheck and racecheck over the forward kernels
#   bash docs/device/stop38.sh bench   # build long38; the sweep's timing at rows of 65536 and 262144
#                                      # (both backends, float32/float16/bfloat16; COLS, ONLY to change)
# GPU tests only (-k 'not cpu'): CI runs the CPU halves. Logs land in $OUT.
# The calls of stop 38 (each package made here with `rowwise_sweep.py generate ... --manifest
# docs/results/rowwise/sweep38_expressions.json --only IDS`, `--backends cuda --backward fused` for tests):
#   PKG=.device/shared38/rsweep-ops JOBS=3 SAN_OPS=gated,r12,r20 RACE_OPS=gated,r20 bash docs/device/stop38.sh tests
#   PKG=.device/sw38a/rsweep-ops COLS=1024,4096,16384,65536,262144 TAG=a bash docs/device/stop38.sh bench  (a..d: 10 ids each)
#   PKG=.device/final38/rsweep-ops COLS=1024,4096,16384 TAG=final bash docs/device/stop38.sh bench
# More than 3-4 suites side by side run the GPU out of memory (JOBS).
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs38; mkdir -p "$FINAL_OUT" "$LOGS"
export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 CXX=/usr/bin/g++ CC=/usr/bin/gcc MAX_JOBS=16 KERNELGEN_REQUIRE_CUDA=1
start=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - start) )); }
PKG=${PKG:-.device/long38/rsweep-ops}

build() {  # dir
  local t; t=$(date +%s)
  (cd "$1" && NVCC_APPEND_FLAGS="-Xptxas -v" python3 setup.py build_ext --inplace > "$LOGS/build_$(basename "$1").log" 2>&1
   echo "build $1: rc=$? in $(( $(date +%s) - t )) s")
}
suite() {  # root test-file label
  local root=$1 what=$2 label=$3
  (cd "$root" && timeout "$(left "${TEST_END:-400}")" python3 -m pytest -q -rfE -p no:cacheprovider "$what" -m 'not large' -k 'not cpu' \
     > "$LOGS/test_$label.log" 2>&1; echo "$label: $(tail -1 "$LOGS/test_$label.log")")
}
export -f suite left; export start LOGS

case "${1:-}" in
  tests)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    build $PKG & build examples/rmsnorm & wait
    echo "built at $(( $(date +%s) - start )) s"
    {
      echo "examples/rmsnorm tests ex_rmsnorm"
      for f in $PKG/tests/test_*.py; do t=$(basename "$f" .py); case $t in *_tl) continue ;; esac; echo "$PKG tests/$t.py long38_$t"; done
    } | xargs -P "${JOBS:-8}" -L 1 bash -c 'suite "$0" "$1" "$2"' | sort > "$LOGS/tests_summary.txt"
    cat "$LOGS/tests_summary.txt"
    for tool in memcheck racecheck; do
      ops=${SAN_OPS:-softmax,layernorm,resrms,quad4,r14}; dt=${SAN_DTYPES:-float32,bfloat16}
      end=${SAN_END:-520}; [ $tool = racecheck ] && ops=${RACE_OPS:-softmax,resrms} && dt=float32 && end=${RACE_END:-580}
      timeout "$(left "$end")" compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_rows.py \
        $PKG --ops "$ops" --dtypes "$dt" > "$LOGS/sanitize_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep -c 'forward calls done' "$LOGS/sanitize_$tool.log") ops; $(grep -E 'forward calls,' "$LOGS/sanitize_$tool.log"); $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/sanitize_$tool.log" | tail -1)"
    done ;;
  bench)  # rowwise_sweep.sh builds the package itself (its ptxas log gives the cells' registers)
    RSWEEP_PKG=$PKG COLS=${COLS:-65536,262144} ROUNDS=${ROUNDS:-2} PARTS=${PARTS:-12} \
      OUT=$LOGS timeout "$(left 585)" bash docs/device/rowwise_sweep.sh run "${TAG:-long}" ;;
  *) echo "usage: bash docs/device/stop38.sh tests|bench"; exit 2 ;;
esac
cp "$LOGS"/*.json "$FINAL_OUT"/ 2>/dev/null
tar -czf "$FINAL_OUT/logs38_${1}.tar.gz" -C "$LOGS" .
echo "phase $1 done in $(( $(date +%s) - start )) s"
