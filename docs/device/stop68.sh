#!/usr/bin/env bash
# Prepared in stop 67 for the next session's device time (not run yet). Wrap each call so that $OUT returns one
# archive, bounded below the call's limit so the archive is made:
#   R=$OUT; mkdir -p /tmp/o; OUT=/tmp/o timeout 540 bash docs/device/stop68.sh PHASE; tar czf $R/PHASE.tgz -C /tmp/o .
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
#
# Template version 52 (the weights' kernel's tile, _triton_rowwise.weight_tile) never ran on the GPU in stop 67:
# the device time ran out. Priorities:
#   verify    seed 73 (carry .device/f73: python docs/device/rowwise_sweep.py generate .device/f73 --seed 73
#             --count 64 --only r00,...,r09 --backends triton --backward fused, at version 52): the GPU's counts of the
#             weights' kernel at both tiles (weight_counts.py), the backward timed with the package's choice ("auto")
#             beside each tile forced (weight_tile.py, rows of 16384), then the CUDA backward suites of every op
#             (their long-row cases take the weights' kernel at the tile the rule picks), and memcheck over the
#             backward launches of four ops.
#   examples  version 52's examples built side by side and their whole suites (carry .whl: the cutlass wheel).
W=/tmp/kg68
. "$(dirname "$0")/stop_common.sh"

for p in f73; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
NW="r00_tl r01_tl r02_tl r03_tl r04_tl r05_tl r06_tl r07_tl r08_tl r09_tl"

case ${1:-verify} in
  verify)
    t=$(date +%s); build $W/f73/rsweep-ops
    python3 docs/device/weight_counts.py $W/f73/rsweep-ops --tiles 64x64x4,16x64x4 > "$FINAL_OUT/counts_f73.txt" 2>&1 &
    for op in $NW; do
      n=$(python3 -c "import json; print(len([o for o in json.load(open('$W/f73/rowwise_sweep.json'))['ops'] if o['name'] == '$op'][0]['weights']))")
      [ "$n" = 0 ] && continue; echo "$op $n" >> $W/weighted.txt
      timeout 150 python3 docs/device/weight_tile.py $W/f73/rsweep-ops --op $op --weights $n --tiles auto,64x64x4,16x64x4 \
        --cols 16384 --size 16777216 > $W/tiles_warm_$op.log 2>&1 &
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/counts_f73.txt"
    while read -r op n; do
      timeout 60 python3 docs/device/weight_tile.py $W/f73/rsweep-ops --op $op --weights $n --tiles auto,64x64x4,16x64x4 \
        --cols 16384 2>&1 | grep -v Warn >> "$FINAL_OUT/tiles_f73.txt"
    done < $W/weighted.txt; echo "timed at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/tiles_f73.txt"
    K="cuda and backward" suites v73 f73 $(echo $NW | tr ' ' ',') 200 5
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 python3 docs/device/sanitize_backward.py \
      $W/f73/rsweep-ops --ops r00_tl,r03_tl,r05_tl,r08_tl --dtypes float32,bfloat16 > "$FINAL_OUT/backward_memcheck.log" 2>&1
    echo "backward memcheck: rc=$? $(grep 'ERROR SUMMARY' "$FINAL_OUT/backward_memcheck.log" | tail -1) at $(( $(date +%s) - t )) s" ;;
  examples)
    examples "" ;;
esac
