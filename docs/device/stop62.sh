#!/usr/bin/env bash
# Stop 62 (run; results in docs/results/stop62/, docs/backward.md "Stop 62"). Prepared in stop 61: a 64-register cluster
# build of the rowwise backward without weights (docs/wip/cluster64-v46.patch, a candidate, not landed; the patch is in
# git history at ea5821e). Stop 61 (docs/backward.md "Stop 61"):
# without weights the cluster build lost every cell where it took one block an SM (71-128 registers) and won where
# ptxas happened to give it 64 (r41, two blocks an SM: 1.23-1.34x). The candidate builds it for two blocks an SM
# (__launch_bounds__(512, 2), the row in kRowRegisters: half the elements a thread, twice the blocks a cluster) and
# takes it where two blocks fit and it spills no more than the multi-pass kernel. Twelve ops without weights: the
# fixed list's softmax, log_softmax, lse, csilu, xbyy, gated (softmax and logsumexp are the vocabulary-sized rows) and
# seed 63's r02, r18, r22, r30, r32, r26; p45 is version 45, p46 the candidate.
#   bash docs/device/stop62.sh ab   # both built side by side (ptxas -v: the logs come back), p46's 2-byte CUDA backward
#                                   # and gradcheck tests while compile's references are prewarmed, then p45 and p46
#                                   # timed in turn, two rounds in opposite order (float16/bfloat16, rows of
#                                   # 32768-131072); ONE=1: the first round only
#     (.device/p45, .device/p46: PYTHONPATH=<the templates at version 45, or with docs/wip/cluster64-v46.patch applied>
#      python docs/device/rowwise_sweep.py generate /work/main/.device/<pkg> --seed 63 --count 64 \
#        --only softmax,log_softmax,lse,csilu,xbyy,gated,r02,r18,r22,r30,r32,r26 --backends cuda --backward fused)
#   bash docs/device/stop62.sh examples  # first: the examples at version 45 (stop 61 ran them at version 44) built side
#                                        # by side, their whole suites while p45 and p46 build (carry .whl, .device/p45,
#                                        # .device/p46; about 480 s), so that ab finds both built
#   bash docs/device/stop62.sh sweep     # a fresh draw's forward (seed 64's r00-r11, both backends, the backward the
#                                        # vjp stub): built, its whole GPU suites beside compile's prewarm, then one
#                                        # round at rows of 1024-16384 in three dtypes (carry .device/s64)
#     (.device/s64: python docs/device/rowwise_sweep.py generate .device/s64 --seed 64 --count 64 \
#        --only r00,r01,r02,r03,r04,r05,r06,r07,r08,r09,r10,r11 --backward vjp)
#   bash docs/device/stop62.sh nan       # min.NaN.f32 / max.NaN.f32 for float min and max (opmath.h): .device/q45
#                                        # (version 45, the backward the vjp stub) and .device/q46 (the change, the
#                                        # fused backward) built side by side; q46's CUDA suites beside compile's
#                                        # prewarm; then the forward of both, rows of 1024-16384, three dtypes, in
#                                        # turn (ROUNDS=2: a second round in the other order)
#     (O=r00,r01,r02,r03,r04,r05,r06,r07,r08,r09,r10,r11,softmax,lse,range4; .device/q45: PYTHONPATH=<version 45>
#      python docs/device/rowwise_sweep.py generate .device/q45 --seed 64 --count 64 --only $O --backends cuda
#      --backward vjp; .device/q46: the same from the change, --backward fused)
# Read the builds with python docs/device/grad_builds.py <(zcat docs/results/stop62/build_p46.log.gz).
W=/tmp/kg62
. "$(dirname "$0")/stop_common.sh"

for p in p45 p46; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
P=softmax,log_softmax,lse,csilu,xbyy,gated,r02,r18,r22,r30,r32,r26; C=32768,65536,131072

case ${1:-ab} in
  examples)
    examples "p45 p46" ;;
  nan)
    t=$(date +%s); A=r00,r01,r03,r05,r06,r08,r09,r10,softmax,lse,range4
    for p in q45 q46; do (build .device/$p/rsweep-ops) & done; wait; echo "built at $(( $(date +%s) - t )) s"
    cp $W/build_q45.log $W/build_q46.log "$FINAL_OUT/"
    (cd .device/q46/rsweep-ops && ls tests/test_*.py | timeout ${TS:-240} xargs -P 8 -I{} sh -c \
       'python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" -k cuda > /tmp/q46_$(basename {} .py).log 2>&1; \
        echo "{}: $(tail -1 /tmp/q46_$(basename {} .py).log)" >> '"$FINAL_OUT"'/q46_tests.txt') &
    for i in 0 1 2 3 4 5; do
      python3 docs/device/rowwise_sweep.py prewarm .device/q45/rsweep-ops --only $A --cols 1024,4096,16384 \
        --backends cuda --part $i/6 > /tmp/pwq_$i.log 2>&1 &
    done
    wait; echo "suites and prewarm at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/q46_tests.txt"
    grep -h -E "^(FAILED|ERROR)" /tmp/q46_*.log | cut -c1-240 | head -10
    for r in $(seq 1 ${ROUNDS:-1}); do
      [ $r = 1 ] && ORDER="q45 q46" || ORDER="q46 q45"
      for p in $ORDER; do
        timeout ${TT:-150} python3 docs/device/rowwise_sweep.py run .device/$p/rsweep-ops --only $A --cols 1024,4096,16384 \
          --backends cuda --rounds 1 --json "$FINAL_OUT/nan_${p}_$r.json" --build-log $W/build_$p.log > "$FINAL_OUT/nan_${p}_$r.log" 2>&1
        echo "$p round $r rc=$? at $(( $(date +%s) - t )) s"
      done
      python3 docs/device/fwd_ab.py "$FINAL_OUT/nan_q45_$r.json" "$FINAL_OUT/nan_q46_$r.json" | tail -14
    done ;;
  sweep)
    S=.device/s64/rsweep-ops; t=$(date +%s)
    RSWEEP_PKG=$S bash docs/device/rowwise_sweep.sh build
    (cd $S && ls tests/test_*.py | timeout 260 xargs -P 6 -I{} sh -c \
       'python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" > /tmp/s64_$(basename {} .py).log 2>&1; \
        echo "{}: $(tail -1 /tmp/s64_$(basename {} .py).log)"' | sort > "$FINAL_OUT/s64_tests.txt") &
    RSWEEP_PKG=$S COLS=1024,4096,16384 PARTS=8 bash docs/device/rowwise_sweep.sh prewarm s64
    wait; echo "suites and prewarm at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/s64_tests.txt"
    grep -h -E "^(FAILED|ERROR)" /tmp/s64_*.log | cut -c1-240 | head -10
    RSWEEP_PKG=$S COLS=1024,4096,16384 ROUNDS=1 bash docs/device/rowwise_sweep.sh time s64 ;;
  ab)
    K="cuda and (backward or gradcheck) and (float16 or bfloat16)" TB=${TB:-150} small_ab p4x p45 p46 $P float16,bfloat16 $C 300 16
    cp $W/build_p45.log $W/build_p46.log "$FINAL_OUT/" 2>/dev/null
    [ -z "${ONE:-}" ] && ORDER="p46 p45" TB=${TB:-150} second_round p4x p45 p46 $P float16,bfloat16 $C ;;
esac
