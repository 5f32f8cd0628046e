#!/usr/bin/env bash
# Stop 49, third call: template version 22 as committed (terms with a level only where the backward costs at least
# rowplan.LEVEL_MIN_COST; one term per distinct masked argument, none for a bare column) on the 13 ops of seed 48
# whose backward it changes, against version 21 on four of them (seed 48's worst cells in stop49.sh's run).
#   python docs/device/rowwise_sweep.py generate .device/c22 --manifest .device/s48/rowwise_sweep.json \
#     --only r00,r01,r02,r07,r10,r14,r15,r16,r17,r21,r22,r23,range4 --backends cuda --backward fused   (this tree)
#   the same from a worktree at 70d5256 into .device/c21 with --only r07,r15,r22,r23                   (version 21)
# Carry .device/c21 and .device/c22. One call: bash docs/device/stop49c.sh
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"; export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0
export CXX=/usr/bin/g++ CC=/usr/bin/gcc
W=/tmp/kg49c; mkdir -p $W
for p in c21 c22; do [ -d $W/$p ] || cp -r .device/$p $W/$p; done
ALL=r00,r01,r02,r07,r10,r14,r15,r16,r17,r21,r22,r23,range4
AB=r07,r15,r22,r23
nvidia-smi --query-gpu=name --format=csv,noheader
t=$(date +%s)
(RSWEEP_PKG=$W/c22/rsweep-ops MAX_JOBS=12 OUT=$W/out_c22 bash docs/device/rowwise_sweep.sh build 2>&1 | sed "s|^|c22: |" | tail -2) &
(RSWEEP_PKG=$W/c21/rsweep-ops MAX_JOBS=4 OUT=$W/out_c21 bash docs/device/rowwise_sweep.sh build 2>&1 | sed "s|^|c21: |" | tail -2) &
wait; echo "built in $(( $(date +%s) - t )) s"
echo "${ALL//,/ }" | tr ' ' '\n' | timeout 220 xargs -P 4 -I{} sh -c \
  'cd '"$W"'/c22/rsweep-ops && python3 -m pytest -q -p no:cacheprovider -rfE tests/test_{}.py -m "not large" -k cuda > '"$W"'/test_{}.log 2>&1; echo "c22 {}: $(tail -1 '"$W"'/test_{}.log)"' | tee "$FINAL_OUT/tests_summary.txt"
grep -h "^FAILED" $W/test_*.log | cut -c1-200 | head -40 > "$FINAL_OUT/tests_failed.txt"; head -8 "$FINAL_OUT/tests_failed.txt"
timeout 60 compute-sanitizer --tool memcheck python3 docs/device/sanitize_backward.py $W/c22/rsweep-ops --ops r07,r22 \
  --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|MISS|Error" | head -4 | sed "s/^/memcheck: /"
for ((i = 0; i < 4; i++)); do
  python3 docs/device/backward_bench.py $W/c22/rsweep-ops --ops $AB --dtypes float32,bfloat16 --cols 1024,16384 \
    --prewarm --part $i/4 > $W/prewarm_$i.log 2>&1 &
done
wait
for p in c21 c22; do
  timeout 90 python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $AB --dtypes float32,bfloat16 \
    --cols 1024,16384 --rounds 1 --against compile --json "$FINAL_OUT/bwd_$p.json" > "$FINAL_OUT/bwd_$p.txt" 2>&1
  echo "$p bwd rc=$? at $(( $(date +%s) - t )) s"
done
