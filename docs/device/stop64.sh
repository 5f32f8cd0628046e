#!/usr/bin/env bash
# Prepared in stop 63 and run in stop 64 (docs/results/stop64/run_info.txt has each call as run; a call's OUT pointed at
# /tmp/o, which the call then tarred into the real $OUT):
#   R=$OUT; mkdir -p /tmp/o; OUT=/tmp/o bash docs/device/stop64.sh PHASE; tar czf $R/PHASE.tgz -C /tmp/o .
#
#   resident   the candidate docs/wip/resident-v48.patch (removed after the run; in git history at aa496d3): the forward's register kernel gains a build whose row takes a
#              quarter of kRowRegisters and whose registers are capped at 32 (__launch_bounds__(512, 4): every warp
#              of an SM resident, as torch.compile's kernels are), taken where ptxas fitted it without more local
#              memory than the dense build, and only with KERNELGEN_RESIDENT=1 in the environment (an experiment's
#              toggle: one build, two launches). Package r48 built, its CUDA suites with the toggle set beside
#              compile's prewarm, then the forward with the toggle unset and set, two rounds in opposite order, and
#              fwd_ab.py's summary a round (carry .device/r48; ~450 s with MODES's six runs; MODES="off resident long"
#              for one round). The patch's second toggle, KERNELGEN_FORWARD_LONG=1, sends rows of 8192 and longer to
#              the multi-pass kernel (32-40 registers, the row read once a pass, as compile's looped kernels at
#              16384, where ours run float32 r08 and range4 at 48% of the warps against compile's 90%): mode "long".
#              r48: PYTHONPATH=<HEAD with the patch applied> python docs/device/rowwise_sweep.py generate .device/r48
#                   --seed 64 --count 64 --only $RO --backends cuda --backward vjp
#   ncu        after resident, warm: the cells the two toggles target under Nsight Compute, each launch beside
#              compile's kernel (instructions an element, issue slots, warps active, registers; ~150 s)
#   sanitize   compute-sanitizer memcheck and racecheck over version 47's long-row kernels (sanitize_long.py: rows of
#              65536-262147, float32 and bfloat16) and every backward launch shape (sanitize_backward.py), six ops with
#              the fused backward: seed 64's r03 (four inputs, two weights), r05 (a weight inside a reduction), r10
#              (three max/min reductions), softmax, rmsnorm, layernorm (carry .device/s47; issue 28's and 29's
#              evidence at the current template).
#              s47: python docs/device/rowwise_sweep.py generate .device/s47 --seed 64 --count 64
#                   --only r03,r05,r10,softmax,rmsnorm,layernorm --backends cuda --backward fused
# Why the candidate (docs/backward.md "Stop 63"): Nsight Compute found the worst forward cells at about half of an
# SM's warps (56-64 registers), compile's at 90-96%; r00 in float16 issues as many instructions an element as
# compile's kernel and loses only on issue-slot use. Static counts of the resident build (stop 63,
# rowwise_ptxas.py over 16 ops, docs/results/stop63/static/): 32 registers without spilling for r00, r01, r03 in
# float16/bfloat16 at 8 elements a thread (rows up to 4096), softmax, rmsnorm, layernorm, lse, range4, resrms, r07,
# r10; not for r06 (float16), r08, r09 or any float32 r00; and 10-30% more instructions an element than the dense
# build (more threads a row share each reduction). Whether 64 warps pay for that is for the GPU.
W=/tmp/kg64
. "$(dirname "$0")/stop_common.sh"

for p in r48 s47 f65; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
RO=r00,r01,r03,r05,r06,r07,r08,r10,softmax,rmsnorm,layernorm,range4,lse,log_softmax,resrms; C=1024,4096,16384

