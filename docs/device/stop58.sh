#!/usr/bin/env bash
# Prepared in stop 57 for the next session's device time (not run yet). Carry .whl (the nvidia-cutlass wheel:
# python -m pip download nvidia-cutlass==4.2.0.0 --no-deps --only-binary=:all: -d .whl) for `large`.
#   bash docs/device/stop58.sh profile  # the rmsnorm example built; one forward+backward profiled at 2^24 and 2^26
#                                       # elements (docs/device/profile_step.py): the wall against the kernels' time
#                                       # and the CUDA runtime calls, ours and F.rms_norm's (stop 57: bfloat16 at 2^24
#                                       # took about the time of 2^26)
#   bash docs/device/stop58.sh large    # the four examples built and their >2**31-element tests (-m large), one
#                                       # example at a time (stop 57 ran every other test of theirs)
#   bash docs/device/stop58.sh host     # after profile: the host's share of each part of the step (docs/device/host_cost.py)
#   bash docs/device/stop58.sh s57      # seed 57's fresh draw (never run on a GPU in stop 57): the ten random rowwise
#                                       # ops r00-r09 (CUDA, fused backward) and the elementwise e15-e39; their CUDA
#                                       # suites, then forward+backward against compile (rowwise float32/bfloat16 at
#                                       # rows of 4096 and 16384; elementwise float32/float16/bfloat16 at 2^26), one round
#     (.device/s57: python docs/device/rowwise_sweep.py generate .device/s57 --seed 57 --count 32 \
#        --only r00,r01,r02,r03,r04,r05,r06,r07,r08,r09 --backends cuda --backward fused;
#      .device/e57: python docs/device/sweep.py generate .device/e57 --seed 57 --count 40 --only e15,...,e39)
#   bash docs/device/stop58.sh pow      # template version 40 (float16/bfloat16 pow and log on one log2f) against 39:
#                                       # seed 57's elementwise ops with pow or log (e57 at version 39, e57n at 40), their
#                                       # CUDA suites at 40, then two rounds of both (forward+backward and the backward
#                                       # alone, float16, bfloat16 and float32, whose code is unchanged); and two rowwise
#                                       # ops with pow and log (docs/results/stop58/pow.json), their CUDA suites
#     (.device/e57n: as e57, at version 40; .device/p40: python docs/device/rowwise_sweep.py generate .device/p40 \
#        --manifest docs/results/stop58/pow.json --backends cuda --backward fused)
W=/tmp/kg58
. "$(dirname "$0")/stop_common.sh"

