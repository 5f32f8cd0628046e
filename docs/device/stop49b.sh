#!/usr/bin/env bash
# Stop 49, second call: template version 22 (the backward's shared terms with a level; every masked argument a
# term) against version 21, both packages built on one machine, then the new package's GPU suites.
#   version 21 (a worktree at 70d5256) and version 22 (this tree), the same seven ops, generated on the dev machine:
#   python docs/device/rowwise_sweep.py generate .device/ab<v> --manifest .device/s48/rowwise_sweep.json \
#     --manifest docs/results/stop48/backward_shared_manifest.json --only softmax,log_softmax,lse,wsoftmax,range4,r00,q02 \
#     --backends cuda --backward fused
#   (the fixed softmax, log_softmax, lse, wsoftmax and range4, whose backward terms now read per-row values; seed
#   48's r00, whose six masks called their functions in version 21 and whose GPU suite failed 34 tests in
#   stop49.sh's run; seed 36's r02 as q02, whose costly terms read a per-row value.) The first run of this script
#   (docs/results/stop49/ab1) had four of them, its version 22 without the step-by-step register count.
# Carry .device/ab21 and .device/ab22. One call: bash docs/device/stop49b.sh
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"; export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0
export CXX=/usr/bin/g++ CC=/usr/bin/gcc
W=/tmp/kg49b; mkdir -p $W
for p in ab21 ab22; do [ -d $W/$p ] || cp -r .device/$p $W/$p; done
OPS=softmax,log_softmax,lse,wsoftmax,range4,r00,q02
nvidia-smi --query-gpu=name --format=csv,noheader
t=$(date +%s)
for p in ab21 ab22; do
  (RSWEEP_PKG=$W/$p/rsweep-ops MAX_JOBS=8 OUT=$W/out_$p bash docs/device/rowwise_sweep.sh build 2>&1 | sed "s|^|$p: |" | tail -3) &
done
wait; echo "built in $(( $(date +%s) - t )) s"
# Version 22's suites, four side by side (seven at once ran an H100 out of memory in stop 48).
echo "${OPS//,/ }" | tr ' ' '\n' | timeout 200 xargs -P 4 -I{} sh -c \
  'cd '"$W"'/ab22/rsweep-ops && python3 -m pytest -q -p no:cacheprovider -rfE tests/test_{}.py -m "not large" -k cuda > '"$W"'/test_{}.log 2>&1; echo "ab22 {}: $(tail -1 '"$W"'/test_{}.log)"'
grep -h "^FAILED" $W/test_*.log | cut -c1-200 | head -40 > "$FINAL_OUT/tests_failed.txt"; cat "$FINAL_OUT/tests_failed.txt" | head -12
timeout 80 compute-sanitizer --tool memcheck python3 docs/device/sanitize_backward.py $W/ab22/rsweep-ops --ops r00,q02,softmax \
  --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|MISS|Error" | head -6 | sed "s/^/memcheck: /"
timeout 60 compute-sanitizer --tool racecheck python3 docs/device/sanitize_backward.py $W/ab22/rsweep-ops --ops r00,softmax \
  --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|MISS|Error" | head -6 | sed "s/^/racecheck: /"
# Forward+backward, old then new (torch.compile's graphs are the same: one prewarm fills the cache for both).
for ((i = 0; i < 4; i++)); do
  python3 docs/device/backward_bench.py $W/ab22/rsweep-ops --ops $OPS --dtypes float32,bfloat16 --cols 1024,4096,16384 \
    --prewarm --part $i/4 > $W/prewarm_$i.log 2>&1 &
done
wait
for p in ab21 ab22; do
  timeout ${T:-150} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $OPS --dtypes float32,bfloat16 \
    --cols 1024,4096,16384 --rounds ${ROUNDS:-2} --against compile --json "$FINAL_OUT/bwd_$p.json" > "$FINAL_OUT/bwd_$p.txt" 2>&1
  echo "$p bwd rc=$? at $(( $(date +%s) - t )) s"
done