case ${1:-resident} in
  resident)
    t=$(date +%s)
    build $W/r48/rsweep-ops; echo "built at $(( $(date +%s) - t )) s"; cp $W/build_r48.log "$FINAL_OUT/"
    (cd $W/r48/rsweep-ops && ls tests/test_*.py | KERNELGEN_RESIDENT=1 timeout ${TS:-200} xargs -P 8 -I{} sh -c \
       'python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" -k cuda > /tmp/r48_$(basename {} .py).log 2>&1; \
        echo "{}: $(tail -1 /tmp/r48_$(basename {} .py).log)" >> '"$FINAL_OUT"'/r48_tests.txt') &
    for ((i = 0; i < 6; i++)); do
      python3 docs/device/rowwise_sweep.py prewarm $W/r48/rsweep-ops --only $RO --cols $C --backends cuda \
        --part $i/6 > $W/prewarm_res_$i.log 2>&1 &
    done
    wait; echo "suites and prewarm at $(( $(date +%s) - t )) s"
    cat "$FINAL_OUT/r48_tests.txt"; grep -h -E "^(FAILED|ERROR)" /tmp/r48_*.log | cut -c1-240 | head -10
    for mode in ${MODES:-off resident long long resident off}; do
      r=1; [ -f "$FINAL_OUT/res_${mode}_1.json" ] && r=2
      unset KERNELGEN_RESIDENT KERNELGEN_FORWARD_LONG
      [ $mode = resident ] && export KERNELGEN_RESIDENT=1
      [ $mode = long ] && export KERNELGEN_FORWARD_LONG=1
      timeout ${TT:-70} python3 docs/device/rowwise_sweep.py run $W/r48/rsweep-ops --only $RO --cols $C --backends cuda \
        --rounds 1 --json "$FINAL_OUT/res_${mode}_$r.json" --build-log $W/build_r48.log > "$FINAL_OUT/res_${mode}_$r.log" 2>&1
      echo "$mode round $r rc=$? at $(( $(date +%s) - t )) s"
    done
    unset KERNELGEN_RESIDENT KERNELGEN_FORWARD_LONG
    for r in 1 2; do for mode in resident long; do
      [ -f "$FINAL_OUT/res_${mode}_$r.json" ] && echo "round $r, $mode against the launch as it is: $(python3 \
        docs/device/fwd_ab.py "$FINAL_OUT/res_off_$r.json" "$FINAL_OUT/res_${mode}_$r.json" | tail -1)"
    done; done ;;
  ncu)  # after resident (warm, r48 built): the cells the resident build targets under Nsight Compute, the launch as it
        # is (off) and with KERNELGEN_RESIDENT=1 (resident), each beside compile's kernel (ncu_pair_table.py)
    build $W/r48/rsweep-ops
    M=$(python3 docs/device/ncu_pair_table.py --metrics)
    CELLS=${CELLS:-r00:float16:4096,r00:bfloat16:1024,r01:float16:1024,r03:bfloat16:1024,softmax:float16:4096,r08:float32:16384,range4:float32:16384}
    for mode in off resident long; do
      unset KERNELGEN_RESIDENT KERNELGEN_FORWARD_LONG
      [ $mode = resident ] && export KERNELGEN_RESIDENT=1
      [ $mode = long ] && export KERNELGEN_FORWARD_LONG=1
      timeout ${TN:-200} ncu --profile-from-start off --csv --metrics $M python3 docs/device/ncu_pair.py \
        $W/r48/rsweep-ops --cells $CELLS > "$FINAL_OUT/ncu_$mode.csv" 2> "$FINAL_OUT/ncu_${mode}_stderr.log"
      echo "ncu $mode rc=$?"
      python3 docs/device/ncu_pair_table.py "$FINAL_OUT/ncu_$mode.csv" "$FINAL_OUT/ncu_${mode}_stderr.log" \
        | tee "$FINAL_OUT/ncu_${mode}_table.txt"
    done
    unset KERNELGEN_RESIDENT KERNELGEN_FORWARD_LONG ;;
  sanitize)
    t=$(date +%s)
    build $W/s47/rsweep-ops; echo "built at $(( $(date +%s) - t )) s"
    S=r03,r05,r10,softmax,rmsnorm,layernorm
    for tool in memcheck racecheck; do
      timeout ${TZ:-150} compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_long.py \
        $W/s47/rsweep-ops --ops $S > "$FINAL_OUT/long_$tool.log" 2>&1
      echo "long $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$FINAL_OUT/long_$tool.log" | tail -1) at $(( $(date +%s) - t )) s"
      timeout ${TZ:-150} compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        $W/s47/rsweep-ops --ops $S --dtypes float32,bfloat16 > "$FINAL_OUT/backward_$tool.log" 2>&1
      echo "backward $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$FINAL_OUT/backward_$tool.log" | tail -1) at $(( $(date +%s) - t )) s"
    done ;;
  fresh)  # GPU truth at version 47 on a draw no template was tuned on (carry .device/f65: python
          # docs/device/rowwise_sweep.py generate .device/f65 --seed 65 --count 64 --only r00,...,r09 --backward fused;
          # both backends): built, every op's whole GPU suite (not large) beside compile's prewarm for the forward
          # sweep and for forward+backward, then fresh_time
    t=$(date +%s)
    build $W/f65/rsweep-ops; echo "built at $(( $(date +%s) - t )) s"; cp $W/build_f65.log "$FINAL_OUT/"
    (cd $W/f65/rsweep-ops && ls tests/test_*.py | timeout ${TS:-330} xargs -P 8 -I{} sh -c \
       'python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" > /tmp/f65_$(basename {} .py).log 2>&1; \
        echo "{}: $(tail -1 /tmp/f65_$(basename {} .py).log)"' | sort > "$FINAL_OUT/f65_tests.txt") &
    for ((i = 0; i < 4; i++)); do
      python3 docs/device/rowwise_sweep.py prewarm $W/f65/rsweep-ops --cols 1024,4096,16384 --part $i/4 \
        > $W/prewarm_f65_$i.log 2>&1 &
    done
    for ((i = 0; i < 3; i++)); do
      python3 docs/device/backward_bench.py $W/f65/rsweep-ops --dtypes float32,float16,bfloat16 --cols 1024,4096,16384 \
        --prewarm --part $i/3 > $W/prewarm_f65b_$i.log 2>&1 &
    done
    wait; echo "suites and prewarm at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/f65_tests.txt"
    grep -h -E "^(FAILED|ERROR)" /tmp/f65_*.log | cut -c1-240 | head -12 ;;
  fresh_time)  # after fresh, warm: the forward sweep (both backends, three dtypes, rows of 1024-16384) and
               # forward+backward against compile (every op with a generated backward), one round each
    t=$(date +%s); build $W/f65/rsweep-ops
    timeout ${TT:-300} python3 docs/device/rowwise_sweep.py run $W/f65/rsweep-ops --cols 1024,4096,16384 --rounds 1 \
      --json "$FINAL_OUT/f65_fwd.json" --build-log $W/build_f65.log > "$FINAL_OUT/f65_fwd.log" 2>&1
    echo "forward rc=$? at $(( $(date +%s) - t )) s"; sed -n '/^backend /,$p' "$FINAL_OUT/f65_fwd.log" | head -40
    timeout ${TB:-240} python3 docs/device/backward_bench.py $W/f65/rsweep-ops --dtypes float32,float16,bfloat16 \
      --cols 1024,4096,16384 --rounds 1 --against compile --json "$FINAL_OUT/f65_bwd.json" > "$FINAL_OUT/f65_bwd.txt" 2>&1
    echo "fwd+bwd rc=$? at $(( $(date +%s) - t )) s"; tail -30 "$FINAL_OUT/f65_bwd.txt" ;;
esac
