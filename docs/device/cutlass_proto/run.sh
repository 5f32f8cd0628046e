#!/usr/bin/env bash
# Issue-11 prototype on the GPU machine (carry .device/cutlass, which holds the nvidia-cutlass wheel:
# pip download nvidia-cutlass --no-deps -d .device/cutlass on the dev machine).
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"
export CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc} MAX_JOBS=16 PYTHONUNBUFFERED=1   # docs/design.md, trap 23
WHEEL=$(ls "$PWD"/.device/cutlass/nvidia_cutlass-*.whl | head -1)
rm -rf /tmp/cutlass && mkdir -p /tmp/cutlass && (cd /tmp/cutlass && python3 -m zipfile -e "$WHEEL" .)
python3 docs/device/cutlass_proto/bench.py /tmp/cutlass/cutlass_library/source 2>&1 | tee "$FINAL_OUT/cutlass_proto.log" | grep -v "^\s*$" | tail -40