example() {  # example NAME JOBS: built in $W/ex_NAME
  local n=$1 t; t=$(date +%s)
  [ -d $W/ex_$n ] || cp -r examples/$n $W/ex_$n
  (cd $W/ex_$n && ls ./*/_C*.so > /dev/null 2>&1 || MAX_JOBS=$2 KERNELGEN_REQUIRE_CUDA=1 python3 setup.py build_ext \
     --inplace > $W/build_ex_$n.log 2>&1; echo "example $n built (rc=$?) in $(( $(date +%s) - t )) s")
}

for p in s57 e57 e57n p40; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
for p in e57 e57n; do [ -d $W/$p/sweep-ops ] && [ ! -e $W/$p/rsweep-ops ] && ln -s sweep-ops $W/$p/rsweep-ops; done
R=r00,r01,r02,r03,r04,r05,r06,r07,r08,r09
E=$(seq 15 39 | sed 's/^/e/' | paste -sd,)

case ${1:-profile} in
  host)  # the host's cost of each part of the rmsnorm example's step (docs/device/host_cost.py), after profile
    example rmsnorm 16
    python3 docs/device/host_cost.py $W/ex_rmsnorm --op rmsnorm --shapes 64x1024,16384x1024,4096x4096,16384x4096 \
      --cprofile 2>&1 | tee "$FINAL_OUT/host_rmsnorm.txt" ;;
  pow)
    P=e15,e18,e19,e20,e22,e23,e24,e25,e26,e28,e29,e31,e32,e33,e35,e36,e38,e39; t=$(date +%s)
    build $W/e57/rsweep-ops & build $W/e57n/rsweep-ops & build $W/p40/rsweep-ops & wait
    echo "built at $(( $(date +%s) - t )) s"
    for ((i = 0; i < 3; i++)); do
      python3 docs/device/backward_bench.py $W/e57n/rsweep-ops --ops $P --dtypes ${D:-float16,bfloat16,float32} \
        --prewarm --part $i/3 > $W/prewarm_pow_$i.log 2>&1 &
    done
    K=${K:-cuda} suites pow e57n $P ${T:-200} 6
    K=${K:-cuda} suites powrw p40 p1,p2 ${T:-150} 2
    wait; echo "suites and prewarm at $(( $(date +%s) - t )) s"
    for r in 1 2; do for p in e57 e57n; do
      A=; [ $r$p = 1e57n ] && A="--against compile"
      timeout ${TB:-100} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $P --dtypes ${D:-float16,bfloat16,float32} \
        --rounds 1 $A > "$FINAL_OUT/pow_${p}_$r.txt" 2>&1
      echo "$p round $r rc=$? at $(( $(date +%s) - t )) s"
    done; python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/pow_e57_$r.txt" "$FINAL_OUT/pow_e57n_$r.txt" | tail -${TL:-4}; done ;;
  builds)  # everything the other phases build, side by side (the profile then runs on a quiet CPU)
    t=$(date +%s)
    example rmsnorm 4 & build $W/s57/rsweep-ops & build $W/e57/rsweep-ops & wait
    echo "built in $(( $(date +%s) - t )) s" ;;
  s57)
    t=$(date +%s)
    build $W/s57/rsweep-ops & build $W/e57/rsweep-ops & wait
    for ((i = 0; i < 3; i++)); do
      python3 docs/device/backward_bench.py $W/s57/rsweep-ops --ops $R --dtypes float32,bfloat16 --cols 4096,16384 \
        --prewarm --part $i/3 > $W/prewarm_s57_$i.log 2>&1 &
      python3 docs/device/backward_bench.py $W/e57/rsweep-ops --ops $E --dtypes float32,float16,bfloat16 \
        --prewarm --part $i/3 > $W/prewarm_e57_$i.log 2>&1 &
    done
    K=${K:-cuda} suites s57 s57 $R ${T:-200} 6
    K=${K:-cuda} suites e57 e57 $E ${T:-150} 6
    wait; echo "suites and prewarm at $(( $(date +%s) - t )) s"
    timeout ${TB:-100} python3 docs/device/backward_bench.py $W/s57/rsweep-ops --ops $R --dtypes float32,bfloat16 \
      --cols 4096,16384 --rounds 1 --against compile --json "$FINAL_OUT/s57.json" > "$FINAL_OUT/s57.txt" 2>&1
    echo "s57 bench rc=$? at $(( $(date +%s) - t )) s"
    timeout ${TB:-100} python3 docs/device/backward_bench.py $W/e57/rsweep-ops --ops $E --dtypes float32,float16,bfloat16 \
      --rounds 1 --against compile --json "$FINAL_OUT/e57.json" > "$FINAL_OUT/e57.txt" 2>&1
    echo "e57 bench rc=$? at $(( $(date +%s) - t )) s" ;;
  profile)
    example rmsnorm 16
    python3 docs/device/profile_step.py $W/ex_rmsnorm --op rmsnorm --shapes 16384x1024,4096x4096,16384x4096,65536x1024 \
      --dtypes bfloat16,float32 2>&1 | tee "$FINAL_OUT/profile_rmsnorm.txt" ;;
  large)
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
    export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
    for e in muladd:2 matmul:3 rmsnorm:3 myteam-ops:8; do example ${e%%:*} ${e##*:} & done; wait
    for n in muladd matmul rmsnorm myteam-ops; do
      (cd $W/ex_$n && timeout ${TL:-120} python3 -m pytest -q -p no:cacheprovider -rfEs tests -m large > $W/large_$n.log 2>&1
       echo "$n large: $(tail -1 $W/large_$n.log)")
    done | tee "$FINAL_OUT/examples_large.txt"
    grep -h -E "^(FAILED|ERROR|SKIPPED)" $W/large_*.log | cut -c1-200 | head -8 | tee -a "$FINAL_OUT/examples_large.txt" ;;
esac
