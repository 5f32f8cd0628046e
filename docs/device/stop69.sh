#!/usr/bin/env bash
# Stop 69's device runs (docs/backward.md "Stop 69", results in docs/results/stop69/). Wrap each call so that $OUT
# returns one archive, bounded below the call's limit so the archive is made:
#   R=$OUT; mkdir -p /tmp/o; OUT=/tmp/o timeout 540 bash docs/device/stop69.sh PHASE; tar czf $R/PHASE.tgz -C /tmp/o .
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
#
#   tiles     carry .device/f74 (seed 74 at version 53): the GPU's counts at three tiles, then every op's backward
#             with each tile forced at rows of 16384 and 65536.
#   accum     carry .device/f74 and .device/f74n (seed 74 with version 54's lane-by-lane sums, generated before its
#             tile rule): the counts and forced tiles of f74n, and version 53's own choice beside them.
#   fresh     carry .device/f75 (seed 75 at version 54) and .device/f75o (version 53, from a worktree of 3e5a2eb):
#             version 54's CUDA backward suites, both timed at the long rows, memcheck, three ops' tiles.
#   examples  carry .device/f75, .device/f75o and .whl: a second round of r04-r06, then the examples' whole suites.
#   suites    (not run) seed 74's r07-r09 suites at version 53 and the examples.
W=/tmp/kg69
. "$(dirname "$0")/stop_common.sh"

for p in f74 f74n f75 f75o; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
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
  accum)
    # f74n: seed 74 with the weights' kernel summing each lane over the tiles (a BLOCK_R x BLOCK_C accumulator,
    # one reduction over the rows at the end) instead of a reduction over the tile's rows every tile.
    t=$(date +%s); build $W/f74n/rsweep-ops
    timeout 120 python3 docs/device/weight_counts.py $W/f74n/rsweep-ops --tiles 64x64x4,32x64x4,16x64x4 \
      > "$FINAL_OUT/counts_f74n.txt" 2>&1; echo "counts at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/counts_f74n.txt"
    for cols in 16384 65536; do
      for opw in $ALL; do
        [ $cols = 16384 ] && timeout 40 python3 docs/device/weight_tile.py $W/f74/rsweep-ops --op ${opw%%:*} \
          --weights ${opw##*:} --tiles auto,16x64x4 --cols $cols 2>&1 | grep -v Warn | sed 's/^/old /' >> "$FINAL_OUT/accum_f74.txt"
        timeout 40 python3 docs/device/weight_tile.py $W/f74n/rsweep-ops --op ${opw%%:*} --weights ${opw##*:} \
          --tiles auto,64x64x4,32x64x4,16x64x4 --cols $cols 2>&1 | grep -v Warn >> "$FINAL_OUT/tiles_f74n_$cols.txt"
      done; echo "tiles $cols at $(( $(date +%s) - t )) s"
    done; cat "$FINAL_OUT"/accum_f74.txt "$FINAL_OUT"/tiles_f74n_*.txt ;;
  fresh)
    # Version 54 (lane-by-lane sums in the weights' kernel, a tile of 16 x 64) against version 53 on seed 75, drawn
    # for it: carry .device/f75 (54) and .device/f75o (53, from a worktree of 3e5a2eb). Version 54's CUDA backward
    # suites, both timed at the long rows, memcheck over two ops' backward launches, then the tiles of three ops.
    ALL75=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl
    K="cuda and backward" TB=120 small_ab fab75 f75o f75 $ALL75 float32,bfloat16 16384,65536 230 50
    t=$(date +%s)
    timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 python3 docs/device/sanitize_backward.py \
      $W/f75/rsweep-ops --ops r00_tl,r08_tl --dtypes float32,bfloat16 > "$FINAL_OUT/fresh_memcheck.log" 2>&1
    echo "fresh memcheck: rc=$? $(grep 'ERROR SUMMARY' "$FINAL_OUT/fresh_memcheck.log" | tail -1) at $(( $(date +%s) - t )) s"
    for opw in r00_tl:3 r04_tl:2 r08_tl:3; do
      timeout 30 python3 docs/device/weight_tile.py $W/f75/rsweep-ops --op ${opw%%:*} --weights ${opw##*:} \
        --tiles auto,8x64x4,16x64x4,32x64x4 --cols 16384 2>&1 | grep -v Warn >> "$FINAL_OUT/tiles_f75.txt"
    done; cat "$FINAL_OUT/tiles_f75.txt" ;;
  examples)
    # a second round of the cells of seed 75 where version 54's backward alone timed slower (r04-r06), then the
    # examples' whole suites (carry .device/f75, .device/f75o and .whl)
    build $W/f75/rsweep-ops; build $W/f75o/rsweep-ops
    ORDER="f75 f75o" TB=70 second_round fab75 f75o f75 r04_tl,r05_tl,r06_tl float32,bfloat16 16384,65536
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/fab75_f75o_2.txt" "$FINAL_OUT/fab75_f75_2.txt" | tail -14
    TT=330 examples "" ;;
  suites)
    build $W/f74/rsweep-ops
    K="cuda and backward" suites v74 f74 r07_tl,r08_tl,r09_tl 200 3
    examples "" ;;
esac
