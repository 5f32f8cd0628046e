#!/usr/bin/env bash
# For the next session's device time (issue 29): forward+backward of a fresh draw, seed 48's 40 rowwise ops
# (27 of them have backward shared terms since template version 21, 17 a masked argument as a term), against
# torch.compile, in the fewest device minutes:
#   python docs/device/rowwise_sweep.py generate .device/s48 --seed 48 --count 40 --backends cuda --backward fused
# (stop 48 built it CPU-only on the dev machine, KERNELGEN_CPU_ONLY=1, and ran its CPU suites: docs/backward.md.)
# Carry .device/s48 (generated, not built: remove its build/ and _C*.so first). Phases, back to back:
#   bash docs/device/stop49.sh build   # the package, every core (length unknown: time it in the first call)
#   bash docs/device/stop49.sh bwd     # Inductor's cache filled by PARTS processes side by side (--prewarm),
#                                      # then ours, compile and the backward alone (--against compile), HALF=1|2
#   bash docs/device/stop49.sh tests   # the suites (4 side by side: seven at once ran an H100 out of memory in
#                                      # stop 48), memcheck and racecheck of the backward
# Ran in stop 49 (version 21): build, bwd HALF=1 and HALF=2, tests HALF=1 (docs/results/stop49). Not run yet:
# tests HALF=2 (its ops that version 22 changes passed in stop49c.sh), and the whole draw under version 22:
# generate .device/s48 again with the committed generator and run the same phases.
# Stop 50 runs the same phases on a fresh draw, seed 50 in template version 23: S=s50 (the package under .device/$S).
set -uo pipefail
S=${S:-s48}
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"; export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0
export CXX=/usr/bin/g++ CC=/usr/bin/gcc
W=/tmp/kg49_$S; mkdir -p $W; [ -d $W/$S ] || cp -r .device/$S $W/$S
PKG=$W/$S/rsweep-ops
ALL=$(cd $PKG/tests && ls test_*.py | sed 's/^test_//; s/\.py$//' | tr '\n' ',' | sed 's/,$//')
FIRST=$(echo $ALL | cut -d, -f1-20); SECOND=$(echo $ALL | cut -d, -f21-)
OPS=${OPS:-$([ "${HALF:-1}" = 1 ] && echo $FIRST || echo $SECOND)}

build_pkg() {
  ls "$PKG"/rsweep_ops/_C*.so > /dev/null 2>&1 && return
  RSWEEP_PKG=$PKG MAX_JOBS=16 OUT=$W/out_build bash docs/device/rowwise_sweep.sh build
  cp $W/out_build/rsweep_build.log.gz "$FINAL_OUT/build_$S.log.gz" 2>/dev/null
}

nvidia-smi --query-gpu=name --format=csv,noheader
case ${1:-build} in
  build)
    build_pkg ;;
  bwd)
    build_pkg
    t=$(date +%s); parts=${PARTS:-8}
    for ((i = 0; i < parts; i++)); do
      python3 docs/device/backward_bench.py $PKG --ops "$OPS" --dtypes ${DTYPES:-float32,float16,bfloat16} \
        --cols ${COLS:-1024,4096,16384} --prewarm --part $i/$parts > $W/prewarm_$i.log 2>&1 &
    done
    wait; echo "prewarm in $(( $(date +%s) - t )) s: $(grep -h '^prewarmed' $W/prewarm_*.log | tr '\n' ' ')"
    grep -h -m3 -E "Error|error" $W/prewarm_*.log | head -5
    timeout ${T:-480} python3 docs/device/backward_bench.py $PKG --ops "$OPS" --dtypes ${DTYPES:-float32,float16,bfloat16} \
      --cols ${COLS:-1024,4096,16384} --rounds ${ROUNDS:-2} --against compile --json "$FINAL_OUT/bwd_${S}_${HALF:-1}.json" \
      > "$FINAL_OUT/bwd_${S}_${HALF:-1}.txt" 2>&1
    echo "bwd rc=$? in $(( $(date +%s) - t )) s"; sed -n '/^dtype /,$p' "$FINAL_OUT/bwd_${S}_${HALF:-1}.txt" ;;
  tests)
    build_pkg
    echo "${OPS//,/ }" | tr ' ' '\n' | timeout ${T:-400} xargs -P 4 -I{} sh -c \
      'cd '"$PKG"' && python3 -m pytest -q -p no:cacheprovider -rfE tests/test_{}.py -m "not large" -k cuda > '"$W"'/test_{}.log 2>&1; echo "{}: $(tail -1 '"$W"'/test_{}.log)"' | tee "$FINAL_OUT/tests_summary_${HALF:-1}.txt"
    # Every failing test's name first (stop 49's run kept only the first failure's E lines: r11's one failing
    # test stayed unnamed), then each log's first E lines.
    grep -h -E "^(FAILED|ERROR)" $W/test_*.log | cut -c1-240 > "$FINAL_OUT/tests_failures_${HALF:-1}.txt"
    for log in $W/test_*.log; do grep -m 12 "^E  " "$log" | sed "s|^|$(basename "$log" .log): |"; done \
      | cut -c1-240 >> "$FINAL_OUT/tests_failures_${HALF:-1}.txt"
    for tool in memcheck racecheck; do
      timeout ${TS:-150} compute-sanitizer --tool $tool python3 docs/device/sanitize_backward.py $PKG --ops ${SAN:-r00,r01,r10,r12} \
        --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|MISS|Error" | head -8 | sed "s/^/$tool: /"
    done ;;
esac
