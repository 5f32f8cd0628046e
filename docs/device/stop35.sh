#!/usr/bin/env bash
# Stop 35's GPU evidence (issues 25, 27, 29), from the repository root on the device machine, one call per
# phase while the machine stays warm. Carry .whl (the nvidia-cutlass wheel), .device/errmodel (made by
# `python docs/device/error_model.py prepare --rsweep-count 20`), .device/v11 (docs/device/v11_speed.sh)
# and .device/bw34 (`python docs/device/sweep.py generate .device/bw34 --seed 34 --count 26 --name bw-ops --only e14,...,e25`: the 12 random expressions).
#   bash docs/device/stop35.sh one     # build everything; the examples' CUDA tests (the generated backward
#                                      # included); every CUDA and Triton mutant
#   bash docs/device/stop35.sh speed   # version 10 against 11 (v11_speed.sh); the generated backward's
#                                      # forward+backward benchmark on examples/myteam-ops
#   bash docs/device/stop35.sh sweeps  # both sweeps' CUDA tests with seeds 0, 1 and 2
#   bash docs/device/stop35.sh double  # both sweeps and the examples with every formula in double; the
#                                      # examples with seeds 1 and 2; the seed-34 backward benchmark
#   bash docs/device/stop35.sh seeds-a # after the tie fix: the sweep's failed suites, its seeds 1 and 2
#   bash docs/device/stop35.sh seeds-b # the rowwise sweep's seeds 1 and 2
# GPU tests only (-k 'not cpu'): CI runs the CPU halves. Builds are kept in /tmp between calls (a call's
# carry replaces .device with the dev machine's unbuilt copy). Logs: $OUT/logs.tar.gz.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs35; mkdir -p "$FINAL_OUT" "$LOGS"
export OUT=$LOGS PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 CXX=/usr/bin/g++ CC=/usr/bin/gcc
if ls .whl/nvidia_cutlass-*.whl > /dev/null 2>&1 && [ ! -d /tmp/cutlass ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
fi
export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
EM="python3 docs/device/error_model.py"
GPU_TESTS="-m 'not large' -k 'not cpu'"
start=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - start) )); }
restore() {
  for d in errmodel bw34; do
    if [ -d /tmp/kg_built35/$d ]; then rm -rf .device/$d && cp -a /tmp/kg_built35/$d .device/$d && echo "restored .device/$d"; fi
  done
}
keep() { mkdir -p /tmp/kg_built35 && for d in errmodel bw34; do rm -rf /tmp/kg_built35/$d; cp -a .device/$d /tmp/kg_built35/$d; done; }

build_paths() {  # cores path... : build these package roots, cores shared
  python3 - "$@" <<'PYEOF'
import sys
from pathlib import Path
sys.path.insert(0, "docs/device")
import error_model as em
em.OUT.mkdir(parents=True, exist_ok=True)
for root, text in em.build([em.REPO / p for p in sys.argv[2:]], cutlass=False, cores=int(sys.argv[1])).items():
    print(f"  build {root.relative_to(em.REPO)}: {text}")
PYEOF
}
mutant_roots() { python3 -c "import json; print(' '.join(m['root'] for m in json.load(open('.device/errmodel/mutants/manifest.json'))))"; }

