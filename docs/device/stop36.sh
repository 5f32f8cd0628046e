#!/usr/bin/env bash
# Stop 36's GPU evidence (issue 29: the rowwise generated backward), from the repository root on the
# device machine, one call per phase while the machine stays warm. Carry .device/rbw36 (made by
# `python docs/device/rowwise_sweep.py generate .device/rbw36 --seed 36 --count 24 --backends cuda`: the
# 15 fixed rowwise expressions and 9 drawn from the grammar with seed 36) and .device/rw36 (7 rowwise ops
# written for the backward: softmax, layernorm, residual RMSNorm, a sum of a row constant, max/min
# masks, a weight inside two reductions, the centred SiLU).
#   bash docs/device/stop36.sh tests   # build; every CUDA test of the rowwise examples (rmsnorm, and
#                                      # myteam-ops' softmax, log_softmax, layernorm); the backward, gradcheck
#                                      # and torch.compile tests of rw36 and rbw36
#   bash docs/device/stop36.sh bench   # forward+backward against torch.compile, the vjp stub and eager
#   bash docs/device/stop36.sh sanitize  # compute-sanitizer memcheck and racecheck over the backward kernels;
#                                      # the >2**31-element backward tests; the training loop
# GPU tests only (-k 'not cpu'): CI runs the CPU halves. Builds are kept in /tmp between calls.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs36; mkdir -p "$FINAL_OUT" "$LOGS"
export OUT=$LOGS PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 CXX=/usr/bin/g++ CC=/usr/bin/gcc
start=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - start) )); }
PKGS="examples/rmsnorm examples/myteam-ops .device/rw36/softmax .device/rbw36/rsweep-ops"
restore() {
  for p in $PKGS; do
    k=/tmp/kg_built36/$(echo $p | tr / _)
    if [ -d $k ]; then rm -rf $p && cp -a $k $p; fi
  done
}
keep() { mkdir -p /tmp/kg_built36 && for p in $PKGS; do k=/tmp/kg_built36/$(echo $p | tr / _); rm -rf $k; cp -a $p $k; done; }
suite() {  # root test-file-or-dir label extra-k
  local root=$1 what=$2 label=$3 k=$4
  (cd $root && timeout $(( $(left 560) )) python3 -m pytest -q -rfE -p no:cacheprovider $what -m 'not large' -k "$k" \
     > "$LOGS/test_$label.log" 2>&1; echo "$label: $(tail -1 "$LOGS/test_$label.log")")
}
export -f suite left; export start LOGS

case "${1:-}" in
  tests)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 - <<'PYEOF' > "$LOGS/build.log" 2>&1
import sys
from pathlib import Path
sys.path.insert(0, "docs/device")
import error_model as em
em.OUT.mkdir(parents=True, exist_ok=True)
roots = [em.REPO / p for p in ("examples/rmsnorm", "examples/myteam-ops", ".device/rw36/softmax", ".device/rbw36/rsweep-ops")]
for root, text in em.build(roots, cutlass=False, cores=16).items():
    print(f"  build {root.relative_to(em.REPO)}: {text}")
PYEOF
    grep "build " "$LOGS/build.log"; echo "built at $(( $(date +%s) - start )) s"
    keep
    {
      echo "examples/rmsnorm tests ex_rmsnorm not cpu"
      for t in softmax log_softmax layernorm; do echo "examples/myteam-ops tests/test_$t.py ex_$t not cpu"; done
      for f in .device/rw36/softmax/tests/test_*.py; do t=$(basename $f .py); echo ".device/rw36/softmax tests/$t.py rw36_$t (backward or gradcheck or compile) and not cpu"; done
      for f in .device/rbw36/rsweep-ops/tests/test_*.py; do t=$(basename $f .py); echo ".device/rbw36/rsweep-ops tests/$t.py rbw36_$t (backward or gradcheck or compile) and not cpu"; done
    } | xargs -P ${JOBS:-6} -L 1 bash -c 'suite "$0" "$1" "$2" "${*:3}"' | sort > "$LOGS/tests_summary.txt"
    cat "$LOGS/tests_summary.txt" ;;
  bench)
    restore
    timeout $(( $(left 290) )) python3 docs/device/backward_bench.py examples/myteam-ops --ops softmax,log_softmax,layernorm \
      --rounds 2 --json "$LOGS/bench_examples.json" 2>&1 | grep -v Warning | tee "$LOGS/bench_examples.txt"
    timeout $(( $(left 575) )) python3 docs/device/backward_bench.py examples/rmsnorm --rounds 2 --json "$LOGS/bench_rmsnorm.json" \
      2>&1 | grep -v Warning | tee "$LOGS/bench_rmsnorm.txt" ;;
  bench-sweep)
    restore
    timeout $(( $(left ${BENCH_END:-575}) )) python3 docs/device/backward_bench.py .device/rbw36/rsweep-ops --ops ${BENCH_OPS:-resrms,csilu,wrms,xbyy,wsoftmax,resln,r00,r02,r04,r06,r07} \
      --dtypes float32,bfloat16 --rounds 2 --json "$LOGS/bench_rbw36.json" 2>&1 | grep -v Warning | tee "$LOGS/bench_rbw36.txt" ;;
  sanitize)
    restore
    for tool in memcheck racecheck; do
      ops=${SAN_OPS:-softmax,lnorm,resrms,rowlen,maxsub,winside,csilu}; dt=${SAN_DTYPES:-float32,float16,bfloat16,float64}
      end=${SAN_END:-200}
      [ $tool = racecheck ] && ops=${RACE_OPS:-$ops} && dt=${RACE_DTYPES:-float32,bfloat16} && end=${RACE_END:-300}
      timeout $(( $(left $end) )) compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_backward.py \
        .device/rw36/softmax --ops $ops --dtypes $dt > "$LOGS/sanitize_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep -c 'backward calls done' "$LOGS/sanitize_$tool.log") ops; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/sanitize_$tool.log" | tail -1)"
    done
    (cd .device/rw36/softmax && timeout $(( $(left 420) )) python3 -m pytest -q -rfE -p no:cacheprovider tests/test_lnorm.py tests/test_resrms.py \
      -m large -k backward > "$LOGS/test_large.log" 2>&1; echo "large: $(tail -1 "$LOGS/test_large.log")")
    timeout $(( $(left 575) )) python3 docs/device/train_mlp.py examples/myteam-ops --norm layernorm --json "$LOGS/train_layernorm.json" \
      > "$LOGS/train_layernorm.txt" 2>&1; echo "train layernorm rc=$?"; tail -2 "$LOGS/train_layernorm.txt"
    for dt in float32 bfloat16; do
      timeout $(( $(left 590) )) python3 docs/device/train_mlp.py examples/myteam-ops --norm rmsnorm --norm-package examples/rmsnorm --dtype $dt \
        --json "$LOGS/train_rmsnorm_$dt.json" > "$LOGS/train_rmsnorm_$dt.txt" 2>&1; echo "train rmsnorm $dt rc=$?"; tail -2 "$LOGS/train_rmsnorm_$dt.txt"
    done ;;
  *) echo "usage: bash docs/device/stop36.sh tests|bench|bench-sweep|sanitize"; exit 2 ;;
esac
tar -czf "$FINAL_OUT/logs.tar.gz" -C "$LOGS" .
echo "phase $1 done in $(( $(date +%s) - start )) s"
