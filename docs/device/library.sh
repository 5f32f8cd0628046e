#!/usr/bin/env bash
# GPU evidence for op libraries (one package, many ops, one namespace), in one device call, from the
# repository root on the device machine:
#   bash docs/device/library.sh build    # cold and incremental builds, the library's tests, shared namespace
#   bash docs/device/library.sh check    # memcheck of the library's CUDA tests, every op's benchmark
# Needs, generated on the dev machine (copier is not installed on the device) by
#   bash docs/device/library_prepare.sh
# .device/lib_before_add (examples/myteam-ops before its last `kernelgen add`) and .device/ns/{alpha,beta,clash}
# (three packages in the namespace `team`; clash redefines team::mm, which alpha holds).
# Prints a summary; logs go to $OUT/library_logs.tar.gz.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kglib; mkdir -p "$FINAL_OUT" "$LOGS"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=16
REPO=$(pwd)
now() { date +%s.%N; }
took() { python3 -c "print(round($(now) - $1, 1))"; }

MODE=${1:-build}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name())"
nproc

if [ "$MODE" = build ]; then
# 1. Cold build of the library as it was before `kernelgen add silu_mul`, then the add: copy in only
#    the files whose content changed (as `add` writes only those), and rebuild incrementally.
rm -rf /tmp/lib && cp -r .device/lib_before_add /tmp/lib
(cd /tmp/lib && t=$(now) && python3 setup.py build_ext --inplace > "$LOGS/build_cold.log" 2>&1; echo "cold build (2 ops) rc=$? in $(took "$t") s")
python3 - "$REPO/examples/myteam-ops" /tmp/lib <<'PYEOF'
import filecmp, shutil, sys
from pathlib import Path
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
changed = []
for path in sorted(src.rglob("*")):
    rel = path.relative_to(src)
    if path.is_file() and not any(p in ("build", "__pycache__") for p in rel.parts) and not path.name.startswith("_C"):
        target = dst / rel
        if not target.exists() or not filecmp.cmp(path, target, shallow=False):
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
            changed.append(str(rel))
print(f"add silu_mul changed {len(changed)} files:", ", ".join(changed))
PYEOF
(cd /tmp/lib && t=$(now) && python3 setup.py build_ext --inplace > "$LOGS/build_incremental.log" 2>&1; echo "incremental build after add rc=$? in $(took "$t") s; compiled: $(grep -cE '^\[[0-9]+/[0-9]+\]' "$LOGS/build_incremental.log") steps: $(grep -oE '^\[[0-9]+/[0-9]+\] [^ ]+ .* -c [^ ]+' "$LOGS/build_incremental.log" | grep -oE '[a-z_]+\.(cu|cpp)' | sort -u | tr '\n' ' ')")
(cd /tmp/lib && t=$(now) && python3 setup.py build_ext --inplace > "$LOGS/build_noop.log" 2>&1; echo "no-op rebuild rc=$? in $(took "$t") s")

# 2. The library example itself: build, every op's tests, memcheck of the CUDA tests.
(cd examples/myteam-ops && t=$(now) && python3 setup.py build_ext --inplace > "$LOGS/build_example.log" 2>&1; echo "examples/myteam-ops build rc=$? in $(took "$t") s")
(cd examples/myteam-ops && python3 -m pytest -q -rs -p no:cacheprovider > "$LOGS/test_library.log" 2>&1; echo "examples/myteam-ops tests rc=$?: $(tail -1 "$LOGS/test_library.log")")
fi
if [ "$MODE" = check ]; then
[ -n "$(ls examples/myteam-ops/myteam_ops/_C*.so 2>/dev/null)" ] || (cd examples/myteam-ops && python3 setup.py build_ext --inplace > "$LOGS/build_example.log" 2>&1)
(cd examples/myteam-ops && compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
   -k "cuda and not large and not compile and not opcheck and not gradcheck" > "$LOGS/memcheck_library.log" 2>&1
 echo "memcheck library rc=$?: $(grep -E 'ERROR SUMMARY|passed|failed' "$LOGS/memcheck_library.log" | tr '\n' ' ')")

fi
if [ "$MODE" = build ]; then
# 3. Two packages sharing a namespace in one process, and a third that clashes.
for p in alpha beta clash; do (cd .device/ns/$p && python3 setup.py build_ext --inplace > "$LOGS/build_$p.log" 2>&1; echo "build $p rc=$?") & done; wait
PYTHONPATH=.device/ns/alpha:.device/ns/beta:.device/ns/clash python3 - <<'PYEOF' 2>&1 | tee "$LOGS/namespace.log"
import torch, alpha, beta
x = torch.randn(1 << 20, device="cuda")
assert torch.equal(torch.ops.team.scale2(x), x * 2) and torch.equal(beta.plus1(x), x + 1)
a, b = torch.randn(256, 128, device="cuda"), torch.randn(128, 64, device="cuda")
torch.testing.assert_close(alpha.mm(a, b), a @ b, rtol=1e-4, atol=1e-4)
print("alpha and beta share torch.ops.team on the GPU:", sorted(n for n in torch._C._dispatch_get_all_op_names() if n.startswith("team::")))
try:
    import clash
    print("UNEXPECTED: clash imported")
except ImportError as err:
    print("clash raised ImportError:", err)
print("process alive; team::mm still works:", torch.allclose(torch.ops.team.mm(a, b), a @ b, rtol=1e-4, atol=1e-4))
PYEOF

fi
if [ "$MODE" = check ]; then
# 4. One command runs every op's benchmark (small sizes: this shows the runner, not the figures).
(cd examples/myteam-ops && timeout 400 python3 benchmarks/run_all.py --dtypes float32,bfloat16 > "$LOGS/bench_all.txt" 2>&1; echo "run_all rc=$?"; grep -E "^==|x " "$LOGS/bench_all.txt" | head -40)
fi
tar -czf "$FINAL_OUT/library_logs_$MODE.tar.gz" -C "$LOGS" .
cp "$LOGS/test_library.log" "$LOGS/memcheck_library.log" "$FINAL_OUT/" 2>/dev/null
