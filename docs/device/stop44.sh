#!/usr/bin/env bash
# Stop 44 (issue 28): the Triton long-row kernel in fewer passes over the row. Reductions that read no result
# of each other share a pass, and a sum of exp(f - max(f)) is computed online in its maximum's pass.
# Packages, generated on the dev machine and carried (.device is not in git); seed 44 is fresh:
#   .device/lr44old: git worktree add /tmp/wt ff78d42; PYTHONPATH=/tmp/wt python /tmp/wt/docs/device/rowwise_sweep.py \
#                    generate .device/lr44old --seed 44 --count 40 --backends triton     (the templates before)
#   .device/lr44new: python docs/device/rowwise_sweep.py generate .device/lr44new --seed 44 --count 40 --backends triton
# Phases (one device call each):
#   DTYPES=float32 bash docs/device/stop44.sh bench    # both packages at rows of 65536 and 262144, one after the other
#   DTYPES=bfloat16 TAG=bf16 bash docs/device/stop44.sh bench
#   bash docs/device/stop44.sh tests                   # the GPU suites of the changed ops, then compute-sanitizer
# Tried, not shipped: the backward of Triton rowwise ops with weights at rows of 8192-16384, the rows kernel compiled
# again at 32 warps where it spills at 16 (at 32 warps a thread has at most 64 registers: it spilled for every op).
#   .device/bw44old: PYTHONPATH=/tmp/wt python /tmp/wt/docs/device/rowwise_sweep.py generate .device/bw44old --seed 44 \
#                    --count 40 --backends triton --backward fused --only $WEIGHTED   (/tmp/wt: a worktree at b6b7854)
#   .device/bw44new: the same with the templates of b6b7854 edited to try 32 warps (the _resident loop)
#   .device/r11new:  python docs/device/rowwise_sweep.py generate .device/r11new --seed 43 --count 30 --backends triton \
#                    --backward fused --only r11   (stop 43's test_large_values failure, with the error model's fix)
#   bash docs/device/stop44.sh bwd        # backward alone, both packages (triton_weight_programs.py: "as is")
#   bash docs/device/stop44.sh bwd-bench  # forward+backward against compile at 16384; GPU suites; memcheck; r11
#   bash docs/device/stop44.sh examples   # myteam-ops built here; its Triton suites; r11's suite (.device/r11new)
# The backward's long kernel in the forward's passes (rows past _MAX_BACKWARD_BLOCK: 4096-16384 by the live values):
#   .device/bwl44old: PYTHONPATH=/tmp/wt python /tmp/wt/docs/device/rowwise_sweep.py generate .device/bwl44old --seed 44 \
#                     --count 40 --backends triton --backward fused --only $BWLONG   (/tmp/wt: a worktree at 1c4200a)
#   .device/bwl44new: the same with this stop's templates
#   bash docs/device/stop44.sh bwlong       # backward alone, both packages; forward+backward against compile (new)
#   bash docs/device/stop44.sh bwlong-tests # the new package's GPU suites; memcheck and racecheck of the backward
set -uo pipefail
L=$OUT; export PYTHONUNBUFFERED=1
# The expressions whose long kernel changed (fewer passes), and two whose kernel did not (controls).
CHANGED=softmax,log_softmax,lse,lsm_lse,wsoftmax,xbyy,range4,r07,r08,r10,r12,r13,r16,r17,r18,r19,r20,r22,r23,r24
CONTROLS=rmsnorm,layernorm
BWLONG=softmax,log_softmax,lse,wsoftmax,layernorm,rmsnorm,resln,range4,r07,r08,r13,r16,r18,r22,xbyy
WEIGHTED=rmsnorm,layernorm,resrms,wrms,wsoftmax,resln,quad4,r01,r02,r03,r04,r06,r07,r08,r09,r10,r13,r15,r19,r21,r22,r24
case ${1:-bench} in
  bench)
    nvidia-smi --query-gpu=name --format=csv,noheader
    for p in ${PKGS:-lr44old lr44new}; do
      timeout ${T:-280} python3 docs/device/rowwise_sweep.py run .device/$p/rsweep-ops --backends triton \
        --only ${OPS:-$CHANGED,$CONTROLS} --cols ${COLS:-65536,262144} --dtypes ${DTYPES:-float32} --rounds 2 \
        --json "$L/${p}_${TAG:-f32}.json" > "$L/${p}_${TAG:-f32}.txt" 2>&1
      echo "$p: rc=$?"; grep -v Warn "$L/${p}_${TAG:-f32}.txt" | tail -25
    done ;;
  tests)
    (cd .device/lr44new/rsweep-ops && for t in ${TEST_OPS:-softmax_tl lse_tl wsoftmax_tl range4_tl r07_tl r08_tl r12_tl r17_tl r22_tl}; do
       echo tests/test_$t.py; done | timeout 300 xargs -P 6 -I{} sh -c \
      'python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" -k "not cpu" > '"$L"'/test_$(basename {} .py).log 2>&1; echo "{}: $(tail -1 '"$L"'/test_$(basename {} .py).log)"') | tee "$L/tests_summary.txt"
    cat $L/test_*.log | grep -E "^(FAILED|ERROR)|^E  " | head -40 > "$L/tests_failures.txt"; rm -f $L/test_*.log
    # memcheck and racecheck over the long kernels (rows of 65536-262147), float32 and bfloat16
    for tool in memcheck racecheck; do
      timeout 200 compute-sanitizer --tool $tool python3 docs/device/sanitize_long.py .device/lr44new/rsweep-ops \
        --ops softmax_tl,wsoftmax_tl,range4_tl,r22_tl 2>&1 | grep -E "SUMMARY|calls|Error" | sed "s/^/$tool: /"
    done ;;
  bwd)
    for p in ${PKGS:-bw44old bw44new}; do
      timeout ${T:-280} python3 docs/device/triton_weight_programs.py .device/$p/rsweep-ops --ops $(echo ${OPS:-$WEIGHTED} | sed 's/\([a-z0-9_]*\)/\1_tl/g') \
        --cols ${COLS:-8192,16384} --rounds 2 > "$L/${p}_bwd.txt" 2>&1; echo "$p: rc=$?"
    done ;;
  bwd-bench)
    timeout 300 python3 docs/device/backward_bench.py .device/bw44new/rsweep-ops --ops $(echo ${OPS:-$WEIGHTED} | sed 's/\([a-z0-9_]*\)/\1_tl/g') \
      --dtypes float32,bfloat16 --cols 16384 --rounds 2 --json "$L/bench_bw44new.json" > "$L/bench_bw44new.txt" 2>&1; echo "bench: rc=$?"
    (cd .device/bw44new/rsweep-ops && for t in layernorm_tl rmsnorm_tl wsoftmax_tl r04_tl r13_tl r22_tl; do echo tests/test_$t.py; done | timeout 200 xargs -P 6 -I{} sh -c \
      'python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" -k "not cpu" > '"$L"'/test_$(basename {} .py).log 2>&1; echo "{}: $(tail -1 '"$L"'/test_$(basename {} .py).log)"') | tee "$L/bw_tests_summary.txt"
    cat $L/test_*.log | grep -E "^(FAILED|ERROR)|^E  " | head -40 > "$L/bw_tests_failures.txt"; rm -f $L/test_*.log
    (cd .device/r11new/rsweep-ops && timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_r11_tl.py -k "large_values or matches_reference" 2>&1 | tail -2 | sed "s/^/r11_tl: /")
    timeout 150 compute-sanitizer --tool memcheck python3 docs/device/sanitize_backward.py .device/bw44new/rsweep-ops --ops layernorm_tl,r04_tl \
      --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|Error" | head -5 | sed "s/^/memcheck: /" ;;
  bwlong)
    for p in bwl44old bwl44new; do
      timeout 170 python3 docs/device/triton_weight_programs.py .device/$p/rsweep-ops --ops $(echo ${OPS:-$BWLONG} | sed 's/\([a-z0-9_]*\)/\1_tl/g') \
        --cols ${COLS:-16384,65536} --rounds 2 > "$L/${p}_bwd.txt" 2>&1; echo "$p: rc=$?"
    done
    timeout 200 python3 docs/device/backward_bench.py .device/bwl44new/rsweep-ops --ops ${BENCH_OPS:-r13_tl,r22_tl,resln_tl,r18_tl} \
      --dtypes float32,bfloat16 --cols 16384 --rounds 2 --json "$L/bench_bwl44new.json" > "$L/bench_bwl44new.txt" 2>&1; echo "bench: rc=$?" ;;
  bwlong-tests)
    (cd .device/bwl44new/rsweep-ops && for t in softmax_tl layernorm_tl wsoftmax_tl range4_tl r13_tl r22_tl; do echo tests/test_$t.py; done | timeout 150 xargs -P 6 -I{} sh -c \
      'python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" -k "not cpu" > '"$L"'/test_$(basename {} .py).log 2>&1; echo "{}: $(tail -1 '"$L"'/test_$(basename {} .py).log)"') | tee "$L/bwl_tests_summary.txt"
    cat $L/test_*.log | grep -E "^(FAILED|ERROR)|^E  " | head -40 > "$L/bwl_tests_failures.txt"; rm -f $L/test_*.log
    for tool in memcheck racecheck; do
      timeout 100 compute-sanitizer --tool $tool python3 docs/device/sanitize_backward.py .device/bwl44new/rsweep-ops --ops wsoftmax_tl,r22_tl \
        --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|Error" | head -5 | sed "s/^/$tool: /"
    done ;;
  examples)
    if ls .whl/nvidia_cutlass-*.whl > /dev/null 2>&1 && [ ! -d /tmp/cutlass ]; then
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
    fi
    export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 CXX=/usr/bin/g++ CC=/usr/bin/gcc
    (cd examples/myteam-ops && t=$(date +%s) && python3 setup.py build_ext --inplace > "$L/build.log" 2>&1; echo "build: rc=$? in $(( $(date +%s) - t )) s")
    R=$PWD; ([ -n "${SKIP_R11:-}" ] || echo $R/.device/r11new/rsweep-ops/tests/test_r11_tl.py; for t in layernorm_tl softmax_tl gelu_tl muladd_tl; do
       echo $R/examples/myteam-ops/tests/test_$t.py; done) | timeout 300 xargs -P 5 -I{} sh -c \
      'cd $(dirname $(dirname {})) && python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" -k "not cpu" > '"$L"'/ex_$(basename {} .py).log 2>&1; echo "$(basename {}): $(tail -1 '"$L"'/ex_$(basename {} .py).log)"' | tee "$L/examples_summary.txt"
    cat $L/ex_*.log | grep -E "^(FAILED|ERROR)|^E  " | head -20 | tee "$L/examples_failures.txt"; rm -f $L/ex_*.log ;;
esac
