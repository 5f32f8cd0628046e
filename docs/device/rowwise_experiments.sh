#!/usr/bin/env bash
# One device call of the rowwise evidence: the Triton rowwise benchmarks, the sanitizers, and an experiment
# (the register kernel with __launch_bounds__(512, 1) on LayerNorm float32; it was slower, see docs/archive/benchmarks-history.md).
OPS="myteam-ops:softmax_tl myteam-ops:layernorm_tl" timeout 200 bash docs/device/rowwise.sh bench float32,bfloat16 67108864 2>&1 | grep -v "^build\|^NVIDIA\|^torch"
timeout 300 bash docs/device/rowwise.sh check 2>&1 | grep -v "^NVIDIA\|^torch"
# Experiment: the register kernel with __launch_bounds__(512, 1) (up to 128 registers) on LayerNorm float32.
rm -rf /tmp/lb && cp -r examples/myteam-ops /tmp/lb && rm -rf /tmp/lb/build /tmp/lb/myteam_ops/_C*.so
sed -i 's/__launch_bounds__(kMaxThreads, 2)/__launch_bounds__(kMaxThreads, 1)/' /tmp/lb/myteam_ops/csrc/layernorm/cuda/layernorm_kernel.cu
(cd /tmp/lb && CXX=/usr/bin/g++ CC=/usr/bin/gcc python3 setup.py build_ext --inplace > /tmp/lb.log 2>&1; echo "variant build rc=$?"; python3 benchmarks/bench_layernorm.py --dtypes float32 --sizes 67108864 --no-compile 2>/dev/null | tail -5)
