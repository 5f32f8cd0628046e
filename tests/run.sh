#!/usr/bin/env bash
# kernelgen's whole test suite, from a fresh machine: creates .venv, installs kernelgen with its
# test dependencies (a CUDA build of torch pinned by .ci/constraints.txt), builds the examples
# with nvcc (CUDA and C++), then runs every test: kernelgen's own, the golden examples, the
# stable-ABI symbol audit of the examples' binaries (tests/test_stable_abi.py: it fails, rather than
# skips, when an example is not built), the examples' own test suites (CUDA tests skip without a
# GPU), the wheel test, and end-to-end generate-build-test runs of fresh ops on both ABIs.
#
# It fails loudly, rather than skipping the CUDA build, when nvcc is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
PY=${PYTHON:-python3}

export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if ! [ -x "$CUDA_HOME/bin/nvcc" ]; then
  if command -v nvcc >/dev/null; then
    echo "note: $CUDA_HOME/bin/nvcc not found; the generated setup.py will locate the toolkit from $(command -v nvcc)"
    unset CUDA_HOME
  else
    echo "error: nvcc not found (no \$CUDA_HOME/bin/nvcc, none on PATH): kernelgen's tests compile CUDA and will not skip that" >&2
    exit 1
  fi
fi
export KERNELGEN_REQUIRE_CUDA=1   # a generated setup.py must fail, not fall back to CPU-only
export MAX_JOBS=${MAX_JOBS:-2}

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -c .ci/constraints.txt -e '.[test]'
# The matmul examples' Hopper path needs the CUTLASS headers: their build downloads them (once, into
# ~/.cache/kernelgen) as a user's does; KERNELGEN_REQUIRE_CUDA=1 makes it fail rather than leave it out.
python - <<'PYEOF'
import torch, sys
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}")
if torch.version.cuda is None:
    sys.exit("error: torch is a CPU-only build; it cannot link CUDA code")
PYEOF

# Build every example with nvcc, then prove the CUDA kernel is in the binary: the dispatcher must
# have a CUDA kernel for the op (a silent CPU-only fallback would not register one).
for example in examples/*/; do
  name=$(basename "$example")
  echo "== building examples/$name (CUDA + C++)"
  start=$(date +%s)
  python -m pip install -q --no-build-isolation -e "$example"
  echo "   built in $(( $(date +%s) - start )) s"
  kernelgen ops --json "$example" > "/tmp/kernelgen-ops-$name.json"
  python - "/tmp/kernelgen-ops-$name.json" <<'PYEOF'
import importlib, json, sys, torch
info = json.load(open(sys.argv[1]))
module = importlib.import_module(info["package"])
compiled = [op for op in info["ops"] if op.get("backend", "cuda") == "cuda"]
assert module.WITH_CUDA or not compiled, f"{info['package']} was built without CUDA"
for op in info["ops"]:
    qualified = f"{info['namespace']}::{op['name']}"
    assert torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CPU"), f"{qualified} has no CPU kernel"
    if op in compiled:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CUDA"), f"{qualified} has no CUDA kernel"
        print(f"   {qualified}: CPU and CUDA kernels registered")
    else:  # triton_op: one Python implementation for every device, the kernel compiled by Triton at run time
        print(f"   {qualified}: Triton op registered (CPU kernel: the reference)")
PYEOF
done

echo "== ruff and mypy (configured in pyproject.toml)"
ruff check kernelgen tests
mypy

# The oldest torch the stable-ABI examples promise to load on (TORCH_TARGET_VERSION 2.10 in their
# _build.py): its headers only, unpacked from its wheel (no install), so that
# tests/test_stable_abi.py compiles every example's sources against them.
OLDEST_DIR="$REPO/.ci-cache/torch-2.10"
if [ ! -f "$OLDEST_DIR/torch/include/torch/csrc/stable/library.h" ]; then
  echo "== fetching torch 2.10's headers (the oldest torch a stable-ABI op supports)"
  rm -rf "$OLDEST_DIR" && mkdir -p "$OLDEST_DIR/wheel"
  # Headers are the same in every wheel of a release: name one, so that the download does not depend
  # on this machine's Python (a Python that torch 2.10 has no wheel for would fail it).
  python -m pip download -q "torch==2.10.0" --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 -d "$OLDEST_DIR/wheel"
  python - "$OLDEST_DIR" <<'PYEOF'
import pathlib, sys, zipfile
root = pathlib.Path(sys.argv[1])
with zipfile.ZipFile(next((root / "wheel").glob("torch-*.whl"))) as wheel:
    for name in wheel.namelist():
        if name.startswith("torch/include/"):
            wheel.extract(name, root)
PYEOF
  rm -rf "$OLDEST_DIR/wheel"
fi
export KERNELGEN_OLDEST_TORCH_INCLUDE="$OLDEST_DIR/torch/include"

python -m pytest -q -ra tests "$@"
# Each example's own suite runs from its root, as a user runs it (two examples both have a
# tests/test_muladd.py, which one pytest session cannot collect together).
for example in examples/*/; do
  echo "== tests of $example"
  (cd "$example" && python -m pytest -q -ra -p no:cacheprovider)
done
