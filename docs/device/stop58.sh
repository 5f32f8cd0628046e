#!/usr/bin/env bash
# Prepared in stop 57 for the next session's device time (not run yet). Carry .whl (the nvidia-cutlass wheel:
# python -m pip download nvidia-cutlass==4.2.0.0 --no-deps --only-binary=:all: -d .whl) for `large`.
#   bash docs/device/stop58.sh profile  # the rmsnorm example built; one forward+backward profiled at 2^24 and 2^26
#                                       # elements (docs/device/profile_step.py): the wall against the kernels' time
#                                       # and the CUDA runtime calls, ours and F.rms_norm's (stop 57: bfloat16 at 2^24
#                                       # took about the time of 2^26)
#   bash docs/device/stop58.sh large    # the four examples built and their >2**31-element tests (-m large), one
#                                       # example at a time (stop 57 ran every other test of theirs)
W=/tmp/kg58
. "$(dirname "$0")/stop_common.sh"

example() {  # example NAME JOBS: built in $W/ex_NAME
  local n=$1 t; t=$(date +%s)
  [ -d $W/ex_$n ] || cp -r examples/$n $W/ex_$n
  (cd $W/ex_$n && ls ./*/_C*.so > /dev/null 2>&1 || MAX_JOBS=$2 KERNELGEN_REQUIRE_CUDA=1 python3 setup.py build_ext \
     --inplace > $W/build_ex_$n.log 2>&1; echo "example $n built (rc=$?) in $(( $(date +%s) - t )) s")
}

case ${1:-profile} in
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
