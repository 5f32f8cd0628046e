#!/usr/bin/env bash
# Device half of docs/device/rowwise_variants.py (carry .device/rwexp): build every variant for sm_90,
# check each against PyTorch, then time them at 2^26 elements (rows of 1024, 4096, 16384).
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kgvar; mkdir -p "$FINAL_OUT" "$LOGS"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=4 TORCH_CUDA_ARCH_LIST=9.0
export CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc}   # docs/design.md, trap 23
cd .device/rwexp
if [ -z "${SKIP_BUILD:-}" ]; then  # SKIP_BUILD=1: built already (docs/device/fastmath_check.sh)
  for d in */; do
    (cd "$d" && python3 setup.py build_ext --inplace > "$LOGS/build_${d%/}.log" 2>&1; echo "build ${d%/} rc=$?") &
  done
  wait
fi
cat > /tmp/check.py <<'PYEOF'
import importlib, sys, torch
import torch.nn.functional as F
name = sys.argv[1]
mod = importlib.import_module(name.split("_")[0])
for dtype in (torch.float32, torch.bfloat16, torch.float64):
    for cols in (1000, 1024, 4096, 8192, 12288, 16384, 16385):
        x = torch.randn(37, cols, device="cuda", dtype=dtype)
        if name.startswith("lnexp"):
            w, b = torch.randn(cols, device="cuda", dtype=dtype), torch.randn(cols, device="cuda", dtype=dtype)
            ref = F.layer_norm(x.double(), (cols,), w.double(), b.double(), eps=1e-5)
            got = mod.lnexp(x, w, b)
        else:
            ref = torch.softmax(x.double(), -1)
            got = mod.smexp(x)
        err = (got.double() - ref).abs().max().item()
        tol = {torch.float32: 1e-4, torch.bfloat16: 6e-2, torch.float64: 1e-10}[dtype]
        assert err <= tol * max(1.0, ref.abs().max().item()), (name, dtype, cols, err)
print(name, "matches PyTorch")
PYEOF
for d in */; do (cd "$d" && PYTHONPATH=. python3 /tmp/check.py "${d%/}" 2>&1 | tail -1); done
COLS=${COLS:-1024,4096,16384}
if [ -n "${SOFTMAX:-}" ]; then
  for d in smexp*/; do
    echo "== ${d%/}"
    (cd "$d" && PYTHONPATH=. python3 benchmarks/bench_smexp.py --dtypes float32,float16,bfloat16 --sizes 67108864 --cols $COLS 2>/dev/null | grep -v "^wrote")
  done
fi
(cd lnexp && python3 benchmarks/bench_lnexp.py --dtypes float32,float16,bfloat16 --sizes 67108864 --cols $COLS 2>/dev/null | grep -v "^wrote")
for d in lnexp_*/; do
  echo "== variant ${d%/}"
  (cd "$d" && python3 benchmarks/bench_lnexp.py --dtypes float32,float16,bfloat16 --sizes 67108864 --cols $COLS --no-compile 2>/dev/null | grep -v "^wrote")
done
