#!/usr/bin/env bash
# Prepared in stop 58 (cache, multipass, large) and stop 59 (wide, wide2, final); every phase ran in stop 59 on one H200,
# in the order listed: the outputs are in docs/results/stop59/, the findings in docs/backward.md "Stop 59". (multipass and
# wide2 ran their two toggled rounds inline; stop_common.sh's toggled now runs the same commands.)
#   bash docs/device/stop59.sh cache   # docs/wip/launch-cache.patch (the rowwise backward's launch asks the occupancy
#                                      # API and the device's attributes once per device and build, not at every
#                                      # call) against HEAD: the rmsnorm example built both ways, the patched one's
#                                      # suite, then docs/device/host_cost.py on each, twice, in turn (stop 58: the
#                                      # step at 2^24 is bound by the host, ours 142-206 us against F.rms_norm's 91-124)
#     (.device/rms_cache: git worktree add /tmp/wt HEAD; cd /tmp/wt; git apply docs/wip/launch-cache.patch;
#      PYTHONPATH=/tmp/wt bash examples/regenerate.sh (without PYTHONPATH the editable install renders main's
#      templates); cp -r examples/rmsnorm /work/main/.device/rms_cache. Stop 58 made it so and compiled its
#      kernel file with nvcc for sm_90 on the dev machine: no error)
#   bash docs/device/stop59.sh multipass  # seed 57's r07 (0.76x of compile at float32 rows of 4096: its 1024-thread
#                                      # register build runs one block an SM for five backward reductions on two
#                                      # levels) and r00, r03, r09: the backward as the launch picks it against the
#                                      # multi-pass kernel forced (KG_FORCE_MULTIPASS=1, docs/wip/force-multipass.patch,
#                                      # an experiment, not for landing), float32/bfloat16 at rows of 2048-16384, two rounds
#     (.device/f57: in a worktree of 064328e with that commit's docs/wip/force-multipass.patch applied (since stop 59 the
#      patch applies to version 41),
#      PYTHONPATH=<worktree> python docs/device/rowwise_sweep.py generate /work/main/.device/f57 \
#        --manifest .device/s57/rowwise_sweep.json --only r00,r03,r07,r09 --backends cuda --backward fused)
#   bash docs/device/stop59.sh large   # the examples' >2**31-element tests: stop58.sh large (carry .whl, see there)
#   bash docs/device/stop59.sh wide    # the first form of version 41's launch rule (kWideHoldsBarriers: a backward of more
#   bash docs/device/stop59.sh wide2   # than kClusterReductions reductions takes no 1024-thread build) on eight ops of seed 59
#                                      # with 7-10 backward reductions: wide builds the package and runs its CUDA
#                                      # backward suites (the rule's launch) while compile's references are prewarmed;
#                                      # wide2 times both launches in one process each, two rounds: as that rule
#                                      # picks (files wide_v41_*) and as version 40 did (KG_V40_LAUNCH=1, wide_v40_*)
#     (.device/w59: a worktree of 064328e (version 40) with docs/wip/stop59-wide-experiment.patch applied: the
#      first form of the rule (every backward of more than 6 reductions) and the KG_V40_LAUNCH toggle;
#      PYTHONPATH=<worktree> python docs/device/rowwise_sweep.py generate /work/main/.device/w59 --seed 59 \
#        --count 64 --only range4,r06,r10,r13,r17,r29,r39,r43 --backends cuda --backward fused)
#   bash docs/device/stop59.sh final   # template version 41 as landed (.device/v41: seed 57's r07 and seed 59's range4,
#                                      # r13, r29, r39, r43; no toggle): built, every CUDA test of the six (not -m large)
#                                      # while compile's references are prewarmed, then forward+backward against compile
#     (.device/v41: python docs/device/rowwise_sweep.py generate .device/v41 --manifest .device/s57/rowwise_sweep.json \
#        --manifest .device/w59/rowwise_sweep.json --only r07,r13,r29,r39,range4,r43 --backends cuda --backward fused)
#   bash docs/device/stop59.sh shapes  # after final: the backward tests' new row lengths (aligned rows of 4096 and 8192, the
#                                      # 1024-thread build's or, for r07, r13, r29 and r39 in version 41, the multi-pass
#                                      # kernel's) for the six ops of .device/v41 (regenerated: its tests only changed),
#                                      # and the rmsnorm example's whole CUDA suite
W=/tmp/kg59
. "$(dirname "$0")/stop_common.sh"

