#!/usr/bin/env bash
# GPU evidence for the Triton backend, from the repository root on the device machine:
#   bash docs/device/triton.sh          # build, suites, memcheck, benchmark tables
#   bash docs/device/triton.sh sweep    # block-size sweep and first-call latency (triton_sweep.py)
# Builds examples/myteam-ops (its CUDA ops; the Triton ops need no build), runs the full suites of
# its two Triton ops (gelu_tl: unary with a transcendental; muladd_tl: 3 inputs) and of their CUDA
# twins, memcheck of the Triton suites, the benchmark tables (Triton op vs torch.compile, the CUDA
# twin and the copy roofline), and docs/device/triton_sweep.py.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kgtriton; mkdir -p "$FINAL_OUT" "$LOGS"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=16
if [ "${1:-}" = sweep ]; then
  [ -n "$(ls examples/myteam-ops/myteam_ops/_C*.so 2>/dev/null)" ] || (cd examples/myteam-ops && python3 setup.py build_ext --inplace > "$LOGS/build.log" 2>&1)
  python3 docs/device/triton_sweep.py 2>&1 | tee "$LOGS/sweep.txt"
  tar -czf "$FINAL_OUT/triton_sweep_logs.tar.gz" -C "$LOGS" .
  exit 0
fi
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
(cd examples/myteam-ops && python3 setup.py build_ext --inplace > "$LOGS/build.log" 2>&1; echo "build rc=$?")
for op in gelu_tl muladd_tl gelu muladd; do
  (cd examples/myteam-ops && python3 -m pytest -q -rs -p no:cacheprovider tests/test_$op.py > "$LOGS/test_$op.log" 2>&1; echo "tests $op rc=$?: $(tail -1 "$LOGS/test_$op.log")")
done
for op in gelu_tl muladd_tl; do
  (cd examples/myteam-ops && compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider tests/test_$op.py \
     -k "cuda and not large and not compile and not opcheck and not gradcheck" > "$LOGS/memcheck_$op.log" 2>&1
   echo "memcheck $op rc=$?: $(grep -E 'ERROR SUMMARY|passed|failed' "$LOGS/memcheck_$op.log" | tr '\n' ' ')")
done
for op in gelu_tl muladd_tl; do
  (cd examples/myteam-ops && python3 benchmarks/bench_$op.py --sizes 16777216,67108864,268435456 --json "$LOGS/bench_$op.json" > "$LOGS/bench_$op.txt" 2> "$LOGS/bench_$op.err"; echo "bench $op rc=$?"; cat "$LOGS/bench_$op.txt")
done
tar -czf "$FINAL_OUT/triton_logs.tar.gz" -C "$LOGS" .
