#!/usr/bin/env bash
# Final GPU evidence in one call: elementwise (muladd, gelu, quad4) build + full tests + memcheck,
# matmul build + full tests + memcheck/racecheck, kernelgen doctor on the GPU machine.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m kernelgen doctor --op examples/matmul 2>&1 | tee "$OUT/doctor.txt"
bash docs/device/elementwise.sh all 2>&1 | grep -v "^name\|^NVIDIA"
SKIP_BENCH=1 bash docs/device/matmul.sh 2>&1 | grep -E "build|tests|memcheck|racecheck"
