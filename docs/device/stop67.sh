#!/usr/bin/env bash
# Prepared in stop 66 for the next session's device time (not run yet). Wrap each call so that $OUT returns one
# archive, bounded below the call's limit so the archive is made:
#   R=$OUT; mkdir -p /tmp/o; OUT=/tmp/o timeout 540 bash docs/device/stop67.sh PHASE; tar czf $R/PHASE.tgz -C /tmp/o .
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
#
# Priorities for 30 minutes: sanitize, fresh, examples.
#   sanitize  compute-sanitizer memcheck and racecheck over template version 51's Triton long-row kernels: the
#             forward's (sanitize_long.py, rows of 65536-262147) and every backward launch shape (sanitize_backward.py:
#             version 50's long backward at 2048x16 with the cache hints and 4096x32), seed 72's r00_tl, r03_tl,
#             r05_tl (weights) and r09_tl, float32 and bfloat16 (.device/f72: python docs/device/rowwise_sweep.py
#             generate .device/f72 --seed 72 --count 64 --only r00,...,r09 --backends triton --backward fused).
#   fresh     seed 72 (drawn for this check, no rule was fitted to it) at version 51: forward+backward against
#             compile (float32, bfloat16, rows of 1024-16384), the forward's paths at 16384 (forward_paths.py, the
#             16-byte tolerance) and the long backward against the launch before version 50 (backward_paths.py
#             --long 4096x8:n) at 16384 and 65536; then the backward suites of four ops.
#   examples  version 51's examples built side by side and their whole suites (carry .whl: the cutlass wheel).
W=/tmp/kg67
. "$(dirname "$0")/stop_common.sh"

for p in f72; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
TL=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl; C=1024,4096,16384

