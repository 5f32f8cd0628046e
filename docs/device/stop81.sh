#!/usr/bin/env bash
# Prepared in stop 80 for the next session's device time (docs/backward.md "Stop 80"). Packages, generated on the dev
# machine and carried (python docs/device/rowwise_sweep.py generate .device/<name> --seed 85 --count 64 --only ...
# --backward fused):
#   .device/f85   --only softmax,layernorm,r00,...,r09 --backends triton
#   .device/c85   --only r00,...,r09 --backends cuda
# Wrap each call so that $OUT returns what the phase wrote even when it is cut short, in one file:
#   OUT=$OUT timeout 570 bash docs/device/stop81.sh PHASE 2>&1 | tee $OUT/log.txt; cd $OUT && tar czf /tmp/x.tgz * \
#     && rm -rf $OUT/* && mv /tmp/x.tgz $OUT/
#   weights85  carry .device/f85 and .device/c85: why r01_tl, r02_tl and r05_tl run at 0.78-0.95x of compile at rows
#              of 16384 where their CUDA twins run at 1.07-1.34x: each backend's backward kernel by kernel
#              (backward_kernels.py), then every path of the Triton backward forced and timed from CUDA graphs
#              (backward_paths.py, the weights' kernel's tiles included)
#   sanitize85 carry .device/f85: memcheck, then racecheck, over r05_tl's and r01_tl's backward launches (their long
#              kernels and the weights' kernel)
#   verify67, fwd84: stop79.sh's phases of the same names (carry .device/f84)
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
W=${W:-/tmp/kg81}
case ${1:-weights85} in verify67|fwd84) exec bash "$(dirname "$0")/stop79.sh" "$1" ;; esac
. "$(dirname "$0")/stop_common.sh"
WOPS=${OPS:-r01_tl,r02_tl,r05_tl}

case ${1:-weights85} in
  weights85)
    for p in f85 c85; do [ -d $W/$p ] || cp -r .device/$p $W/$p; done
    (build $W/c85/rsweep-ops) & build $W/f85/rsweep-ops; wait
    for ((i = 0; i < 4; i++)); do
      timeout 120 python3 docs/device/backward_paths.py $W/f85/rsweep-ops --ops $WOPS --dtypes float32,bfloat16 \
        --cols 16384 --compile-only --part $i/4 > $W/paths_compile_$i.log 2>&1 &
    done
    timeout 150 python3 docs/device/backward_kernels.py $W/c85/rsweep-ops --ops ${WOPS//_tl/} --dtypes float32,bfloat16 \
      --cols 16384 > "$FINAL_OUT/kernels_c85.txt" 2>&1; echo "CUDA kernels rc=$?"
    wait
    timeout 120 python3 docs/device/backward_kernels.py $W/f85/rsweep-ops --ops $WOPS --dtypes float32,bfloat16 \
      --cols 16384 > "$FINAL_OUT/kernels_f85.txt" 2>&1; echo "Triton kernels rc=$?"
    timeout 200 python3 docs/device/backward_paths.py $W/f85/rsweep-ops --ops $WOPS --dtypes float32,bfloat16 \
      --cols 16384 --graphs > "$FINAL_OUT/paths85.txt" 2>&1; echo "paths rc=$?"
    tail -40 "$FINAL_OUT/kernels_f85.txt" | cut -c1-200; tail -30 "$FINAL_OUT/paths85.txt" | cut -c1-200 ;;
  sanitize85)
    [ -d $W/f85 ] || cp -r .device/f85 $W/f85
    build $W/f85/rsweep-ops
    for tool in memcheck racecheck; do
      timeout 250 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $W/f85/rsweep-ops --ops ${SOPS:-r05_tl,r01_tl} --dtypes float32,bfloat16 > "$FINAL_OUT/$tool.log" 2>&1
      echo "$tool: rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$FINAL_OUT/$tool.log" | tail -1)"
    done ;;
esac
