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
W=/tmp/kg57
. "$(dirname "$0")/stop_common.sh"

for p in n36 n37 h37; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done

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
esac
