#!/usr/bin/env bash
# Stop 51's device time (issue 29): template version 24 (the rowwise CUDA backward's float16/bfloat16
# derivatives in opmath::fast_float, GradOp::kFastMath) against version 23, on seed 50's 12 ops whose 2-byte
# cells were the worst of its fresh draw (stop 50) and three light controls. Phases, from the repository root:
#   bash docs/device/stop51.sh ab1   # both packages built side by side; version 24's backward suites (4 side by
#                                    # side), memcheck and racecheck of its 2-byte backwards
#   bash docs/device/stop51.sh ab2   # forward+backward and the backward alone, both packages, against torch.compile
#   bash docs/device/stop51.sh example  # the rmsnorm example in version 24: its CUDA suite and forward+backward
# Version 25 (fast_float's division as intrinsics, not inline div.full.f32) against version 24, the same ops:
#   bash docs/device/stop51.sh ab3   # both built, with the myteam-ops example (version 25); version 25's CUDA suites
#                                    # of 8 of the ops and of the example's fast_float ops; memcheck
#   bash docs/device/stop51.sh ab4   # forward+backward and the backward alone, both packages, against torch.compile
#   Carry .device/ab24, .device/ab25 (generated from this tree at version 25, as ab24 above), .device/myteam23
#   (examples/myteam-ops of a47eaa0, version 23, whose division is version 24's) and .whl (the nvidia-cutlass
#   wheel, for the example's matmul ops).
# Carry .device/ab24 and .device/ab23b, generated from seed 50's manifest with the ops below:
#   python docs/device/rowwise_sweep.py generate .device/ab24 --manifest .device/s50/rowwise_sweep.json \
#     --only $AB --backends cuda --backward fused        (this tree; .device/ab23b the same from a worktree at a47eaa0)
# (.device/s50/rowwise_sweep.json: python docs/device/rowwise_sweep.py generate .device/s50 --seed 50 --count 40 ...)
W=/tmp/kg51
. "$(dirname "$0")/stop_common.sh"

AB=r12,r16,r04,r09,r23,r10,gated,r14,r22,r08,r11,r19,softmax,layernorm,resrms
for p in ab23b ab24 ab25; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
build_ab() {
  (build $W/ab24/rsweep-ops 2>&1 | sed "s|^|ab24: |") &
  (build $W/ab23b/rsweep-ops 2>&1 | sed "s|^|ab23b: |") &
  wait
}

