#!/usr/bin/env bash
# Stop 43 (issue 29): the Triton rowwise backward of ops with weights sums the weights' gradients on chip.
# Packages, made on the dev machine and carried (.device is not in git):
#   .device/tw43a: python docs/device/rowwise_sweep.py generate .device/tw43a --seed 43 --count 30 --backends triton \
#                  --backward fused --only layernorm,rmsnorm,resrms,wrms,wsoftmax,resln,softmax,r02,r04,r07,r09,r10,r11
#                  with the templates of 569f9f0 (the weights' kernel reads the rows again);
#   .device/tw43b: the same command with this stop's templates.
# Phases: bash docs/device/stop43.sh programs|tests|bench|examples
#   programs ran against this stop's first templates, whose _triton_rowwise.PROGRAMS_PER_SM (programs an SM by
#   warps) --per-sm sets; the shipped templates choose the count from the compiled kernel (resident), so with
#   them only the "as is" timings apply.
set -uo pipefail
L=$OUT; export PYTHONUNBUFFERED=1
TUNED=layernorm_tl,rmsnorm_tl,resrms_tl,wsoftmax_tl
FRESH=wrms_tl,resln_tl,r02_tl,r04_tl,r07_tl,r09_tl,r10_tl,r11_tl
case ${1:-programs} in
  programs)  # programs an SM, set by hand, for the tuned four; then both packages as generated
    timeout 200 python3 docs/device/triton_weight_programs.py .device/tw43a/rsweep-ops --ops $TUNED 2>&1 | grep -v Warn | tee $L/old.txt
    timeout 330 python3 docs/device/triton_weight_programs.py .device/tw43b/rsweep-ops --ops $TUNED --per-sm 1,2,4,8 2>&1 | grep -v Warn | tee $L/new.txt ;;
  tests)  # the generated GPU suites of the new package, then both packages as generated, backward alone
    (cd .device/tw43b/rsweep-ops && for t in ${TEST_OPS:-${TUNED//,/ } ${FRESH//,/ } softmax_tl}; do echo tests/test_$t.py; done | timeout 280 xargs -P 6 -I{} sh -c \
      'python3 -m pytest -q -p no:cacheprovider -rfE {} -m "not large" -k "not cpu" > '"$L"'/test_$(basename {} .py).log 2>&1; echo "{}: $(tail -1 '"$L"'/test_$(basename {} .py).log)"')
    cat $L/test_*.log | grep -E "^(FAILED|ERROR)|^E  " | head -40 > $L/failures.txt; rm -f $L/test_*.log
    [ -n "${SKIP_OLD:-}" ] || timeout 200 python3 docs/device/triton_weight_programs.py .device/tw43a/rsweep-ops --ops $TUNED,$FRESH --rounds 2 2>&1 | grep -v Warn | tee $L/old_all.txt
    timeout 200 python3 docs/device/triton_weight_programs.py .device/tw43b/rsweep-ops --ops $TUNED,$FRESH --rounds 2 2>&1 | grep -v Warn | tee $L/new_all.txt ;;
  bench)  # forward+backward against torch.compile (backward_bench.py), the new package
    timeout 580 python3 docs/device/backward_bench.py .device/tw43b/rsweep-ops --ops ${OPS:-$TUNED,$FRESH} \
      --dtypes float32,bfloat16 --cols 1024,4096,16384 --rounds 2 --json "$L/bench_tw43b.json" 2>&1 | grep -v Warning | tee "$L/bench_tw43b.txt" ;;
esac
# examples: myteam-ops built here (CUTLASS from the carried .whl), the GPU suites of its Triton ops, then forward+backward
# of layernorm_tl and softmax_tl beside their CUDA C++ twins.
if [ "${1:-}" = examples ]; then
  if ls .whl/nvidia_cutlass-*.whl > /dev/null 2>&1 && [ ! -d /tmp/cutlass ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
  fi
  export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16 CXX=/usr/bin/g++ CC=/usr/bin/gcc
  (cd examples/myteam-ops && t=$(date +%s) && python3 setup.py build_ext --inplace > "$L/build.log" 2>&1; echo "build: rc=$? in $(( $(date +%s) - t )) s")
  (cd examples/myteam-ops && for t in layernorm_tl softmax_tl gelu_tl muladd_tl; do echo tests/test_$t.py; done | timeout 250 xargs -P 4 -I{} sh -c \
    'python3 -m pytest -q -p no:cacheprovider -rfE {} -k "not cpu" > '"$L"'/ex_$(basename {} .py).log 2>&1; echo "{}: $(tail -1 '"$L"'/ex_$(basename {} .py).log)"')
  cat $L/ex_*.log | grep -E "^(FAILED|ERROR)|^E  " | head -20
  timeout 200 python3 docs/device/backward_bench.py examples/myteam-ops --ops layernorm_tl,layernorm,softmax_tl,softmax \
    --dtypes float32,bfloat16 --cols 1024,4096,16384 --rounds 2 --json "$L/bench_examples.json" 2>&1 | grep -v Warning | tee "$L/bench_examples.txt"
fi
# blocks: the rows kernel with contiguous blocks of rows a program (.device/tw43c, the templates of d7fa93e with
# _begin/_end blocks, generated with PYTHONPATH at a worktree of them) against strided rows (.device/tw43b): the
# spread in three processes each, then both packages' backward alone.
if [ "${1:-}" = blocks ]; then
  for i in 1 2 3; do for p in b c; do for spec in "layernorm_tl 2 4096" "rmsnorm_tl 1 1024"; do set -- $spec
    echo "tw43$p $(timeout 60 python3 docs/device/triton_weight_spread.py .device/tw43$p/rsweep-ops --op $1 --weights $2 --cols $3 2>&1 | grep -v Warn | tail -1)"
  done; done; done
  for p in b c; do timeout 150 python3 docs/device/triton_weight_programs.py .device/tw43$p/rsweep-ops --ops $TUNED,wrms_tl,r04_tl,r07_tl,r09_tl --cols 1024,4096 --rounds 1 2>&1 | grep -v Warn | grep "as is" | sed "s/^/tw43$p /"; done
fi
