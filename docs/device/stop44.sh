#!/usr/bin/env bash
# Stop 44 (issue 28): the Triton long-row kernel in fewer passes over the row. Reductions that read no result
# of each other share a pass, and a sum of exp(f - max(f)) is computed online in its maximum's pass.
# Packages, generated on the dev machine and carried (.device is not in git); seed 44 is fresh:
#   .device/lr44old: git worktree add /tmp/wt ff78d42; PYTHONPATH=/tmp/wt python /tmp/wt/docs/device/rowwise_sweep.py \
#                    generate .device/lr44old --seed 44 --count 40 --backends triton     (the templates before)
#   .device/lr44new: python docs/device/rowwise_sweep.py generate .device/lr44new --seed 44 --count 40 --backends triton
# Phases (one device call each):
#   DTYPES=float32 bash docs/device/stop44.sh bench    # both packages at rows of 65536 and 262144, one after the other
#   DTYPES=bfloat16 TAG=bf16 bash docs/device/stop44.sh bench
#   bash docs/device/stop44.sh tests                   # the GPU suites of the changed ops, then compute-sanitizer
set -uo pipefail
L=$OUT; export PYTHONUNBUFFERED=1
# The expressions whose long kernel changed (fewer passes), and two whose kernel did not (controls).
CHANGED=softmax,log_softmax,lse,lsm_lse,wsoftmax,xbyy,range4,r07,r08,r10,r12,r13,r16,r17,r18,r19,r20,r22,r23,r24
CONTROLS=rmsnorm,layernorm
case ${1:-bench} in
  bench)
    nvidia-smi --query-gpu=name --format=csv,noheader
    for p in ${PKGS:-lr44old lr44new}; do
      timeout ${T:-280} python3 docs/device/rowwise_sweep.py run .device/$p/rsweep-ops --backends triton \
        --only ${OPS:-$CHANGED,$CONTROLS} --cols ${COLS:-65536,262144} --dtypes ${DTYPES:-float32} --rounds 2 \
        --json "$L/${p}_${TAG:-f32}.json" > "$L/${p}_${TAG:-f32}.txt" 2>&1
      echo "$p: rc=$?"; grep -v Warn "$L/${p}_${TAG:-f32}.txt" | tail -25
    done ;;
  tests)
    (cd .device/lr44new/rsweep-ops && for t in ${TEST_OPS:-softmax_tl lse_tl wsoftmax_tl range4_tl r07_tl r08_tl r12_tl r17_tl r22_tl}; do
       echo tests/test_$t.py; done | timeout 300 xargs -P 6 -I{} sh -c \
      'python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" -k "not cpu" > '"$L"'/test_$(basename {} .py).log 2>&1; echo "{}: $(tail -1 '"$L"'/test_$(basename {} .py).log)"') | tee "$L/tests_summary.txt"
    cat $L/test_*.log | grep -E "^(FAILED|ERROR)|^E  " | head -40 > "$L/tests_failures.txt"; rm -f $L/test_*.log
    # memcheck and racecheck over the long kernels (rows of 65536-262147), float32 and bfloat16
    for tool in memcheck racecheck; do
      timeout 200 compute-sanitizer --tool $tool python3 docs/device/sanitize_long.py .device/lr44new/rsweep-ops \
        --ops softmax_tl,wsoftmax_tl,range4_tl,r22_tl 2>&1 | grep -E "SUMMARY|calls|Error" | sed "s/^/$tool: /"
    done ;;
esac
