#!/usr/bin/env bash
# Prepared in stop 56 for the next session's device time (not run yet).
#   bash docs/device/stop57.sh nowt   # the multi-pass backward for ops without weights since versions 37-38 (one
#                                     # row a group, its reductions in registers; never timed in stop 56) against
#                                     # version 36: seed 56's r01, r02, r03, softmax and csilu, float32 at rows of
#                                     # 16384 and 65536 and bfloat16 at 262144 (the multi-pass kernel in both), two
#                                     # rounds; the suites of the five (HEAD) first
#     (.device/n36: python docs/device/rowwise_sweep.py generate .device/n36 --manifest docs/results/stop56/nowt.json \
#        --backends cuda --backward fused, from a worktree of d8187db (version 36), PYTHONPATH=<worktree>;
#      .device/n37: the same at HEAD, version 38 or later)
#   bash docs/device/stop57.sh race   # racecheck of version 37's multi-pass backward with weights (layernorm, the
#                                     # grouped.json package's; every launch shape of sanitize_backward.py, float32)
#     (.device/h37: python docs/device/rowwise_sweep.py generate .device/h37 --manifest docs/results/stop56/grouped.json \
#        --backends cuda --backward fused   at HEAD)
# Added in stop 57 (the examples had not run their full suites on a GPU since template version 9 for myteam-ops,
# version 31 for rmsnorm; carry .whl, the nvidia-cutlass wheel: python -m pip download nvidia-cutlass==4.2.0.0
# --no-deps --only-binary=:all: -d .whl, for the matmul ops' Hopper path; the device machine has no network):
#   bash docs/device/stop57.sh examples  # the four examples built (CUTLASS path included) and every suite but the
#                                        # >2**31-element tests, a test file a process, six side by side; version
#                                        # 39's package (.device/n39, nowt.json at HEAD) built and its suites
#   bash docs/device/stop57.sh rest      # then (builds kept in $W while the machine is warm): the examples' large
#                                        # tests one at a time, every example's benchmark (forward; rmsnorm and
#                                        # myteam-ops forward+backward too), version 39 against 36 (two rounds)
W=/tmp/kg57
. "$(dirname "$0")/stop_common.sh"

for p in n36 n37 n39 h37; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done

case ${1:-nowt} in
  nowt)
    O=r01,r02,r03,softmax,csilu; t=$(date +%s)
    for p in n36 n37; do (build $W/$p/rsweep-ops 2>&1 | sed "s|^|$p: |") & done; wait
    suites nowt n37 $O ${T:-150} 5
    echo "suites at $(( $(date +%s) - t )) s"
    TB=${TB:-80} rounds nowt32 "n36 n37" $O float32 16384,65536
    TB=${TB:-80} rounds nowt16 "n36 n37" $O bfloat16 262144 ;;
  race)
    build $W/h37/rsweep-ops
    timeout ${TR:-500} compute-sanitizer --tool racecheck python3 docs/device/sanitize_backward.py $W/h37/rsweep-ops \
      --ops layernorm --dtypes float32 2>&1 | grep -E "SUMMARY|RAISED|Error|hazard" | head -8 | sed "s/^/racecheck: /" ;;
  examples)
    t=$(date +%s)
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
    export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source KERNELGEN_REQUIRE_CUDA=1
    for e in muladd:2 matmul:3 rmsnorm:2 myteam-ops:7; do
      n=${e%%:*}
      ([ -d $W/ex_$n ] || cp -r examples/$n $W/ex_$n
       cd $W/ex_$n && MAX_JOBS=${e##*:} python3 setup.py build_ext --inplace > $W/build_ex_$n.log 2>&1
       echo "example $n build rc=$? at $(( $(date +%s) - t )) s"; grep -i "cutlass\|hopper" $W/build_ex_$n.log | head -2) &
    done
    (build $W/n39/rsweep-ops 2>&1 | sed "s|^|n39: |") &
    wait
    for n in muladd matmul rmsnorm myteam-ops; do ls $W/ex_$n/tests/test_*.py | sed "s|^|$n |"; done \
      | timeout ${TE:-330} xargs -P 6 -L 1 sh -c 'cd '"$W"'/ex_$0 && f=$(basename $1 .py) && python3 -m pytest -q \
          -p no:cacheprovider -rfEs tests/$f.py -m "not large" > '"$W"'/ex_$0_$f.log 2>&1; echo "$0 $f: $(tail -1 '"$W"'/ex_$0_$f.log)"' \
      | tee "$FINAL_OUT/examples_tests.txt"
    grep -h -E "^(FAILED|ERROR)" $W/ex_*_test_*.log | cut -c1-240 | head -10 | tee -a "$FINAL_OUT/examples_tests.txt"
    grep -h "^SKIPPED" $W/ex_*_test_*.log | cut -c1-160 | sort | uniq -c | sort -rn | head -8 >> "$FINAL_OUT/examples_tests.txt"
    echo "example suites at $(( $(date +%s) - t )) s"
    suites v39 n39 r01,r02,r03,softmax,csilu ${T:-120} 5 ;;
  rest)
    t=$(date +%s)
    for n in muladd matmul rmsnorm myteam-ops; do
      (cd $W/ex_$n && timeout ${TL:-100} python3 -m pytest -q -p no:cacheprovider -rfEs tests -m large > $W/ex_${n}_large.log 2>&1
       echo "$n large: $(tail -1 $W/ex_${n}_large.log)")
    done | tee "$FINAL_OUT/examples_large.txt"
    grep -h -E "^(FAILED|ERROR|SKIPPED)" $W/ex_*_large.log | cut -c1-200 | head -8 | tee -a "$FINAL_OUT/examples_large.txt"
    echo "large at $(( $(date +%s) - t )) s"
    for n in muladd matmul rmsnorm myteam-ops; do
      (cd $W/ex_$n && timeout ${TBE:-150} python3 benchmarks/run_all.py --rounds 2 --dtypes float32,bfloat16 > $W/bench_$n.txt 2>&1
       echo "== $n forward rc=$?"; cat $W/bench_$n.txt) >> "$FINAL_OUT/examples_bench.txt"
    done
    for n in rmsnorm myteam-ops; do
      (cd $W/ex_$n && timeout ${TBE:-150} python3 benchmarks/run_all.py --rounds 2 --dtypes float32,bfloat16 --backward \
         > $W/benchb_$n.txt 2>&1; echo "== $n forward+backward rc=$?"; cat $W/benchb_$n.txt) >> "$FINAL_OUT/examples_bench.txt"
    done
    echo "benchmarks at $(( $(date +%s) - t )) s"
    TB=${TB:-80} rounds v39 "n36 n39" r01,r02,r03,softmax,csilu bfloat16,float32 65536 ;;
esac
