#!/usr/bin/env bash
# Prepared in stop 61 for the next session's device time (not run yet): a 64-register cluster build of the rowwise
# backward without weights (docs/wip/cluster64-v46.patch, a candidate version 46). Stop 61 (docs/backward.md "Stop 61"):
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
# Read the builds with python docs/device/grad_builds.py docs/results/stop62/build_p46.log. If p46 wins, land the
# patch as version 46 (its comments say CANDIDATE: write them as the measured rule) and run the examples again.
W=/tmp/kg62
. "$(dirname "$0")/stop_common.sh"

for p in p45 p46; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
P=softmax,log_softmax,lse,csilu,xbyy,gated,r02,r18,r22,r30,r32,r26; C=32768,65536,131072

case ${1:-ab} in
  examples)
    examples "p45 p46" ;;
  ab)
    K="cuda and (backward or gradcheck) and (float16 or bfloat16)" TB=${TB:-150} small_ab p4x p45 p46 $P float16,bfloat16 $C 300 16
    cp $W/build_p45.log $W/build_p46.log "$FINAL_OUT/" 2>/dev/null
    [ -z "${ONE:-}" ] && ORDER="p46 p45" TB=${TB:-150} second_round p4x p45 p46 $P float16,bfloat16 $C ;;
esac
