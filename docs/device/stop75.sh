#!/usr/bin/env bash
# Stop 75 on one H200: the two candidates of stop 74 (docs/wip/staged-fit.patch and docs/wip/one-math.patch, each
# template version 60) against main (version 59) on seed 81, drawn after both were written. Both landed in stop 75
# (versions 60 and 61); their commits are in main's history, the patches no longer in docs/wip.
# Packages (python docs/device/rowwise_sweep.py generate .device/<name> --seed 81 --count 64 --only r00,...,r09
# --backends triton --backward fused, with PYTHONPATH naming a worktree of the candidate's branch):
#   .device/f81   main          .device/f81t  staged-fit          .device/f81m  one-math
# Wrap each call so that $OUT returns what the phase wrote even when it is cut short:
#   OUT=$OUT timeout 570 bash docs/device/stop75.sh PHASE
#   ab81   carry the three packages: each built; the CUDA backward suites of both candidates (side by side) while
#          compile's references are prewarmed; then two rounds of all three (round 1 against compile, round 2 in the
#          opposite order), forward+backward also replayed from CUDA graphs, rows of COLS (default 4096), float32
#          and bfloat16; each candidate's table against main, a round each
#   land   carry .whl and PKGS (default f81t f81m): the examples' whole suites (TT=420) beside each package's CUDA
#          backward suites (three side by side) and compute-sanitizer's memcheck and racecheck over the backward
#          launches of two of its ops
#   team   carry .whl and .device/f81s: myteam-ops (the example with Triton rowwise ops) built on every core, its
#          whole suite (not large) four files side by side; then every path of the backward of PATHS (default
#          r07_tl,r00_tl) at rows of 4096 in bfloat16, timed alone, with the GPU's counts
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
W=${W:-/tmp/kg75}
. "$(dirname "$0")/stop_common.sh"

ALL81=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl
PKGS=${PKGS:-f81t f81m}
case ${1:-ab81} in
  ab81)
    ops=${OPS:-$ALL81}; cols=${COLS:-4096}; t=$(date +%s)
    for p in f81 f81t f81m; do
      [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p
      (build $W/$p/rsweep-ops 2>&1 | sed "s|^|$p: |") &
    done; wait
    for ((i = 0; i < 5; i++)); do
      python3 docs/device/backward_bench.py $W/f81/rsweep-ops --ops $ops --dtypes float32,bfloat16 --cols $cols \
        --prewarm --part $i/5 > $W/prewarm_$i.log 2>&1 &
    done
    K="cuda and backward" suites staged81 f81t $ops 200 4 > /dev/null &
    K="cuda and backward" suites onemath81 f81m $ops 200 4 > /dev/null &
    wait; cat "$FINAL_OUT"/staged81_tests.txt "$FINAL_OUT"/onemath81_tests.txt
    echo "suites and prewarm at $(( $(date +%s) - t )) s"
    for p in f81 f81t f81m; do
      timeout ${TB:-200} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $ops --dtypes float32,bfloat16 \
        --cols $cols --rounds 1 --against compile --graphs --json "$FINAL_OUT/ab81_$p.json" > "$FINAL_OUT/ab81_$p.txt" 2>&1
      echo "$p round 1 rc=$? at $(( $(date +%s) - t )) s"
    done
    for p in f81m f81t f81; do
      timeout ${TB:-200} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $ops --dtypes float32,bfloat16 \
        --cols $cols --rounds 1 --graphs > "$FINAL_OUT/ab81_${p}_2.txt" 2>&1
      echo "$p round 2 rc=$? at $(( $(date +%s) - t )) s"
    done
    for p in f81t f81m; do for r in "" _2; do
      echo "f81 -> $p, round ${r:-_1}"
      python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/ab81_f81$r.txt" "$FINAL_OUT/ab81_$p$r.txt" | tail -2
    done; done ;;
  land)
    t=$(date +%s)
    (for p in $PKGS; do
       [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p
       build $W/$p/rsweep-ops
       K="cuda and backward" suites $p $p ${OPS:-$ALL81} 330 3 > /dev/null
       for tool in memcheck racecheck; do
         timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
           $W/$p/rsweep-ops --ops ${SOPS:-r03_tl,r05_tl} --dtypes float32,bfloat16 > "$FINAL_OUT/${p}_$tool.log" 2>&1
         echo "$p $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$FINAL_OUT/${p}_$tool.log" | tail -1) at $(( $(date +%s) - t )) s"
       done
     done > $W/sanitizers.txt 2>&1) &
    TT=${TT:-420} examples ""
    wait; cat $W/sanitizers.txt; for p in $PKGS; do cat "$FINAL_OUT/${p}_tests.txt"; done ;;
  team)
    t=$(date +%s)
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
    export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
    example examples/myteam-ops ex_team 16
    (cd $W/ex_team && ls tests/test_*.py | timeout ${TT:-300} xargs -P 4 -I{} sh -c \
       'python3 -m pytest -q -p no:cacheprovider -rfEs {} -m "not large" > '"$FINAL_OUT"'/team_$(basename {} .py).log 2>&1;
        echo "{}: $(tail -1 '"$FINAL_OUT"'/team_$(basename {} .py).log)"' | sort > "$FINAL_OUT/team_tests.txt")
    echo "suite at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/team_tests.txt"
    grep -h -E "^(FAILED|ERROR)" "$FINAL_OUT"/team_test_*.log | cut -c1-200 | head -8
    [ -d $W/f81s ] || cp -r .device/f81s $W/f81s
    timeout ${TP:-200} python3 docs/device/backward_paths.py $W/f81s/rsweep-ops --ops ${PATHS:-r07_tl,r00_tl} \
      --dtypes bfloat16 --cols 4096 --graphs > "$FINAL_OUT/paths81.txt" 2>&1
    echo "paths rc=$? at $(( $(date +%s) - t )) s"; cut -c1-300 "$FINAL_OUT/paths81.txt" | tail -24 ;;
esac
