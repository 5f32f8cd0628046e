#!/usr/bin/env bash
# Prepared in stop 62 and run in stop 63 (docs/results/stop63/run_info.txt has each call as run, with OUT pointing at
# a folder that the call then tarred into the real $OUT): what stop 62 left unmeasured of template version 46
# (opmath's float min and max as min.NaN.f32 / max.NaN.f32, docs/backward.md "Stop 62"), and stop 63's ncu and trig.
# The wide phase's patch (docs/wip/wide-once-v47.patch) is in git history at 2309bd1.
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

for p in b45 b46 v46f w47 n63 c46 c47; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
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
  ncu)  # the worst cells of version 46's forward under Nsight Compute, ours beside compile's (carry .device/n63:
        # python docs/device/rowwise_sweep.py generate .device/n63 --seed 64 --count 64 --only r00,r06,r08,r09,range4
        # --backends cuda --backward vjp); instructions an element per pipe, issue and occupancy (ncu_pair_table.py)
    build $W/n63/rsweep-ops; cp $W/build_n63.log "$FINAL_OUT/"
    M=$(python3 docs/device/ncu_pair_table.py --metrics)
    CELLS=${CELLS:-r00:float16:4096,r00:bfloat16:4096,r00:float32:4096,r09:float16:1024,r09:bfloat16:4096,r06:float32:16384,r08:float32:16384,range4:float16:16384,range4:bfloat16:16384,range4:float32:16384}
    TORCH_LOGS=output_code timeout ${TN:-400} ncu --profile-from-start off --csv --metrics $M python3 docs/device/ncu_pair.py \
      $W/n63/rsweep-ops --cells $CELLS > "$FINAL_OUT/ncu.csv" 2> "$FINAL_OUT/ncu_stderr.log"; echo "ncu rc=$?"
    grep -E "^(warm|CELL)" "$FINAL_OUT/ncu_stderr.log"
    python3 docs/device/ncu_pair_table.py "$FINAL_OUT/ncu.csv" "$FINAL_OUT/ncu_stderr.log" | tee "$FINAL_OUT/ncu_table.txt" ;;
  trig)  # opmath's sin and cos declared const in device code (a call repeated with one argument computed once):
         # c46 (version 46) against c47 (the change), seed 64's r00, r05, r06, r09, r14, r24, r48 with the fused
         # backward (carry .device/c46, .device/c47; generated as b45/b46 above with --only $G). c47's CUDA
         # backward and gradcheck suites beside compile's prewarm, the backward of both timed (small_ab), then
         # the forward of both, one round each way (rowwise_sweep.py run)
    G=r00,r05,r06,r09,r14,r24,r48
    K="cuda and (backward or gradcheck)" TB=${TB:-120} small_ab trig c46 c47 $G $D $C 150 12
    cp $W/build_c46.log $W/build_c47.log "$FINAL_OUT/" 2>/dev/null
    t=$(date +%s)
    for ((i = 0; i < 6; i++)); do
      python3 docs/device/rowwise_sweep.py prewarm $W/c46/rsweep-ops --only $G --cols $C --backends cuda \
        --part $i/6 > $W/prewarm_trigf_$i.log 2>&1 &
    done; wait; echo "forward prewarmed in $(( $(date +%s) - t )) s"
    for p in ${FR:-c46 c47 c47 c46}; do
      r=1; [ -f "$FINAL_OUT/trigf_${p}_1.json" ] && r=2
      timeout ${TT:-80} python3 docs/device/rowwise_sweep.py run $W/$p/rsweep-ops --only $G --cols $C --backends cuda \
        --rounds 1 --json "$FINAL_OUT/trigf_${p}_$r.json" --build-log $W/build_$p.log > "$FINAL_OUT/trigf_${p}_$r.log" 2>&1
      echo "$p forward round $r rc=$? at $(( $(date +%s) - t )) s"
    done
    for r in 1 2; do [ -f "$FINAL_OUT/trigf_c47_$r.json" ] && python3 docs/device/fwd_ab.py "$FINAL_OUT/trigf_c46_$r.json" "$FINAL_OUT/trigf_c47_$r.json" | tail -1; done ;;
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
