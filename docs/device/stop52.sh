#!/usr/bin/env bash
# Stop 52's device time. Template version 27 (the rowwise backward's weight sums laid out [thread][weight][element]
# with an odd stride) against version 26, on 15 of seed 50's ops, 13 of them with weights; then a fresh draw, seed 52.
#   bash docs/device/stop52.sh ab1   # fast_divide_check.cu; both packages built side by side; version 27's backward
#                                    # and gradcheck suites (4 side by side); memcheck and racecheck of its backwards
#   bash docs/device/stop52.sh ab2   # forward+backward and the backward alone, both packages, against torch.compile
#   S=s52 bash docs/device/stop49.sh build|bwd|tests   # the fresh draw (docs/backward.md "Stop 52")
#   bash docs/device/stop52.sh narrow  # version 29's launch rule against version 28 (the phase says how)
#   bash docs/device/stop52.sh masks   # not run yet: version 29 against 27 on the ops version 28 changes
# Carry .device/ab26 and .device/ab27, generated from seed 50's manifest with the ops below:
#   python docs/device/rowwise_sweep.py generate .device/ab27 --manifest .device/s50/rowwise_sweep.json \
#     --only $AB --backends cuda --backward fused        (this tree; .device/ab26 the same from a worktree at 61703b2)
W=/tmp/kg52
. "$(dirname "$0")/stop_common.sh"

AB=r04,r20,r21,r13,r01,r22,r10,r14,r16,r19,resln,layernorm,rmsnorm,wsoftmax,resrms
for p in ab26 ab27; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
build_ab() {
  (build $W/ab27/rsweep-ops 2>&1 | sed "s|^|ab27: |") &
  (build $W/ab26/rsweep-ops 2>&1 | sed "s|^|ab26: |") &
  wait
}

