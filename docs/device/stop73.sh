#!/usr/bin/env bash
# Prepared in stop 72 for the next session's device time: template version 57 on a fresh draw (only `suites` run
# in stop 72: docs/results/stop72/fresh79_tests.txt).
# Seed 79 was drawn after version 57 landed (.device/f79: python docs/device/rowwise_sweep.py generate .device/f79
# --seed 79 --count 64 --only r00,...,r09 --backends triton --backward fused, from main at a815a88).
# Wrap each call so that $OUT returns what the phase wrote even when it is cut short:
#   OUT=$OUT timeout 540 bash docs/device/stop73.sh PHASE
# On a two-GPU machine, two phases side by side (CUDA_VISIBLE_DEVICES=0 OUT=$OUT/a ... & sleep 12;
# CUDA_VISIBLE_DEVICES=1 OUT=$OUT/b ... & wait), each on half the ops: OPS=r00_tl,...,r04_tl and r05_tl,...,r09_tl.
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
#   fresh79   carry .device/f79: the backward suites of OPS on the GPU, then forward+backward against compile, eager
#             and replayed from CUDA graphs, rows of COLS (default 1024,4096,16384,65536), two rounds; memcheck and
#             racecheck over the first two of OPS
#   abrows    carry .device/f79 and .device/f79r (git am docs/wip/rows-staged.patch on a branch of main, then generate
#             seed 79 as above into .device/f79r): the rows kernel's pipelined candidate against version 57, the ops
#             with weights, rows of COLS (default 1024,4096), two rounds; memcheck and racecheck
#   suites    carry .device/f79: the backward suites of OPS alone, ten side by side
#   examples  carry .whl: the examples' whole suites (TT=440: myteam-ops' takes about 410 s beside the others)
W=/tmp/kg73
. "$(dirname "$0")/stop_common.sh"

for p in f79; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
ALL=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl

case ${1:-fresh79} in
  fresh79)
    ops=${OPS:-$ALL}; cols=${COLS:-1024,4096,16384,65536}; t=$(date +%s); tag=fresh79_${ops:0:3}-${ops: -6:3}
    K="cuda and backward" T=150 prepared f79 $ops float32,bfloat16 $cols
    for r in 1 2; do
      timeout 130 python3 docs/device/backward_bench.py $W/f79/rsweep-ops --ops $ops --dtypes float32,bfloat16 \
        --cols $cols --rounds 1 --against compile --graphs --json "$FINAL_OUT/${tag}_$r.json" > "$FINAL_OUT/${tag}_$r.txt" 2>&1
      echo "bench round $r rc=$? at $(( $(date +%s) - t )) s"; sed -n '/against compile/,$p' "$FINAL_OUT/${tag}_$r.txt"
    done
    for tool in memcheck racecheck; do
      timeout 70 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $W/f79/rsweep-ops --ops $(echo $ops | cut -d, -f1,2) --dtypes float32,bfloat16 > "$FINAL_OUT/${tag}_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' "$FINAL_OUT/${tag}_$tool.log" | tail -1) at $(( $(date +%s) - t )) s"
    done ;;
  abrows)
    # the candidate of docs/wip/rows-staged.patch (.device/f79r: seed 79 generated with it applied) against version
    # 57 (.device/f79), the ops with weights, whose rows kernel it changes; then memcheck and racecheck over two
    ops=${OPS:-r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r07_tl,r08_tl,r09_tl}  # seed 79's ops with weights: split them over two GPUs
    for p in f79r; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
    GRAPHS=1 K="cuda and backward" TB=200 small_ab rows79 f79 f79r $ops float32,bfloat16 ${COLS:-1024,4096} 200 32
    GRAPHS=1 ORDER="f79r f79" TB=150 second_round rows79 f79 f79r $ops float32,bfloat16 ${COLS:-1024,4096}
    for tool in memcheck racecheck; do
      timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $W/f79r/rsweep-ops --ops $(echo $ops | cut -d, -f1,2) --dtypes float32,bfloat16 > "$FINAL_OUT/rows79_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' "$FINAL_OUT/rows79_$tool.log" | tail -1)"
    done ;;
  rule79)
    # the candidate with its rule (staged only where the rows kernel's unstaged build spills; .device/f79s: seed 79
    # generated on that branch) against version 57, rows of COLS (default 4096), two rounds; then the GPU's counts
    # and every path's time (backward_paths.py) for f79s at rows of 4096
    ops=${OPS:-r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r07_tl,r08_tl,r09_tl}
    for p in f79s; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
    GRAPHS=1 K="cuda and backward" TB=150 small_ab rule79 f79 f79s $ops float32,bfloat16 ${COLS:-4096} 150 20
    GRAPHS=1 ORDER="f79s f79" TB=120 second_round rule79 f79 f79s $ops float32,bfloat16 ${COLS:-4096}
    timeout 120 python3 docs/device/backward_paths.py $W/f79s/rsweep-ops --ops $ops --dtypes float32,bfloat16 --cols 4096 \
      --graphs > "$FINAL_OUT/rule79_paths.txt" 2>&1; echo "paths rc=$?"; cut -c1-400 "$FINAL_OUT/rule79_paths.txt" | tail -20 ;;
  rule80)
    # seed 80 (drawn after the rule was written): version 57 (.device/f80, from main) against the candidate with its
    # rule (.device/f80s), the ops with weights, rows of COLS (default 4096), two rounds; memcheck and racecheck
    ops=${OPS:-r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r07_tl,r08_tl,r09_tl}
    for p in f80 f80s; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
    GRAPHS=1 K="cuda and backward" TB=170 small_ab rule80 f80 f80s $ops float32,bfloat16 ${COLS:-4096} 150 22
    GRAPHS=1 ORDER="f80s f80" TB=130 second_round rule80 f80 f80s $ops float32,bfloat16 ${COLS:-4096}
    for tool in memcheck racecheck; do
      timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $W/f80s/rsweep-ops --ops $(echo $ops | cut -d, -f1,2) --dtypes float32,bfloat16 > "$FINAL_OUT/rule80_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' "$FINAL_OUT/rule80_$tool.log" | tail -1)"
    done ;;
  suites)  # the backward suites alone, ten side by side (stop 72's last 200 s of device time)
    build $W/f79/rsweep-ops; K="cuda and backward" suites fresh79 f79 ${OPS:-$ALL} ${T:-170} 10 ;;
  examples) TT=${TT:-440} examples "" ;;
esac
