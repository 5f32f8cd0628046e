#!/usr/bin/env bash
# Stop 37's GPU evidence (issue 29: the Triton generated backward), from the repository root on the device
# machine, one call per phase while the machine stays warm. Carry .device/ew37 (made by
# `python docs/device/sweep.py generate .device/ew37 --seed 37 --count 16 --name ewt-ops --backend triton`:
# the elementwise sweep's fixed expressions and ones drawn with seed 37, as Triton ops) and .device/rbw37
# (made by `python docs/device/rowwise_sweep.py generate .device/rbw37 --seed 37 --count 24 --backends triton`:
# the 15 fixed rowwise expressions and 9 drawn with seed 37, as Triton ops).
#   bash docs/device/stop37.sh tests     # build myteam-ops; every CUDA test of its Triton ops; the backward,
#                                        # gradcheck and torch.compile tests of ew37 and rbw37
#   bash docs/device/stop37.sh bench     # forward+backward of the examples' Triton ops and their CUDA C++ twins
#   bash docs/device/stop37.sh bench-sweep  # the same for rbw37 and ew37 ops (BENCH_OPS, BENCH_EW_OPS)
#   bash docs/device/stop37.sh sanitize  # memcheck and racecheck over the Triton backward kernels; the >2**31 tests
# GPU tests only (-k 'not cpu'): CI runs the CPU halves. Builds are kept in /tmp between calls.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs37; mkdir -p "$FINAL_OUT" "$LOGS"
export OUT=$LOGS PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 CXX=/usr/bin/g++ CC=/usr/bin/gcc
start=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - start) )); }
PKGS="examples/myteam-ops"
restore() {
  for p in $PKGS; do
    k=/tmp/kg_built37/$(echo $p | tr / _)
    if [ -d $k ]; then rm -rf $p && cp -a $k $p; fi
  done
}
keep() { mkdir -p /tmp/kg_built37 && for p in $PKGS; do k=/tmp/kg_built37/$(echo $p | tr / _); rm -rf $k; cp -a $p $k; done; }
suite() {  # root test-file-or-dir label extra-k
  local root=$1 what=$2 label=$3 k=$4
  (cd $root && timeout $(( $(left 560) )) python3 -m pytest -q -rfE -p no:cacheprovider $what -m 'not large' -k "$k" \
     > "$LOGS/test_$label.log" 2>&1; echo "$label: $(tail -1 "$LOGS/test_$label.log")")
}
export -f suite left; export start LOGS
EX_OPS=gelu_tl,gelu,muladd_tl,muladd,softmax_tl,softmax,layernorm_tl,layernorm

case "${1:-}" in
  tests)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"
    python3 - <<'PYEOF' > "$LOGS/build.log" 2>&1
import sys
sys.path.insert(0, "docs/device")
import error_model as em
em.OUT.mkdir(parents=True, exist_ok=True)
for root, text in em.build([em.REPO / "examples/myteam-ops"], cutlass=False, cores=16).items():
    print(f"  build {root.relative_to(em.REPO)}: {text}")
PYEOF
    grep "build " "$LOGS/build.log"; echo "built at $(( $(date +%s) - start )) s"
    keep
    {
      for t in ${EX_TESTS:-gelu_tl muladd_tl softmax_tl layernorm_tl}; do echo "examples/myteam-ops tests/test_$t.py ex_$t not cpu"; done
      [ -n "${SKIP_EW:-}" ] || for f in .device/ew37/ewt-ops/tests/test_*.py; do t=$(basename $f .py); echo ".device/ew37/ewt-ops tests/$t.py ew37_$t (backward or gradcheck or compile) and not cpu"; done
      for f in .device/rbw37/rsweep-ops/tests/test_*.py; do t=$(basename $f .py); echo ".device/rbw37/rsweep-ops tests/$t.py rbw37_$t (backward or gradcheck or compile) and not cpu"; done
    } | xargs -P ${JOBS:-6} -L 1 bash -c 'suite "$0" "$1" "$2" "${*:3}"' | sort > "$LOGS/tests_summary.txt"
    cat "$LOGS/tests_summary.txt" ;;
  bench)
    restore
    timeout $(( $(left ${BENCH_END:-575}) )) python3 docs/device/backward_bench.py examples/myteam-ops --ops ${BENCH_OPS:-$EX_OPS} \
      --dtypes ${BENCH_DTYPES:-float32,bfloat16} --rounds 2 --json "$LOGS/bench_examples.json" 2>&1 | grep -v Warning | tee "$LOGS/bench_examples.txt" ;;
  bench-sweep)
    timeout $(( $(left ${BENCH_EW_END:-200}) )) python3 docs/device/backward_bench.py .device/ew37/ewt-ops --ops ${BENCH_EW_OPS:-e03_tl,e05_tl,e08_tl,e10_tl,e14_tl} \
      --dtypes float32,bfloat16 --rounds 2 --json "$LOGS/bench_ew37.json" 2>&1 | grep -v Warning | tee "$LOGS/bench_ew37.txt"
    timeout $(( $(left ${BENCH_END:-575}) )) python3 docs/device/backward_bench.py .device/rbw37/rsweep-ops --ops ${BENCH_OPS:-resrms_tl,csilu_tl,wrms_tl,xbyy_tl,wsoftmax_tl,resln_tl,r00_tl,r02_tl,r04_tl,r06_tl} \
      --dtypes float32,bfloat16 --cols ${BENCH_COLS:-1024,4096,16384} --rounds 2 --json "$LOGS/bench_rbw37.json" 2>&1 | grep -v Warning | tee "$LOGS/bench_rbw37.txt" ;;
  sanitize)
    restore
    for tool in memcheck racecheck; do
      ops=${SAN_OPS:-softmax_tl,layernorm_tl,gelu_tl,muladd_tl}; dt=${SAN_DTYPES:-float32,bfloat16,float64}
      end=${SAN_END:-200}
      [ $tool = racecheck ] && ops=${RACE_OPS:-softmax_tl,layernorm_tl} && dt=${RACE_DTYPES:-float32} && end=${RACE_END:-320}
      timeout $(( $(left $end) )) compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        examples/myteam-ops --ops $ops --dtypes $dt > "$LOGS/sanitize_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep -c 'backward calls done' "$LOGS/sanitize_$tool.log") ops; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/sanitize_$tool.log" | tail -1)"
    done
    (cd examples/myteam-ops && timeout $(( $(left 575) )) python3 -m pytest -q -rfE -p no:cacheprovider tests/test_layernorm_tl.py tests/test_gelu_tl.py \
      -m large -k backward > "$LOGS/test_large.log" 2>&1; echo "large: $(tail -1 "$LOGS/test_large.log")") ;;
  *) echo "usage: bash docs/device/stop37.sh tests|bench|bench-sweep|sanitize"; exit 2 ;;
esac
tar -czf "$FINAL_OUT/logs.tar.gz" -C "$LOGS" .
echo "phase $1 done in $(( $(date +%s) - start )) s"
