#!/usr/bin/env bash
# Stop 33's GPU evidence for issues 25 and 27 (template version 10: each kind's test suite lives once in
# <package>/testing/), from the repository root on the device machine, one call per phase, while the
# machine stays warm. Carry .whl (the nvidia-cutlass wheel) and .device/errmodel, made on the dev machine
# by `python docs/device/error_model.py prepare --rsweep-count 20`.
#   bash docs/device/stop33.sh one     # build the examples (CUTLASS path included), the 40-op elementwise
#                                      # sweep and the mutant packages; every CUDA and Triton mutant against
#                                      # the new suites; the examples' suites with seed 0
#   bash docs/device/stop33.sh two     # the elementwise sweep's suites with seeds 0, 1, 2; the rowwise sweep
#                                      # built meanwhile
#   bash docs/device/stop33.sh three   # the rowwise sweep's suites with seeds 0, 1, 2; the sweeps with every
#                                      # formula in double built meanwhile
#   bash docs/device/stop33.sh four    # both sweeps' suites with every formula in double
# Builds under .device are kept in /tmp between calls (a call's carry replaces .device with the dev
# machine's unbuilt copy). Logs: $OUT/logs.tar.gz; tables on stdout; summaries as JSON in the tarball.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs33; mkdir -p "$FINAL_OUT" "$LOGS"
export OUT=$LOGS PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 CXX=/usr/bin/g++ CC=/usr/bin/gcc
if ls .whl/nvidia_cutlass-*.whl > /dev/null 2>&1 && [ ! -d /tmp/cutlass ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
fi
export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
EM="python3 docs/device/error_model.py"
start=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - start) )); }

restore() {
  if [ -d /tmp/kg_built33 ]; then rm -rf .device/errmodel && cp -a /tmp/kg_built33 .device/errmodel && echo "restored earlier builds"; fi
}
keep() { rm -rf /tmp/kg_built33 && cp -a .device/errmodel /tmp/kg_built33; }

build_only() {  # what... : build the packages of these run targets, cores shared
  python3 - "$@" <<'PYEOF'
import json, sys
sys.path.insert(0, "docs/device")
import error_model as em
em.OUT.mkdir(parents=True, exist_ok=True)
d = em.DEFAULT_DIR
roots = {"sweep": [d / "sweep" / "sweep-ops"], "rsweep": [d / "rsweep" / "rsweep-ops"],
         "sweep-double": [d / "sweep_double" / "sweep-ops"], "rsweep-double": [d / "rsweep_double" / "rsweep-ops"],
         "mutants": [em.REPO / item["root"] for item in json.loads((d / "mutants" / "manifest.json").read_text())]}
cores = int(sys.argv[1])
chosen = [root for what in sys.argv[2:] for root in roots[what]]
for root, text in em.build(chosen, cutlass=False, cores=cores).items():
    print(f"  build {root.relative_to(em.REPO)}: {text}")
PYEOF
}

case "${1:-}" in
  one)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    (build_only 10 sweep mutants > "$LOGS/build_one.log" 2>&1; echo "sweep and mutant builds: $(grep -c ': built' "$LOGS/build_one.log") built, $(grep -c 'FAILED' "$LOGS/build_one.log") failed") &
    $EM run examples --cutlass --repeat 1 --jobs 5 --time-limit 330 --pytest "-m 'not large'" | tee "$LOGS/examples_seed0.log" | grep -E "^(TOTAL|BUILD|==)|rc=[^0]"
    wait
    keep
    $EM run mutants --jobs 8 --time-limit $(( $(left 560) - 20 )) | tee "$LOGS/mutants.log" | sed -n '/== mutants/,$p;/TOTAL/p' ;;
  two)
    # What `one` left to its time limit (the last Triton rowwise mutants, six example suites), then the
    # elementwise sweep's suites with seed 0; the sweep (and then the rowwise sweep) built meanwhile.
    restore
    (build_only 8 sweep > "$LOGS/build_two.log" 2>&1; build_only 4 rsweep >> "$LOGS/build_two.log" 2>&1
     echo "sweep builds: $(grep -E 'sweep' "$LOGS/build_two.log" | tr '\n' ' ')"; keep) &
    $EM run mutants --only rw_tl-constant,rw_tl-last-element,rw_tl-row-stride,rw_tl-reduce-n-1,rw_tl-weight-row --jobs 5 \
      --time-limit 200 | tee "$LOGS/mutants_rest.log" | grep -E "^rw_tl|TOTAL"
    $EM run examples --only test_muladd,silu_mul,test_softmax --jobs 6 --time-limit 240 --pytest "-m 'not large'" \
      | tee "$LOGS/examples_rest.log" | grep -E "^examples_|^TOTAL"
    $EM run sweep --repeat 1 --jobs 10 --time-limit $(( $(left 560) - 170 )) --pytest "-m 'not large'" | tee "$LOGS/sweep.log" | grep -E "^(TOTAL|BUILD)|first:"
    wait ;;
  three)
    # The sweep suites `two` left to its time limit (e15-e39), then the rowwise sweep's suites with seed 0;
    # both sweeps built first (a fresh machine keeps nothing).
    restore
    (build_only 8 sweep > "$LOGS/build_three.log" 2>&1) & (build_only 8 rsweep >> "$LOGS/build_three_r.log" 2>&1) &
    wait
    keep
    $EM run sweep --only "$(seq -f 'test_e%02g' 15 39 | paste -sd,)" --jobs 10 --time-limit 200 --pytest "-m 'not large'" \
      | tee "$LOGS/sweep_rest.log" | grep -E "^(TOTAL|BUILD)|first:"
    $EM run rsweep --repeat 1 --jobs 10 --time-limit $(( $(left 560) - 170 )) --pytest "-m 'not large'" | tee "$LOGS/rsweep.log" | grep -E "^(TOTAL|BUILD)|first:" ;;
  four)
    restore
    $EM run sweep-double --jobs 8 --time-limit 240 --pytest "-m 'not large'" | tee "$LOGS/sweep_double.log" | grep -E "^(TOTAL|BUILD)|first:"
    $EM run rsweep-double --jobs 8 --time-limit $(( $(left 560) - 10 )) --pytest "-m 'not large'" | tee "$LOGS/rsweep_double.log" | grep -E "^(TOTAL|BUILD)|first:" ;;
  *) echo "usage: bash docs/device/stop33.sh one|two|three|four"; exit 2 ;;
esac
tar -czf "$FINAL_OUT/logs.tar.gz" -C "$LOGS" .
