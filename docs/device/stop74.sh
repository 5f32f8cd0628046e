#!/usr/bin/env bash
# Prepared in stop 73 for the next session's device time: the rows kernel's staged build where its unstaged build
# spills past the tolerance (the candidate docs/wip/staged-fit.patch, version 60: backward_staged, backward_launch),
# against main (version 58 or 59: the same kernels and launches), and the four cells of seed 80 that version 58 made
# slower.
# Packages (python docs/device/rowwise_sweep.py generate .device/<name> --seed N --count 64 --only r00,...,r09
# --backends triton --backward fused):
#   .device/f80s  seed 80 at main (version 58 or 59)
#   .device/f80t  seed 80 with the candidate (git am docs/wip/staged-fit.patch on a branch of main)
#   .device/f81, .device/f81t  seed 81, drawn after the candidate was written, at main and with the candidate
# Wrap each call so that $OUT returns what the phase wrote even when it is cut short:
#   OUT=$OUT timeout 540 bash docs/device/stop74.sh PHASE
# On a two-GPU machine, two phases side by side (CUDA_VISIBLE_DEVICES=0 OUT=$OUT/a ... & sleep 12;
# CUDA_VISIBLE_DEVICES=1 OUT=$OUT/b W=/tmp/kg74b ... & wait; the second phase from a copy of this script whose W line
# names /tmp/kg74b).
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
#   paths80   carry .device/f80t: every path of the backward (auto, rows@W, staged@W, one@W, long) timed with the
#             GPU's counts, seed 80's ops with weights at rows of 4096 (r03_tl, r07_tl and r08_tl are the cells
#             version 58 made 4-6% slower)
#   ab80      carry .device/f80s and .device/f80t: the candidate against main, the ops with weights at rows of
#             COLS (default 4096), two rounds; memcheck and racecheck over two of them
#   ab81      the same on seed 81 (.device/f81, .device/f81t)
#   examples  carry .whl: the examples' whole suites (TT=440)
#   host81    carry .device/f81t: the host's time a step (host_overhead.py, 8 rows, so the GPU never waits for the
#             host), ours against compile's, seed 81's ops with weights at rows of 4096 and 16384, and where ours
#             goes (cProfile of OPS, default r03_tl): the figure any change to the launch's host work is judged by
W=${W:-/tmp/kg74}
. "$(dirname "$0")/stop_common.sh"

WEIGHTS80=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r07_tl,r08_tl,r09_tl
WEIGHTS81=r00_tl,r01_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r09_tl
case ${1:-paths80} in
  paths80)
    for p in f80t; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
    build $W/f80t/rsweep-ops
    timeout 400 python3 docs/device/backward_paths.py $W/f80t/rsweep-ops --ops ${OPS:-$WEIGHTS80} --dtypes float32,bfloat16 \
      --cols 4096 --graphs > "$FINAL_OUT/paths80.txt" 2>&1; echo "paths rc=$?"; cut -c1-400 "$FINAL_OUT/paths80.txt" | tail -20 ;;
  ab80|ab81)
    seed=${1#ab}; old=f${seed}s; new=f${seed}t; [ $seed = 81 ] && old=f81
    weights=WEIGHTS$seed; ops=${OPS:-${!weights}}
    for p in $old $new; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
    GRAPHS=1 K="cuda and backward" TB=170 small_ab staged$seed $old $new $ops float32,bfloat16 ${COLS:-4096} 200 22
    GRAPHS=1 ORDER="$new $old" TB=130 second_round staged$seed $old $new $ops float32,bfloat16 ${COLS:-4096}
    for tool in memcheck racecheck; do
      timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $W/$new/rsweep-ops --ops $(echo $ops | cut -d, -f1,2) --dtypes float32,bfloat16 > "$FINAL_OUT/staged${seed}_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' "$FINAL_OUT/staged${seed}_$tool.log" | tail -1)"
    done ;;
  examples) TT=${TT:-440} examples "" ;;
  host81)
    for p in f81t; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
    build $W/f81t/rsweep-ops
    timeout 300 python3 docs/device/host_overhead.py $W/f81t/rsweep-ops --ops $WEIGHTS81 --cols 4096,16384 \
      > "$FINAL_OUT/host81.txt" 2>&1; echo "host rc=$?"; tail -20 "$FINAL_OUT/host81.txt" | cut -c1-200
    timeout 100 python3 docs/device/host_overhead.py $W/f81t/rsweep-ops --ops ${OPS:-r03_tl} --cols 16384 --profile \
      > "$FINAL_OUT/host81_profile.txt" 2>&1; echo "profile rc=$?" ;;
esac
