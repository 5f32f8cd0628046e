#!/usr/bin/env bash
# Stop 41's GPU evidence, from the repository root on the device machine; each phase is one call.
# Issue 29: where float16/bfloat16 matmuls apply a heavy epilogue (fused into the product, or a pass of its
# own after cuBLAS's product: kernelgen.cost.heavy_epilogue). The packages are generated and built on the dev
# machine (nvcc 13.0, sm_90/sm_90a, the stable ABI: the binaries load on the device's torch 2.11) and carried:
#   for path in fused library; do
#     python docs/device/matmul_epilogue_sweep.py .device/mmab/${path}40 --seed 40 --count 8 --named \
#         --name mm40_$path --dtypes bfloat16 --path $path          # seed 40's draws and five common epilogues
#     python docs/device/matmul_epilogue_sweep.py .device/mmab/${path}41 --seed 41 --count 10 \
#         --name mm41_$path --dtypes bfloat16 --path $path          # fresh draws, to check the rule
#   done
#   (cd <each package> && TORCH_CUDA_ARCH_LIST=9.0 NVCC_APPEND_FLAGS="-Xptxas -v" python setup.py build_ext --inplace > build.log 2>&1)
#
#   Builds of the library package with other backward-kernel constants (copies of .device/mmab/library40 with
#   gemm.cuh edited: bwd_r1, bwd_r2: kRowsPerStep 1 and 2; bwd_lb3: __launch_bounds__(kThreads, 3)) in .device/mmab/bw_*.
#
#   SET=40 bash docs/device/stop41.sh paths   # both paths of every op, against torch.compile (then SET=41)
#   bash docs/device/stop41.sh bwd            # the epilogue's backward kernel alone, in each build
#   PKGS=... bash docs/device/stop41.sh tests # the GPU suites of the ops of PKGS
# Logs land in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs41; mkdir -p "$OUT" "$LOGS"; export OUT LOGS
export PYTHONUNBUFFERED=1
case "${1:-}" in
  paths)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    S=${SET:-40}
    timeout "${LIMIT:-560}" python3 docs/device/matmul_paths_bench.py .device/mmab/fused$S/mm${S}_fused \
      .device/mmab/library$S/mm${S}_library --dtypes bfloat16 --shapes ${SHAPES:-4096x4096x4096,8192x1024x8192} \
      --compile bfloat16 --rounds 2 ${OPS:+--ops $OPS} --json "$OUT/paths$S.json" 2>&1 | grep -v Warning | tee "$OUT/paths$S.txt" ;;
  bwd)
    for build in library40/mm40_library ${BUILDS:-bw_r1/mm40_library bw_r2/mm40_library bw_lb3/mm40_library}; do
      [ -d .device/mmab/$build ] || continue
      timeout 120 python3 docs/device/matmul_bwd_kernel_bench.py .device/mmab/$build --label "$(dirname $build)" \
        --json "$OUT/bwd_$(dirname $build).json" 2>&1 | grep -v Warning | tee -a "$OUT/bwd.txt"
    done ;;
  tests)
    for pkg in ${PKGS:-.device/mmab/library40/mm40_library}; do
      for f in $pkg/tests/test_*.py; do echo "$pkg $(basename "$f")"; done
    done | xargs -P "${JOBS:-4}" -L 1 bash -c 'cd "$0" && timeout ${TEST_LIMIT:-400} python3 -m pytest -q -rfE -p no:cacheprovider \
        "tests/$1" -k "${K:-not cpu and not large}" > "$LOGS/test_$(basename "$0")_${1%.py}.log" 2>&1; \
        echo "$(basename "$0") $1: $(tail -1 "$LOGS/test_$(basename "$0")_${1%.py}.log")"' | sort | tee "$OUT/tests_summary.txt"
    grep -h -B2 -A30 "^FAILED\|^ERROR\|Error" $LOGS/test_*.log | head -300 > "$OUT/tests_failures.txt" ;;
  *) echo "usage: bash docs/device/stop41.sh paths|bwd|tests" >&2; exit 2 ;;
esac
