#!/usr/bin/env bash
# Prepared in stop 64, run in stop 65 (tbwd, kernels, paths, v49, final, p8192; wide and suites were not run: version
# 49 replaced the wide candidate, whose patch is in git history at 77858bb). Wrap each call so that $OUT returns one
# archive (the device tool returns at most 8 files):
#   R=$OUT; mkdir -p /tmp/o; OUT=/tmp/o bash docs/device/stop65.sh PHASE; tar czf $R/PHASE.tgz -C /tmp/o .
#
#   tbwd      first: template version 48 (a Triton backward whose kernel of one program a row spills at both warps takes
#             the long kernel's passes) against version 47 on the ten Triton ops of seed 65, which stop 64 measured at
#             4-12% of a copy in the backward at rows of 16384 (r03_tl, r04_tl, r06_tl). t47 and t48 built, t48's
#             CUDA backward and gradcheck suites beside compile's prewarm, both timed (forward+backward and the
#             backward alone, float32/float16/bfloat16, rows of 1024-16384), then a second round in the other order
#             (carry .device/t47, .device/t48; ~420 s; ONE=1: the first round only).
#               T=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl
#               .device/t47: PYTHONPATH=<version 47: git archive aa496d3 | tar x -C /tmp/v47> python
#                 docs/device/rowwise_sweep.py generate .device/t47 --seed 65 --count 64 --only r00,...,r09
#                 --backends triton --backward fused
#               .device/t48: the same at version 48 (HEAD)
#   wide      after tbwd, warm: the candidate docs/wip/wide-backward-v49.patch against version 48 on the same ops:
#             where one program of the backward's register kernel fills an SM without spilling (the rows kernel
#             at rows of 4096: 215-255 registers at 8 warps), twice the warps if they spill nothing, the forward's
#             rule (rows_warps). Stop 64's Triton forward+backward at 4096 reached compile in 9 of 30 cells.
#             t48w built, its CUDA backward and gradcheck suites beside the prewarm, t48 and t48w timed, a second
#             round in the other order (carry .device/t48w: PYTHONPATH=<HEAD with the patch applied> python
#             docs/device/rowwise_sweep.py generate .device/t48w ... as t48).
#   Priorities for 30 minutes: tbwd, suites, wide; examples if time is left.
#   suites    the whole GPU suites (not large) of seed 65's twenty ops at version 48 (carry .device/g65: python
#             docs/device/rowwise_sweep.py generate .device/g65 --seed 65 --count 64 --only r00,...,r09 --backward
#             fused). Stop 64's run of them (and stop 62's of seed 64) printed nothing: every file was still running
#             at 330-480 s, each stopped in the CPU float64 cases of its long rows (test_matches_reference
#             [float64-cpu-262144] for the four-input ops), which take 2 s a file on the dev machine. Here each pytest
#             has one CPU thread (twelve processes of sixteen threads each on sixteen cores is the suspect), and
#             faulthandler prints the stack of any test that runs past 120 s, so a stall names its line.
#   examples  version 48's examples built side by side and their whole suites (myteam-ops' softmax_tl and layernorm_tl
#             take the new launch; carry .whl: the cutlass wheel, python3 -m pip download --no-deps nvidia-cutlass
#             -d .whl with the device README's platform flags)
W=/tmp/kg65
. "$(dirname "$0")/stop_common.sh"

for p in t47 t48 t48w t49 f66 f67 x49 g65; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
TL=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl; C=1024,4096,16384; D=float32,float16,bfloat16

