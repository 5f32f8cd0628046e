#!/usr/bin/env bash
# Stop 37, second GPU call: build myteam-ops; the weight-gradient tile experiment (docs/device/weight_tile.py);
# the rbw37 tests that ran out of GPU memory beside 7 other suites, alone; memcheck over the Triton backward kernels.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs37b; mkdir -p "$FINAL_OUT" "$LOGS"
export OUT=$LOGS PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 CXX=/usr/bin/g++ CC=/usr/bin/gcc
python3 - <<'PYEOF' > "$LOGS/build.log" 2>&1
import sys
sys.path.insert(0, "docs/device")
import error_model as em
em.OUT.mkdir(parents=True, exist_ok=True)
for root, text in em.build([em.REPO / "examples/myteam-ops"], cutlass=False, cores=16).items():
    print(f"  build {root.relative_to(em.REPO)}: {text}")
PYEOF
grep "build " "$LOGS/build.log"
timeout 200 python3 docs/device/weight_tile.py examples/myteam-ops --op layernorm_tl 2>&1 | grep -v Warning | tee "$LOGS/weight_tile.txt"
(cd .device/rbw37/rsweep-ops && timeout 150 python3 -m pytest -q -rfE -p no:cacheprovider \
  "tests/test_softmax_tl.py::TestSoftmaxTl::test_backward_op_bitwise_deterministic" \
  "tests/test_r01_tl.py::TestR01Tl::test_backward_op_bitwise_deterministic" \
  "tests/test_r04_tl.py::TestR04Tl::test_backward_op_weight_gradients_over_many_rows" > "$LOGS/test_rerun.log" 2>&1; echo "rerun: $(tail -1 "$LOGS/test_rerun.log")")
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 python3 docs/device/sanitize_backward.py examples/myteam-ops \
  --ops softmax_tl,layernorm_tl,gelu_tl,muladd_tl --dtypes float32,bfloat16 > "$LOGS/sanitize_memcheck.log" 2>&1
echo "memcheck: rc=$? $(grep -c 'backward calls done' "$LOGS/sanitize_memcheck.log") ops; $(grep -E 'ERROR SUMMARY' "$LOGS/sanitize_memcheck.log" | tail -1)"
tar -czf "$FINAL_OUT/logs.tar.gz" -C "$LOGS" .
