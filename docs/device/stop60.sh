#!/usr/bin/env bash
# Prepared in stop 59 for the next session's device time (not run yet): data for the rows the version-41 launch
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
W=/tmp/kg60
. "$(dirname "$0")/stop_common.sh"

[ -d .device/f60 ] && [ ! -d $W/f60 ] && cp -r .device/f60 $W/f60
O=r01,r06,r08,r10,r12,r22,r27,r40,r04,r09,r23,r34,r45,r46; C=4096,8192,16384

case ${1:-build} in
  build)
    t=$(date +%s); build $W/f60/rsweep-ops; echo "built at $(( $(date +%s) - t )) s"; cp $W/build_f60.log "$FINAL_OUT/"
    for ((i = 0; i < 4; i++)); do
      python3 docs/device/backward_bench.py $W/f60/rsweep-ops --ops $O --dtypes float32,bfloat16 --cols $C \
        --prewarm --part $i/4 > $W/prewarm_$i.log 2>&1 &
    done
    suites f60 f60 $O ${T:-300} 5
    wait; echo "suites and prewarm at $(( $(date +%s) - t )) s" ;;
  time)
    TB=${TB:-250} toggled f60 f60 $O $C KG_FORCE_MULTIPASS picked forced picked ;;
esac
