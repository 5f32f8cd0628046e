#!/usr/bin/env bash
# Stop 37, third GPU call: the eager training path of Triton ops (an autograd.Function launching the kernels
# directly). Build myteam-ops; the GPU tests of its Triton ops; the host time of forward+backward
# (docs/device/triton_backward_host.py on .device/tl37); forward+backward against torch.compile for the
# examples' Triton ops beside their CUDA C++ twins, then for rbw37 and ew37 ops.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs37c; mkdir -p "$FINAL_OUT" "$LOGS"
export OUT=$LOGS PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 CXX=/usr/bin/g++ CC=/usr/bin/gcc
start=$(date +%s); left() { echo $(( $1 - ($(date +%s) - start) )); }
python3 - <<'PYEOF' > "$LOGS/build.log" 2>&1
import sys
sys.path.insert(0, "docs/device")
import error_model as em
em.OUT.mkdir(parents=True, exist_ok=True)
for root, text in em.build([em.REPO / "examples/myteam-ops"], cutlass=False, cores=16).items():
    print(f"  build {root.relative_to(em.REPO)}: {text}")
PYEOF
grep "build " "$LOGS/build.log"
(cd examples/myteam-ops && for t in gelu_tl muladd_tl softmax_tl layernorm_tl; do echo tests/test_$t.py; done | timeout 200 xargs -P 4 -I{} sh -c \
  'python3 -m pytest -q -p no:cacheprovider {} -m "not large" -k "not cpu" > '"$LOGS"'/test_$(basename {} .py).log 2>&1; echo "{}: $(tail -1 '"$LOGS"'/test_$(basename {} .py).log)"')
timeout 100 python3 docs/device/triton_backward_host.py .device/tl37 --ops gelu_tl,layernorm_tl,softmax_tl --weights 0,2,0 > "$LOGS/host.txt" 2>&1; grep " us$" "$LOGS/host.txt"
timeout $(left 400) python3 docs/device/backward_bench.py examples/myteam-ops --ops gelu_tl,gelu,muladd_tl,muladd,softmax_tl,softmax,layernorm_tl,layernorm \
  --dtypes float32,bfloat16 --rounds 2 --json "$LOGS/bench_examples.json" 2>&1 | grep -v Warning | tee "$LOGS/bench_examples.txt"
timeout $(left 590) python3 docs/device/backward_bench.py .device/rbw37/rsweep-ops --ops ${BENCH_OPS:-resrms_tl,csilu_tl,xbyy_tl,wsoftmax_tl,r02_tl,r04_tl} \
  --dtypes float32,bfloat16 --cols 1024,16384 --rounds 2 --json "$LOGS/bench_rbw37.json" 2>&1 | grep -v Warning | tee "$LOGS/bench_rbw37.txt"
tar -czf "$FINAL_OUT/logs.tar.gz" -C "$LOGS" .
