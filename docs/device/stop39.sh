#!/usr/bin/env bash
# Stop 39's GPU evidence (issue 29: the matmul epilogue's generated backward), from the repository root on
# the device machine; each phase is one call and builds what it needs (the machine does not stay warm).
# Carry .whl (the CUTLASS wheel, below) and .device/mm39, made on the dev machine with
#   kernelgen new mm39 --op lin --kind matmul --bias --defaults --output .device
#   kernelgen add relu2 --kind matmul --bias --epilogue "max(acc + bias, 0) ** 2" --defaults --package .device/mm39
#   kernelgen add tanhmul --kind matmul --epilogue "acc * tanh(acc)" --defaults --package .device/mm39
#   kernelgen add scaled --kind matmul --epilogue "2.5 * acc" --defaults --package .device/mm39
#   kernelgen add erfgelu --kind matmul --bias --epilogue "0.5 * (acc + bias) * (1 + erf((acc + bias) * 0.7071067811865476))" --defaults --package .device/mm39
#   kernelgen add lgv --kind matmul --bias --backward vjp --epilogue "(acc + bias) * sigmoid(1.702 * (acc + bias))" --defaults --package .device/mm39
#   kernelgen add lg --kind matmul --bias --epilogue "(acc + bias) * sigmoid(1.702 * (acc + bias))" --defaults --package .device/mm39
#   bash docs/device/stop39.sh tests   # build mm39, examples/myteam-ops and examples/rmsnorm; the suites of mm39's ops and of the
#                                      # examples' matmul ops (the >2**31 test included), the training loop,
#                                      # memcheck and racecheck over the training path's kernels
#   bash docs/device/stop39.sh bench   # build mm39; forward+backward against eager and torch.compile
#                                      # (default and max-autotune-no-cudagraphs) at 4096^3 and 8192x1024x8192
# The examples' suites on the GPU only (-k 'not cpu'): CI runs the CPU halves. Logs land in $OUT.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs39; mkdir -p "$FINAL_OUT" "$LOGS"
export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 CXX=/usr/bin/g++ CC=/usr/bin/gcc MAX_JOBS=16 KERNELGEN_REQUIRE_CUDA=1
# The machine has no network: the CUTLASS headers come as the nvidia-cutlass wheel, carried in .whl
# (python3 -m pip download --no-deps -d .whl nvidia-cutlass==4.2.0.0 on the dev machine).
if ls .whl/nvidia_cutlass-*.whl > /dev/null 2>&1 && [ ! -d /tmp/cutlass ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
fi
export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
start=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - start) )); }
PKG=${PKG:-.device/mm39}

build() {  # dir
  local t; t=$(date +%s)
  (cd "$1" && python3 setup.py build_ext --inplace > "$LOGS/build_$(basename "$1").log" 2>&1
   echo "build $1: rc=$? in $(( $(date +%s) - t )) s")
}
suite() {  # root test-file label [-k expression]
  local root=$1 what=$2 label=$3 k=${4:-not cpu}
  (cd "$root" && timeout "$(left "${TEST_END:-420}")" python3 -m pytest -q -rfE -p no:cacheprovider "$what" -k "$k" \
     > "$LOGS/test_$label.log" 2>&1; echo "$label: $(tail -1 "$LOGS/test_$label.log")")
}
export -f suite left; export start LOGS

case "${1:-}" in
  tests)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    build $PKG & build examples/myteam-ops & build examples/rmsnorm & wait
    echo "built at $(( $(date +%s) - start )) s"
    {
      # mm39's suites whole (CPU halves too: its ops are not in CI), the examples' on the GPU only
      for f in $PKG/tests/test_*.py; do echo "$PKG tests/$(basename "$f") mm39_$(basename "$f" .py) test"; done
      echo "examples/myteam-ops tests/test_linear_gelu.py ex_linear_gelu"
      echo "examples/myteam-ops tests/test_matmul.py ex_matmul"
    } | xargs -P "${JOBS:-3}" -L 1 bash -c 'suite "$0" "$1" "$2" "$3"' | sort > "$LOGS/tests_summary.txt"
    cat "$LOGS/tests_summary.txt"
    for dt in float32 bfloat16; do  # issue 29's loop: linear_gelu, RMSNorm (examples/rmsnorm), matmul
      tol=1e-2; [ $dt = bfloat16 ] && tol=5e-2
      timeout "$(left 500)" python3 docs/device/train_mlp.py examples/myteam-ops --norm rmsnorm --norm-package examples/rmsnorm \
        --steps 200 --dtype $dt --tolerance $tol --json "$LOGS/train_rmsnorm_$dt.json" > "$LOGS/train_rmsnorm_$dt.log" 2>&1
      echo "train rmsnorm $dt: rc=$? $(tail -2 "$LOGS/train_rmsnorm_$dt.log" | tr '\n' ' ')"
    done
    for tool in memcheck racecheck; do
      end=${SAN_END:-540}; dt=float32,bfloat16; [ $tool = racecheck ] && end=580 && dt=bfloat16
      # racecheck reports hazards in cuBLAS's kernels (nvjet_*, the backward's torch.matmul): read its log
      # for ours (excluding nvjet with --kernel-name-exclude crashed the sanitizer in cuBLAS)
      timeout "$(left "$end")" compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_matmul.py \
        $PKG --ops ${SAN_OPS:-lg,relu2,tanhmul,lin} --dtypes $dt > "$LOGS/sanitize_$tool.log" 2>&1
      echo "$tool: rc=$? $(grep -c ': 7 shapes' "$LOGS/sanitize_$tool.log") cells; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/sanitize_$tool.log" | tail -1)"
    done ;;
  bench)
    build $PKG
    [ -n "${SUITES:-}" ] && for t in ${SUITES//,/ }; do echo "$PKG tests/test_$t.py mm39_$t"; done \
      | xargs -P 3 -L 1 bash -c 'suite "$0" "$1" "$2"' | sort  # GPU suites first, when SUITES names ops
    [ -n "${FWD_AB:-}" ] && python3 docs/device/matmul_forward_ab.py $PKG $FWD_AB 2>&1 | tee "$LOGS/fwd_ab.log"
    timeout "$(left 585)" python3 docs/device/matmul_backward_bench.py $PKG --op ${OP:-lg} --dtypes ${DTYPES:-bfloat16,float16,float32} \
      --shapes ${SHAPES:-4096x4096x4096,8192x1024x8192} --autotune ${AUTOTUNE:-bfloat16,float16} --rounds ${ROUNDS:-2} \
      --json "$LOGS/bench_${TAG:-mm}.json" 2>&1 | tee "$LOGS/bench_${TAG:-mm}.log" | grep -v Warning ;;
  *) echo "usage: bash docs/device/stop39.sh tests|bench"; exit 2 ;;
esac
cp "$LOGS"/*.txt "$LOGS"/*.json "$FINAL_OUT"/ 2>/dev/null
tar czf "$FINAL_OUT/logs_${1}.tgz" -C "$LOGS" . 2>/dev/null
echo "done at $(( $(date +%s) - start )) s"
