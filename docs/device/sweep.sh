#!/usr/bin/env bash
# The elementwise expression sweep (issue 13) on the GPU machine, from the repository root.
# Needs .device/sweep (made on the dev machine, where copier is: python docs/device/sweep.py generate
# .device/sweep --seed 13 --count 40), named in the device call's `carry`.
#   bash docs/device/sweep.sh build                      # sm_90 only, ptxas -v kept for the registers
#   bash docs/device/sweep.sh run TAG [DTYPES] [SIZES]   # prewarm compile caches (3 processes), then time
#   bash docs/device/sweep.sh prewarm|time TAG [DTYPES] [SIZES]   # the two halves of run
# Writes $OUT/sweep_TAG.json (rewritten after every case, so a cut-off run keeps what it measured) and
# $OUT/sweep_TAG.log.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=${MAX_JOBS:-16} TORCH_CUDA_ARCH_LIST=9.0
export CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc}   # docs/design.md, trap 23
PKG=${SWEEP_PKG:-.device/sweep/sweep-ops}
BUILD_LOG=/tmp/sweep_build.log
case "${1:-run}" in
  build)
    t=$(date +%s)
    (cd $PKG && NVCC_APPEND_FLAGS="-Xptxas -v" python3 setup.py build_ext --inplace > $BUILD_LOG 2>&1; echo "sweep build rc=$? in $(( $(date +%s) - t )) s")
    gzip -c $BUILD_LOG > "$FINAL_OUT/sweep_build.log.gz"
    ;;
  prewarm|run)
    TAG=${2:-1}; DTYPES=${3:-float32,float64,float16,bfloat16}; SIZES=${4:-16777216,268435456}
    t=$(date +%s)
    for part in 0/3 1/3 2/3; do
      python3 docs/device/sweep.py prewarm $PKG --dtypes "$DTYPES" --sizes "$SIZES" --part $part > /tmp/prewarm_${part%/*}.log 2>&1 &
    done
    wait
    echo "prewarm in $(( $(date +%s) - t )) s: $(tail -qn1 /tmp/prewarm_*.log | tr '\n' ' ')"
    [ "$1" = prewarm ] && exit 0
    ;&
  time)
    TAG=${2:-1}; DTYPES=${3:-float32,float64,float16,bfloat16}; SIZES=${4:-16777216,268435456}
    t=$(date +%s)
    python3 docs/device/sweep.py run $PKG --sizes "$SIZES" --dtypes "$DTYPES" --json "$FINAL_OUT/sweep_$TAG.json" \
      --build-log $BUILD_LOG --packs "${PACKS:-}" --rounds "${ROUNDS:-3}" > "$FINAL_OUT/sweep_$TAG.log" 2>&1
    echo "sweep run rc=$? in $(( $(date +%s) - t )) s"
    sed -n '/^n=/,$p' "$FINAL_OUT/sweep_$TAG.log"
    ;;
esac
