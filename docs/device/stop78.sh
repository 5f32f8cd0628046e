#!/usr/bin/env bash
# Prepared in stop 77 for the next session's device time. Version 65 landed with one fix not yet run on a GPU (the
# forward's save flag a run-time argument, not a constexpr: docs/backward.md "Stop 77"), so verify65 comes first.
# Packages (python docs/device/rowwise_sweep.py generate .device/<name> --seed N --count 64 --only ... --backends triton
# --backward fused, at the current version):
#   .device/f84   --seed 84 --only softmax,layernorm,resrms,r00,r01,r02,r03,r04,r05,r06,r07,r08,r09
# Wrap each call so that $OUT returns what the phase wrote even when it is cut short, in one file:
#   OUT=$OUT timeout 570 bash docs/device/stop78.sh PHASE 2>&1 | tee $OUT/log.txt; cd $OUT && tar czf /tmp/x.tgz * \
#     && rm -rf $OUT/* && mv /tmp/x.tgz $OUT/
#   verify65  carry .device/f84: every op's CUDA backward, gradcheck and training-path suites (the bitwise test of the
#             training path against the registered op, which failed for layernorm_tl with the constexpr flag, and
#             the long-row test of the saved values), then memcheck and racecheck over the long kernels and the
#             training path (sanitize_backward.py) for layernorm_tl and r07_tl
#   verify66  the same at version 66 (the suites' -k takes the <op>_train tests: their names say training)
#   compiled84 carry .device/f84 at version 66: ours inside torch.compile (<op>_train, saving) against the registered
#             op inside compile (computing again) and compile of the reference, graphed, rows of 16384 and 65536
#   fresh84   carry .device/f84: forward+backward against compile and against the registered op (computing the
#             per-row values again), graphed, at rows of 1024, 4096, 16384 and 65536, float32 and bfloat16
#   examples  carry .whl (pip download --no-deps -d .whl nvidia-cutlass==4.2.0.0): the three examples' whole suites
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
W=${W:-/tmp/kg78}
. "$(dirname "$0")/stop_common.sh"

ALL=softmax_tl,layernorm_tl,resrms_tl,r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl
case ${1:-verify65} in
  verify65|verify66)
    [ -d $W/f84 ] || cp -r .device/f84 $W/f84
    build $W/f84/rsweep-ops
    K="(cuda and (backward or gradcheck)) or training" suites v65 f84 ${OPS:-$ALL} ${T:-380} 7
    for tool in memcheck racecheck; do
      timeout 70 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $W/f84/rsweep-ops --ops ${SOPS:-layernorm_tl,r07_tl} --dtypes float32,bfloat16 > "$FINAL_OUT/v65_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$FINAL_OUT/v65_$tool.log" | tail -1)"
    done ;;
  compiled84)
    # Version 66: ours inside torch.compile records <op>_train (saving) against the registered op (computing again).
    [ -d $W/f84 ] || cp -r .device/f84 $W/f84
    prepared f84 ${OPS:-layernorm_tl,r02_tl,r05_tl,r07_tl} float32,bfloat16 ${COLS:-16384,65536}
    timeout ${TB:-420} python3 docs/device/backward_bench.py $W/f84/rsweep-ops --ops ${OPS:-layernorm_tl,r02_tl,r05_tl,r07_tl} \
      --dtypes float32,bfloat16 --cols ${COLS:-16384,65536} --rounds 1 --against compile --graphs --registered --compiled-ours \
      --json "$FINAL_OUT/compiled84.json" > "$FINAL_OUT/compiled84.txt" 2>&1; echo "bench rc=$?"
    grep -E "x compile" "$FINAL_OUT/compiled84.txt" | tail -16 | cut -c1-260 ;;
  fresh84)
    [ -d $W/f84 ] || cp -r .device/f84 $W/f84
    prepared f84 ${OPS:-$ALL} float32,bfloat16 ${COLS:-1024,4096,16384,65536}
    timeout ${TB:-420} python3 docs/device/backward_bench.py $W/f84/rsweep-ops --ops ${OPS:-$ALL} --dtypes float32,bfloat16 \
      --cols ${COLS:-1024,4096,16384,65536} --rounds 1 --against compile --graphs --registered \
      --json "$FINAL_OUT/fresh84.json" > "$FINAL_OUT/fresh84.txt" 2>&1; echo "bench rc=$?"
    grep -E "x compile" "$FINAL_OUT/fresh84.txt" | tail -12 | cut -c1-200 ;;
  examples)
    examples "" ;;
esac
