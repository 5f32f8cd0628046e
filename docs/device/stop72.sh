#!/usr/bin/env bash
# Prepared in stop 71 and run in stop 72 (docs/results/stop72/, docs/backward.md "Stop 72"), for the candidate of branch
# candidate/pipelined-rows (template version 57 there): the Triton backward's kernel of one program a row loops over
# rows, and where one program fills an SM the launch runs as many programs as the GPU holds with Triton's software
# pipeline (STAGES=2), the next row's loads in flight while a program computes its own. Stop 71's paths
# (docs/results/stop71/paths77_short.txt) found that kernel at 17-65% of a copy at rows of 4096.
# Wrap each call so that $OUT returns what the phase wrote even when it is cut short:
#   OUT=$OUT timeout 540 bash docs/device/stop72.sh PHASE
# On a two-GPU machine, two phases side by side: CUDA_VISIBLE_DEVICES=0 OUT=$OUT/a ... & CUDA_VISIBLE_DEVICES=1 OUT=$OUT/b
# ... & wait (start the second some seconds later: both copy the carried packages under $W when missing).
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
#
# Seed 78 was drawn after the candidate was written (.device/f78 at version 56, from a worktree of main at ee19e95;
# .device/f78p at the candidate); seed 77 is the draw whose paths motivated it (.device/f77 at 56, .device/f77p).
#   ab78      carry .device/f78 and .device/f78p: the candidate's backward suites on the GPU (its new test of many
#             aligned rows included), then both packages' forward+backward, eager and graphed, rows of 1024, 4096
#             and 16384, two rounds in opposite orders; OPS picks the ops (give each GPU of two half of them:
#             OPS=r00_tl,...,r04_tl and OPS=r05_tl,...,r09_tl)
#   ab77      the same for .device/f77 and .device/f77p
#   ab78q     carry .device/f78 and .device/f78q: the same for the candidate's second form (below), OPS and COLS
#             (default 1024,4096) chosen
#   sanitize  carry .device/f78p (or SAN=f78q and .device/f78q): memcheck and racecheck over the candidate's backward launches of OPS (default
#             r02_tl,r04_tl,r06_tl: no weights, their kernel of one program a row pipelined at 4096; r01_tl: weights)
#   examples  carry .whl: the examples' whole suites at the candidate
W=/tmp/kg72
. "$(dirname "$0")/stop_common.sh"

for p in f77 f77p f78 f78p f78q; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
ALL=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl

case ${1:-ab78} in
  ab78|ab77)
    s=${1#ab}; ops=${OPS:-$ALL}
    GRAPHS=1 K="cuda and backward" TB=200 small_ab pipe$s f$s f${s}p $ops float32,bfloat16 1024,4096,16384 200 32
    GRAPHS=1 ORDER="f${s}p f$s" TB=200 second_round pipe$s f$s f${s}p $ops float32,bfloat16 1024,4096,16384 ;;
  ab78q)
    # the candidate's second form (.device/f78q): the kernel of one program a row is the row's body (a function
    # inlined) called once where STAGES=1 and in the pipelined loop otherwise, so that its unstaged build keeps
    # version 56's registers; against version 56 on OPS
    ops=${OPS:-r00_tl,r02_tl,r04_tl,r06_tl,r01_tl}
    GRAPHS=1 K="cuda and backward" TB=150 small_ab pipeq78 f78 f78q $ops float32,bfloat16 ${COLS:-1024,4096} 200 24
    GRAPHS=1 ORDER="f78q f78" TB=150 second_round pipeq78 f78 f78q $ops float32,bfloat16 ${COLS:-1024,4096} ;;
  sanitize)
    ops=${OPS:-r02_tl,r04_tl,r06_tl,r01_tl}
    for tool in memcheck racecheck; do
      timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $W/${SAN:-f78p}/rsweep-ops --ops $ops --dtypes float32,bfloat16 > "$FINAL_OUT/pipe78_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' "$FINAL_OUT/pipe78_$tool.log" | tail -1)"
    done ;;
  examples) TT=${TT:-330} examples "" ;;
esac
