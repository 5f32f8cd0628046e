#!/usr/bin/env bash
# GPU evidence for examples/matmul, run on the device machine from the repository root:
#   bash docs/device/matmul.sh
# Builds (with ptxas resource reports), runs the full test suite, compute-sanitizer memcheck and
# racecheck on a small CUDA subset, and the benchmark against cuBLAS.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=16
cd examples/matmul
start=$(date +%s)
python3 setup.py build_ext --inplace > "$OUT/mm_build.log" 2>&1 || { echo "build failed"; tail -30 "$OUT/mm_build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
# Registers / shared memory / spills per kernel, for sm_90 (no GPU needed for this part).
nvcc -std=c++20 -O3 -arch=sm_90 -Xptxas -v -c matmul/csrc/cuda/matmul_kernel.cu -o /tmp/mm.o \
  $(python3 -c "from torch.utils.cpp_extension import include_paths; print(' '.join('-I'+p for p in include_paths('cuda')))") \
  -I"$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
  -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ -D__CUDA_NO_BFLOAT16_CONVERSIONS__ --expt-relaxed-constexpr \
  2>&1 | grep -E "Compiling entry|Used|spill" | sed 's/ptxas info    : //' > "$OUT/mm_ptxas.txt"
c++filt < "$OUT/mm_ptxas.txt" | grep -A2 "Compiling entry" | grep -E "entry|Used" | sed -E 's/.*(simt_kernel|tensor_core_kernel)<([^>]*)>.*/\1<\2>/' | paste - - | cut -c1-200
python3 -m pytest -q -rs -p no:cacheprovider > "$OUT/mm_test.log" 2>&1; echo "tests rc=$?: $(tail -1 "$OUT/mm_test.log")"
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
    -k "cuda and (17x33x65 or 130x72x136 or batched or misaligned or empty) and not compile" > "$OUT/mm_$tool.log" 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed' "$OUT/mm_$tool.log" | tr '\n' ' ')"
done
[ -n "${SKIP_BENCH:-}" ] || timeout 400 python3 benchmarks/bench_matmul.py --no-compile ${MM_SIZES:+--sizes $MM_SIZES} --json "$OUT/mm_bench.json" --plot "$OUT/mm_bench.png" 2>/dev/null | tee "$OUT/mm_bench.txt"
