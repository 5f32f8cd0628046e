#!/usr/bin/env bash
# The rowwise expression sweep (issue 28) on the GPU machine, from the repository root. Needs
# .device/rsweep, made on the dev machine (copier is not on the GPU machine) and named in the device
# call's `carry`:
#     python docs/device/rowwise_sweep.py generate .device/rsweep --seed 28 --count 40
# Then, on the device:
#   bash docs/device/rowwise_sweep.sh build            # sm_90 only, ptxas -v kept for the registers
#   bash docs/device/rowwise_sweep.sh run TAG          # build if needed, prewarm the compile caches, time
#   bash docs/device/rowwise_sweep.sh prewarm|time TAG # the two halves of run
# The subset comes from the environment (defaults in brackets), passed to rowwise_sweep.py:
#   ONLY=resrms,csilu [all]  LIMIT=N [all]  COLS [1024,4096,16384,65536,262144]
#   DTYPES [float32,float16,bfloat16]  BACKENDS [cuda,triton]  SIZES [67108864]  ROUNDS [3]
#   PARTS [6]: prewarm processes side by side
# run prints the number of timed cells first; about 1 s per cell once the caches are warm, so a subset
# of ~150 cells (e.g. ONLY of 8 expressions, 3 dtypes, 3 row lengths, both backends) fits 8 minutes.
# Everything lands in $OUT: rsweep_build.log.gz, rsweep_TAG.json (rewritten after every cell, so a
# cut-off run keeps what it measured), rsweep_TAG.log, rsweep_prewarm_TAG.log.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=${MAX_JOBS:-16} TORCH_CUDA_ARCH_LIST=9.0
export CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc}   # docs/design.md, trap 23
PKG=$(realpath -m "${RSWEEP_PKG:-.device/rsweep/rsweep-ops}")
# Beside the package (ignored, so it stays on the machine with the build between calls).
BUILD_LOG=$(dirname "$PKG")/rsweep_build.log
SUBSET=(--sizes "${SIZES:-67108864}" --cols "${COLS:-1024,4096,16384,65536,262144}"
        --dtypes "${DTYPES:-float32,float16,bfloat16}" --backends "${BACKENDS:-cuda,triton}")
[ -n "${ONLY:-}" ] && SUBSET+=(--only "$ONLY")
[ -n "${LIMIT:-}" ] && SUBSET+=(--limit "$LIMIT")
if [ ! -d "$PKG" ]; then
  echo "no $PKG: generate it on the dev machine (python docs/device/rowwise_sweep.py generate .device/rsweep) and carry .device/rsweep"
  exit 2
fi

build() {
  local t; t=$(date +%s)
  (cd "$PKG" && NVCC_APPEND_FLAGS="-Xptxas -v" python3 setup.py build_ext --inplace > "$BUILD_LOG" 2>&1
   echo "rsweep build rc=$? in $(( $(date +%s) - t )) s")
  gzip -c "$BUILD_LOG" > "$FINAL_OUT/rsweep_build.log.gz"
  echo "kernels with spills (ptxas): $(grep -c '[1-9][0-9]* bytes spill stores' "$BUILD_LOG")"
}

prewarm() {
  local tag=$1 parts=${PARTS:-6} t; t=$(date +%s)
  for ((i = 0; i < parts; i++)); do
    python3 docs/device/rowwise_sweep.py prewarm "$PKG" "${SUBSET[@]}" --part $i/$parts > /tmp/rsweep_prewarm_$i.log 2>&1 &
  done
  wait
  cat /tmp/rsweep_prewarm_*.log > "$FINAL_OUT/rsweep_prewarm_$tag.log"
  echo "prewarm in $(( $(date +%s) - t )) s: $(grep -h '^prewarmed' /tmp/rsweep_prewarm_*.log | tr '\n' ' ')"
  grep -h -m3 -E "Error|error" /tmp/rsweep_prewarm_*.log | head -5
}

time_it() {
  local tag=$1 t; t=$(date +%s)
  python3 docs/device/rowwise_sweep.py run "$PKG" "${SUBSET[@]}" --rounds "${ROUNDS:-3}" \
    --json "$FINAL_OUT/rsweep_$tag.json" --build-log "$BUILD_LOG" > "$FINAL_OUT/rsweep_$tag.log" 2>&1
  echo "rsweep run rc=$? in $(( $(date +%s) - t )) s"
  head -1 "$FINAL_OUT/rsweep_$tag.log"
  sed -n '/^backend /,$p' "$FINAL_OUT/rsweep_$tag.log"
  grep -m5 -E "Error|Traceback" "$FINAL_OUT/rsweep_$tag.log"
}

case "${1:-run}" in
  build) build ;;
  prewarm) prewarm "${2:-1}" ;;
  time) time_it "${2:-1}" ;;
  run)
    [ -s "$BUILD_LOG" ] && ls "$PKG"/rsweep_ops/_C*.so > /dev/null 2>&1 || build
    prewarm "${2:-1}"
    time_it "${2:-1}"
    ;;
  *) echo "usage: bash docs/device/rowwise_sweep.sh build|run|prewarm|time [TAG]"; exit 2 ;;
esac
