#!/usr/bin/env bash
# Prepared in stop 75 for the next session's device time (one H200 is enough; about 20 of its 30 minutes).
# Packages (python docs/device/rowwise_sweep.py generate .device/<name> --seed N --count 64 --only r00,...,r09
# --backends triton --backward fused; a version's worktree on PYTHONPATH for an older one):
#   .device/f81s  seed 81 at version 61 (git worktree add /tmp/wt61 14398bb; PYTHONPATH=/tmp/wt61)
#   .device/f81v  seed 81 at version 63 (main from stop 75's last commit: the launch keeps its answers, version 62,
#                 and does its grid arithmetic in plain integers, 63)
#   .device/f83   seed 83 at version 63 (drawn in stop 75; every launch path passed in the interpreter only)
# Wrap each call so that $OUT returns what the phase wrote even when it is cut short:
#   OUT=$OUT timeout 570 bash docs/device/stop76.sh PHASE
#   host      carry .device/f81s and .device/f81v: the host's time a step (host_overhead.py, 8 rows, so the GPU
#             never waits for the host), version 61 against 63 (the launch's host work), two rounds in
#             opposite order, seed 81's ops with weights at rows of 4096 and 16384; then where version 63's step
#             goes (cProfile of PROFILE, default r03_tl at 16384)
#   examples  carry .whl: the examples' whole suites at version 63 (myteam-ops's twelve files three side by side,
#             OMP_NUM_THREADS=4: four side by side at the machine's 16 threads each took 2-4 minutes a file in
#             stop 75, against 25 s alone)
#   fresh83   carry .device/f83: seed 83's CUDA backward suites, then forward+backward against compile (graphed)
#             at rows of 1024, 4096 and 16384, float32 and bfloat16, one round (COLS, ROUNDS to change), and
#             memcheck and racecheck over two of its ops
#   ab64      carry .device/f81v, .device/g81, .device/f83, .device/g83 (g: version 64, generated in this session at
#             f6aafcc: a Triton backward's reductions compute a masked argument's subterms
#             exact, as the mask does, so the compiler computes them once): the changed ops' CUDA backward suites at
#             version 64 side by side with compile's references prewarmed, then each package's forward+backward
#             (graphed) against compile, version 63 then 64, seed 81 then 83, rows of 4096 and 16384, and the
#             two tables compared (ab_compare_bwd.py); memcheck and racecheck over one op of each seed
# Run in stop 76 (docs/results/stop76/<phase>/): examples, fresh83, then ab64 with OPS83=r01_tl,r09_tl,r03_tl
# TOOLS="memcheck racecheck" (its seed-81 table was compared here afterwards: the script then named the old file
# wrongly, since fixed); host was not run (too little device time).
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
W=${W:-/tmp/kg76}
. "$(dirname "$0")/stop_common.sh"

