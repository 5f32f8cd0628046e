#!/usr/bin/env bash
# GPU evidence in few device calls, from the repository root on the device machine:
#   bash docs/device/verify.sh tests   # build every op, full test suites, matmul sanitizers, doctor
#   bash docs/device/verify.sh check   # memcheck of the elementwise ops (builds what is missing)
#   bash docs/device/verify.sh bench   # benchmarks: tables, JSON and PNG per op
# Logs go to $OUT/logs.tar.gz (the device tool brings back at most 8 files); tables and plots to $OUT.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs; mkdir -p "$FINAL_OUT" "$LOGS"
export OUT=$LOGS PYTHONUNBUFFERED=1
ew() { bash docs/device/elementwise.sh "$@"; }
built() { ls "$1"/*/_C*.so > /dev/null 2>&1; }
case "$1" in
  tests)
    python3 -m kernelgen doctor --op examples/matmul > "$LOGS/doctor.txt" 2>&1; echo "doctor rc=$?"
    ew build
    ew test
    SKIP_BENCH=1 bash docs/device/matmul.sh ;;
  check)
    for op in examples/muladd .device/ops/*; do built "$op" || OPS="$op" ew build; done
    ew memcheck ;;
  bench)
    for op in examples/muladd .device/ops/*; do built "$op" || OPS="$op" ew build; done
    built examples/matmul || (cd examples/matmul && KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=16 python3 setup.py build_ext --inplace > "$LOGS/mm_build.log" 2>&1)
    ew bench "${@:2}"
    cp "$LOGS"/bench_*.txt "$LOGS"/bench_muladd.png "$LOGS"/bench_gelu.png "$FINAL_OUT"/ 2>/dev/null
    (cd examples/matmul && timeout 240 python3 benchmarks/bench_matmul.py --no-compile --sizes 1024,4096 2>/dev/null | tee "$LOGS/mm_bench.txt") ;;
esac
tar -czf "$FINAL_OUT/logs.tar.gz" -C "$LOGS" .