case ${1:-ab1} in
  ab1)
    t=$(date +%s); build_ab; echo "built in $(( $(date +%s) - t )) s"
    echo "${AB//,/ }" | tr ' ' '\n' | timeout ${T:-300} xargs -P 4 -I{} sh -c \
      'cd '"$W"'/ab24/rsweep-ops && python3 -m pytest -q -p no:cacheprovider -rfE tests/test_{}.py -m "not large" \
         -k "cuda and (backward or gradcheck)" > '"$W"'/test_{}.log 2>&1; echo "ab24 {}: $(tail -1 '"$W"'/test_{}.log)"' \
      | tee "$FINAL_OUT/tests_summary.txt"
    grep -h -E "^(FAILED|ERROR)" $W/test_*.log | cut -c1-240 > "$FINAL_OUT/tests_failures.txt"
    for log in $W/test_*.log; do grep -m 12 "^E  " "$log" | sed "s|^|$(basename "$log" .log): |"; done | cut -c1-240 >> "$FINAL_OUT/tests_failures.txt"
    head -5 "$FINAL_OUT/tests_failures.txt"
    echo "tests at $(( $(date +%s) - t )) s"
    timeout ${TS:-150} compute-sanitizer --tool memcheck python3 docs/device/sanitize_backward.py $W/ab24/rsweep-ops \
      --ops r12,r16,softmax --dtypes float16,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/memcheck: /"
    timeout ${TR:-150} compute-sanitizer --tool racecheck python3 docs/device/sanitize_backward.py $W/ab24/rsweep-ops \
      --ops r16 --dtypes bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/racecheck: /"
    echo "ab1 done in $(( $(date +%s) - t )) s" ;;
  ab2)
    t=$(date +%s); build_ab
    for ((i = 0; i < 8; i++)); do
      python3 docs/device/backward_bench.py $W/ab24/rsweep-ops --ops $AB --dtypes float16,bfloat16 --cols 1024,4096,16384,65536 \
        --prewarm --part $i/8 > $W/prewarm_$i.log 2>&1 &
    done
    wait; touch $W/prewarmed; echo "prewarm in $(( $(date +%s) - t )) s"; grep -h -m3 -E "Error|error" $W/prewarm_*.log | head -5
    for p in ab23b ab24; do
      timeout ${TB:-220} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $AB --dtypes float16,bfloat16 \
        --cols 1024,4096,16384 --rounds 1 --against compile --json "$FINAL_OUT/bwd_$p.json" > "$FINAL_OUT/bwd_$p.txt" 2>&1
      echo "$p bwd rc=$? at $(( $(date +%s) - t )) s"
    done
    for p in ab23b ab24; do
      timeout ${TL:-80} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $AB --dtypes bfloat16 \
        --cols 65536 --rounds 1 --against compile --json "$FINAL_OUT/long_$p.json" > "$FINAL_OUT/long_$p.txt" 2>&1
      echo "$p long rc=$? at $(( $(date +%s) - t )) s"
    done
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/bwd_ab23b.txt" "$FINAL_OUT/bwd_ab24.txt" | tail -60 ;;
  ab3)
    t=$(date +%s)
    if ls .whl/nvidia_cutlass-*.whl > /dev/null 2>&1 && [ ! -d /tmp/cutlass ]; then
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
    fi
    export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
    EX=$W/myteam-ops; rm -rf $EX; cp -r examples/myteam-ops $EX
    (cd $EX && MAX_JOBS=16 KERNELGEN_REQUIRE_CUDA=1 python3 setup.py build_ext --inplace > $W/myteam_build.log 2>&1
     echo "myteam-ops build rc=$? at $(( $(date +%s) - t )) s") &
    OLDEX=$W/myteam23; rm -rf $OLDEX; cp -r .device/myteam23 $OLDEX
    (cd $OLDEX && MAX_JOBS=16 KERNELGEN_REQUIRE_CUDA=1 python3 setup.py build_ext --inplace > $W/myteam23_build.log 2>&1
     echo "myteam23 build rc=$? at $(( $(date +%s) - t )) s") &
    (build $W/ab25/rsweep-ops 2>&1 | sed "s|^|ab25: |") &
    (build $W/ab24/rsweep-ops 2>&1 | sed "s|^|ab24: |") &
    wait; echo "built in $(( $(date +%s) - t )) s"
    {
      for op in r12 r16 r11 r10 gated softmax layernorm resrms; do echo "$W/ab25/rsweep-ops tests/test_$op.py ab25_$op"; done
      for op in gelu silu_mul softmax layernorm linear_gelu; do echo "$EX tests/test_$op.py ex_$op"; done
    } | timeout ${T:-270} xargs -P 4 -L 1 sh -c 'cd "$0" && python3 -m pytest -q -p no:cacheprovider -rfE "$1" -m "not large" \
          -k cuda > '"$W"'/test_"$2".log 2>&1; echo "$2: $(tail -1 '"$W"'/test_"$2".log)"' | tee "$FINAL_OUT/tests_summary_v25.txt"
    grep -h -E "^(FAILED|ERROR)" $W/test_*.log | cut -c1-240 > "$FINAL_OUT/tests_failures_v25.txt"
    head -5 "$FINAL_OUT/tests_failures_v25.txt"
    echo "tests at $(( $(date +%s) - t )) s"
    timeout ${TS:-100} compute-sanitizer --tool memcheck python3 docs/device/sanitize_backward.py $W/ab25/rsweep-ops \
      --ops r11,r12 --dtypes bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/memcheck: /"
    echo "ab3 done in $(( $(date +%s) - t )) s" ;;
  ab4)
    t=$(date +%s); build_ab
    (build $W/ab25/rsweep-ops 2>&1 | sed "s|^|ab25: |")
    if [ ! -f $W/prewarmed ]; then
      for ((i = 0; i < 8; i++)); do
        python3 docs/device/backward_bench.py $W/ab25/rsweep-ops --ops $AB --dtypes float16,bfloat16 --cols 1024,4096,16384,65536 \
          --prewarm --part $i/8 > $W/prewarm_$i.log 2>&1 &
      done
      wait; touch $W/prewarmed; echo "prewarm in $(( $(date +%s) - t )) s"
    fi
    for p in ab24 ab25; do
      timeout ${TB:-220} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $AB --dtypes float16,bfloat16 \
        --cols 1024,4096,16384 --rounds 1 --against compile --json "$FINAL_OUT/bwd_$p.json" > "$FINAL_OUT/bwd_$p.txt" 2>&1
      echo "$p bwd rc=$? at $(( $(date +%s) - t )) s"
    done
    for p in ab24 ab25; do
      timeout ${TL:-80} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $AB --dtypes bfloat16 \
        --cols 65536 --rounds 1 --against compile --json "$FINAL_OUT/long_$p.json" > /dev/null 2>&1
      echo "$p long rc=$? at $(( $(date +%s) - t )) s"
    done
    # The elementwise fast_float ops of the example, version 23's division (inline div.full.f32, as version 24's)
    # against version 25's, in one process each after the other, twice
    for r in 1 2; do
      for ex in myteam23 myteam-ops; do
        for op in gelu silu_mul; do
          (cd $W/$ex && timeout 60 python3 benchmarks/bench_$op.py --dtypes float16,bfloat16 --sizes 67108864,268435456 \
             --rounds 3 2>&1 | grep -v -i warn | tail -14 | sed "s|^|$r $ex $op: |")
        done
      done
    done
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/bwd_ab24.txt" "$FINAL_OUT/bwd_ab25.txt" | tail -60 ;;
  example)
    # The rmsnorm example as committed (version 24): built in place, its CUDA suite, then forward+backward against
    # torch.compile (one round).
    t=$(date +%s); PKG=$W/rmsnorm; rm -rf $PKG; cp -r examples/rmsnorm $PKG
    (cd $PKG && MAX_JOBS=16 KERNELGEN_REQUIRE_CUDA=1 python3 setup.py build_ext --inplace > $W/rmsnorm_build.log 2>&1
     echo "rmsnorm build rc=$? at $(( $(date +%s) - t )) s")
    (cd $PKG && timeout ${T:-120} python3 -m pytest -q -p no:cacheprovider -rfE tests -m "not large" -k cuda 2>&1 | tail -4)
    echo "tests at $(( $(date +%s) - t )) s"
    timeout ${TB:-150} python3 docs/device/backward_bench.py $PKG --dtypes float32,bfloat16 --cols 1024,4096,16384 --rounds 1 \
      --against compile > "$FINAL_OUT/rmsnorm_bwd.txt" 2>&1; echo "bench rc=$? at $(( $(date +%s) - t )) s"
    grep "fwd+bwd" "$FINAL_OUT/rmsnorm_bwd.txt" ;;
esac