WEIGHTS81=r00_tl,r01_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r09_tl
ALL=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl
case ${1:-host} in
  host)
    for p in f81s f81v; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; build $W/$p/rsweep-ops; done
    for r in 1 2; do
      [ $r = 1 ] && order="f81s f81v" || order="f81v f81s"
      for p in $order; do
        timeout 150 python3 docs/device/host_overhead.py $W/$p/rsweep-ops --ops ${OPS:-$WEIGHTS81} --cols 4096,16384 \
          > "$FINAL_OUT/host_${p}_$r.txt" 2>&1; echo "$p round $r rc=$?"
      done
    done
    for r in 1 2; do paste -d'|' <(cut -c1-110 "$FINAL_OUT/host_f81s_$r.txt") <(cut -c1-110 "$FINAL_OUT/host_f81v_$r.txt") | tail -18; done
    timeout 100 python3 docs/device/host_overhead.py $W/f81v/rsweep-ops --ops ${PROFILE:-r03_tl} --cols 16384 --profile \
      > "$FINAL_OUT/host_profile.txt" 2>&1; echo "profile rc=$?" ;;
  examples)
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
    export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source OMP_NUM_THREADS=4
    t=$(date +%s)
    example examples/rmsnorm ex_rms 4 & example examples/muladd ex_mul 4 & example examples/myteam-ops ex_team 8 & wait
    for n in ex_rms ex_mul; do
      (cd $W/$n && timeout ${TT:-400} python3 -m pytest -q -p no:cacheprovider -rfE tests -m "not large" \
         > "$FINAL_OUT/test_$n.log" 2>&1; echo "$n: $(tail -n 1 "$FINAL_OUT/test_$n.log") at $(( $(date +%s) - t )) s") &
    done
    (cd $W/ex_team && ls tests/test_*.py | timeout ${TT:-400} xargs -P 3 -I{} sh -c \
       'python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" > '"$FINAL_OUT"'/team_$(basename {} .py).log 2>&1;
        echo "{}: $(tail -n 1 '"$FINAL_OUT"'/team_$(basename {} .py).log)"' | sort > "$FINAL_OUT/team_tests.txt")
    wait; echo "suites at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/team_tests.txt"
    grep -h -E "^(FAILED|ERROR)" "$FINAL_OUT"/test_*.log "$FINAL_OUT"/team_*.log | cut -c1-200 | head -8 ;;
  fresh83)
    [ -d $W/f83 ] || cp -r .device/f83 $W/f83
    prepared f83 ${OPS:-$ALL} float32,bfloat16 ${COLS:-1024,4096,16384}
    timeout ${TB:-300} python3 docs/device/backward_bench.py $W/f83/rsweep-ops --ops ${OPS:-$ALL} --dtypes float32,bfloat16 \
      --cols ${COLS:-1024,4096,16384} --rounds ${ROUNDS:-1} --against compile --graphs --json "$FINAL_OUT/fresh83.json" \
      > "$FINAL_OUT/fresh83.txt" 2>&1; echo "bench rc=$?"; grep -E "x compile" "$FINAL_OUT/fresh83.txt" | tail -12 | cut -c1-200
    for tool in memcheck racecheck; do
      timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $W/f83/rsweep-ops --ops ${SOPS:-r00_tl,r06_tl} --dtypes float32,bfloat16 > "$FINAL_OUT/fresh83_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$FINAL_OUT/fresh83_$tool.log" | tail -1)"
    done ;;
  ab64)
    ops81=${OPS81:-r07_tl,r08_tl,r00_tl}; ops83=${OPS83:-r01_tl,r09_tl}; cols=${COLS:-4096,16384}; t=$(date +%s)
    for p in f81v g81 f83 g83; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; build $W/$p/rsweep-ops; done
    for ((i = 0; i < 3; i++)); do
      python3 docs/device/backward_bench.py $W/g81/rsweep-ops --ops $ops81 --dtypes float32,bfloat16 --cols $cols \
        --prewarm --part $i/3 > $W/prewarm81_$i.log 2>&1 &
      python3 docs/device/backward_bench.py $W/g83/rsweep-ops --ops $ops83 --dtypes float32,bfloat16 --cols $cols \
        --prewarm --part $i/3 > $W/prewarm83_$i.log 2>&1 &
    done
    K="cuda and backward" suites cse81 g81 $ops81 ${T:-150} 3 > /dev/null &
    K="cuda and backward" suites cse83 g83 $ops83 ${T:-150} 2 > /dev/null &
    wait; cat "$FINAL_OUT"/cse81_tests.txt "$FINAL_OUT"/cse83_tests.txt; echo "suites and prewarm at $(( $(date +%s) - t )) s"
    for p in f81v:$ops81 g81:$ops81 f83:$ops83 g83:$ops83; do
      timeout ${TB:-75} python3 docs/device/backward_bench.py $W/${p%%:*}/rsweep-ops --ops ${p#*:} --dtypes float32,bfloat16 \
        --cols $cols --rounds 1 --graphs --json "$FINAL_OUT/cse_${p%%:*}.json" > "$FINAL_OUT/cse_${p%%:*}.txt" 2>&1
      echo "${p%%:*} rc=$? at $(( $(date +%s) - t )) s"
    done
    for p in f81v:g81 f83:g83; do
      echo "${p%%:*} -> ${p#*:}, version 63 -> 64:"
      python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/cse_${p%%:*}.txt" "$FINAL_OUT/cse_${p#*:}.txt" | tail -16
    done
    for tool in ${TOOLS:-memcheck}; do
      timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $W/g81/rsweep-ops --ops r07_tl --dtypes float32,bfloat16 > "$FINAL_OUT/cse81_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$FINAL_OUT/cse81_$tool.log" | tail -1)"
    done ;;
esac
