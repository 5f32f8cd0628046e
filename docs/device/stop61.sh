#!/usr/bin/env bash
# Ran in stop 61 on one H200 (docs/results/stop61/run_info.txt; findings in docs/backward.md "Stop 61"): build, time
# (both rounds in one call), then examples and ab (version 44). Prepared in stop 60: whether the rowwise backward's cluster build
# (rows longer than 16384 since version 43) earns its place. Stop 60 (docs/backward.md "Stop 60"): at rows of 65536
# the multi-pass kernel took 0.35-0.89x the cluster build's time in 8 of 9 bfloat16 cells of seed 60, and 1.12x for
# r12. Here a fresh draw and the fixed list's backwards that have a cluster build (at most 6 backward reductions), in
# float16 and bfloat16 at rows of 32768, 65536 and 131072, as version 43 picks them against KG_NO_CLUSTER=1.
#   Ops: softmax, rmsnorm, layernorm, resrms, resln, wsoftmax (the fixed list: the examples' formulas among them)
#   and seed 61's r00, r16, r38, r19 (no weights, 2-5 backward reductions) and r03, r12, r21, r25, r29, r40 (1-3
#   weights, 2-6 reductions, kCode 104-733).
#   bash docs/device/stop61.sh build   # built (ptxas -v: its log comes back), the 2-byte CUDA backward tests of the
#                                      # sixteen (the cluster build at (2, 65536) among them) while compile's
#                                      # references are prewarmed
#   bash docs/device/stop61.sh time    # two rounds (RS=1 or RS=2: one): picked, then KG_NO_CLUSTER=1; the table of each
#     (.device/c61: the templates at version 43 with docs/wip/no-cluster-v43.patch applied (an experiment, not for
#      landing), PYTHONPATH=<that tree> python docs/device/rowwise_sweep.py generate /work/main/.device/c61 --seed 61 \
#        --count 64 --only softmax,rmsnorm,layernorm,resrms,resln,wsoftmax,r00,r16,r38,r19,r03,r12,r21,r25,r29,r40 \
#        --backends cuda --backward fused; manifest docs/results/stop60/c61_rowwise_sweep.json)
# The builds (registers, stack, spill loads): python docs/device/grad_builds.py docs/results/stop61/build_c61.log --ops ...
# If the cluster build loses nearly everywhere again, version 44 drops it from the backward (grad_cluster_rows_kernel,
# GradLaunch's cluster_shape, cluster_over_wide, resident_clusters, launch_cluster; kClusterReductions stays as
# kWideHoldsBarriers' bound) and saves its ptxas time; if a rule of the build separates the cells it wins, that rule.
# Version 44 (the backward's cluster build only with weights), on seed 62's draw against version 43:
#   bash docs/device/stop61.sh examples  # the three examples that include rowwise.cuh or per_device.cuh built side by
#                                        # side, their whole suites (not large) while d43 and d44 build (carry .whl,
#                                        # .device/d43, .device/d44)
#   bash docs/device/stop61.sh ab        # d44's 2-byte CUDA backward tests while compile's references are prewarmed,
#                                        # then d43 and d44 timed in turn, two rounds (float16/bfloat16, rows of
#                                        # 32768-131072): seven ops without weights, whose launch changes, and four with
#                                        # weights, whose launch does not (the rounds' noise)
#     (.device/d43, .device/d44: PYTHONPATH=<the templates at version 43 or 44> python docs/device/rowwise_sweep.py
#      generate /work/main/.device/<pkg> --seed 62 --count 64 --only r01,r06,r07,r13,r21,r41,r47,r05,r11,r23,r45 \
#      --backends cuda --backward fused)
# Version 45 (without weights, the cluster build where two of its blocks share an SM: GradLaunch::cluster_pays):
#   bash docs/device/stop61.sh v45       # e45 built, its 2-byte CUDA backward and gradcheck tests while compile's
#                                        # references are prewarmed, then one round (float16/bfloat16, rows of
#                                        # 32768-131072) to set beside ab's d43 and d44: r41 (64 registers) should run
#                                        # as d43, the others as d44
#     (.device/e45: PYTHONPATH=<the templates at version 45> python docs/device/rowwise_sweep.py generate \
#      /work/main/.device/e45 --seed 62 --count 64 --only softmax,rmsnorm,r41,r13,r07,r21 --backends cuda --backward fused)
W=/tmp/kg61
. "$(dirname "$0")/stop_common.sh"

for p in c61 d43 d44 e45; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
D=r01,r06,r07,r13,r21,r41,r47,r05,r11,r23,r45
O=softmax,rmsnorm,layernorm,resrms,resln,wsoftmax,r00,r16,r38,r19,r03,r12,r21,r25,r29,r40; C=32768,65536,131072

case ${1:-build} in
  build)
    K="cuda and backward and (float16 or bfloat16)" prepared c61 $O float16,bfloat16 $C ;;
  time)  # RS: the rounds (default "1 2": about 400 s in all; RS=1, then RS=2, where a call's limit is shorter)
    DT=float16,bfloat16 TB=${TB:-250} toggled c61 c61 $O $C KG_NO_CLUSTER picked nocluster picked ;;
  examples)
    examples "d43 d44" ;;
  ab)
    K="cuda and backward and (float16 or bfloat16)" TB=${TB:-150} small_ab d4x d43 d44 $D float16,bfloat16 $C 300 16
    [ -z "${ONE:-}" ] && ORDER="d44 d43" TB=${TB:-150} second_round d4x d43 d44 $D float16,bfloat16 $C ;;
  v45)
    E=softmax,rmsnorm,r41,r13,r07,r21
    K="cuda and (backward or gradcheck) and (float16 or bfloat16)" T=${T:-150} prepared e45 $E float16,bfloat16 $C
    timeout ${TB:-120} python3 docs/device/backward_bench.py $W/e45/rsweep-ops --ops $E --dtypes float16,bfloat16 \
      --cols $C --rounds 1 > "$FINAL_OUT/e45_1.txt" 2>&1; echo "e45 rc=$?" ;;
esac
