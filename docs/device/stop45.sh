#!/usr/bin/env bash
# Stop 45 (issue 28): the CUDA cluster kernel completes a softmax's maximum and sum, and a LayerNorm's mean
# and variance, in one exchange between its blocks instead of two (Op::kOnline, kCentered).
# The package, generated on the dev machine and carried (.device is not in git):
#   python docs/device/pairs_ab.py generate .device/pairs45     (each op with its pairs, and as <id>_np without)
# Phases (one device call each, back to back: the machine is given back after 30 s idle):
#   bash docs/device/stop45.sh ab      # build (sm_90, ptxas -v), prewarm compile's caches, time both variants
#   bash docs/device/stop45.sh tests   # the GPU suites of the paired ops; memcheck and racecheck of their kernels
set -uo pipefail
L=$OUT; export PYTHONUNBUFFERED=1
PKG=.device/pairs45/rsweep-ops
PAIRED=softmax,log_softmax,lse,wsoftmax,layernorm,resln,range4
case ${1:-ab} in
  ab)
    nvidia-smi --query-gpu=name --format=csv,noheader
    RSWEEP_PKG=$PKG BACKENDS=cuda COLS=${COLS:-32768,65536,262144} DTYPES=${DTYPES:-float32,bfloat16} ROUNDS=2 PARTS=8 \
      timeout ${T:-560} bash docs/device/rowwise_sweep.sh run ${TAG:-ab} 2>&1 | tail -40 ;;
  tests)
    (cd $PKG && for t in $(echo $PAIRED,rmsnorm | tr , ' '); do echo tests/test_$t.py; done | timeout ${T:-330} xargs -P 8 -I{} sh -c \
      'python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" > '"$L"'/test_$(basename {} .py).log 2>&1; echo "{}: $(tail -1 '"$L"'/test_$(basename {} .py).log)"') | tee "$L/tests_summary.txt"
    cat $L/test_*.log | grep -E "^(FAILED|ERROR)|^E  " | head -60 > "$L/tests_failures.txt"; rm -f $L/test_*.log
    for tool in memcheck racecheck; do
      timeout 100 compute-sanitizer --tool $tool python3 docs/device/sanitize_rows.py $PKG --ops softmax,layernorm,wsoftmax,range4 \
        --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|MISS|Error" | head -8 | sed "s/^/$tool: /"
    done ;;
esac
