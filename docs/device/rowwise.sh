#!/usr/bin/env bash
# GPU evidence for the rowwise kind (issue: softmax, RMSNorm, LayerNorm from one expression), from the
# repository root on the device machine:
#   bash docs/device/rowwise.sh test     # build examples/rmsnorm and examples/myteam-ops, run the rowwise
#                                        # ops' full suites (CUDA C++ and Triton), large test included
#   bash docs/device/rowwise.sh check    # compute-sanitizer memcheck and racecheck over their CUDA tests
#   bash docs/device/rowwise.sh bench [DTYPES] [SIZES]   # every rowwise benchmark, JSON and PNGs in $OUT
# Prints a summary; logs go to $OUT/rowwise_logs.tar.gz.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kgrow; mkdir -p "$FINAL_OUT" "$LOGS"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=16
# The rowwise ops need no CUTLASS: build myteam-ops' matmul ops without their sm_90a path (no
# nvidia-cutlass to install, two minutes less of build). docs/device/cutlass_branch.sh tests that path.
export KERNELGEN_NO_CUTLASS=${KERNELGEN_NO_CUTLASS:-1}
now() { date +%s.%N; }
took() { python3 -c "print(round($(now) - $1, 1))"; }
MODE=${1:-test}
ROWWISE_TESTS="tests/test_softmax.py tests/test_log_softmax.py tests/test_layernorm.py tests/test_softmax_tl.py tests/test_layernorm_tl.py"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, torch.cuda.get_device_name())"

