#!/usr/bin/env bash
# Tuning experiment for the tensor-core matmul (docs/archive/benchmarks-history.md): copies of examples/matmul
# with other kMinBlocksPerSm values, float16/bfloat16 benchmarks at 2048^3 and 4096^3.
set -uo pipefail
export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=8
for v in ${VARIANTS:-1 2}; do
  d=/tmp/mmvar_$v; rm -rf $d; cp -r examples/matmul $d
  sed -i "s/constexpr int kMinBlocksPerSm = [0-9]*;/constexpr int kMinBlocksPerSm = $v;/" $d/matmul/csrc/cuda/matmul_kernel.cu
  (cd $d && python3 setup.py build_ext --inplace > build.log 2>&1 || echo "build $v failed") &
done
wait
for v in ${VARIANTS:-1 2}; do
  echo "== kMinBlocksPerSm=$v"
  (cd /tmp/mmvar_$v && python3 benchmarks/bench_matmul.py --no-compile --dtypes float16,bfloat16 --sizes ${SIZES:-2048,4096} 2>/dev/null | tail -n +2)
done
