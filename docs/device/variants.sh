#!/usr/bin/env bash
# Tuning experiment for the elementwise kernel (docs/benchmarks.md): builds copies of generated ops
# with other kUnroll / kMaxWaves values and benchmarks each.
#   VARIANTS="unroll:waves ..."  OPS="examples/muladd .device/ops/gelu"  SIZES=...  DTYPES=...
set -uo pipefail
export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=4
VARIANTS=${VARIANTS:-"1:4 4:4"}
OPS=${OPS:-examples/muladd}
for op in $OPS; do
  name=$(basename $op)
  for v in $VARIANTS; do
    u=${v%%:*}; w=${v##*:}; d=/tmp/var_${name}_u${u}_w${w}; rm -rf $d; cp -r $op $d
    sed -i "s/constexpr int kUnroll = [0-9]*;/constexpr int kUnroll = $u;/; s/constexpr int kMaxWaves = [0-9]*;/constexpr int kMaxWaves = $w;/" $d/$name/csrc/cuda/${name}_cuda.cu
    (cd $d && python3 setup.py build_ext --inplace > build.log 2>&1 || echo "build $name $v failed") &
  done
done
wait
for op in $OPS; do
  name=$(basename $op)
  for v in $VARIANTS; do
    u=${v%%:*}; w=${v##*:}
    echo "== $name kUnroll=$u kMaxWaves=$w"
    (cd /tmp/var_${name}_u${u}_w${w} && python3 benchmarks/bench_$name.py ${NO_COMPILE:+--no-compile} --sizes ${SIZES:-16777216,268435456} --dtypes ${DTYPES:-float32,float16,bfloat16} 2>/dev/null | tail -n +2)
  done
done
