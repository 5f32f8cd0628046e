#!/usr/bin/env bash
# Stable-ABI evidence: binaries built on the dev machine against torch 2.14.1 (CI's pin), run here
# under the GPU machine's torch 2.11, with no rebuild. From the repository root on the device:
#   bash docs/device/stable_abi.sh
# The device call carries the examples' built extensions (ignored by git), for example:
#   carry: examples/muladd/muladd/_C.abi3.so examples/muladd/muladd/_build_info.json
#          examples/matmul/matmul/_C.abi3.so examples/matmul/matmul/_build_info.json
#          examples/myteam-ops/myteam_ops/_C.abi3.so examples/myteam-ops/myteam_ops/_build_info.json
# It also builds examples/myteam-ops here (torch 2.11) into $OUT/built_on_211.tar.gz, for the other
# direction (load it under torch 2.14.1 on the dev machine).
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; LOGS=/tmp/kgstable; mkdir -p "$FINAL_OUT" "$LOGS"
export PYTHONUNBUFFERED=1 KERNELGEN_REQUIRE_CUDA=1 MAX_JOBS=16
python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, torch.cuda.get_device_name())"
for ex in muladd matmul myteam-ops; do
  pkg=${ex//-/_}
  so=$(ls examples/$ex/$pkg/_C*.so 2>/dev/null)
  echo "== examples/$ex: carried binary ${so:-MISSING}; built against $(python3 -c "import json; d=json.load(open('examples/$ex/$pkg/_build_info.json')); print('torch', d.get('torch'), 'target', d.get('torch_target_version'), 'abi', d.get('abi', d.get('stable_abi')))" 2>&1)"
  (cd examples/$ex && python3 -m pytest -q -rs -p no:cacheprovider > "$LOGS/test_$ex.log" 2>&1; echo "   tests rc=$?: $(tail -1 "$LOGS/test_$ex.log")")
done
(cd examples/myteam-ops && compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
   -k "cuda and not large and not compile and not opcheck and not gradcheck" > "$LOGS/memcheck_library.log" 2>&1
 echo "memcheck myteam-ops (carried binary) rc=$?: $(grep -E 'ERROR SUMMARY|passed|failed' "$LOGS/memcheck_library.log" | tr '\n' ' ')")
# Speed of the carried binaries (compare with docs/archive/benchmarks-history.md's figures of the ATen builds).
(cd examples/muladd && timeout 200 python3 benchmarks/bench_muladd.py --sizes 16777216,268435456 > "$LOGS/bench_muladd.txt" 2>&1; echo "bench muladd rc=$?"; grep -E "2\^" "$LOGS/bench_muladd.txt")
(cd examples/matmul && timeout 200 python3 benchmarks/bench_matmul.py --no-compile --sizes 4096,8192 > "$LOGS/bench_matmul.txt" 2>&1; echo "bench matmul rc=$?"; grep -E "\^3" "$LOGS/bench_matmul.txt")
# The other direction: build here against torch 2.11.
rm -rf /tmp/b211 && cp -r examples/myteam-ops /tmp/b211 && rm -f /tmp/b211/myteam_ops/_C*.so /tmp/b211/myteam_ops/_build_info.json
(cd /tmp/b211 && python3 setup.py build_ext --inplace > "$LOGS/build_211.log" 2>&1; echo "build on torch 2.11 rc=$?"; ls myteam_ops/_C*.so)
tar -czf "$FINAL_OUT/built_on_211.tar.gz" -C /tmp/b211 myteam_ops/_C.abi3.so myteam_ops/_build_info.json 2>/dev/null
tar -czf "$FINAL_OUT/stable_logs.tar.gz" -C "$LOGS" .
