#!/usr/bin/env bash
# GPU evidence for issues 25, 26, 28 and 30 landing together, in few device calls, from the
# repository root on the device machine. Prepared on the dev machine (copier is not on the GPU
# machine), all git-ignored, named in the call's `carry`:
#   .whl/nvidia_cutlass-4.2.0.0-*.whl   the CUTLASS headers (the GPU machine has no network; a user's
#                                       build downloads this wheel itself, _build.py fetch_cutlass)
#   .device/names/natural               a library over natural names (q,k,v,mask; x,eps with weights
#                                       gamma,beta; Triton out,torch,t,i,n and x,mask,dtype; p,r,s,u; a matmul)
#   .device/errmodel                    python docs/device/error_model.py prepare
#   .device/rsweep                      python docs/device/rowwise_sweep.py generate .device/rsweep --seed 28 --count 10
# Phases (one device call each; `first` then `second` while the machine is warm cover tests+mutants+double
# in two calls):
#   bash docs/device/landing.sh first     # examples and the natural-names library, every suite once;
#                                         # the builds of `second` made meanwhile and kept in /tmp
#   bash docs/device/landing.sh second    # the mutants, the unchanged ops and the examples in double
#   bash docs/device/landing.sh tests     # examples (CUTLASS path included) built, every suite run once;
#                                         # the natural-names library built and its suites run
#   bash docs/device/landing.sh mutants   # every CUDA and Triton mutant against the generated tests;
#                                         # the natural-names library again (after a fix)
#   bash docs/device/landing.sh double    # the examples with their formula in double, and the sweep's suites
#   bash docs/device/landing.sh sweep     # the seed-13 expression sweep's suites, what double left unrun
#   bash docs/device/landing.sh rowwise   # the rowwise sweep subset and the examples' rowwise benchmark
# Logs go to $OUT/logs.tar.gz (the device tool brings back at most 8 files); tables to stdout.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglogs; mkdir -p "$FINAL_OUT" "$LOGS"
export OUT=$LOGS PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0
export CXX=/usr/bin/g++ CC=/usr/bin/gcc
if ls .whl/nvidia_cutlass-*.whl > /dev/null 2>&1 && [ ! -d /tmp/cutlass ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
fi
export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
NAMES=.device/names/natural

names_build() {
  (cd "$NAMES" && KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=${1:-6} python3 setup.py build_ext --inplace > "$LOGS/names_build.log" 2>&1
   echo "names library build rc=$?")
}

names_test() {  # [pytest marker expression]
  (cd "$NAMES" && python3 -m pytest -q -rfE -p no:cacheprovider ${1:+-m "$1"} > "$LOGS/names_tests${1:+_$2}.log" 2>&1
   echo "names library suites${1:+ (-m '$1')} rc=$?: $(tail -1 "$LOGS/names_tests${1:+_$2}.log")"
   python3 - <<'PYEOF'
# The user's names are the public names on the GPU too: keyword arguments, the schema, the messages.
import inspect, torch, natural
dev = "cuda"
q, k, v, mask = (torch.randn(1000, device=dev) for _ in range(4))
assert torch.allclose(natural.attn(q=q, k=k, v=v, mask=mask), q * k * mask + v)
x, eps = torch.randn(8, 512, device=dev), torch.full((8, 512), 0.1, device=dev)
gamma, beta = torch.randn(512, device=dev), torch.randn(512, device=dev)
assert list(inspect.signature(natural.norm).parameters) == ["x", "eps", "gamma", "beta"]
print("norm on cuda:", tuple(natural.norm(x=x, eps=eps, gamma=gamma, beta=beta).shape))
xs = [torch.randn(4096, device=dev, dtype=torch.float64) for _ in range(5)]  # float64: allclose's defaults hold
assert torch.allclose(natural.mix_tl(out=xs[0], torch=xs[1], t=xs[2], i=xs[3], n=xs[4]), xs[0] * xs[1] + xs[2] * xs[3] - xs[4])
try:
    natural.attn(q, k, v, mask.double())
except RuntimeError as err:
    print("message:", str(err).splitlines()[0])
print("names probe ok")
PYEOF
  )
}

# The >2^31-element tests need about 20 GiB each: they run after the parallel suites, two at a time.
large_tests() {
  local root
  for root in "$@"; do
    (cd "$root" && python3 -m pytest -q -rfE -p no:cacheprovider -m large > "$LOGS/large_$(basename "$root").log" 2>&1
     echo "large tests of $root rc=$?: $(tail -1 "$LOGS/large_$(basename "$root").log")") &
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do sleep 1; done
  done
  wait
}

# The builds a later call needs, made on otherwise idle cores and kept outside the carried .device
# (a call's carry replaces .device with the dev machine's unbuilt copy): `restore` puts them back.
build_later() {
  local t=0  # after the examples' build, whose suites wait for it
  while ! grep -q "suite runs" "$LOGS/examples_run.log" 2>/dev/null && [ $t -lt 240 ]; do sleep 2; t=$((t + 2)); done
  python3 - <<'PYEOF' > "$LOGS/build_later.log" 2>&1
import json, sys
sys.argv = ["error_model"]; sys.path.insert(0, "docs/device")
import error_model as em
em.OUT.mkdir(parents=True, exist_ok=True)
manifest = json.loads((em.DEFAULT_DIR / "mutants" / "manifest.json").read_text())
roots = [em.REPO / item["root"] for item in manifest] + [em.DEFAULT_DIR / "examples_double" / n for n in em.EXAMPLES]
em.build(roots, cutlass=False, cores=int(sys.argv[1]) if len(sys.argv) > 1 else 9)
PYEOF
  echo "later builds: $(grep -c ': built' "$LOGS/build_later.log") built, $(grep -c 'BUILD FAILED' "$LOGS/build_later.log") failed"
  rm -rf /tmp/kg_built && cp -a .device /tmp/kg_built
}

restore() {
  if [ -d /tmp/kg_built ]; then rm -rf .device && cp -a /tmp/kg_built .device && echo "restored the builds of the first call"; fi
}

case "${1:-}" in
  first)
    # Examples (CUTLASS path included) and the natural-names library: built, every suite once, the
    # large tests after; the mutant and formula-in-double packages built meanwhile for `second`.
    build_later &
    (names_build 6; names_test "not large" small) &
    python3 docs/device/error_model.py run examples --cutlass --repeat 1 --jobs 6 --time-limit 270 \
      --pytest "-m 'not large'" | tee "$LOGS/examples_run.log"
    grep -E "sm90|Hopper|CUTLASS" "$LOGS"/build_examples_matmul.log | head -3
    wait
    large_tests examples/muladd examples/matmul examples/rmsnorm examples/myteam-ops "$NAMES" ;;
  second)
    # Every CUDA and Triton mutant against the generated tests, the unchanged ops and their formula
    # in double; the examples with their formula in double (correct kernels, other rounding).
    restore
    python3 docs/device/error_model.py run mutants --jobs 8 --time-limit 330 &
    python3 docs/device/error_model.py run examples-double --jobs 4 --time-limit 330 --pytest "-m 'not large'"
    wait ;;
  tests)
    names_build 6 &
    python3 docs/device/error_model.py run examples --cutlass --repeat 1 --jobs 6 --time-limit 450
    wait
    grep -E "sm90|Hopper|CUTLASS" "$LOGS"/build_examples_matmul.log | head -3
    names_test ;;
  mutants)
    names_build 4 &
    python3 docs/device/error_model.py run mutants --jobs 8 --time-limit 360
    wait
    names_test ;;
  names)
    names_build 16
    names_test ;;
  double)
    python3 docs/device/error_model.py run examples-double --jobs 6 --time-limit 240
    python3 docs/device/error_model.py run sweep --jobs 8 --time-limit 480 --pytest "-m 'not large'" ;;
  sweep)
    names_build 4 &
    python3 docs/device/error_model.py run examples-double --only silu_mul,softmax --jobs 3 --time-limit 200 &
    python3 docs/device/error_model.py run sweep --jobs 8 --time-limit 400 --pytest "-m 'not large'"
    wait
    names_test ;;
  rowwise)
    ONLY=softmax,log_softmax,rmsnorm,layernorm,resrms,csilu,wrms,xbyy COLS=1024,4096,16384 PARTS=8 \
      bash docs/device/rowwise_sweep.sh run fixed
    cp "$FINAL_OUT"/rsweep_* "$LOGS"/ 2>/dev/null; rm -f "$FINAL_OUT"/rsweep_prewarm_* "$FINAL_OUT"/rsweep_build.log.gz ;;
  *) echo "usage: bash docs/device/landing.sh first|second|tests|mutants|names|double|sweep|rowwise"; exit 2 ;;
esac
tar -czf "$FINAL_OUT/logs.tar.gz" -C "$LOGS" .
