#!/usr/bin/env bash
# Tuning experiment for the elementwise kernel (docs/benchmarks.md): builds copies of
# examples/muladd with other kUnroll / kMaxWaves values and benchmarks each at 2^28 elements.
set -uo pipefail
OUT=${OUT:-/tmp/out}; export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=4
VARIANTS=${VARIANTS:-"1:1 2:1 4:1 4:4 8:1"}
for v in $VARIANTS; do
  u=${v%%:*}; w=${v##*:}; d=/tmp/var_u${u}_w${w}; rm -rf $d; cp -r examples/muladd $d
  sed -i "s/constexpr int kUnroll = [0-9]*;/constexpr int kUnroll = $u;/; s/constexpr int kMaxWaves = [0-9]*;/constexpr int kMaxWaves = $w;/" $d/muladd/csrc/cuda/muladd_cuda.cu
  (cd $d && python3 setup.py build_ext --inplace > build.log 2>&1 || echo "build $v failed") &
done
wait
for v in $VARIANTS; do
  u=${v%%:*}; w=${v##*:}; d=/tmp/var_u${u}_w${w}
  echo "== kUnroll=$u kMaxWaves=$w"
  (cd $d && python3 benchmarks/bench_muladd.py --no-compile --sizes ${SIZES:-65536,16777216,268435456} --dtypes ${DTYPES:-float32,bfloat16} 2>/dev/null | tail -n +2)
done