case ${1:-sanitize} in
  sanitize)
    t=$(date +%s); build $W/f72/rsweep-ops
    sanitize f72 r00_tl,r03_tl,r05_tl,r09_tl ;;
  fresh)
    t=$(date +%s); build $W/f72/rsweep-ops
    for ((i = 0; i < 5; i++)); do
      python3 docs/device/backward_bench.py $W/f72/rsweep-ops --ops $TL --dtypes float32,bfloat16 --cols $C \
        --prewarm --part $i/5 > $W/prewarm_f72_$i.log 2>&1 &
    done
    for ((i = 0; i < 4; i++)); do
      timeout 150 python3 docs/device/backward_paths.py $W/f72/rsweep-ops --ops $TL --cols 16384,65536 --long 4096x8:n \
        --compile-only --part $i/4 > $W/pc72_$i.log 2>&1 &
      timeout 100 python3 docs/device/forward_paths.py $W/f72/rsweep-ops --ops $TL --dtypes bfloat16,float16 \
        --compile-only --part $i/4 > $W/fc72_$i.log 2>&1 &
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"; grep -h Error $W/pc72_*.log $W/fc72_*.log | head
    timeout 60 python3 docs/device/forward_paths.py $W/f72/rsweep-ops --ops $TL --dtypes bfloat16,float16 \
      > "$FINAL_OUT/fpaths_f72.txt" 2>&1; echo "forward paths rc=$? at $(( $(date +%s) - t )) s"
    timeout 90 python3 docs/device/backward_paths.py $W/f72/rsweep-ops --ops $TL --cols 16384,65536 --long 4096x8:n \
      > "$FINAL_OUT/paths_f72.txt" 2>&1; echo "paths rc=$? at $(( $(date +%s) - t )) s"
    timeout 200 python3 docs/device/backward_bench.py $W/f72/rsweep-ops --ops $TL --dtypes float32,bfloat16 --cols $C \
      --rounds 1 --against compile --json "$FINAL_OUT/f72_bwd.json" > "$FINAL_OUT/f72_bwd.txt" 2>&1
    echo "bench rc=$? at $(( $(date +%s) - t )) s"; tail -16 "$FINAL_OUT/f72_bwd.txt"
    K="cuda and backward" suites v72 f72 r01_tl,r04_tl,r06_tl,r07_tl 100 4 ;;
  examples)
    examples "" ;;
  rest)
    # The backward sanitizers' ops that sanitize's 120 s did not reach (memcheck: r05_tl, r09_tl; racecheck:
    # r09_tl), beside the examples' whole suites (the suites time nothing).
    t=$(date +%s); build $W/f72/rsweep-ops
    (for tool in memcheck racecheck; do
      ops=r09_tl; [ $tool = memcheck ] && ops=r05_tl,r09_tl
      timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $W/f72/rsweep-ops --ops $ops --dtypes float32,bfloat16 > "$FINAL_OUT/backward_${tool}_rest.log" 2>&1
      echo "backward $tool $ops: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$FINAL_OUT/backward_${tool}_rest.log" | tail -1) at $(( $(date +%s) - t )) s"
    done) &
    examples ""; wait ;;
  kernels)
    # Where seed 72's worst backwards at rows of 16384 spend their time, kernel by kernel, beside compile's
    # forward+backward (backward_kernels.py), in one process (a kernel's time is its own GPU's).
    t=$(date +%s); build $W/f72/rsweep-ops
    timeout 420 python3 docs/device/backward_kernels.py $W/f72/rsweep-ops --ops r03_tl,r08_tl,r07_tl,r02_tl,r06_tl,r00_tl \
      --dtypes bfloat16,float32 --cols 16384 --steps 10 > "$FINAL_OUT/kernels_f72.txt" 2>&1
    echo "kernels rc=$? at $(( $(date +%s) - t )) s" ;;
  tiles)
    # The weights' kernel at other tiles (weight_tile.py: the whole backward, _WEIGHT_TILE set on the module), seed 72's
    # ten ops at rows of 16384: compiled first, five processes at 2^24 elements, then timed one op at a time at 2^26.
    t=$(date +%s); build $W/f72/rsweep-ops
    TILES=64x64x4,16x64x4,32x64x8,16x128x4,16x128x8,8x128x4
    NW="r00_tl:1 r01_tl:2 r02_tl:2 r03_tl:3 r04_tl:3 r05_tl:3 r06_tl:3 r07_tl:1 r08_tl:3 r09_tl:2"
    i=0; for ow in $NW; do
      timeout 150 python3 docs/device/weight_tile.py $W/f72/rsweep-ops --op ${ow%%:*} --weights ${ow##*:} --tiles $TILES \
        --cols 16384 --size 16777216 > $W/tiles_warm_${ow%%:*}.log 2>&1 &
      i=$((i + 1)); [ $((i % 5)) = 0 ] && wait
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"; grep -h Error $W/tiles_warm_*.log | head -3
    for ow in $NW; do
      timeout 60 python3 docs/device/weight_tile.py $W/f72/rsweep-ops --op ${ow%%:*} --weights ${ow##*:} --tiles $TILES \
        --cols 16384 2>&1 | grep -v Warn >> "$FINAL_OUT/tiles_f72.txt"
    done; echo "timed at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/tiles_f72.txt" ;;
  counts)
    # The GPU's counts of the weights' kernel at the two tiles that split tiles' cells (weight_counts.py), seeds 72 and
    # 71; then seed 71's weighted ops timed at both (a draw the tiles phase did not see).
    for p in f71; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
    t=$(date +%s); build $W/f72/rsweep-ops; build $W/f71/rsweep-ops
    TILES=64x64x4,16x64x4
    NW="r01_tl:2 r02_tl:1 r03_tl:3 r04_tl:1 r05_tl:3 r06_tl:1 r07_tl:2 r08_tl:2"
    python3 docs/device/weight_counts.py $W/f72/rsweep-ops --tiles $TILES > "$FINAL_OUT/counts_f72.txt" 2>&1 &
    python3 docs/device/weight_counts.py $W/f71/rsweep-ops --tiles $TILES > "$FINAL_OUT/counts_f71.txt" 2>&1 &
    for ow in $NW; do
      timeout 100 python3 docs/device/weight_tile.py $W/f71/rsweep-ops --op ${ow%%:*} --weights ${ow##*:} --tiles $TILES \
        --cols 16384 --size 16777216 > $W/tiles_warm71_${ow%%:*}.log 2>&1 &
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"; grep -h Error $W/tiles_warm71_*.log | head -3
    cat "$FINAL_OUT/counts_f72.txt" "$FINAL_OUT/counts_f71.txt" | grep -v Warn
    for ow in $NW; do
      timeout 40 python3 docs/device/weight_tile.py $W/f71/rsweep-ops --op ${ow%%:*} --weights ${ow##*:} --tiles $TILES \
        --cols 16384 2>&1 | grep -v Warn >> "$FINAL_OUT/tiles_f71.txt"
    done; echo "timed at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/tiles_f71.txt" ;;
esac
