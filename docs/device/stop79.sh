#!/usr/bin/env bash
# Prepared in stop 78 for the next session's device time (docs/backward.md "Stop 78"). Packages, generated on the dev
# machine at the current version (python docs/device/rowwise_sweep.py generate .device/<name> --seed N --count 64
# --only ... --backward fused, then carried):
#   .device/f84   --seed 84 --only softmax,layernorm,resrms,r00,...,r09 --backends triton
#   .device/c84   --seed 84 --only r00,...,r09 --backends cuda            (the CUDA backend: not timed since stop 36)
#   .device/c84x  the same with docs/wip/cuda-exact-subterms.patch applied (git apply, generate, git checkout)
# Wrap each call so that $OUT returns what the phase wrote even when it is cut short, in one file:
#   OUT=$OUT timeout 570 bash docs/device/stop79.sh PHASE 2>&1 | tee $OUT/log.txt; cd $OUT && tar czf /tmp/x.tgz * \
#     && rm -rf $OUT/* && mv /tmp/x.tgz $OUT/
#   fwd84     carry .device/f84 (version 67): each forward path of r07_tl, r09_tl, r00_tl and r06_tl at rows of 16384,
#             float32 and bfloat16, forced and timed (forward_paths.py): version 67 on r07_tl float32 (the long kernel
#             where 32 warps spilled 404 bytes), and whether 48-104 bytes (r06, r00, r09) should go too
#   cuda84    carry .device/c84: the CUDA backend's forward+backward against compile, graphed, rows of 1024-16384,
#             float32 and bfloat16, with its backward and gradcheck suites first
#   exact84   carry .device/c84 and .device/c84x: the patch's A/B on r02, r03, r04 (the ops whose counts it moves)
#   racecheck carry .device/f84: racecheck over layernorm_tl's and r07_tl's long kernels with room to finish (stop 78's
#             70 s did not)
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
W=${W:-/tmp/kg79}
. "$(dirname "$0")/stop_common.sh"

case ${1:-fwd84} in
  verify67)
    # Version 67 and the two moves into _triton_rowwise.py: the backward, gradcheck and training suites of every op,
    # and r07_tl's whole suite (its float32 forward at rows of 16384 now takes the long kernel), side by side.
    [ -d $W/f84 ] || cp -r .device/f84 $W/f84
    build $W/f84/rsweep-ops
    (cd $W/f84/rsweep-ops && timeout ${T:-300} python3 -m pytest -q -p no:cacheprovider -rfE tests/test_r07_tl.py -m "not large" \
       > "$FINAL_OUT/r07_whole.log" 2>&1; echo "r07_tl whole suite: $(tail -1 "$FINAL_OUT/r07_whole.log")") &
    K="(cuda and (backward or gradcheck)) or training" suites v67 f84 ${OPS:-softmax_tl,layernorm_tl,resrms_tl,r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl} ${T:-300} 7
    wait ;;
  fwd84)
    [ -d $W/f84 ] || cp -r .device/f84 $W/f84
    build $W/f84/rsweep-ops
    timeout ${TB:-420} python3 docs/device/forward_paths.py $W/f84/rsweep-ops --ops ${OPS:-r07_tl,r09_tl,r00_tl,r06_tl} \
      --dtypes float32,bfloat16 --cols 16384 --graphs > "$FINAL_OUT/fwd84.txt" 2>&1; echo "paths rc=$?"
    tail -30 "$FINAL_OUT/fwd84.txt" | cut -c1-220 ;;
  cuda84)
    [ -d $W/c84 ] || cp -r .device/c84 $W/c84
    ALL=r00,r01,r02,r03,r04,r05,r06,r07,r08,r09
    prepared c84 ${OPS:-$ALL} float32,bfloat16 ${COLS:-1024,4096,16384}
    timeout ${TB:-300} python3 docs/device/backward_bench.py $W/c84/rsweep-ops --ops ${OPS:-$ALL} --dtypes float32,bfloat16 \
      --cols ${COLS:-1024,4096,16384} --rounds 1 --against compile --graphs --json "$FINAL_OUT/cuda84.json" \
      > "$FINAL_OUT/cuda84.txt" 2>&1; echo "bench rc=$?"
    tail -22 "$FINAL_OUT/cuda84.txt" | cut -c1-200 ;;
  exact84)
    for p in c84 c84x; do [ -d $W/$p ] || cp -r .device/$p $W/$p; done
    GRAPHS=1 small_ab exact84 c84 c84x ${OPS:-r02,r03,r04} float32,bfloat16 ${COLS:-4096,16384} 300 20 ;;
  racecheck)
    [ -d $W/f84 ] || cp -r .device/f84 $W/f84
    build $W/f84/rsweep-ops
    timeout 500 compute-sanitizer --tool racecheck --error-exitcode 9 python3 docs/device/sanitize_backward.py \
      $W/f84/rsweep-ops --ops ${SOPS:-layernorm_tl,r07_tl} --dtypes float32,bfloat16 > "$FINAL_OUT/racecheck.log" 2>&1
    echo "racecheck: rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$FINAL_OUT/racecheck.log" | tail -1)" ;;
esac
