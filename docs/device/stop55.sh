#!/usr/bin/env bash
# Stop 55's device time.
#   bash docs/device/stop55.sh v33  # version 33 (docs/wip/v33-algebra.patch as landed: a mean of what another
#                                   # backward reduction sums becomes that sum over the length; products of the
#                                   # same factors in any order add up; each factor of a denominator takes its own
#                                   # reciprocal; inputs used only inside one shared subtree take the chain rule
#                                   # through it) against version 32 on fifteen ops whose estimated backward cost
#                                   # changes most (docs/device/backward_cost.py): version 33's backward suites,
#                                   # then two rounds of both
#     (.device/x55/v33.json = docs/results/stop55/v33.json: seed 54's div.json ops r00, r14, t01, t04, q12, q16,
#      q20; seed 53's r00, r10, r07 as t00, t10, t07; seed 52's r03; seed 54's r00, r07, r05, r03 as u00, u07,
#      u05, u03.
#      .device/a55: python docs/device/rowwise_sweep.py generate .device/a55 --manifest docs/results/stop55/v33.json \
#        --only $O --backends cuda --backward fused      from a worktree of 5d25ec3 (version 32), PYTHONPATH=<worktree>
#      .device/b55: the same at version 33)
#   bash docs/device/stop55.sh verify  # memcheck and racecheck of version 33's backward kernels (d55: t04, q20, t07; t04, r14),
#                                      # and version 33's Triton backward: six ops' suites and forward+backward
#                                      # against compile (.device/c55: generated as b55 with --backends triton
#                                      # --only q16,u07,t04,t01,u00,q20)
#   bash docs/device/stop55.sh rule  # the cluster build for rows one block holds in 1024 threads, for the 2-byte types
#                                    # only (d55) against version 33 as first run (e55, the cluster build for float32
#                                    # too) on t04, r14, q20, t00, t07 (their float32 1024-thread builds spill; t04's
#                                    # holds rows of 4096, the others' rows of 8192): float32 at 4096 and 8192, bfloat16
#                                    # at 8192 (the same kernels in both: a control), two interleaved rounds
#     (.device/d55: generated as b55, --only t04,r14,q20,t00,t07; .device/e55: the same with cluster_over_wide's
#      `sizeof(scalar_t) == 2` taken out of rowwise.cuh's template)
#   bash docs/device/stop55.sh s55  # a fresh draw in version 34: seed 55's first six random rowwise ops, their
#                                   # backward suites, forward+backward against compile (float32/bfloat16, rows of
#                                   # 4096 and 16384, one round)
#     (python docs/device/rowwise_sweep.py generate .device/s55 --seed 55 --count 31 --only r00,r01,r02,r03,r04,r05 \
#        --backends cuda --backward fused)
W=/tmp/kg55
. "$(dirname "$0")/stop_common.sh"

O=r00,r14,t01,t04,q12,q16,q20,t00,t10,t07,r03,u00,u07,u05,u03
OT=q16_tl,u07_tl,t04_tl,t01_tl,u00_tl,q20_tl
for p in a55 b55 c55 d55 e55 s55; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done

case ${1:-v33} in
  v33)
    TB=${TB:-110} small_ab v33 a55 b55 $O float32,bfloat16 1024,4096,16384 150 70
    TB=${TB:-110} ORDER="b55 a55" second_round v33 a55 b55 $O float32,bfloat16 1024,4096,16384 ;;
  rule)
    rounds rule "e55 d55" t04,r14,q20,t00,t07 float32,bfloat16 4096,8192
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/rule_e55_2.txt" "$FINAL_OUT/rule_d55_2.txt" ;;
  s55)
    t=$(date +%s); O=r00,r01,r02,r03,r04,r05; build $W/s55/rsweep-ops
    for ((i = 0; i < 3; i++)); do
      python3 docs/device/backward_bench.py $W/s55/rsweep-ops --ops $O --dtypes float32,bfloat16 --cols 4096,16384 \
        --prewarm --part $i/3 > $W/prewarm_s55_$i.log 2>&1 &
    done
    suites s55 s55 $O ${T:-100} 6
    wait; echo "tests and prewarm at $(( $(date +%s) - t )) s"
    timeout ${TB:-90} python3 docs/device/backward_bench.py $W/s55/rsweep-ops --ops $O --dtypes float32,bfloat16 \
      --cols 4096,16384 --rounds 1 --against compile --json "$FINAL_OUT/s55.json" > "$FINAL_OUT/s55.txt" 2>&1
    echo "bench rc=$? at $(( $(date +%s) - t )) s"; tail -12 "$FINAL_OUT/s55.txt" ;;
  verify)
    t=$(date +%s); build $W/d55/rsweep-ops & build $W/c55/rsweep-ops & wait
    echo "built at $(( $(date +%s) - t )) s"
    for ((i = 0; i < 3; i++)); do
      python3 docs/device/backward_bench.py $W/c55/rsweep-ops --ops $OT --dtypes float32,bfloat16 --cols 1024,4096,16384 \
        --prewarm --part $i/3 > $W/prewarm_c55_$i.log 2>&1 &
    done
    suites triton c55 $OT ${T:-200} 6
    timeout ${TS:-90} compute-sanitizer --tool memcheck python3 docs/device/sanitize_backward.py $W/d55/rsweep-ops \
      --ops t04,q20,t07 --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/memcheck: /"
    timeout ${TR:-90} compute-sanitizer --tool racecheck python3 docs/device/sanitize_backward.py $W/d55/rsweep-ops \
      --ops t04,r14 --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/racecheck: /"
    wait; echo "tests, sanitizers and prewarm at $(( $(date +%s) - t )) s"
    timeout ${TB:-120} python3 docs/device/backward_bench.py $W/c55/rsweep-ops --ops $OT --dtypes float32,bfloat16 \
      --cols 1024,4096,16384 --rounds 1 --against compile --json "$FINAL_OUT/triton.json" > "$FINAL_OUT/triton.txt" 2>&1
    echo "triton bench rc=$? at $(( $(date +%s) - t )) s"; tail -14 "$FINAL_OUT/triton.txt" ;;
esac
