#!/usr/bin/env bash
# stop 39's last call (carry .device/mm39f: lg, th, lin as in stop39.sh; .whl): the final templates' matmul ops on the GPU, and the norms at Liger-Kernel's published shapes (4096 rows)
set -uo pipefail
export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 CXX=/usr/bin/g++ CC=/usr/bin/gcc MAX_JOBS=16 KERNELGEN_REQUIRE_CUDA=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
start=$(date +%s)
for d in .device/mm39f examples/myteam-ops examples/rmsnorm; do (cd $d && python3 setup.py build_ext --inplace > /tmp/build_$(basename $d).log 2>&1; echo "build $d rc=$? at $(( $(date +%s) - start )) s") & done; wait
for t in lg th lin; do (cd .device/mm39f && timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_$t.py -k 'not cpu' 2>&1 | tail -1 | sed "s/^/$t: /") & done; wait
echo "tests done at $(( $(date +%s) - start )) s"
for cols in 16384 4096 1024; do
  timeout 75 python3 docs/device/backward_bench.py examples/myteam-ops --ops layernorm,layernorm_tl --dtypes float32 \
    --size $((4096 * cols)) --cols $cols --rounds 2 --json $OUT/liger_ln_$cols.json 2>&1 | grep -v -i warn | tail -4
  timeout 45 python3 docs/device/backward_bench.py examples/rmsnorm --ops rmsnorm --dtypes bfloat16 \
    --size $((4096 * cols)) --cols $cols --rounds 2 --json $OUT/liger_rms_$cols.json 2>&1 | grep -v -i warn | tail -2
  echo "cols $cols done at $(( $(date +%s) - start )) s"
done
