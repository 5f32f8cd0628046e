#!/usr/bin/env bash
# Stop 50's device time (issues 28/29), phases run from the repository root:
#   bash docs/device/stop50.sh r11   # seed 48's r11 alone (template version 22), its CUDA suite with every
#                                    # failure's full report: stop 49's run failed one test it did not name.
#                                    # Carry .device/r11:
#     python docs/device/rowwise_sweep.py generate .device/r11 --seed 48 --count 40 --only r11 --backends cuda --backward fused
#   bash docs/device/stop50.sh ab1   # template version 23 (the backward's cluster build) against version 22 on 14 ops of
#                                    # seed 48 (its worst rows of 16384, and light controls): both packages built, version
#                                    # 23's backward suites, memcheck and racecheck with the kernels each launch took
#   bash docs/device/stop50.sh ab2   # forward+backward and the backward alone, both packages, against torch.compile
#   Carry .device/ab22 and .device/ab23, generated with the ops below from seed 48's manifest:
#     python docs/device/rowwise_sweep.py generate .device/ab23 --manifest .device/s48/rowwise_sweep.json \
#       --only $AB --backends cuda --backward fused           (this tree; .device/ab22 the same from a worktree at eaba8d7)
#   bash docs/device/stop50.sh s50 build|bwd|tests   # seed 50's fresh draw (version 23), stop49.sh's phases
#   bash docs/device/stop50.sh alone                 # seed 50's suites that ran out of memory side by side, alone
# Ran in stop 50, in this order: r11, ab1 and ab2 twice (the first with the cluster build's first version:
# docs/results/stop50/ab_first; then as committed: docs/results/stop50/ab), s50 build (inside ab1), s50 bwd
# (HALF=1 and 2, T=200 ROUNDS=1 PARTS=8), s50 tests (HALF=1 T=230 TS=60 SAN=r06,r10; HALF=2 T=230 TS=1), alone,
# example.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"; export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0
export CXX=/usr/bin/g++ CC=/usr/bin/gcc
W=/tmp/kg50; mkdir -p $W
nvidia-smi --query-gpu=name --format=csv,noheader

build() {  # build DIR: the package under .device/DIR, built in place on every core
  local pkg=$1 t; t=$(date +%s)
  ls "$pkg"/rsweep_ops/_C*.so > /dev/null 2>&1 && return
  (cd "$pkg" && MAX_JOBS=16 KERNELGEN_REQUIRE_CUDA=1 NVCC_APPEND_FLAGS="-Xptxas -v" python3 setup.py build_ext --inplace \
     > "$W/build_$(basename "$(dirname "$pkg")").log" 2>&1; echo "build $pkg rc=$? in $(( $(date +%s) - t )) s")
}

AB=r01,r05,r06,r09,r10,r14,r15,r16,r22,r23,quad4,softmax,layernorm,resrms
for p in ab22 ab23; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
build_ab() {
  (build $W/ab23/rsweep-ops 2>&1 | sed "s|^|ab23: |") &
  (build $W/ab22/rsweep-ops 2>&1 | sed "s|^|ab22: |") &
  wait
  grep -h "grad_cluster_rows_kernel" -A2 $W/build_ab23.log | grep -c "[1-9][0-9]* bytes spill stores" | sed "s/^/ab23 cluster builds that spill: /"
}