# The system g++ by default (KG_CXX=/opt/gcc/bin/g++ for the machine's own): /opt/gcc links libstdc++
# statically into _C (ldd shows none), and an int64_t streamed into an exception's message then crashes
# Python (docs/design.md, trap 14; docs/device/rowwise_repro.sh was this session's diagnosis).
export CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc}
build() {
  for ex in rmsnorm myteam-ops; do
    if ! grep -qs "$CXX" examples/$ex/build/.kg_cxx; then rm -rf examples/$ex/build examples/$ex/*/_C*.so; fi
    mkdir -p examples/$ex/build && echo "$CXX" > examples/$ex/build/.kg_cxx
    (cd examples/$ex && t=$(now) && python3 setup.py build_ext --inplace > "$LOGS/build_$ex.log" 2>&1; echo "build examples/$ex rc=$? in $(took "$t") s")
  done
}

if [ "$MODE" = test ]; then
  build
  (cd examples/rmsnorm && python3 -m pytest -q -rs -p no:cacheprovider > "$LOGS/test_rmsnorm.log" 2>&1; echo "examples/rmsnorm tests rc=$?: $(tail -1 "$LOGS/test_rmsnorm.log")")
  (cd examples/myteam-ops && python3 -m pytest -q -rs -p no:cacheprovider $ROWWISE_TESTS > "$LOGS/test_myteam_rowwise.log" 2>&1; echo "examples/myteam-ops rowwise tests rc=$?: $(tail -1 "$LOGS/test_myteam_rowwise.log")")
  grep -E "^(FAILED|ERROR)" "$LOGS"/test_*.log | head -30
fi

if [ "$MODE" = debug ]; then
  build
  cat > /tmp/repro.py <<'PYEOF'
import faulthandler, sys, torch
faulthandler.enable()
import rmsnorm
x = torch.randn(2, 8)
for w in (torch.randn(9), torch.randn(8, 1)):
    for mode in ("public", "no_grad", "direct"):
        try:
            if mode == "public":
                rmsnorm.rmsnorm(x, w)
            elif mode == "no_grad":
                with torch.no_grad():
                    torch.ops.rmsnorm.rmsnorm.default(x, w)
            else:
                torch._C._dispatch_call_boxed if False else torch.ops.rmsnorm.rmsnorm.default._op(x, w)
            print(mode, "no error", flush=True)
        except RuntimeError as err:
            print(mode, "RuntimeError:", str(err)[:200], flush=True)
PYEOF
  (cd examples/rmsnorm && timeout 120 python3 /tmp/repro.py 2>&1 | tail -40)
  if command -v gdb > /dev/null; then
    (cd examples/rmsnorm && timeout 300 gdb -batch -ex run -ex bt --args python3 /tmp/repro.py 2>&1 | grep -v "^\[" | tail -40)
  else
    echo "no gdb"
  fi
  (cd examples/rmsnorm && python3 -m pytest -q -rs -p no:cacheprovider -k "not error_weight" > "$LOGS/test_rmsnorm.log" 2>&1; echo "examples/rmsnorm tests (no weight errors) rc=$?: $(tail -1 "$LOGS/test_rmsnorm.log")")
  (cd examples/myteam-ops && python3 -m pytest -q -rs -p no:cacheprovider -k "not error_weight" $ROWWISE_TESTS > "$LOGS/test_myteam_rowwise.log" 2>&1; echo "examples/myteam-ops rowwise tests rc=$?: $(tail -1 "$LOGS/test_myteam_rowwise.log")")
  grep -E "^(FAILED|ERROR)" "$LOGS"/test_*.log | head -30
fi

if [ "$MODE" = all ]; then
  build
  (cd examples/rmsnorm && python3 -m pytest -q -rs -p no:cacheprovider > "$LOGS/test_rmsnorm.log" 2>&1; echo "examples/rmsnorm tests rc=$?: $(tail -1 "$LOGS/test_rmsnorm.log")")
  (cd examples/myteam-ops && python3 -m pytest -q -rs -p no:cacheprovider > "$LOGS/test_myteam_all.log" 2>&1; echo "examples/myteam-ops all tests rc=$?: $(tail -1 "$LOGS/test_myteam_all.log")")
  grep -E "^(FAILED|ERROR)" "$LOGS"/test_*.log | head -30
fi

if [ "$MODE" = check ]; then
  build
  SEL="cuda and not large and not compile and not opcheck and not gradcheck and not 16385 and not 65537"
  for tool in memcheck racecheck; do
    (cd examples/rmsnorm && compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider -k "$SEL" tests > "$LOGS/${tool}_rmsnorm.log" 2>&1
     echo "$tool rmsnorm rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed' "$LOGS/${tool}_rmsnorm.log" | tr '\n' ' ')")
    (cd examples/myteam-ops && compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider -k "$SEL" tests/test_softmax.py tests/test_log_softmax.py tests/test_layernorm.py > "$LOGS/${tool}_myteam.log" 2>&1
     echo "$tool myteam softmax/log_softmax/layernorm rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed|failed' "$LOGS/${tool}_myteam.log" | tr '\n' ' ')")
  done
  # The long-row (multi-pass) kernel once under each tool, on one row length.
  (cd examples/myteam-ops && compute-sanitizer --tool racecheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider -k "cuda and 65537 and float32" tests/test_softmax.py tests/test_layernorm.py > "$LOGS/racecheck_long.log" 2>&1
   echo "racecheck long rows rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|passed|failed' "$LOGS/racecheck_long.log" | tr '\n' ' ')")
fi

if [ "$MODE" = bench ]; then
  build
  DTYPES=${2:-float32,float16,bfloat16}
  SIZES=${3:-67108864}
  OPS=${OPS:-rmsnorm:rmsnorm myteam-ops:softmax myteam-ops:log_softmax myteam-ops:layernorm myteam-ops:softmax_tl myteam-ops:layernorm_tl}
  for spec in $OPS; do
    ex=${spec%%:*}; op=${spec##*:}
    (cd examples/$ex && python3 benchmarks/bench_$op.py --dtypes "$DTYPES" --sizes "$SIZES" \
        --json "$LOGS/bench_$op.json" --plot "$LOGS/bench_$op.png" > "$LOGS/bench_$op.log" 2>"$LOGS/bench_$op.err"; echo "bench $op rc=$?"; grep -v "^wrote" "$LOGS/bench_$op.log")
  done
fi
# PNGs come back one by one (at most 8 files in all); everything else in the tarball.
cp "$LOGS"/bench_*.png "$FINAL_OUT/" 2>/dev/null
tar -czf "$FINAL_OUT/rowwise_logs.tar.gz" -C "$LOGS" . 2>/dev/null
