#!/usr/bin/env bash
# Prepared in stop 58 for the next session's device time (not run yet).
#   bash docs/device/stop59.sh cache   # docs/wip/launch-cache.patch (the rowwise backward's launch asks the occupancy
#                                      # API and the device's attributes once per device and build, not at every
#                                      # call) against HEAD: the rmsnorm example built both ways, the patched one's
#                                      # suite, then docs/device/host_cost.py on each, twice, in turn (stop 58: the
#                                      # step at 2^24 is bound by the host, ours 142-206 us against F.rms_norm's 91-124)
#     (.device/rms_cache: git worktree add /tmp/wt HEAD; cd /tmp/wt; git apply docs/wip/launch-cache.patch;
#      PYTHONPATH=/tmp/wt bash examples/regenerate.sh (without PYTHONPATH the editable install renders main's
#      templates); cp -r examples/rmsnorm /work/main/.device/rms_cache. Stop 58 made it so and compiled its
#      kernel file with nvcc for sm_90 on the dev machine: no error)
#   bash docs/device/stop59.sh multipass  # seed 57's r07 (0.76x of compile at float32 rows of 4096: its 1024-thread
#                                      # register build runs one block an SM for five backward reductions on two
#                                      # levels) and r00, r03, r09: the backward as the launch picks it against the
#                                      # multi-pass kernel forced (KG_FORCE_MULTIPASS=1, docs/wip/force-multipass.patch,
#                                      # an experiment, not for landing), float32/bfloat16 at rows of 2048-16384, two rounds
#     (.device/f57: in a worktree of HEAD with docs/wip/force-multipass.patch applied,
#      PYTHONPATH=<worktree> python docs/device/rowwise_sweep.py generate /work/main/.device/f57 \
#        --manifest .device/s57/rowwise_sweep.json --only r00,r03,r07,r09 --backends cuda --backward fused)
#   bash docs/device/stop59.sh large   # the examples' >2**31-element tests: stop58.sh large (carry .whl, see there)
W=/tmp/kg59
. "$(dirname "$0")/stop_common.sh"

example() {  # example DIR NAME JOBS: the package at DIR built in $W/NAME
  local t; t=$(date +%s)
  [ -d $W/$2 ] || cp -r $1 $W/$2
  (cd $W/$2 && ls ./*/_C*.so > /dev/null 2>&1 || MAX_JOBS=$3 KERNELGEN_REQUIRE_CUDA=1 python3 setup.py build_ext \
     --inplace > $W/build_$2.log 2>&1; echo "$2 built (rc=$?) in $(( $(date +%s) - t )) s")
}

[ -d .device/f57 ] && [ ! -d $W/f57 ] && cp -r .device/f57 $W/f57

case ${1:-cache} in
  multipass)
    O=r00,r03,r07,r09; C=2048,4096,8192,16384; build $W/f57/rsweep-ops
    for ((i = 0; i < 4; i++)); do
      python3 docs/device/backward_bench.py $W/f57/rsweep-ops --ops $O --dtypes float32,bfloat16 --cols $C \
        --prewarm --part $i/4 > $W/prewarm_mp_$i.log 2>&1 &
    done; wait
    for r in 1 2; do for mode in picked forced; do
      if [ $mode = forced ]; then export KG_FORCE_MULTIPASS=1; else unset KG_FORCE_MULTIPASS; fi
      timeout ${TB:-150} python3 docs/device/backward_bench.py $W/f57/rsweep-ops --ops $O --dtypes float32,bfloat16 \
        --cols $C --rounds 1 > "$FINAL_OUT/mp_${mode}_$r.txt" 2>&1
      echo "$mode round $r rc=$?"
    done; unset KG_FORCE_MULTIPASS
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/mp_picked_$r.txt" "$FINAL_OUT/mp_forced_$r.txt"; done ;;
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
  large)  # stop 58's phase, unchanged
    bash "$(dirname "$0")/stop58.sh" large ;;
esac
