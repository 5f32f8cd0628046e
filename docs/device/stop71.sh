#!/usr/bin/env bash
# Prepared in stop 70 for the next session's device time (not run yet). Wrap each call so that $OUT returns what the
# phase wrote even when it is cut short: write straight under $OUT, and bound every wait (stop 70 lost 560 s of its
# budget to a loop that waited for a file the build never writes, with the archive step after it):
#   OUT=$OUT timeout 540 bash docs/device/stop71.sh PHASE
# On a two-GPU machine, two phases side by side: CUDA_VISIBLE_DEVICES=0 OUT=$OUT/a ... & CUDA_VISIBLE_DEVICES=1 OUT=$OUT/b
# ... & wait (start the second some seconds later: both copy the carried packages under $W when missing).
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
#
# Version 55 narrows the weights' kernel's tile to 8 x 64 where the 16 x 64 build fits fewer than 4 programs an SM
# (fitted on seeds 74 and 75 in stop 70, docs/backward.md "Stop 70"). Seed 76 was drawn after the fit: .device/f76 at
# version 55, .device/f76o at version 54 (from a worktree of 635bf67).
#   verify    carry .device/f76: each op with weights, its own tile ("auto") against 16 x 64 and 8 x 64 forced,
#             replayed from CUDA graphs (weight_tile.py), rows of 65536 and 16384; OPW picks the ops (op:weights)
#   fab       carry .device/f76 and .device/f76o: the two versions' forward+backward against compile, eager and
#             graphed (backward_bench.py --graphs), version 55's CUDA backward suites, memcheck over two ops' backward
#             launches (the first two of OPS); OPS picks the ops (default all ten: about 8 minutes on one GPU, so
#             give each GPU of two half of them, OPS=r00_tl,...,r04_tl and OPS=r05_tl,...,r09_tl)
#   exact     carry .device/f76 and .device/f76e: the candidate of branch candidate/exact-shared (version 56: a masked
#             argument's subterms computed once, exact, for the mask and the gradients; generated from a worktree of
#             3d17bb0) against version 55 on seed 76's ops that it changes: its CUDA backward suites (the masks must
#             still find the reduction's element, or the gradients fail the error model), then both packages'
#             forward+backward, eager and graphed, two rounds in alternating order (about 9 minutes on one GPU for
#             the eight ops: give each GPU of two four of them, OPS=r00_tl,r02_tl,r03_tl,r04_tl and the rest)
#   examples  carry .whl: the examples' whole suites at version 55
W=/tmp/kg71
. "$(dirname "$0")/stop_common.sh"

for p in f76 f76o f76e; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
ALL76=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl

# pair TAG OLD NEW OPS: packages OLD and NEW (under $W) built side by side, NEW's CUDA backward suites of OPS while
# compile's references are prewarmed (one process an op), then both timed, eager and graphed, in rounds RS (default
# "1"; round 2 in the opposite order) into $OUT/TAG_<pkg>_<round>.txt, and each round's comparison.
pair() {
  local tag=$1 old=$2 new=$3 ops=$4 t n i r p order; t=$(date +%s)
  (build $W/$old/rsweep-ops 2>&1 | sed "s|^|$old: |") & (build $W/$new/rsweep-ops 2>&1 | sed "s|^|$new: |") & wait
  n=$(echo ${ops//,/ } | wc -w)
  for ((i = 0; i < n; i++)); do
    timeout 150 python3 docs/device/backward_bench.py $W/$new/rsweep-ops --ops $ops --dtypes float32,bfloat16 \
      --cols 16384,65536 --prewarm --part $i/$n > $W/prewarm_${tag}_$i.log 2>&1 &
  done
  K="cuda and backward" suites $tag $new $ops 150 5
  wait; echo "suites and prewarm at $(( $(date +%s) - t )) s"
  for r in ${RS:-1}; do
    [ $r = 1 ] && order="$old $new" || order="$new $old"
    for p in $order; do
      timeout ${TB:-150} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $ops --dtypes float32,bfloat16 \
        --cols 16384,65536 --rounds 1 --against compile --graphs --json "$FINAL_OUT/${tag}_${p}_$r.json" 2>&1 \
        | grep -v -i warn > "$FINAL_OUT/${tag}_${p}_$r.txt"
      echo "$p round $r rc=$? at $(( $(date +%s) - t )) s"
    done
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/${tag}_${old}_$r.txt" "$FINAL_OUT/${tag}_${new}_$r.txt" | tail -25
  done
}

case ${1:-verify} in
  verify)
    build $W/f76/rsweep-ops; t=$(date +%s)
    for opw in ${OPW:-r01_tl:3 r03_tl:1 r04_tl:1 r05_tl:3 r06_tl:2 r07_tl:2 r09_tl:2}; do
      timeout 40 python3 docs/device/weight_tile.py $W/f76/rsweep-ops --op ${opw%%:*} --weights ${opw##*:} \
        --tiles auto,16x64x4,8x64x4 --cols 65536,16384 2>&1 | grep -v Warn >> "$FINAL_OUT/verify76.txt"
      echo "${opw%%:*} at $(( $(date +%s) - t )) s"
    done; cat "$FINAL_OUT/verify76.txt" ;;
  fab)
    ops=${OPS:-$ALL76}
    pair fab76 f76o f76 $ops
    timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 python3 docs/device/sanitize_backward.py \
      $W/f76/rsweep-ops --ops $(echo $ops | cut -d, -f1,2) --dtypes float32,bfloat16 > "$FINAL_OUT/fab76_memcheck.log" 2>&1
    echo "memcheck: rc=$? $(grep 'ERROR SUMMARY' "$FINAL_OUT/fab76_memcheck.log" | tail -1)" ;;
  exact) RS="1 2" pair exact76 f76 f76e ${OPS:-r00_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r09_tl} ;;
  examples) TT=330 examples "" ;;
esac
