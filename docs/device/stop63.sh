#!/usr/bin/env bash
# Prepared in stop 62 for the next session's device time (not run yet): what stop 62 left unmeasured of template
# version 46 (opmath's float min and max as min.NaN.f32 / max.NaN.f32, docs/backward.md "Stop 62").
#   bash docs/device/stop63.sh examples  # first: version 46's examples built side by side and their whole suites,
#                                        # while b45 and b46 build (carry .whl, .device/b45, .device/b46; ~480 s)
#   bash docs/device/stop63.sh bwd       # then, warm: b46's CUDA backward and gradcheck suites beside compile's
#                                        # prewarm, the backward of b45 and b46 timed (float32/float16/bfloat16, rows of
#                                        # 1024-16384), a second round in the other order (ONE=1: the first only)
#   bash docs/device/stop63.sh fwd       # the forward of b45 and b46 again, two rounds in opposite order (stop 62's
#                                        # forward A/B ran one round); fwd_ab.py prints each round's table
# b45 is version 45, b46 version 46, both with the fused backward, eleven ops: seed 64's r00, r01, r03, r05 (no
# min or max: the control), r06, r08, r09, r10 and the fixed softmax, lse, range4:
#   A=r00,r01,r03,r05,r06,r08,r09,r10,softmax,lse,range4
#   PYTHONPATH=<version 45's kernelgen and templates: git archive ea5821e> python docs/device/rowwise_sweep.py \
#     generate .device/b45 --seed 64 --count 64 --only $A --backends cuda --backward fused
#   python docs/device/rowwise_sweep.py generate .device/b46 --seed 64 --count 64 --only $A --backends cuda --backward fused
#   bash docs/device/stop63.sh wide      # the candidate docs/wip/wide-once-v47.patch (a 2-byte row widened once where
#                                        # float32's would fit kRowRegisters) against version 46: v46f and w47 built side
#                                        # by side, w47's CUDA suites beside compile's prewarm, then the forward of both,
#                                        # two rounds in opposite order (forward_rounds; carry .device/v46f, .device/w47)
#     (B=r00,r01,r03,r05,r06,r07,r08,r09,r10,softmax,lse,range4,log_softmax,layernorm,rmsnorm,resrms; .device/v46f:
#      python docs/device/rowwise_sweep.py generate .device/v46f --seed 64 --count 64 --only $B --backends cuda
#      --backward vjp; .device/w47: the same with the patch applied)
# The candidate's static counts (stop 62, docs/backward.md "Not done yet"): 2-byte register builds take 0.85-1.01x the
# instructions an element and never spill more, 16 of the 512-thread builds drop from three blocks an SM to two (float16 most).
W=/tmp/kg63
. "$(dirname "$0")/stop_common.sh"

for p in b45 b46 v46f w47; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
A=r00,r01,r03,r05,r06,r08,r09,r10,softmax,lse,range4; C=1024,4096,16384; D=float32,float16,bfloat16

case ${1:-bwd} in
  examples)
    examples "b45 b46" ;;
  bwd)
    K="cuda and (backward or gradcheck)" TB=${TB:-200} small_ab b4x b45 b46 $A $D $C 300 12
    cp $W/build_b45.log $W/build_b46.log "$FINAL_OUT/" 2>/dev/null
    [ -z "${ONE:-}" ] && ORDER="b46 b45" TB=${TB:-200} second_round b4x b45 b46 $A $D $C ;;
  fwd)
    for p in b45 b46; do (build $W/$p/rsweep-ops) & done; wait
    forward_rounds fwd b45 b46 $A $C ;;
  wide)
    t=$(date +%s); B=r00,r01,r03,r05,r06,r07,r08,r09,r10,softmax,lse,range4,log_softmax,layernorm,rmsnorm,resrms
    for p in v46f w47; do (build $W/$p/rsweep-ops) & done; wait; echo "built at $(( $(date +%s) - t )) s"
    cp $W/build_v46f.log $W/build_w47.log "$FINAL_OUT/" 2>/dev/null
    (cd $W/w47/rsweep-ops && ls tests/test_*.py | timeout ${TS:-240} xargs -P 8 -I{} sh -c \
       'python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" -k cuda > /tmp/w47_$(basename {} .py).log 2>&1; \
        echo "{}: $(tail -1 /tmp/w47_$(basename {} .py).log)" >> '"$FINAL_OUT"'/w47_tests.txt') &
    forward_rounds wide v46f w47 $B $C  # its prewarm waits for the suites too, so neither is timed beside them
    cat "$FINAL_OUT/w47_tests.txt"; grep -h -E "^(FAILED|ERROR)" /tmp/w47_*.log | cut -c1-240 | head -10 ;;
esac