case ${1:-ab1} in
  masks)
    # For the next session: version 29 (which holds version 28's terms inside the masks) against version 27 on
    # the nine ops of seed 50 that version 28 changes; of them version 29's launch rule changes none.
    #   python docs/device/rowwise_sweep.py generate .device/m29 --manifest .device/s50/rowwise_sweep.json \
    #     --only $MOPS --backends cuda --backward fused      (.device/m27 the same from a worktree at b5fa613)
    # Carry .device/m27 and .device/m29. MASKS=tests runs version 29's suites of the nine (4 side by side).
    MOPS=r12,r16,r11,r00,r08,r10,r14,r21,gated; t=$(date +%s)
    for p in m27 m29; do [ -d $W/$p ] || cp -r .device/$p $W/$p; done
    (build $W/m29/rsweep-ops 2>&1 | sed "s|^|m29: |") &
    (build $W/m27/rsweep-ops 2>&1 | sed "s|^|m27: |") &
    wait; echo "built in $(( $(date +%s) - t )) s"
    if [ "${MASKS:-bench}" = tests ]; then
      echo "${MOPS//,/ }" | tr ' ' '\n' | timeout ${T:-300} xargs -P 4 -I{} sh -c \
        'cd '"$W"'/m29/rsweep-ops && python3 -m pytest -q -p no:cacheprovider -rfE tests/test_{}.py -m "not large" -k cuda \
           > '"$W"'/mtest_{}.log 2>&1; echo "m29 {}: $(tail -1 '"$W"'/mtest_{}.log)"' | tee "$FINAL_OUT/masks_tests.txt"
      grep -h -E "^(FAILED|ERROR)" $W/mtest_*.log | cut -c1-240 | head -20
      exit 0
    fi
    for ((i = 0; i < 8; i++)); do
      python3 docs/device/backward_bench.py $W/m29/rsweep-ops --ops $MOPS --dtypes float32,float16,bfloat16 \
        --cols 1024,4096,16384 --prewarm --part $i/8 > $W/mprewarm_$i.log 2>&1 &
    done
    wait; echo "prewarm at $(( $(date +%s) - t )) s"
    for p in m27 m29; do
      timeout ${TB:-150} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $MOPS --dtypes float32,float16,bfloat16 \
        --cols 1024,4096,16384 --rounds 1 --against compile --json "$FINAL_OUT/bwd_$p.json" > "$FINAL_OUT/bwd_$p.txt" 2>&1
      echo "$p bwd rc=$? at $(( $(date +%s) - t )) s"
    done
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/bwd_m27.txt" "$FINAL_OUT/bwd_m29.txt" | tail -40 ;;
  narrow)
    # Version 29 (GradLaunch takes the narrow build where the wide one's code outgrows the instruction cache,
    # GradOp::kCode) against version 28 on seed 50's r04 and r10, the two ops whose choice it changes:
    #   python docs/device/rowwise_sweep.py generate .device/nar29 --manifest .device/s50/rowwise_sweep.json \
    #     --only r04,r10 --backends cuda --backward fused     (.device/nar28 the same from a worktree at e301ada)
    t=$(date +%s)
    for p in nar28 nar29; do [ -d $W/$p ] || cp -r .device/$p $W/$p; done
    (build $W/nar29/rsweep-ops 2>&1 | sed "s|^|nar29: |") &
    (build $W/nar28/rsweep-ops 2>&1 | sed "s|^|nar28: |") &
    wait; echo "built in $(( $(date +%s) - t )) s"
    for op in r04 r10; do
      (cd $W/nar29/rsweep-ops && timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_$op.py -m "not large" \
         -k "cuda and (backward or gradcheck)" 2>&1 | tail -1 | sed "s/^/nar29 $op: /") &
    done
    for ((i = 0; i < 4; i++)); do
      python3 docs/device/backward_bench.py $W/nar29/rsweep-ops --ops r04,r10 --dtypes float16,bfloat16 \
        --cols 1024,4096,16384 --prewarm --part $i/4 > $W/nprewarm_$i.log 2>&1 &
    done
    wait; echo "tests and prewarm at $(( $(date +%s) - t )) s"
    for r in 1 2; do
      for p in nar28 nar29; do
        timeout ${TB:-60} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops r04,r10 --dtypes float16,bfloat16 \
          --cols 1024,4096,16384 --rounds 1 --against compile --json "$FINAL_OUT/bwd_${p}_$r.json" > "$FINAL_OUT/bwd_${p}_$r.txt" 2>&1
        echo "$p round $r rc=$? at $(( $(date +%s) - t )) s"
      done
    done
    for r in 1 2; do python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/bwd_nar28_$r.txt" "$FINAL_OUT/bwd_nar29_$r.txt" | tail -14; done ;;
  ab1)
    t=$(date +%s)
    INC=$(python3 -c "import torch.utils.cpp_extension as c; print(' '.join('-I' + p for p in c.include_paths()))")
    (nvcc -std=c++17 -arch=sm_90 $INC -o $W/fdc docs/device/fast_divide_check.cu && timeout 60 $W/fdc) 2>&1 | tail -20 \
      | tee "$FINAL_OUT/fast_divide_check.txt"
    build_ab; echo "built in $(( $(date +%s) - t )) s"
    echo "${AB//,/ }" | tr ' ' '\n' | timeout ${T:-220} xargs -P 4 -I{} sh -c \
      'cd '"$W"'/ab27/rsweep-ops && python3 -m pytest -q -p no:cacheprovider -rfE tests/test_{}.py -m "not large" \
         -k "cuda and (backward or gradcheck)" > '"$W"'/test_{}.log 2>&1; echo "ab27 {}: $(tail -1 '"$W"'/test_{}.log)"' \
      | tee "$FINAL_OUT/tests_summary.txt"
    grep -h -E "^(FAILED|ERROR)" $W/test_*.log | cut -c1-240 > "$FINAL_OUT/tests_failures.txt"
    for log in $W/test_*.log; do grep -m 12 "^E  " "$log" | sed "s|^|$(basename "$log" .log): |"; done | cut -c1-240 >> "$FINAL_OUT/tests_failures.txt"
    head -5 "$FINAL_OUT/tests_failures.txt"
    echo "tests at $(( $(date +%s) - t )) s"
    timeout ${TS:-100} compute-sanitizer --tool memcheck python3 docs/device/sanitize_backward.py $W/ab27/rsweep-ops \
      --ops r04,r20,rmsnorm --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/memcheck: /"
    timeout ${TR:-100} compute-sanitizer --tool racecheck python3 docs/device/sanitize_backward.py $W/ab27/rsweep-ops \
      --ops r04,layernorm --dtypes bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/racecheck: /"
    echo "ab1 done in $(( $(date +%s) - t )) s" ;;
  ab2)
    t=$(date +%s); build_ab
    for ((i = 0; i < 8; i++)); do
      python3 docs/device/backward_bench.py $W/ab27/rsweep-ops --ops $AB --dtypes float32,float16,bfloat16 \
        --cols 1024,4096,16384,65536 --prewarm --part $i/8 > $W/prewarm_$i.log 2>&1 &
    done
    wait; echo "prewarm in $(( $(date +%s) - t )) s"; grep -h -m3 -E "Error|error" $W/prewarm_*.log | head -5
    for p in ab26 ab27; do
      timeout ${TB:-200} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $AB --dtypes float32,float16,bfloat16 \
        --cols 1024,4096,16384 --rounds 1 --against compile --json "$FINAL_OUT/bwd_$p.json" > "$FINAL_OUT/bwd_$p.txt" 2>&1
      echo "$p bwd rc=$? at $(( $(date +%s) - t )) s"
    done
    for p in ab26 ab27; do
      timeout ${TL:-80} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $AB --dtypes bfloat16 \
        --cols 65536 --rounds 1 --against compile --json "$FINAL_OUT/long_$p.json" > /dev/null 2>&1
      echo "$p long rc=$? at $(( $(date +%s) - t )) s"
    done
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/bwd_ab26.txt" "$FINAL_OUT/bwd_ab27.txt" | tail -60 ;;
esac
