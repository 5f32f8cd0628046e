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
#             forward+backward, eager and graphed, two rounds in opposite orders (small_ab, second_round: about 9 minutes on one GPU for
#             the eight ops: give each GPU of two four of them, OPS=r00_tl,r02_tl,r03_tl,r04_tl and the rest)
#   examples  carry .whl: the examples' whole suites at version 55
#   fresh     carry .device/f77 (seed 77, drawn this session and generated at version 56, after verify, fab and exact
#             ran): its CUDA backward suites while compile's references prewarm, forward+backward against compile at
#             rows of 4096, 16384 and 65536, eager and graphed, memcheck over the first two ops of OPS, then every
#             path of the backward forced at rows of 16384 and timed replayed from CUDA graphs (backward_paths.py
#             --graphs); OPS picks the ops (give each GPU of two half of them)
W=/tmp/kg71
. "$(dirname "$0")/stop_common.sh"

for p in f76 f76o f76e f77; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
ALL76=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl

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
    GRAPHS=1 K="cuda and backward" TB=150 small_ab fab76 f76o f76 $ops float32,bfloat16 16384,65536 150 25
    timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 python3 docs/device/sanitize_backward.py \
      $W/f76/rsweep-ops --ops $(echo $ops | cut -d, -f1,2) --dtypes float32,bfloat16 > "$FINAL_OUT/fab76_memcheck.log" 2>&1
    echo "memcheck: rc=$? $(grep 'ERROR SUMMARY' "$FINAL_OUT/fab76_memcheck.log" | tail -1)" ;;
  exact)
    ops=${OPS:-r00_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r09_tl}
    GRAPHS=1 K="cuda and backward" TB=150 small_ab exact76 f76 f76e $ops float32,bfloat16 16384,65536 150 25
    GRAPHS=1 ORDER="f76e f76" TB=150 second_round exact76 f76 f76e $ops float32,bfloat16 16384,65536 ;;
  examples) TT=330 examples "" ;;
  fresh)
    ops=${OPS:-$ALL76}; t=$(date +%s)
    T=150 prepared f77 $ops float32,bfloat16 4096,16384,65536
    timeout 160 python3 docs/device/backward_bench.py $W/f77/rsweep-ops --ops $ops --dtypes float32,bfloat16 \
      --cols 4096,16384,65536 --rounds 1 --against compile --graphs --json "$FINAL_OUT/fresh77.json" > "$FINAL_OUT/fresh77.txt" 2>&1
    echo "bench rc=$? at $(( $(date +%s) - t )) s"; sed -n '/against compile/,$p' "$FINAL_OUT/fresh77.txt"
    timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 python3 docs/device/sanitize_backward.py \
      $W/f77/rsweep-ops --ops $(echo $ops | cut -d, -f1,2) --dtypes float32,bfloat16 > "$FINAL_OUT/fresh77_memcheck.log" 2>&1
    echo "memcheck: rc=$? $(grep 'ERROR SUMMARY' "$FINAL_OUT/fresh77_memcheck.log" | tail -1) at $(( $(date +%s) - t )) s"
    for ((i = 0; i < 4; i++)); do
      timeout 100 python3 docs/device/backward_paths.py $W/f77/rsweep-ops --ops $ops --cols 16384 --compile-only \
        --part $i/4 > $W/paths_compile_$i.log 2>&1 &
    done; wait
    timeout 150 python3 docs/device/backward_paths.py $W/f77/rsweep-ops --ops $ops --cols 16384 --graphs \
      > "$FINAL_OUT/paths77.txt" 2>&1
    echo "paths rc=$? at $(( $(date +%s) - t )) s" ;;
esac
