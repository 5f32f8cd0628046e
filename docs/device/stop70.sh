#!/usr/bin/env bash
# Prepared in stop 69 and run in stop 70 (phases tiles74 and tiles75 side by side on two GPUs, then placement74 and
# placement75, noise, host and graphs; results in docs/results/stop70/). Stop 70 wrapped its first calls so that
# $OUT returned one archive, bounded below the call's limit so the archive is made:
#   R=$OUT; mkdir -p /tmp/o; OUT=/tmp/o timeout 540 bash docs/device/stop70.sh PHASE; tar czf $R/PHASE.tgz -C /tmp/o .
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
#
# Version 54's weights' kernel takes 16 x 64 unless that spills more than 16 bytes a thread (then 8 x 64). On seed
# 75, r00_tl (bound by arithmetic) ran 1.43x faster at 8 x 64 with no spill at 16 x 64, and r05_tl bfloat16
# (memory-bound, two weights) ran slower than version 53's 64 x 64 (docs/backward.md "Stop 69"). These phases read
# the GPU's registers, spills and resident programs at five tiles and time every op with each tile forced, to fit
# an occupancy (or bytes-in-flight) term on seeds 74 and 75 together, then check it on a fresh seed.
#   tiles74   carry .device/f74 (seed 74 at version 54)
#   tiles75   carry .device/f75 (seed 75 at version 54)
#   noise     carry .device/f75: stop 69's backward_bench.py "bwd alone" of one package moved by up to 50% between
#             processes (docs/backward.md "Stop 69"), while weight_tile.py's forced tiles repeated within 1%. Three
#             processes of each tool on r05_tl and r06_tl, the GPU's clocks, power and temperature logged around each,
#             to tell the process (allocations, compiled variants) from the machine (clocks).
W=/tmp/kg70
. "$(dirname "$0")/stop_common.sh"

for p in f74 f75; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
TILES=8x64x4,16x64x4,32x64x4,16x128x4,8x128x4
W74="r00_tl:2 r01_tl:3 r02_tl:3 r03_tl:2 r04_tl:2 r05_tl:2 r06_tl:1 r07_tl:3 r08_tl:1 r09_tl:3"
W75="r00_tl:3 r01_tl:3 r02_tl:1 r03_tl:3 r04_tl:2 r05_tl:2 r06_tl:2 r07_tl:3 r08_tl:3 r09_tl:1"

tiles() {
  local seed=$1 all=$2 t cols opw; t=$(date +%s); build $W/$seed/rsweep-ops
  timeout 120 python3 docs/device/weight_counts.py $W/$seed/rsweep-ops --tiles $TILES \
    > "$FINAL_OUT/counts_$seed.txt" 2>&1; echo "counts at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/counts_$seed.txt"
  for cols in 16384 65536; do
    for opw in $all; do
      timeout 45 python3 docs/device/weight_tile.py $W/$seed/rsweep-ops --op ${opw%%:*} --weights ${opw##*:} \
        --tiles auto,$TILES --cols $cols 2>&1 | grep -v Warn >> "$FINAL_OUT/tiles_${seed}_$cols.txt"
    done; echo "tiles $cols at $(( $(date +%s) - t )) s"
  done; cat "$FINAL_OUT"/tiles_${seed}_*.txt
}

gpu_state() {
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv,noheader | sed "s/^/$1: /" >> "$FINAL_OUT/gpu_state.txt"
}

case ${1:-tiles74} in
  tiles74) tiles f74 "$W74" ;;
  tiles75) tiles f75 "$W75" ;;
  placement74|placement75)  # placement.py on the cells whose timings moved most between identical tiles
    seed=f${1#placement}; build $W/$seed/rsweep-ops
    if [ -n "${CELLS:-}" ]; then cells=$CELLS
    elif [ $seed = f74 ]; then cells="r00_tl:2:bfloat16:65536 r03_tl:2:float32:16384 r00_tl:2:float32:16384 r04_tl:2:bfloat16:65536"
    else cells="r05_tl:2:float32:16384 r05_tl:2:bfloat16:65536 r04_tl:2:bfloat16:65536 r06_tl:2:bfloat16:16384"; fi
    for c in $cells; do IFS=: read -r op w dt cols <<< "$c"
      timeout 60 python3 docs/device/placement.py $W/$seed/rsweep-ops --op $op --weights $w --dtype $dt --cols $cols \
        ${KERNELS:+--kernels} 2>&1 | grep -v Warn >> "$FINAL_OUT/placement_$seed.txt"
    done; cat "$FINAL_OUT/placement_$seed.txt" ;;
  host)  # host_overhead.py: the host's time per call, OPS (default r00_tl-r04_tl) of seed 75, then where it goes
    build $W/f75/rsweep-ops
    timeout 400 python3 docs/device/host_overhead.py $W/f75/rsweep-ops --ops ${OPS:-r00_tl,r01_tl,r02_tl,r03_tl,r04_tl} \
      2>&1 | grep -v -i warn > "$FINAL_OUT/host_${OPS:-r00}.txt"
    [ -n "${PROFILE:-}" ] && timeout 100 python3 docs/device/host_overhead.py $W/f75/rsweep-ops --ops $PROFILE \
      --dtypes bfloat16 --cols 65536 --profile > "$FINAL_OUT/host_profile.txt" 2>&1
    cat "$FINAL_OUT"/host_*.txt ;;
  graphs)  # backward_bench.py --graphs over seed 75's OPS (CUDA_VISIBLE_DEVICES picks the GPU): eager and graphed
    build $W/f75/rsweep-ops; t=$(date +%s); n=$(echo ${OPS//,/ } | wc -w)
    for ((i = 0; i < n; i++)); do
      timeout 150 python3 docs/device/backward_bench.py $W/f75/rsweep-ops --ops $OPS --dtypes float32,bfloat16 \
        --cols 16384,65536 --prewarm --part $i/$n > $W/prewarm_graphs_${OPS%%,*}_$i.log 2>&1 &
    done; wait; echo "prewarmed at $(( $(date +%s) - t )) s"
    timeout ${TB:-200} python3 docs/device/backward_bench.py $W/f75/rsweep-ops --ops $OPS --dtypes float32,bfloat16 \
      --cols 16384,65536 --rounds 1 --against compile --graphs --json "$FINAL_OUT/graphs_${OPS%%,*}.json" 2>&1 \
      | grep -v -i warn > "$FINAL_OUT/graphs_${OPS%%,*}.txt"; echo "timed at $(( $(date +%s) - t )) s" ;;
  noise)
    build $W/f75/rsweep-ops
    for i in 1 2 3; do
      gpu_state "bench $i before"
      timeout 60 python3 docs/device/backward_bench.py $W/f75/rsweep-ops --ops r05_tl,r06_tl --dtypes float32,bfloat16 \
        --cols 16384,65536 --rounds 1 --against compile 2>&1 | grep "fwd+bwd" | sed "s/^/bench $i: /" >> "$FINAL_OUT/noise.txt"
      gpu_state "bench $i after"
      timeout 40 python3 docs/device/weight_tile.py $W/f75/rsweep-ops --op r05_tl --weights 2 --tiles auto,16x64x4 \
        --cols 16384,65536 2>&1 | grep -v Warn | sed "s/^/tile $i: /" >> "$FINAL_OUT/noise.txt"
    done; sort -k2,5 "$FINAL_OUT/noise.txt"; cat "$FINAL_OUT/gpu_state.txt" ;;
esac
