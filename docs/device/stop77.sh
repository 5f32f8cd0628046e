#!/usr/bin/env bash
# Prepared in stop 76 for the next session's device time (one H200; about 25 of its 30 minutes in three calls).
# Packages (python docs/device/rowwise_sweep.py generate .device/<name> --seed N --count 64 --only r00,...,r09
# --backends triton --backward fused; a version's worktree on PYTHONPATH for an older one):
#   .device/f84   seed 84 at the current version (draw it after reading this: nobody has tuned on it)
#   .device/f81v  seed 81 at version 63 (git worktree add /tmp/wt63 7db6c22; PYTHONPATH=/tmp/wt63)
#   .device/g81   seed 81 at the current version (64 or later)
#   .device/f81s  seed 81 at version 61 (git worktree add /tmp/wt61 14398bb; PYTHONPATH=/tmp/wt61), for host only
# Wrap each call so that $OUT returns what the phase wrote even when it is cut short, in one file:
#   OUT=$OUT timeout 570 bash docs/device/stop77.sh PHASE 2>&1 | tee $OUT/log.txt; cd $OUT && tar czf /tmp/x.tgz * \
#     && rm -rf $OUT/* && mv /tmp/x.tgz $OUT/
#   fresh84   carry .device/f84: seed 84's CUDA backward suites, then forward+backward against compile (graphed) at
#             rows of 1024, 4096, 16384 and 65536 (issue 28 asks for long rows; stop 76 ran none), float32 and
#             bfloat16, one round; memcheck and racecheck over two of its ops
#   rest64    carry .device/f81v, .device/g81: version 64's A/B on the seed-81 ops stop 76 did not time (r03_tl,
#             r04_tl, r06_tl, r09_tl: 3-10% fewer instructions), rows of 4096 and 16384, graphed; then
#             myteam-ops's softmax_tl file alone (its summary did not come back in stop 76)
#   saved65   carry .device/f84 (generated at version 65 with --only softmax,layernorm,resrms,r00,...,r09): suites
#             and forward+backward at rows of 16384 and 65536, the saved values against the registered op's
#   host      carry .device/f81s, .device/f81v: the host's time a step, version 61 against 63 (stop 76 ran out of
#             device time for it)
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
W=${W:-/tmp/kg77}
. "$(dirname "$0")/stop_common.sh"

ALL=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl
case ${1:-fresh84} in
  fresh84)
    [ -d $W/f84 ] || cp -r .device/f84 $W/f84
    prepared f84 ${OPS:-$ALL} float32,bfloat16 ${COLS:-1024,4096,16384,65536}
    timeout ${TB:-330} python3 docs/device/backward_bench.py $W/f84/rsweep-ops --ops ${OPS:-$ALL} --dtypes float32,bfloat16 \
      --cols ${COLS:-1024,4096,16384,65536} --rounds 1 --against compile --graphs --json "$FINAL_OUT/fresh84.json" \
      > "$FINAL_OUT/fresh84.txt" 2>&1; echo "bench rc=$?"; grep -E "x compile" "$FINAL_OUT/fresh84.txt" | tail -12 | cut -c1-200
    for tool in memcheck racecheck; do
      timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $W/f84/rsweep-ops --ops ${SOPS:-r00_tl,r05_tl} --dtypes float32,bfloat16 > "$FINAL_OUT/fresh84_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$FINAL_OUT/fresh84_$tool.log" | tail -1)"
    done ;;
  rest64)
    ops=${OPS:-r03_tl,r04_tl,r06_tl,r09_tl}
    for p in f81v g81; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
    GRAPHS=1 K="cuda and backward" TB=${TB:-120} small_ab rest64 f81v g81 $ops float32,bfloat16 ${COLS:-4096,16384} 200 20
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
    export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source OMP_NUM_THREADS=8
    example examples/myteam-ops ex_team 16
    (cd $W/ex_team && timeout ${TT:-200} python3 -m pytest -q -p no:cacheprovider -rfE tests/test_softmax_tl.py -m "not large" \
       > "$FINAL_OUT/team_softmax_tl.log" 2>&1; echo "softmax_tl: $(tail -n 1 "$FINAL_OUT/team_softmax_tl.log")") ;;
  saved65)
    # Version 65 (the eager training path saves the forward's per-row values; the backward's long kernel loads them)
    # on seed 84, drawn after it was written, with the examples' softmax and LayerNorm and the issue's resrms:
    # the suites (the new long-row training test included), then forward+backward replayed from CUDA graphs at the
    # rows the long kernels take, ours (saving) against the registered op (computing again) and compile.
    [ -d $W/f84 ] || cp -r .device/f84 $W/f84
    K="(cuda and (backward or gradcheck)) or training" T=${T:-220} prepared f84 ${OPS:-softmax_tl,layernorm_tl,resrms_tl,$ALL} \
      float32,bfloat16 ${COLS:-16384,65536}
    timeout ${TB:-270} python3 docs/device/backward_bench.py $W/f84/rsweep-ops --ops ${BOPS:-$ALL,softmax_tl,layernorm_tl,resrms_tl} \
      --dtypes float32,bfloat16 --cols ${COLS:-16384,65536} --rounds 1 --against compile --graphs --registered \
      --json "$FINAL_OUT/saved65.json" > "$FINAL_OUT/saved65.txt" 2>&1; echo "bench rc=$?"
    grep -E "x compile" "$FINAL_OUT/saved65.txt" | tail -14 | cut -c1-200 ;;
  host)
    for p in f81s f81v; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; build $W/$p/rsweep-ops; done
    for r in 1 2; do
      [ $r = 1 ] && order="f81s f81v" || order="f81v f81s"
      for p in $order; do
        timeout 120 python3 docs/device/host_overhead.py $W/$p/rsweep-ops --ops ${OPS:-r00_tl,r03_tl,r07_tl,r09_tl} \
          --cols 4096,16384 > "$FINAL_OUT/host_${p}_$r.txt" 2>&1; echo "$p round $r rc=$?"
      done
    done
    for r in 1 2; do paste -d'|' <(cut -c1-110 "$FINAL_OUT/host_f81s_$r.txt") <(cut -c1-110 "$FINAL_OUT/host_f81v_$r.txt") | tail -18; done ;;
esac
