#!/usr/bin/env bash
# Stop 53's device time. Template version 30 (the rowwise CUDA multi-pass kernels fold every reduction of a pass
# in one loop over the row: Op::kPass, GradOp::kPass) against version 29, on the ops whose backward has the most
# reductions: seed 52's seven of more than six (no cluster build: the multi-pass kernel at rows of 16384 where
# one block does not hold the row) and ten of seed 50 at rows of 65536.
#   bash docs/device/stop53.sh tests   # all four packages built (two at a time); version 30's suites of the 17
#                                      # ops (4 side by side) and the rmsnorm example's; memcheck and racecheck of
#                                      # the multi-pass backwards
#   bash docs/device/stop53.sh bench   # forward+backward and the backward alone, both versions, against compile
#   bash docs/device/stop53.sh one     # a change tried and not landed (a row the backward's register kernel does
#                                      # not hold takes a cluster of one block: docs/backward.md "Stop 53") against
#                                      # version 30 on seed 53's ops without weights of at most six backward
#                                      # reductions, rows of 16384; the changed package's backward suites
#     (.device/d53: generate --manifest .device/s53/rowwise_sweep.json --only $O1 with that change applied;
#      .device/c53 the same at 2ed3dde, version 30)
#   bash docs/device/stop53.sh levels  # a pass's reductions completed with one barrier in the backward's register
#                                      # and cluster kernels, with the cluster build taken for up to six passes,
#                                      # against version 30 on five of seed 52's ops; the changed package's
#                                      # backward suites of them
#     (.device/f52: generate --manifest .device/s52/rowwise_sweep.json --only $O2 with docs/wip/pass-exchange.patch (in git at c2ca69d)
#      applied and GradLaunch::kHasCluster counting passes, pass_count<Op>() <= 6; .device/e52 the same at 2ed3dde,
#      version 30. To A/B the patch as it stands, generate f52 from it alone.)
# Carry .device/a52, .device/b52, .device/a50 and .device/b50, generated on the dev machine:
#   python docs/device/rowwise_sweep.py generate .device/b52 --manifest .device/s52/rowwise_sweep.json \
#     --only $O52 --backends cuda --backward fused
#   python docs/device/rowwise_sweep.py generate .device/b50 --manifest .device/s50/rowwise_sweep.json \
#     --only $O50 --backends cuda --backward fused
# (.device/a52 and .device/a50 the same from a worktree at a1c99e3, version 29).
W=/tmp/kg53
. "$(dirname "$0")/stop_common.sh"

O52=r00,r01,r08,r09,r13,r14,r15
O50=r13,r16,r15,range4,r22,r06,resln,layernorm,softmax,log_softmax
O1=r02,r03,r06,r10,r12
O2=r00,r02,r09,r14,r15
for p in a52 b52 a50 b50 c53 d53 e52 f52; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
build_all() {
  (build $W/b52/rsweep-ops 2>&1 | sed "s|^|b52: |") &
  (build $W/a52/rsweep-ops 2>&1 | sed "s|^|a52: |") &
  wait
  (build $W/b50/rsweep-ops 2>&1 | sed "s|^|b50: |") &
  (build $W/a50/rsweep-ops 2>&1 | sed "s|^|a50: |") &
  wait
}

case ${1:-tests} in
  levels)
    small_ab levels e52 f52 $O2 float32,bfloat16 4096,16384,65536 100 32 ;;
  one)
    small_ab one c53 d53 $O1 float32,float16,bfloat16 16384 150 18 ;;
  tests)
    t=$(date +%s); build_all; echo "built in $(( $(date +%s) - t )) s"
    { for op in ${O52//,/ }; do echo "b52 $op"; done; for op in ${O50//,/ }; do echo "b50 $op"; done; } \
      | timeout ${T:-330} xargs -P 4 -L 1 sh -c \
        'cd '"$W"'/$0/rsweep-ops && python3 -m pytest -q -p no:cacheprovider -rfE tests/test_$1.py -m "not large" -k cuda \
           > '"$W"'/test_$0_$1.log 2>&1; echo "$0 $1: $(tail -1 '"$W"'/test_$0_$1.log)"' | tee "$FINAL_OUT/tests_summary.txt"
    grep -h -E "^(FAILED|ERROR)" $W/test_*.log | cut -c1-240 > "$FINAL_OUT/tests_failures.txt"
    for log in $W/test_*.log; do grep -m 12 "^E  " "$log" | sed "s|^|$(basename "$log" .log): |"; done \
      | cut -c1-240 >> "$FINAL_OUT/tests_failures.txt"
    head -8 "$FINAL_OUT/tests_failures.txt"
    echo "tests at $(( $(date +%s) - t )) s"
    PKG=$W/rmsnorm; [ -d $PKG ] || cp -r examples/rmsnorm $PKG
    (cd $PKG && MAX_JOBS=16 KERNELGEN_REQUIRE_CUDA=1 python3 setup.py build_ext --inplace > $W/rmsnorm_build.log 2>&1
     echo "rmsnorm example build rc=$?"
     timeout ${TE:-120} python3 -m pytest -q -p no:cacheprovider -rfE tests -m "not large" -k cuda 2>&1 | tail -2 | sed "s/^/rmsnorm example: /")
    echo "example at $(( $(date +%s) - t )) s"
    # (2, 65536) and (4, 4099) among sanitize_backward.py's shapes take the multi-pass backward here
    timeout ${TS:-90} compute-sanitizer --tool memcheck python3 docs/device/sanitize_backward.py $W/b52/rsweep-ops \
      --ops r09,r15 --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/memcheck: /"
    timeout ${TR:-90} compute-sanitizer --tool racecheck python3 docs/device/sanitize_backward.py $W/b50/rsweep-ops \
      --ops range4,layernorm --dtypes bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/racecheck: /"
    echo "tests done in $(( $(date +%s) - t )) s" ;;
  bench)
    t=$(date +%s); build_all
    for ((i = 0; i < 4; i++)); do
      python3 docs/device/backward_bench.py $W/b52/rsweep-ops --ops $O52 --dtypes float32,float16,bfloat16 \
        --cols 16384,65536 --prewarm --part $i/4 > $W/prewarm52_$i.log 2>&1 &
      python3 docs/device/backward_bench.py $W/b50/rsweep-ops --ops $O50 --dtypes float32,bfloat16 \
        --cols 65536 --prewarm --part $i/4 > $W/prewarm50_$i.log 2>&1 &
    done
    wait; echo "prewarm in $(( $(date +%s) - t )) s"; grep -h -m3 -E "Error|error" $W/prewarm*.log | head -5
    for p in a52 b52; do
      timeout ${TB:-150} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $O52 --dtypes float32,float16,bfloat16 \
        --cols 16384,65536 --rounds 1 --against compile --json "$FINAL_OUT/bwd_$p.json" > "$FINAL_OUT/bwd_$p.txt" 2>&1
      echo "$p bwd rc=$? at $(( $(date +%s) - t )) s"
    done
    for p in a50 b50; do
      timeout ${TL:-100} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $O50 --dtypes float32,bfloat16 \
        --cols 65536 --rounds 1 --against compile --json "$FINAL_OUT/bwd_$p.json" > "$FINAL_OUT/bwd_$p.txt" 2>&1
      echo "$p bwd rc=$? at $(( $(date +%s) - t )) s"
    done
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/bwd_a52.txt" "$FINAL_OUT/bwd_b52.txt" | tail -45
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/bwd_a50.txt" "$FINAL_OUT/bwd_b50.txt" | tail -25 ;;
esac
