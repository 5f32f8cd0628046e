#!/usr/bin/env bash
# Prepared in stop 68 for the next session's device time (not run yet). Wrap each call so that $OUT returns one
# archive, bounded below the call's limit so the archive is made:
#   R=$OUT; mkdir -p /tmp/o; OUT=/tmp/o timeout 540 bash docs/device/stop69.sh PHASE; tar czf $R/PHASE.tgz -C /tmp/o .
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
#
# Version 53's weights' kernel holds dx's terms too, and version 52's tile rule (16 x 64 past 16 bytes of spill)
# picks 16 x 64 in five cells of seed 74 where 64 x 64 runs 1.15-1.85x faster (docs/backward.md "Stop 68").
#   tiles     carry .device/f74 (seed 74 at version 53): the GPU's counts at three tiles (weight_counts.py, which now
#             builds the launch's arguments from the kernel's names), then every op's backward with each tile forced
#             at rows of 16384 and 65536, to fit the rule on the counts (then check it on a fresh seed).
#   suites    the CUDA backward suites that stop 68 did not reach (seed 74's r07_tl, r08_tl, r09_tl), and the
#             examples' whole suites at version 53 (carry .device/f74 and .whl).
W=/tmp/kg69
. "$(dirname "$0")/stop_common.sh"

for p in f74; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
ALL="r00_tl:2 r01_tl:3 r02_tl:3 r03_tl:2 r04_tl:2 r05_tl:2 r06_tl:1 r07_tl:3 r08_tl:1 r09_tl:3"

case ${1:-tiles} in
  tiles)
    t=$(date +%s); build $W/f74/rsweep-ops
    timeout 120 python3 docs/device/weight_counts.py $W/f74/rsweep-ops --tiles 64x64x4,32x64x4,16x64x4 \
      > "$FINAL_OUT/counts_f74.txt" 2>&1; echo "counts at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/counts_f74.txt"
    for cols in 16384 65536; do
      for opw in $ALL; do
        timeout 40 python3 docs/device/weight_tile.py $W/f74/rsweep-ops --op ${opw%%:*} --weights ${opw##*:} \
          --tiles auto,64x64x4,32x64x4,16x64x4 --cols $cols 2>&1 | grep -v Warn >> "$FINAL_OUT/tiles_f74_$cols.txt"
      done; echo "tiles $cols at $(( $(date +%s) - t )) s"
    done; cat "$FINAL_OUT"/tiles_f74_*.txt ;;
  suites)
    build $W/f74/rsweep-ops
    K="cuda and backward" suites v74 f74 r07_tl,r08_tl,r09_tl 200 3
    examples "" ;;
esac
