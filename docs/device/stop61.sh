#!/usr/bin/env bash
# Prepared in stop 60 for the next session's device time (not run yet): whether the rowwise backward's cluster build
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
W=/tmp/kg61
. "$(dirname "$0")/stop_common.sh"

[ -d .device/c61 ] && [ ! -d $W/c61 ] && cp -r .device/c61 $W/c61
O=softmax,rmsnorm,layernorm,resrms,resln,wsoftmax,r00,r16,r38,r19,r03,r12,r21,r25,r29,r40; C=32768,65536,131072

case ${1:-build} in
  build)
    K="cuda and backward and (float16 or bfloat16)" prepared c61 $O float16,bfloat16 $C ;;
  time)  # RS: the rounds (default "1 2": about 400 s in all; RS=1, then RS=2, where a call's limit is shorter)
    DT=float16,bfloat16 TB=${TB:-250} toggled c61 c61 $O $C KG_NO_CLUSTER picked nocluster picked ;;
esac