[ -d .device/f57 ] && [ ! -d $W/f57 ] && cp -r .device/f57 $W/f57
[ -d .device/w59 ] && [ ! -d $W/w59 ] && cp -r .device/w59 $W/w59
WO=range4,r06,r10,r13,r17,r29,r39,r43; WC=2048,4096,8192,16384
[ -d .device/v41 ] && [ ! -d $W/v41 ] && cp -r .device/v41 $W/v41

case ${1:-cache} in
  multipass)
    O=r00,r03,r07,r09; C=2048,4096,8192,16384; build $W/f57/rsweep-ops
    for ((i = 0; i < 4; i++)); do
      python3 docs/device/backward_bench.py $W/f57/rsweep-ops --ops $O --dtypes float32,bfloat16 --cols $C \
        --prewarm --part $i/4 > $W/prewarm_mp_$i.log 2>&1 &
    done; wait
    toggled mp f57 $O $C KG_FORCE_MULTIPASS picked forced picked ;;
  cache)
    example examples/rmsnorm head 8 & example .device/rms_cache cache 8 & wait
    (cd $W/cache && timeout ${TT:-200} python3 -m pytest -q -p no:cacheprovider -rfEs tests -m "not large" \
       > $W/test_cache.log 2>&1; echo "patched rmsnorm suite: $(tail -1 $W/test_cache.log)") | tee "$FINAL_OUT/cache_tests.txt"
    grep -h -E "^(FAILED|ERROR)" $W/test_cache.log | cut -c1-200 | head -5 | tee -a "$FINAL_OUT/cache_tests.txt"
    for r in 1 2; do for p in head cache; do
      python3 docs/device/host_cost.py $W/$p --op rmsnorm --shapes 64x1024,16384x1024,4096x4096,16384x4096 \
        2>&1 | grep -v Warning > "$FINAL_OUT/host_${p}_$r.txt"
      echo "== $p round $r"; cat "$FINAL_OUT/host_${p}_$r.txt"
    done; done ;;
  wide)
    t=$(date +%s); build $W/w59/rsweep-ops; echo "built at $(( $(date +%s) - t )) s"
    for ((i = 0; i < 4; i++)); do
      python3 docs/device/backward_bench.py $W/w59/rsweep-ops --ops $WO --dtypes float32,bfloat16 --cols $WC \
        --prewarm --part $i/4 > $W/prewarm_w_$i.log 2>&1 &
    done
    suites wide w59 $WO ${T:-300} 4
    wait; echo "suites and prewarm at $(( $(date +%s) - t )) s"; cp $W/build_w59.log "$FINAL_OUT/" ;;
  wide2)
    TB=${TB:-200} toggled wide w59 $WO $WC KG_V40_LAUNCH v41 v40 v40 ;;
  final)
    FO=r07,range4,r13,r29,r39,r43; t=$(date +%s); build $W/v41/rsweep-ops; echo "built at $(( $(date +%s) - t )) s"
    for ((i = 0; i < 3; i++)); do
      python3 docs/device/backward_bench.py $W/v41/rsweep-ops --ops $FO --dtypes float32,bfloat16 --cols $WC \
        --prewarm --part $i/3 > $W/prewarm_f_$i.log 2>&1 &
    done
    K=cuda suites final v41 $FO ${T:-240} 6
    wait; echo "suites and prewarm at $(( $(date +%s) - t )) s"
    timeout ${TB:-150} python3 docs/device/backward_bench.py $W/v41/rsweep-ops --ops $FO --dtypes float32,bfloat16 \
      --cols $WC --rounds 1 --against compile --json "$FINAL_OUT/final_v41.json" > "$FINAL_OUT/final_v41.txt" 2>&1
    echo "timed rc=$? at $(( $(date +%s) - t )) s"; cp $W/build_v41.log "$FINAL_OUT/" ;;
  shapes)
    FO=r07,range4,r13,r29,r39,r43; t=$(date +%s)
    (build $W/v41/rsweep-ops) & example examples/rmsnorm rms41 8 & wait; echo "built at $(( $(date +%s) - t )) s"
    K="cuda and backward_op_matches and (4096 or 8192)" suites shapes v41 $FO ${T:-150} 6
    (cd $W/rms41 && timeout ${TT:-200} python3 -m pytest -q -p no:cacheprovider -rfEs tests -m "not large" -k cuda \
       > $W/test_rms41.log 2>&1; echo "rmsnorm example (version 41), CUDA tests: $(tail -1 $W/test_rms41.log)") \
       | tee -a "$FINAL_OUT/shapes_tests.txt"
    grep -h -E "^(FAILED|ERROR)" $W/test_rms41.log | cut -c1-200 | head -5 | tee -a "$FINAL_OUT/shapes_tests.txt" ;;
  large)  # stop 58's phase, unchanged
    bash "$(dirname "$0")/stop58.sh" large ;;
esac
