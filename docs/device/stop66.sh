#!/usr/bin/env bash
# Prepared in stop 65 for the next session's device time (not run yet). Wrap each call so that $OUT returns one
# archive (the device tool returns at most 8 files), and bound it below the call's limit so the archive is made:
#   R=$OUT; mkdir -p /tmp/o; OUT=/tmp/o timeout 540 bash docs/device/stop66.sh PHASE; tar czf $R/PHASE.tgz -C /tmp/o .
#
# Priorities for 30 minutes: fresh, then examples, then suites.
#   fresh     template version 49's final rule on a draw it was not fitted to: seed 68's r00-r09, Triton
#             (.device/f68: python docs/device/rowwise_sweep.py generate .device/f68 --seed 68 --count 64 --only
#             r00,...,r09 --backends triton --backward fused), every backward path forced beside the launch's choice
#             at rows of 1024-16384 (backward_paths.py), the same at 16384 with _MAX_BACKWARD_BLOCK lifted (--lift:
#             would the compiled kernel's counts alone choose better than the count of row-sized values?), then
#             forward+backward against compile (float32, bfloat16); ~350 s (a lifted kernel that spills kilobytes
#             compiles slowly: the lifted phase is cut at its timeouts). Read it with replay_fit.py (docs/device/README.md) and backward_bench's summary.
#   examples  version 49's examples built side by side and their whole suites (myteam-ops' softmax_tl and
#             layernorm_tl take backward_fit; carry .whl: the cutlass wheel, python3 -m pip download --no-deps
#             nvidia-cutlass -d .whl with the device README's platform flags).
#   suites    the whole GPU suites (not large) of seed 68's ten Triton ops, one CPU thread a process (stops 62 and 64
#             stalled with twelve processes of sixteen threads on sixteen cores) and faulthandler's stack at 120 s.
W=/tmp/kg66
. "$(dirname "$0")/stop_common.sh"

for p in f68 f68b f69; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
TL=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl; C=1024,4096,16384

