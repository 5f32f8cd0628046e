#!/usr/bin/env bash
# Issue 27 (template version 9, "lean generated code"): is the generated code exactly as fast as before?
# Two device calls back to back, from the repository root (the second finds the first's builds while the
# machine is still warm, and rebuilds what it lacks otherwise):
#   bash docs/device/v9_speed.sh sweep   # carry .device/sweep and .whl. Stop 23's `final` unchanged
#                                        # (docs/device/stop23.sh: sweep package, examples/muladd and
#                                        # myteam-ops built, the elementwise suites, memcheck, muladd_tl's
#                                        # float32 table, sweep runs 6 and 7), with the builds `bench` needs
#                                        # (examples/rmsnorm, examples/matmul with its CUTLASS path) at nice 19
#                                        # underneath, so that they take only idle cores
#   bash docs/device/v9_speed.sh bench   # carry .whl. Builds what is missing, then the Triton host time per
#                                        # call and first call, then the benchmark tables docs/benchmarks.md
#                                        # quotes, most important first, each only if its estimate fits
#                                        # before the deadline (the harness prints its table at the end only)
# .device/sweep: python docs/device/sweep.py generate .device/sweep --seed 13 --count 40 (dev machine).
# .whl: nvidia_cutlass-4.2.0.0-py3-none-any.whl (the device machine has no network).
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kgv9; mkdir -p "$FINAL_OUT" "$LOGS"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 TORCH_CUDA_ARCH_LIST=9.0
export CXX=${KG_CXX:-/usr/bin/g++} CC=${KG_CC:-/usr/bin/gcc}   # docs/design.md, trap 23
DEADLINE=${DEADLINE:-550}
now() { date +%s; }
start=$(now)
left() { echo $(( DEADLINE - ($(now) - start) )); }