case ${1:-r11} in
  r11)
    PKG=.device/r11/rsweep-ops; build $PKG
    (cd $PKG && timeout ${T:-300} python3 -m pytest -q -p no:cacheprovider -rfE tests/test_r11.py -m "not large" -k cuda \
       > "$FINAL_OUT/r11_tests.log" 2>&1; echo "r11 tests rc=$?")
    tail -3 "$FINAL_OUT/r11_tests.log"; grep -E "^(FAILED|ERROR)" "$FINAL_OUT/r11_tests.log" | cut -c1-300
    # The same test 20 times (a flaky test fails some of them), where one failed.
    for name in $(grep -E "^FAILED" "$FINAL_OUT/r11_tests.log" | sed 's/^FAILED //; s/ - .*//' | head -2); do
      (cd $PKG && python3 -m pytest -q -p no:cacheprovider "$name" --count 1 > /dev/null 2>&1
       for i in $(seq 20); do python3 -m pytest -q -p no:cacheprovider "$name" 2>&1 | tail -1; done | sort | uniq -c)
    done ;;
  ab1)
    # Seed 50's package (phase s50 below) is built beside them, on the same cores.
    t=$(date +%s)
    [ -d .device/s50 ] && (S=s50 bash docs/device/stop49.sh build > $W/s50_build.txt 2>&1; echo "s50 built at $(( $(date +%s) - t )) s") &
    build_ab; wait; echo "built in $(( $(date +%s) - t )) s"; cat $W/s50_build.txt 2>/dev/null | tail -3
    echo "${AB//,/ }" | tr ' ' '\n' | timeout ${T:-240} xargs -P 4 -I{} sh -c \
      'cd '"$W"'/ab23/rsweep-ops && python3 -m pytest -q -p no:cacheprovider -rfE tests/test_{}.py -m "not large" \
         -k "cuda and (backward or gradcheck)" > '"$W"'/test_{}.log 2>&1; echo "ab23 {}: $(tail -1 '"$W"'/test_{}.log)"' \
      | tee "$FINAL_OUT/tests_summary.txt"
    grep -h -E "^(FAILED|ERROR)" $W/test_*.log | cut -c1-240 > "$FINAL_OUT/tests_failures.txt"
    for log in $W/test_*.log; do grep -m 12 "^E  " "$log" | sed "s|^|$(basename "$log" .log): |"; done | cut -c1-240 >> "$FINAL_OUT/tests_failures.txt"
    head -5 "$FINAL_OUT/tests_failures.txt"
    python3 docs/device/sanitize_backward.py $W/ab23/rsweep-ops --ops r06,r23,softmax --dtypes float32,bfloat16 --kernels \
      2>&1 | grep -E "launched|Error" | sed "s/^/plain: /"
    # (Under the sanitizer the profiler lists no kernels: stop 50's first run.)
    timeout ${TS:-120} compute-sanitizer --tool memcheck python3 docs/device/sanitize_backward.py $W/ab23/rsweep-ops \
      --ops r06,r23,softmax --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/memcheck: /"
    echo "ab1 done in $(( $(date +%s) - t )) s" ;;
  ab2)
    t=$(date +%s); build_ab
    for ((i = 0; i < 6; i++)); do
      python3 docs/device/backward_bench.py $W/ab23/rsweep-ops --ops $AB --dtypes float32,float16,bfloat16 --cols 4096,16384,65536 \
        --prewarm --part $i/6 > $W/prewarm_$i.log 2>&1 &
    done
    wait; echo "prewarm in $(( $(date +%s) - t )) s"; grep -h -m3 -E "Error|error" $W/prewarm_*.log | head -5
    for p in ab22 ab23; do
      timeout ${TB:-200} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $AB --dtypes float32,float16,bfloat16 \
        --cols 4096,16384 --rounds 1 --against compile --json "$FINAL_OUT/bwd_$p.json" > "$FINAL_OUT/bwd_$p.txt" 2>&1
      echo "$p bwd rc=$? at $(( $(date +%s) - t )) s"
      timeout ${TL:-80} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $AB --dtypes float32,bfloat16 \
        --cols 65536 --rounds 1 --against compile --json "$FINAL_OUT/long_$p.json" > "$FINAL_OUT/long_$p.txt" 2>&1
      echo "$p long rc=$? at $(( $(date +%s) - t )) s"
    done
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/bwd_ab22.txt" "$FINAL_OUT/bwd_ab23.txt" | tail -60
    timeout ${TR:-200} compute-sanitizer --tool racecheck python3 docs/device/sanitize_backward.py $W/ab23/rsweep-ops \
      --ops r06,softmax --dtypes bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/racecheck: /" ;;
  alone)
    # Seed 50's suites that ran out of GPU memory four side by side (tests phase, HALF=2), each run alone:
    #   python docs/device/rowwise_sweep.py generate .device/s50f --manifest .device/s50/rowwise_sweep.json \
    #     --only r14,r15,r21,r23,r24 --backends cuda --backward fused      (carry .device/s50f)
    PKG=$W/s50f/rsweep-ops; [ -d $W/s50f ] || cp -r .device/s50f $W/s50f; build $PKG
    for op in r14 r15 r21 r23 r24; do
      (cd $PKG && timeout ${T:-100} python3 -m pytest -q -p no:cacheprovider -rfE tests/test_$op.py -m "not large" -k cuda \
         > $W/alone_$op.log 2>&1; echo "$op alone: $(tail -1 $W/alone_$op.log)")
      grep -E "^(FAILED|ERROR)" $W/alone_$op.log | cut -c1-200
    done | tee "$FINAL_OUT/alone_summary.txt" ;;
  example)
    # The rmsnorm example as committed (its backward kernels' code moved with grad_held_row; its forward PTX is
    # version 22's, docs/device/ptx_identity.sh): built in place, its CUDA suite, then forward+backward against
    # torch.compile (one round; its figures of stop 49 are in docs/results/stop49/bwd2, seed 48's rmsnorm).
    t=$(date +%s); PKG=$W/rmsnorm; rm -rf $PKG; cp -r examples/rmsnorm $PKG
    (cd $PKG && MAX_JOBS=16 KERNELGEN_REQUIRE_CUDA=1 python3 setup.py build_ext --inplace > $W/rmsnorm_build.log 2>&1
     echo "rmsnorm build rc=$? at $(( $(date +%s) - t )) s")
    (cd $PKG && timeout ${T:-120} python3 -m pytest -q -p no:cacheprovider -rfE tests -m "not large" -k cuda 2>&1 | tail -4)
    echo "tests at $(( $(date +%s) - t )) s"
    timeout ${TB:-150} python3 docs/device/backward_bench.py $PKG --dtypes float32,bfloat16 --cols 1024,4096,16384 --rounds 1 \
      --against compile > "$FINAL_OUT/rmsnorm_bwd.txt" 2>&1; echo "bench rc=$? at $(( $(date +%s) - t )) s"
    grep "fwd+bwd" "$FINAL_OUT/rmsnorm_bwd.txt" ;;
  s50)
    # Seed 50, a fresh draw of 40 rowwise ops in template version 23, through stop49.sh's phases:
    #   python docs/device/rowwise_sweep.py generate .device/s50 --seed 50 --count 40 --backends cuda --backward fused
    # carry .device/s50; bash docs/device/stop50.sh s50 build|bwd|tests (HALF=1|2, T, PARTS as stop49.sh reads them).
    shift; S=s50 bash docs/device/stop49.sh "$@" ;;
esac
