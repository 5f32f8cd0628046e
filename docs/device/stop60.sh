#!/usr/bin/env bash
# Ran in stop 60 on one H200 (docs/results/stop60/run_info.txt: examples, build, the first round of time, nocluster, v43
# and its second round; findings in docs/backward.md "Stop 60"). Prepared in stop 59: data for the rows the version-41 launch
# rule leaves in the 1024-thread backward build (docs/backward.md "Stop 59"): backwards with weights (stop 59: 8
# of 11 cells faster there, 3 slower, the three with the most spill loads) and backwards without weights of at most
# 6 reductions (not measured). Fourteen ops of seed 60: r01, r06, r08, r10, r12, r22, r27, r40 (weights, 2-9
# backward reductions) and r04, r09, r23, r34, r45, r46 (no weights, 3-6 reductions, 1-4 inputs).
#   bash docs/device/stop60.sh build   # the package built (ptxas -v: its log comes back), the CUDA backward and
#                                      # gradcheck tests of the fourteen while compile's references are prewarmed
#   bash docs/device/stop60.sh time    # the backward as version 41 picks it against the multi-pass kernel forced
#                                      # (KG_FORCE_MULTIPASS=1; where the cluster build takes the row, it), float32/
#                                      # bfloat16 at rows of 4096, 8192 and 16384, two rounds; the table of each round
#     (.device/f60: in a worktree of stop 59's HEAD with docs/wip/force-multipass.patch applied (an experiment,
#      not for landing), PYTHONPATH=<worktree> python docs/device/rowwise_sweep.py generate /work/main/.device/f60 \
#        --seed 60 --count 64 --only r01,r06,r08,r10,r12,r22,r27,r40,r04,r09,r23,r34,r45,r46 --backends cuda --backward fused)
# Read the cells whose picked build has 1024 threads (the ptxas log names each build's registers and spills;
# docs/results/stop59's tables show how stop 59 told them apart).
#     (.device/x60 and .device/y43: in a copy of the templates at version 42 (x60: docs/wip/no-cluster.patch, which also
#      carries force-multipass) or 43 (y43: its KG_NO_CLUSTER hunk only),
#      PYTHONPATH=<copy> python docs/device/rowwise_sweep.py generate /work/main/.device/<pkg> \
#        --manifest docs/results/stop59/f60_rowwise_sweep.json --only r04,r09,r46,r23,r34,r45,r06,r12,r27,r10 \
#        --backends cuda --backward fused)
#   bash docs/device/stop60.sh examples  # version 42 (PerDevice, one cache for the launches' runtime answers): the three
#                                      # examples that include per_device.cuh built side by side, then their whole suites
#                                      # (not large) side by side while .device/f60 builds on the cores left (carry
#                                      # .device/f60 and .whl)
W=/tmp/kg60
. "$(dirname "$0")/stop_common.sh"

[ -d .device/f60 ] && [ ! -d $W/f60 ] && cp -r .device/f60 $W/f60
O=r01,r06,r08,r10,r12,r22,r27,r40,r04,r09,r23,r34,r45,r46; C=4096,8192,16384

