#!/usr/bin/env bash
# GPU evidence for the elementwise kind, run on the device machine from the repository root:
#   bash docs/device/elementwise.sh build|test|memcheck|bench|all   (OPS="dir ..." to choose ops)
# The ops other than examples/muladd are generated on the dev machine (copier is not installed on
# the device) into .device/ops and carried along:
#   kernelgen new gelu  --inputs x       --expr "x * sigmoid(1.702 * x)"   --defaults -o .device/ops
#   kernelgen new quad4 --inputs a,b,c,d --expr "a * b + c * d"           --defaults -o .device/ops
#   kernelgen new silu_mul --inputs x,y  --expr "x * sigmoid(x) * y"      --defaults -o .device/ops
#   kernelgen new erf_gelu --inputs x --expr "0.5 * x * (1 + erf(x * 0.7071067811865476))" --defaults -o .device/ops
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
OPS=${OPS:-"examples/muladd .device/ops/gelu .device/ops/quad4 .device/ops/silu_mul .device/ops/erf_gelu"}
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=16

build() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name())"
  for op in $OPS; do
    ( cd "$op" && start=$(date +%s.%N) && python3 setup.py build_ext --inplace > "$OUT/build_$(basename $op).log" 2>&1; rc=$?
      echo "build $op rc=$rc in $(python3 -c "print(round($(date +%s.%N)-$start,1))") s" ) &
  done
  wait
  grep -il "warning" "$OUT"/build_*.log && echo "(warnings above)" || echo "no compiler warnings"
}

tests() {
  for op in $OPS; do
    name=$(basename "$op")
    ( cd "$op" && python3 -m pytest -q -rs -p no:cacheprovider > "$OUT/test_$name.log" 2>&1; echo "tests $name rc=$?: $(tail -1 "$OUT/test_$name.log")" )
  done
}

memcheck() {
  # The CUDA subset of each suite, then the 2^26 + 5 element test (float32, aligned and offset by
  # one element): the several-packs-per-thread path only runs on large tensors.
  for op in $OPS; do
    name=$(basename "$op")
    ( cd "$op"
      compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -x -p no:cacheprovider \
        -k "cuda and not large and not compile and not opcheck and not gradcheck" > "$OUT/memcheck_$name.log" 2>&1
      echo "memcheck $name rc=$?: $(grep -E 'ERROR SUMMARY|passed|failed' "$OUT/memcheck_$name.log" | tr '\n' ' ')"
      compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
        -k "many_times and float32" > "$OUT/memcheck_big_$name.log" 2>&1
      echo "memcheck (2^26+5) $name rc=$?: $(grep -E 'ERROR SUMMARY|passed|failed' "$OUT/memcheck_big_$name.log" | tr '\n' ' ')" )
  done
}

bench() {
  for op in $OPS; do
    name=$(basename "$op")
    ( cd "$op" && python3 benchmarks/bench_$name.py --json "$OUT/bench_$name.json" --plot "$OUT/bench_$name.png" "$@" > "$OUT/bench_$name.txt" 2>"$OUT/bench_$name.err"; echo "bench $name rc=$?"; cat "$OUT/bench_$name.txt" )
  done
}

case "${1:-all}" in
  build) build ;;
  test) tests ;;
  memcheck) memcheck ;;
  bench) shift; bench "$@" ;;
  all) build; tests; memcheck ;;
esac
