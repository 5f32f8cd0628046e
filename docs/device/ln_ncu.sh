#!/usr/bin/env bash
# Device half of docs/device/ln_ncu.py (carry .device/rwexp): build the lnexp variant named by $1
# (default lnexp_tree), then one ncu report of our register kernel and Triton's LayerNorm kernel at
# 4096 x 16384, float32 and bfloat16 (the second of two launches of each).
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0
export CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc}
V=${1:-lnexp_tree}
(cd .device/rwexp/$V && python3 setup.py build_ext --inplace > "$FINAL_OUT/build.log" 2>&1; echo "build $V rc=$?")
python3 docs/device/ln_ncu.py .device/rwexp/$V
ncu --kernel-name regex:"rows_kernel|ln_kernel" --launch-skip 2 --launch-count 4 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis \
    python3 docs/device/ln_ncu.py .device/rwexp/$V > "$FINAL_OUT/ncu.txt" 2>&1
echo "ncu rc=$?"
grep -E "^  [a-z_]+.*\(|rows_kernel|ln_kernel|Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Stall|Eligible Warps|Issued Warp|L1/TEX Hit|L2 Hit|Waves Per SM|Local" "$FINAL_OUT/ncu.txt" | cut -c1-150 | head -150