case ${1:-build} in
  examples)
    examples "f60" ;;
  build)
    prepared f60 $O float32,bfloat16 $C ;;
  time)
    TB=${TB:-250} toggled f60 f60 $O $C KG_FORCE_MULTIPASS picked forced picked ;;
  nocluster)  # bfloat16 rows of 8192 and 16384 of ten ops (.device/x60) as version 42 picks them, without the
              # cluster build (KG_NO_CLUSTER=1: the 1024-thread build or the multi-pass kernel), and the multi-pass
              # kernel alone (both toggles); a build, its CUDA backward suites, then two rounds of the three
    [ -d .device/x60 ] && [ ! -d $W/x60 ] && cp -r .device/x60 $W/x60
    X=r04,r09,r46,r23,r34,r45,r06,r12,r27,r10; t=$(date +%s)
    build $W/x60/rsweep-ops; echo "built at $(( $(date +%s) - t )) s"; cp $W/build_x60.log "$FINAL_OUT/"
    for ((i = 0; i < 3; i++)); do
      python3 docs/device/backward_bench.py $W/x60/rsweep-ops --ops $X --dtypes bfloat16 --cols 8192,16384 \
        --prewarm --part $i/3 > $W/prewarm_x_$i.log 2>&1 &
    done
    K="cuda and backward and bfloat16" suites x60 x60 $X ${T:-150} 5; wait
    echo "suites and prewarm at $(( $(date +%s) - t )) s"
    for r in 1 2; do for m in picked nocluster multipass; do
      unset KG_NO_CLUSTER KG_FORCE_MULTIPASS
      [ $m != picked ] && export KG_NO_CLUSTER=1; [ $m = multipass ] && export KG_FORCE_MULTIPASS=1
      timeout ${TB:-90} python3 docs/device/backward_bench.py $W/x60/rsweep-ops --ops $X --dtypes bfloat16 \
        --cols 8192,16384 --rounds 1 > "$FINAL_OUT/x60_${m}_$r.txt" 2>&1
      echo "$m round $r rc=$? at $(( $(date +%s) - t )) s"
    done; done; unset KG_NO_CLUSTER KG_FORCE_MULTIPASS
    for r in 1 2; do for m in nocluster multipass; do echo "round $r: picked -> $m"
      python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/x60_picked_$r.txt" "$FINAL_OUT/x60_${m}_$r.txt" | tail -1
    done; done ;;
  v43)  # version 43 (the backward's cluster build only for rows longer than 16384) with the KG_NO_CLUSTER toggle
        # (.device/y43: the ten ops of nocluster), and the rmsnorm example at version 43: both built side by side,
        # the backward suites of both, then bfloat16 rows of 16384 (version 43: no cluster) and 65536 (the cluster
        # build, against the multi-pass kernel with KG_NO_CLUSTER=1), one round
    [ -d .device/y43 ] && [ ! -d $W/y43 ] && cp -r .device/y43 $W/y43
    X=r04,r09,r46,r23,r34,r45,r06,r12,r27,r10; t=$(date +%s)
    (MAX_JOBS=11 build $W/y43/rsweep-ops) & example examples/rmsnorm rms43 5 & wait
    echo "built at $(( $(date +%s) - t )) s"; cp $W/build_y43.log "$FINAL_OUT/"
    for ((i = 0; i < 3; i++)); do
      python3 docs/device/backward_bench.py $W/y43/rsweep-ops --ops $X --dtypes bfloat16 --cols 16384,65536 \
        --prewarm --part $i/3 > $W/prewarm_y_$i.log 2>&1 &
    done
    K="cuda and backward and (bfloat16 or float16)" suites y43 y43 $X ${T:-150} 5
    (cd $W/rms43 && timeout 150 python3 -m pytest -q -p no:cacheprovider -rfE tests -m "not large" -k "cuda and backward" \
       > $W/test_rms43.log 2>&1; echo "rmsnorm example (version 43), CUDA backward tests: $(tail -1 $W/test_rms43.log)") \
       | tee -a "$FINAL_OUT/y43_tests.txt"
    grep -h -E "^(FAILED|ERROR)" $W/test_rms43.log | cut -c1-200 | head -5; wait
    echo "suites and prewarm at $(( $(date +%s) - t )) s"
    for m in picked nocluster; do
      unset KG_NO_CLUSTER; [ $m = nocluster ] && export KG_NO_CLUSTER=1
      timeout ${TB:-80} python3 docs/device/backward_bench.py $W/y43/rsweep-ops --ops $X --dtypes bfloat16 \
        --cols 16384,65536 --rounds 1 > "$FINAL_OUT/y43_${m}_1.txt" 2>&1
      echo "$m rc=$? at $(( $(date +%s) - t )) s"
    done; unset KG_NO_CLUSTER
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/y43_picked_1.txt" "$FINAL_OUT/y43_nocluster_1.txt" ;;
esac
