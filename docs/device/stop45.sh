#!/usr/bin/env bash
# Stop 45 (issue 28): the CUDA cluster kernel completes a softmax's maximum and sum, and a LayerNorm's mean
# and variance, in one exchange between its blocks instead of two (Op::kOnline, kCentered).
# The package, generated on the dev machine and carried (.device is not in git):
#   python docs/device/pairs_ab.py generate .device/pairs45     (each op with its pairs, and as <id>_np without)
# Phases (one device call each, back to back: the machine is given back after 30 s idle):
#   bash docs/device/stop45.sh ab      # build (sm_90, ptxas -v), prewarm compile's caches, time both variants
#   bash docs/device/stop45.sh tests   # the GPU suites of the paired ops and of the Triton ops whose warps changed
#                                      # (.device/tlw45new, .device/tl46: --only csilu,r11,r19,r21,r22 / r20,r00,r05);
#                                      # memcheck and racecheck of the paired ops' kernels
# The seed-45 sweep at rows of 1024-16384, both backends (two runs, each in two halves of 20 expressions):
#   python docs/device/rowwise_sweep.py generate .device/sweep45 --seed 45 --count 40
#   RSWEEP_PKG=.device/sweep45/rsweep-ops COLS=1024,4096,16384 PARTS=14 bash docs/device/rowwise_sweep.sh build; ... prewarm s45
#   RSWEEP_PKG=... COLS=1024,4096,16384 ROUNDS=2 ONLY=<first 20 ids> bash docs/device/rowwise_sweep.sh time s45a   (s45b: the rest)
# The Triton forward's warps at rows of 16384 read from the compiled kernel (_triton_rowwise.rows_warps), seed 45:
#   .device/tlw45old: git worktree add /tmp/wt 46b787f; PYTHONPATH=/tmp/wt python /tmp/wt/docs/device/rowwise_sweep.py \
#                     generate .device/tlw45old --seed 45 --count 40 --backends triton      (16 warps for 2-byte rows)
#   .device/tlw45new: python docs/device/rowwise_sweep.py generate .device/tlw45new --seed 45 --count 40 --backends triton
#   bash docs/device/stop45.sh warps   # prewarm, then both packages at 16384 in float16 and bfloat16, one after the other
# The rows kernel or the long kernel at 16384 (docs/device/rows_or_long.py: both kernels of an op, interleaved):
#   python3 docs/device/rows_or_long.py .device/tlw45new/rsweep-ops --ops r19_tl,... --json $OUT/rows_or_long.json   (seed 45)
#   .device/tl46: python docs/device/rowwise_sweep.py generate .device/tl46 --seed 46 --count 40 --backends triton  (fresh)
#   python3 docs/device/rows_or_long.py .device/tl46/rsweep-ops --ops r00_tl,...,r24_tl,csilu_tl,layernorm_tl \
#     --dtypes float16,bfloat16 --json $OUT/rl46.json
set -uo pipefail
L=$OUT; export PYTHONUNBUFFERED=1
PKG=.device/pairs45/rsweep-ops
PAIRED=softmax,log_softmax,lse,wsoftmax,layernorm,resln,range4
case ${1:-ab} in
  ab)
    nvidia-smi --query-gpu=name --format=csv,noheader
    RSWEEP_PKG=$PKG BACKENDS=cuda COLS=${COLS:-32768,65536,262144} DTYPES=${DTYPES:-float32,bfloat16} ROUNDS=2 PARTS=8 \
      timeout ${T:-560} bash docs/device/rowwise_sweep.sh run ${TAG:-ab} 2>&1 | tail -40 ;;
  warps)
    nvidia-smi --query-gpu=name --format=csv,noheader
    for i in $(seq 0 13); do
      python3 docs/device/rowwise_sweep.py prewarm .device/tlw45old/rsweep-ops --backends triton --cols 16384 \
        --dtypes float16,bfloat16 --part $i/14 > /tmp/pw_$i.log 2>&1 &
    done; wait; cat /tmp/pw_*.log | grep -c prewarmed
    for p in tlw45old tlw45new; do
      timeout ${T:-200} python3 docs/device/rowwise_sweep.py run .device/$p/rsweep-ops --backends triton --cols 16384 \
        --dtypes float16,bfloat16 --rounds 2 --json "$L/${p}.json" > "$L/${p}.txt" 2>&1
      echo "$p: rc=$?"; grep -E "rows of|^triton " "$L/${p}.txt"
    done ;;
  tests)
    # The paired CUDA ops (built here), and the Triton ops whose rows of 16384 take 32 warps or the long kernel.
    SUITES="$(for t in ${PAIRED//,/ } rmsnorm; do echo $PKG/tests/test_$t.py; done)
$(for t in csilu_tl r11_tl r19_tl r21_tl r22_tl; do echo .device/tlw45new/rsweep-ops/tests/test_$t.py; done)
$(for t in r20_tl r00_tl r05_tl; do echo .device/tl46/rsweep-ops/tests/test_$t.py; done)"
    echo "$SUITES" | timeout ${T:-420} xargs -P 16 -I{} sh -c \
      'cd $(dirname $(dirname {})) && python3 -m pytest -q -p no:cacheprovider -rfE tests/$(basename {}) -m "not large" -k "not cpu" > '"$L"'/test_$(basename {} .py).log 2>&1; echo "{}: $(tail -1 '"$L"'/test_$(basename {} .py).log)"' | tee "$L/tests_summary.txt"
    cat $L/test_*.log | grep -E "^(FAILED|ERROR)|^E  " | head -60 > "$L/tests_failures.txt"; rm -f $L/test_*.log
    for tool in memcheck racecheck; do
      timeout 100 compute-sanitizer --tool $tool python3 docs/device/sanitize_rows.py $PKG --ops softmax,layernorm,wsoftmax,range4 \
        --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|MISS|Error" | head -8 | sed "s/^/$tool: /"
    done ;;
esac