case ${1:-fresh} in
  fresh)
    t=$(date +%s); build $W/f68/rsweep-ops
    for ((i = 0; i < 5; i++)); do
      python3 docs/device/backward_bench.py $W/f68/rsweep-ops --ops $TL --dtypes float32,bfloat16 --cols $C \
        --prewarm --part $i/5 > $W/prewarm_f68_$i.log 2>&1 &
    done
    for ((i = 0; i < 8; i++)); do
      python3 docs/device/backward_paths.py $W/f68/rsweep-ops --ops $TL --cols $C,8192 --compile-only --part $i/8 \
        > $W/pc68_$i.log 2>&1 &
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"; grep -h Error $W/pc68_*.log | head
    timeout 120 python3 docs/device/backward_paths.py $W/f68/rsweep-ops --ops $TL --cols $C,8192 \
      > "$FINAL_OUT/paths_f68.txt" 2>&1; echo "paths rc=$? at $(( $(date +%s) - t )) s"
    # the rows past _MAX_BACKWARD_BLOCK (most ops of two or more inputs at 16384 take the long kernel by a count of
    # row-sized values): every register path forced there, and what backward_fit would take (--lift)
    for ((i = 0; i < 8; i++)); do
      timeout 120 python3 docs/device/backward_paths.py $W/f68/rsweep-ops --ops $TL --cols 16384 --lift --compile-only --part $i/8 \
        > $W/pl68_$i.log 2>&1 &
    done; wait; echo "lifted compiled at $(( $(date +%s) - t )) s"
    timeout 60 python3 docs/device/backward_paths.py $W/f68/rsweep-ops --ops $TL --cols 16384 --lift \
      > "$FINAL_OUT/paths_f68_lift.txt" 2>&1; echo "lifted paths rc=$? at $(( $(date +%s) - t )) s"
    timeout 200 python3 docs/device/backward_bench.py $W/f68/rsweep-ops --ops $TL --dtypes float32,bfloat16 --cols $C \
      --rounds 1 --against compile --json "$FINAL_OUT/f68_bwd.json" > "$FINAL_OUT/f68_bwd.txt" 2>&1
    echo "bench rc=$? at $(( $(date +%s) - t )) s"; tail -16 "$FINAL_OUT/f68_bwd.txt" ;;
  long)
    # the backward's long kernel at other chunks and warps, with and without cache hints (.device/f68b: seed 68 at
    # the template with _long_backward; 4096x8:n is the launch before it)
    t=$(date +%s); [ -d $W/f68b ] || cp -r .device/f68b $W/f68b; build $W/f68b/rsweep-ops
    S=4096x8:n,4096x8:h,2048x8:n,1024x8:n,1024x8:h,1024x4:n,2048x16:n,2048x16:h,4096x32:n
    for ((i = 0; i < 8; i++)); do
      timeout 200 python3 docs/device/backward_paths.py $W/f68b/rsweep-ops --ops $TL --cols 16384,65536 --long $S \
        --compile-only --part $i/8 > $W/plong_$i.log 2>&1 &
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"; grep -h Error $W/plong_*.log | head
    timeout 200 python3 docs/device/backward_paths.py $W/f68b/rsweep-ops --ops $TL --cols 16384,65536 --long $S \
      > "$FINAL_OUT/paths_long.txt" 2>&1; echo "paths rc=$? at $(( $(date +%s) - t )) s"
    K="cuda and backward" suites long f68b r01_tl,r05_tl,r07_tl 100 3 ;;
  verify)
    # template version 50 on a draw it was not fitted to: seed 69's r00-r09, Triton (.device/f69: rowwise_sweep.py
    # generate .device/f69 --seed 69 ...); the long backward's launch against the one before it (4096x8:n) at rows
    # of 16384 and 65536, forward+backward against compile, and the backward suites of four ops
    t=$(date +%s); [ -d $W/f69 ] || cp -r .device/f69 $W/f69; build $W/f69/rsweep-ops
    for ((i = 0; i < 5; i++)); do
      python3 docs/device/backward_bench.py $W/f69/rsweep-ops --ops $TL --dtypes float32,bfloat16 --cols $C \
        --prewarm --part $i/5 > $W/prewarm_f69_$i.log 2>&1 &
    done
    for ((i = 0; i < 6; i++)); do
      timeout 200 python3 docs/device/backward_paths.py $W/f69/rsweep-ops --ops $TL --cols 16384,65536 --long 4096x8:n \
        --compile-only --part $i/6 > $W/pv69_$i.log 2>&1 &
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"; grep -h Error $W/pv69_*.log | head
    timeout 120 python3 docs/device/backward_paths.py $W/f69/rsweep-ops --ops $TL --cols 16384,65536 --long 4096x8:n \
      > "$FINAL_OUT/paths_f69.txt" 2>&1; echo "paths rc=$? at $(( $(date +%s) - t )) s"
    timeout 200 python3 docs/device/backward_bench.py $W/f69/rsweep-ops --ops $TL --dtypes float32,bfloat16 --cols $C \
      --rounds 1 --against compile --json "$FINAL_OUT/f69_bwd.json" > "$FINAL_OUT/f69_bwd.txt" 2>&1
    echo "bench rc=$? at $(( $(date +%s) - t )) s"; tail -16 "$FINAL_OUT/f69_bwd.txt"
    K="cuda and backward" suites v69 f69 r00_tl,r03_tl,r05_tl,r08_tl 110 4 ;;
  fwd)
    # the forward's register kernel at 16 and 32 warps against its long kernel at rows of 16384, seeds 68 and 69
    # (docs/device/forward_paths.py): the data for a spill tolerance in rows_warps
    t=$(date +%s)
    for p in f68b f69; do [ -d $W/$p ] || cp -r .device/$p $W/$p; done
    for p in f68b f69; do for ((i = 0; i < 8; i++)); do
      timeout 150 python3 docs/device/forward_paths.py $W/$p/rsweep-ops --ops $TL --dtypes bfloat16,float16,float32 \
        --compile-only --part $i/8 > $W/fp_${p}_$i.log 2>&1 &
    done; done; wait; echo "compiled at $(( $(date +%s) - t )) s"; grep -h Error $W/fp_*.log | head
    for p in f68b f69; do
      timeout 90 python3 docs/device/forward_paths.py $W/$p/rsweep-ops --ops $TL --dtypes bfloat16,float16,float32 \
        > "$FINAL_OUT/fpaths_$p.txt" 2>&1; echo "$p rc=$? at $(( $(date +%s) - t )) s"
    done ;;
  check)
    # template version 51 on draws it was not fitted to (seeds 70 and 71, .device/f70 and f71 as f69): the forward's
    # paths at rows of 16384 (the spill tolerance), then the long backward against the launch before version 50
    t=$(date +%s)
    for p in f70 f71; do [ -d $W/$p ] || cp -r .device/$p $W/$p; done
    for p in f70 f71; do for ((i = 0; i < 5; i++)); do
      timeout 100 python3 docs/device/forward_paths.py $W/$p/rsweep-ops --ops $TL --dtypes bfloat16,float16 \
        --compile-only --part $i/5 > $W/fc_${p}_$i.log 2>&1 &
    done; done
    for ((i = 0; i < 6; i++)); do
      timeout 150 python3 docs/device/backward_paths.py $W/f70/rsweep-ops --ops $TL --cols 16384,65536 --long 4096x8:n \
        --compile-only --part $i/6 > $W/pc70_$i.log 2>&1 &
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"; grep -h Error $W/fc_*.log $W/pc70_*.log | head
    for p in f70 f71; do
      timeout 60 python3 docs/device/forward_paths.py $W/$p/rsweep-ops --ops $TL --dtypes bfloat16,float16 \
        > "$FINAL_OUT/fpaths_$p.txt" 2>&1; echo "$p rc=$? at $(( $(date +%s) - t )) s"
    done
    timeout 90 python3 docs/device/backward_paths.py $W/f70/rsweep-ops --ops $TL --cols 16384,65536 --long 4096x8:n \
      > "$FINAL_OUT/paths_f70.txt" 2>&1; echo "paths rc=$? at $(( $(date +%s) - t )) s" ;;
  examples)
    examples "" ;;
  suites)
    t=$(date +%s); build $W/f68/rsweep-ops
    TS=${TS:-420} whole_suites f68 ;;
esac
