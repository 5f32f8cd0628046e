#!/usr/bin/env bash
# Prepared in stop 58 for the next session's device time (not run yet).
#   bash docs/device/stop59.sh cache   # docs/wip/launch-cache.patch (the rowwise backward's launch asks the occupancy
#                                      # API and the device's attributes once per device and build, not at every
#                                      # call) against HEAD: the rmsnorm example built both ways, the patched one's
#                                      # suite, then docs/device/host_cost.py on each, twice, in turn (stop 58: the
#                                      # step at 2^24 is bound by the host, ours 142-206 us against F.rms_norm's 91-124)
#     (.device/rms_cache: git worktree add /tmp/wt HEAD; cd /tmp/wt; git apply docs/wip/launch-cache.patch;
#      bash examples/regenerate.sh; cp -r examples/rmsnorm /work/main/.device/rms_cache)
#   bash docs/device/stop59.sh large   # the examples' >2**31-element tests (carry .whl: see stop58.sh)
W=/tmp/kg59
. "$(dirname "$0")/stop_common.sh"

example() {  # example DIR NAME JOBS: the package at DIR built in $W/NAME
  local t; t=$(date +%s)
  [ -d $W/$2 ] || cp -r $1 $W/$2
  (cd $W/$2 && ls ./*/_C*.so > /dev/null 2>&1 || MAX_JOBS=$3 KERNELGEN_REQUIRE_CUDA=1 python3 setup.py build_ext \
     --inplace > $W/build_$2.log 2>&1; echo "$2 built (rc=$?) in $(( $(date +%s) - t )) s")
}

case ${1:-cache} in
  cache)
    example examples/rmsnorm head 8 & example .device/rms_cache cache 8 & wait
    (cd $W/cache && timeout ${TT:-200} python3 -m pytest -q -p no:cacheprovider -rfEs tests -m "not large" \
       > $W/test_cache.log 2>&1; echo "patched rmsnorm suite: $(tail -1 $W/test_cache.log)") | tee "$FINAL_OUT/cache_tests.txt"
    grep -h -E "^(FAILED|ERROR)" $W/test_cache.log | cut -c1-200 | head -5 | tee -a "$FINAL_OUT/cache_tests.txt"
    for r in 1 2; do for p in head cache; do
      python3 docs/device/host_cost.py $W/$p --op rmsnorm --shapes 64x1024,16384x1024,4096x4096,16384x4096 \
        2>&1 | grep -v Warning > "$FINAL_OUT/host_${p}_$r.txt"
      echo "== $p round $r"; cat "$FINAL_OUT/host_${p}_$r.txt"
    done; done ;;
  large)
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
    export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
    for e in muladd:2 matmul:3 rmsnorm:3 myteam-ops:8; do example examples/${e%%:*} ex_${e%%:*} ${e##*:} & done; wait
    for n in muladd matmul rmsnorm myteam-ops; do
      (cd $W/ex_$n && timeout ${TL:-120} python3 -m pytest -q -p no:cacheprovider -rfEs tests -m large > $W/large_$n.log 2>&1
       echo "$n large: $(tail -1 $W/large_$n.log)")
    done | tee "$FINAL_OUT/examples_large.txt"
    grep -h -E "^(FAILED|ERROR|SKIPPED)" $W/large_*.log | cut -c1-200 | head -8 | tee -a "$FINAL_OUT/examples_large.txt" ;;
esac