case "${1:-}" in
  one)
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
    (build_paths 10 .device/errmodel/sweep/sweep-ops .device/bw34/bw-ops $(mutant_roots) > "$LOGS/build_one.log" 2>&1
     echo "sweep, bw34 and mutant builds: $(grep -c ': built' "$LOGS/build_one.log") built, $(grep -c 'FAILED' "$LOGS/build_one.log") failed") &
    eval $EM run examples --cutlass --repeat 1 --jobs 6 --time-limit 300 --pytest "\"$GPU_TESTS\"" | tee "$LOGS/examples_seed0.log" | grep -E "^(TOTAL|BUILD|==)|rc=[^0]|first:"
    wait
    keep
    $EM run mutants --jobs 10 --time-limit $(( $(left 570) - 30 )) | tee "$LOGS/mutants.log" | sed -n '/== mutants/,$p;/TOTAL/p' ;;
  speed)
    restore
    LIMIT=${V11_LIMIT:-400} ROUNDS=2 bash docs/device/v11_speed.sh
    cp "$LOGS"/v11_speed.json "$LOGS"/v11_speed.txt "$FINAL_OUT"
    timeout $(( $(left 575) )) python3 docs/device/backward_bench.py examples/myteam-ops --rounds 2 --json "$LOGS/backward_bench_examples.json" \
      2>&1 | tee "$LOGS/backward_bench_examples.txt" | grep -v Warning ;;
  sweeps)
    restore
    (build_paths 6 .device/errmodel/rsweep/rsweep-ops > "$LOGS/build_rsweep.log" 2>&1) &
    eval $EM run sweep --repeat 3 --jobs 12 --time-limit 230 --pytest "\"$GPU_TESTS\"" | tee "$LOGS/sweep.log" | grep -E "^(TOTAL|BUILD)|first:"
    wait
    keep
    eval $EM run rsweep --repeat 3 --jobs 12 --time-limit $(( $(left 570) - 60 )) --pytest "\"$GPU_TESTS\"" | tee "$LOGS/rsweep.log" | grep -E "^(TOTAL|BUILD)|first:" ;;
  double)
    restore
    (build_paths 16 .device/errmodel/sweep_double/sweep-ops .device/errmodel/rsweep_double/rsweep-ops > "$LOGS/build_double.log" 2>&1)
    eval $EM run sweep-double --jobs 12 --time-limit 150 --pytest "\"$GPU_TESTS\"" | tee "$LOGS/sweep_double.log" | grep -E "^(TOTAL|BUILD)|first:"
    eval $EM run rsweep-double --jobs 12 --time-limit $(( $(left 330) )) --pytest "\"$GPU_TESTS\"" | tee "$LOGS/rsweep_double.log" | grep -E "^(TOTAL|BUILD)|first:"
    timeout $(( $(left 575) )) python3 docs/device/backward_bench.py .device/bw34/bw-ops --rounds 2 --dtypes float32,bfloat16 \
      --json "$LOGS/backward_bench_bw34.json" 2>&1 | tee "$LOGS/backward_bench_bw34.txt" | grep -v Warning ;;
  seeds-a)
    # After the tie fix (ErrorModel.tie_step_error): the two sweep suites that failed, then the sweep's
    # seeds 1 and 2; the rowwise sweep built meanwhile.
    restore
    (build_paths 6 .device/errmodel/rsweep/rsweep-ops .device/errmodel/sweep_double/sweep-ops > "$LOGS/build_rsweep.log" 2>&1) &
    eval $EM run sweep --only test_e20,test_e22 --jobs 2 --pytest "\"$GPU_TESTS\"" | tee "$LOGS/sweep_ties.log" | grep -E "^(TOTAL|BUILD)|first:"
    cp "$LOGS/summary_sweep.json" "$LOGS/summary_sweep_ties.json"
    eval $EM run sweep --first-seed 1 --repeat 2 --jobs 16 --time-limit $(( $(left 560) - 60 )) --pytest "\"$GPU_TESTS\"" | tee "$LOGS/sweep_seeds12.log" | grep -E "^(TOTAL|BUILD)|first:"
    wait
    keep ;;
  seeds-b)
    restore
    eval $EM run sweep-double --only test_e20,test_e22 --jobs 2 --pytest "\"$GPU_TESTS\"" | tee "$LOGS/sweep_double_ties.log" | grep -E "^(TOTAL|BUILD)|first:"
    eval $EM run rsweep --first-seed 1 --repeat 2 --jobs 16 --time-limit $(( $(left 560) - 60 )) --pytest "\"$GPU_TESTS\"" | tee "$LOGS/rsweep_seeds12.log" | grep -E "^(TOTAL|BUILD)|first:" ;;
  *) echo "usage: bash docs/device/stop35.sh one|speed|sweeps|double|seeds-a|seeds-b"; exit 2 ;;
esac
tar -czf "$FINAL_OUT/logs.tar.gz" -C "$LOGS" .
echo "phase $1 done in $(( $(date +%s) - start )) s"