case ${1:-tbwd} in
  tbwd)
    K="cuda and (backward or gradcheck)" TB=${TB:-200} small_ab tb t47 t48 $TL $D $C 300 16
    [ -z "${ONE:-}" ] && ORDER="t48 t47" TB=${TB:-200} second_round tb t47 t48 $TL $D $C ;;
  wide)
    K="cuda and (backward or gradcheck)" TB=${TB:-200} small_ab tw t48 t48w $TL $D $C 300 16
    [ -z "${ONE:-}" ] && ORDER="t48w t48" TB=${TB:-200} second_round tw t48 t48w $TL $D $C ;;
  suites)
    t=$(date +%s)
    build $W/g65/rsweep-ops; echo "built at $(( $(date +%s) - t )) s"; cp $W/build_g65.log "$FINAL_OUT/"
    TS=${TS:-480} whole_suites g65 ;;
  kernels)
    # Where the Triton backward's time goes, kernel by kernel, beside compile's forward+backward; Inductor's
    # generated code comes back for reading (stop 65: tbwd's first call showed version 48's long kernel no
    # faster than the spilling one, both 3-12% of a copy at rows of 16384).
    t=$(date +%s); export TORCHINDUCTOR_CACHE_DIR=$W/inductor
    build $W/t48/rsweep-ops
    for ((i = 0; i < 5; i++)); do
      python3 docs/device/backward_bench.py $W/t48/rsweep-ops --ops $TL --dtypes float32,bfloat16 --cols $C \
        --prewarm --part $i/5 > $W/prewarm_k_$i.log 2>&1 &
    done; wait; echo "prewarmed at $(( $(date +%s) - t )) s"
    timeout ${TK:-240} python3 docs/device/backward_kernels.py $W/t48/rsweep-ops --ops $TL --dtypes bfloat16,float32 \
      --cols $C > "$FINAL_OUT/kernels_t48.txt" 2>&1; echo "kernels rc=$? at $(( $(date +%s) - t )) s"
    (cd $W/inductor && find . -name "*.py" -size -200k | tar czf "$FINAL_OUT/inductor_code.tgz" -T -)
    grep "^==" "$FINAL_OUT/kernels_t48.txt" | head -60 ;;
  paths)
    # Every kernel the Triton backward could take at rows of 4096 and 16384, forced and timed, with this GPU's
    # Triton's counts (kernels showed r03_tl's one-row kernel kept at 16384 and run at 3-8% of a copy).
    t=$(date +%s); build $W/t48/rsweep-ops
    for ((i = 0; i < 8; i++)); do
      python3 docs/device/backward_paths.py $W/t48/rsweep-ops --ops ${OPS:-$TL} --compile-only --part $i/8 \
        > $W/paths_compile_$i.log 2>&1 &
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"; grep -h Error $W/paths_compile_*.log | head
    timeout ${TK:-300} python3 docs/device/backward_paths.py $W/t48/rsweep-ops --ops ${OPS:-$TL} \
      > "$FINAL_OUT/paths_t48.txt" 2>&1; echo "paths rc=$? at $(( $(date +%s) - t )) s"
    cat "$FINAL_OUT/paths_t48.txt" ;;
  v49)
    # Template version 49 (one rule for the backward's register kernels, _triton_rowwise.backward_fit: twice the
    # warps where one program fills an SM, 128 bytes of spills tolerated) on seed 65 (the ops it was fitted to,
    # .device/t49) and seed 66 (ten fresh ones, .device/f66: rowwise_sweep.py generate .device/f66 --seed 66
    # --count 64 --only r00,...,r09 --backends triton --backward fused): every path forced and timed beside the
    # launch's own choice, then seed 66's forward+backward against compile (float32, bfloat16).
    t=$(date +%s); build $W/t49/rsweep-ops; build $W/f66/rsweep-ops
    for ((i = 0; i < 5; i++)); do
      python3 docs/device/backward_bench.py $W/f66/rsweep-ops --ops $TL --dtypes float32,bfloat16 --cols $C \
        --prewarm --part $i/5 > $W/prewarm_f66_$i.log 2>&1 &
    done
    for ((i = 0; i < 6; i++)); do
      python3 docs/device/backward_paths.py $W/t49/rsweep-ops --ops $TL --compile-only --part $i/6 > $W/pc49_$i.log 2>&1 &
      python3 docs/device/backward_paths.py $W/f66/rsweep-ops --ops $TL --cols $C --compile-only --part $i/6 > $W/pc66_$i.log 2>&1 &
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"; grep -h Error $W/pc*.log | head
    timeout ${TK:-150} python3 docs/device/backward_paths.py $W/f66/rsweep-ops --ops $TL --cols $C \
      > "$FINAL_OUT/paths_f66.txt" 2>&1; echo "paths f66 rc=$? at $(( $(date +%s) - t )) s"
    timeout ${TK:-100} python3 docs/device/backward_paths.py $W/t49/rsweep-ops --ops $TL \
      > "$FINAL_OUT/paths_t49.txt" 2>&1; echo "paths t49 rc=$? at $(( $(date +%s) - t )) s"
    timeout ${TB:-200} python3 docs/device/backward_bench.py $W/f66/rsweep-ops --ops $TL --dtypes float32,bfloat16 --cols $C \
      --rounds 1 --against compile --json "$FINAL_OUT/f66_bwd.json" > "$FINAL_OUT/f66_bwd.txt" 2>&1
    echo "f66 bench rc=$? at $(( $(date +%s) - t )) s"; tail -25 "$FINAL_OUT/f66_bwd.txt" ;;
  final)
    # Version 49 as committed (SPILL_TOLERATED 64; the rows kernel, which prefetches its next row, widened only
    # where it spills) on seed 67 (ten fresh ops, .device/f67, generated as f66 with --seed 67) and on the
    # examples' expressions (.device/x49: --only softmax,log_softmax,rmsnorm,layernorm,resrms,csilu): every path
    # forced and timed beside the launch's own choice, then seed 67's forward+backward against compile.
    t=$(date +%s); X=softmax_tl,log_softmax_tl,rmsnorm_tl,layernorm_tl,resrms_tl,csilu_tl
    build $W/f67/rsweep-ops; build $W/x49/rsweep-ops
    for ((i = 0; i < 5; i++)); do
      python3 docs/device/backward_bench.py $W/f67/rsweep-ops --ops $TL --dtypes float32,bfloat16 --cols $C \
        --prewarm --part $i/5 > $W/prewarm_f67_$i.log 2>&1 &
    done
    for ((i = 0; i < 6; i++)); do
      python3 docs/device/backward_paths.py $W/f67/rsweep-ops --ops $TL --cols $C --compile-only --part $i/6 > $W/pc67_$i.log 2>&1 &
      python3 docs/device/backward_paths.py $W/x49/rsweep-ops --ops $X --cols $C --compile-only --part $i/6 > $W/pcx_$i.log 2>&1 &
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"; grep -h Error $W/pc*.log | head
    timeout 100 python3 docs/device/backward_paths.py $W/f67/rsweep-ops --ops $TL --cols $C \
      > "$FINAL_OUT/paths_f67.txt" 2>&1; echo "paths f67 rc=$? at $(( $(date +%s) - t )) s"
    timeout 60 python3 docs/device/backward_paths.py $W/x49/rsweep-ops --ops $X --cols $C \
      > "$FINAL_OUT/paths_x49.txt" 2>&1; echo "paths x49 rc=$? at $(( $(date +%s) - t )) s"
    timeout ${TB:-170} python3 docs/device/backward_bench.py $W/f67/rsweep-ops --ops $TL --dtypes float32,bfloat16 --cols $C \
      --rounds 1 --against compile --json "$FINAL_OUT/f67_bwd.json" > "$FINAL_OUT/f67_bwd.txt" 2>&1
    echo "f67 bench rc=$? at $(( $(date +%s) - t )) s"; tail -16 "$FINAL_OUT/f67_bwd.txt" ;;
  p8192)
    # The last seconds: rows of 8192 and 16384 for the ops with weights (where the rows kernel competes), every
    # path forced (final's forced paths failed on a keyword the launch passes).
    t=$(date +%s); X=rmsnorm_tl,resrms_tl,layernorm_tl; Y=r01_tl,r02_tl,r04_tl,r06_tl,r08_tl,r09_tl
    for ((i = 0; i < 8; i++)); do
      python3 docs/device/backward_paths.py $W/f67/rsweep-ops --ops $Y --cols 8192,16384 --compile-only --part $i/8 > $W/pq67_$i.log 2>&1 &
      python3 docs/device/backward_paths.py $W/x49/rsweep-ops --ops $X --cols 8192,16384 --compile-only --part $i/8 > $W/pqx_$i.log 2>&1 &
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"
    timeout 25 python3 docs/device/backward_paths.py $W/x49/rsweep-ops --ops $X --cols 8192,16384 > "$FINAL_OUT/p8192_x49.txt" 2>&1
    timeout 30 python3 docs/device/backward_paths.py $W/f67/rsweep-ops --ops $Y --cols 8192,16384 > "$FINAL_OUT/p8192_f67.txt" 2>&1
    echo "done at $(( $(date +%s) - t )) s"; grep -hv "Warn\|_warn" "$FINAL_OUT"/p8192_*.txt | cut -c1-300 ;;
  examples)
    examples "" ;;
esac