cutlass() {
  if [ ! -d /tmp/cutlass/cutlass_library/source/include ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl 2>&1 | tail -1
  fi
  export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
}

build() {  # EXAMPLE JOBS NO_CUTLASS(0|1) [nice]: builds in place unless a _C*.so is already there
  local ex=$1
  if ls examples/$ex/*/_C*.so > /dev/null 2>&1; then echo "examples/$ex: already built"; return; fi
  (cd examples/$ex && t=$(now) && MAX_JOBS=$2 KERNELGEN_NO_CUTLASS=$3 ${4:+nice -n 19} python3 setup.py build_ext --inplace \
     > "$LOGS/build_$ex.log" 2>&1
   echo "build examples/$ex rc=$? in $(( $(now) - t )) s (sm_90a objects: $(grep -c 'code=sm_90a' "$LOGS/build_$ex.log"))")
}

bench() {  # ESTIMATE_S EXAMPLE SCRIPT TAG ARGS...: one benchmark table, if ESTIMATE_S fits before the deadline
  local est=$1 ex=$2 script=$3 tag=$4; shift 4
  local l; l=$(left)
  if [ "$l" -lt "$est" ]; then echo "SKIPPED $tag: ${l} s left, estimate ${est} s"; return; fi
  local t; t=$(now)
  (cd examples/$ex && timeout "$l" python3 benchmarks/$script.py "$@" --json "$LOGS/$tag.json" > "$LOGS/$tag.txt" 2> "$LOGS/$tag.err")
  echo "bench $tag rc=$? in $(( $(now) - t )) s: $ex $script $*"
  grep -v "^wrote" "$LOGS/$tag.txt"
}

case "${1:-}" in
  sweep)
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
    cutlass
    # Underneath stop 23's call: its logs folder is /tmp/kg23, tarred at its end (the 8-file limit).
    mkdir -p /tmp/kg23
    (LOGS=/tmp/kg23; build rmsnorm 2 1 nice; build matmul 4 0 nice) > /tmp/kg23/v9_builds.txt 2>&1 &
    STOP23_DEADLINE=535 bash docs/device/stop23.sh final
    while [ -n "$(jobs -rp)" ] && [ $(( $(now) - start )) -lt 555 ]; do sleep 2; done
    [ -n "$(jobs -rp)" ] && echo "the niced builds are still running at $(( $(now) - start )) s: bench rebuilds what they leave"
    cat /tmp/kg23/v9_builds.txt
    echo "wrapper done in $(( $(now) - start )) s"
    ;;
  bench)
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu,power.draw \
      --format=csv,noheader
    python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
    cutlass
    build muladd 4 1 &
    build myteam-ops 6 1 &   # no CUTLASS path: linear_gelu's table is not run here
    build rmsnorm 2 1 &
    build matmul 4 0 &
    wait
    echo "builds done at $(( $(now) - start )) s"
    # The Triton eager fast path (now in <package>/_triton_eager.py): host time per call on a quiet machine,
    # then the first call (Triton compiles) and a warm call in a fresh process with an empty Triton cache.
    timeout 100 python3 docs/device/triton_host.py examples/myteam-ops > "$LOGS/host.txt" 2>&1
    echo "triton_host rc=$?"; grep "^host" "$LOGS/host.txt"
    TRITON_CACHE_DIR=$(mktemp -d) timeout 60 python3 - <<'PYEOF' 2>&1 | tee "$LOGS/first_call.txt"
import sys, time
import torch
sys.path.insert(0, "examples/myteam-ops")
import myteam_ops
for name, n_in in (("gelu_tl", 1), ("muladd_tl", 3)):
    xs = [torch.randn(1 << 20, device="cuda") for _ in range(n_in)]
    torch.cuda.synchronize()
    t = time.perf_counter(); getattr(myteam_ops, name)(*xs); torch.cuda.synchronize(); first = time.perf_counter() - t
    t = time.perf_counter(); getattr(myteam_ops, name)(*xs); torch.cuda.synchronize(); warm = time.perf_counter() - t
    print(f"{name}: first call {first * 1e3:.0f} ms (Triton compiles), warm call {warm * 1e6:.0f} us (host + 1 Mi elements + sync)")
PYEOF
    ALL=float32,float64,float16,bfloat16
    # Elementwise kind, the examples at 2^28 (docs/benchmarks.md's table); bench_gelu also races gelu_tl.
    bench 60 muladd bench_muladd muladd --dtypes $ALL --sizes 268435456
    bench 60 myteam-ops bench_gelu gelu --dtypes $ALL --sizes 268435456
    bench 60 myteam-ops bench_silu_mul silu_mul --dtypes $ALL --sizes 268435456
    # Matmul kind against cuBLAS (the CUTLASS sm_90a path for float16/bfloat16); the table quotes no compile.
    bench 60 matmul bench_matmul matmul --dtypes float16,bfloat16,float32 --sizes 512,1024,2048,4096,8192,8192x8192x1024 --no-compile
    # Triton backend (stop 23's bench: 2^24-2^28; 2^26 left out for time).
    bench 60 myteam-ops bench_gelu_tl gelu_tl --dtypes $ALL --sizes 16777216,268435456
    bench 60 myteam-ops bench_muladd_tl muladd_tl --dtypes $ALL --sizes 16777216,268435456
    # Rowwise kind at 2^26 (kernels unchanged by version 9; softmax and layernorm also race their Triton twins).
    bench 75 rmsnorm bench_rmsnorm rmsnorm --dtypes float32,bfloat16 --sizes 67108864
    bench 75 myteam-ops bench_softmax softmax --dtypes float32,bfloat16 --sizes 67108864
    bench 75 myteam-ops bench_layernorm layernorm --dtypes float32,bfloat16 --sizes 67108864
    bench 75 myteam-ops bench_log_softmax log_softmax --dtypes float32,bfloat16 --sizes 67108864
    tar -czf "$FINAL_OUT/v9_bench.tar.gz" -C "$LOGS" .
    echo "done in $(( $(now) - start )) s"
    ;;
  *)
    echo "usage: bash docs/device/v9_speed.sh sweep|bench" >&2; exit 2
    ;;
esac
