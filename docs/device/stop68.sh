#!/usr/bin/env bash
# Run in stop 68 (prepared in stop 67). Wrap each call so that $OUT returns one archive, bounded below the
# call's limit so the archive is made:
#   R=$OUT; mkdir -p /tmp/o; OUT=/tmp/o timeout 540 bash docs/device/stop68.sh PHASE; tar czf $R/PHASE.tgz -C /tmp/o .
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
#
#   verify    template version 52 on seed 73 (carry .device/f73): the GPU's counts of the weights' kernel at both
#             tiles (weight_counts.py), the backward timed with the package's choice ("auto") beside each tile
#             forced (weight_tile.py, rows of 16384), the CUDA backward suites of every op, and memcheck over the
#             backward launches of four ops.
#   examples  the examples built side by side and their whole suites (carry .whl: the cutlass wheel).
#   fused     version 53 against version 52 on seed 74 (below).
# Three shorter calls ran by hand: backward_bench.py --against compile on f73 (f73_bwd.txt), backward_kernels.py on
# f73 (kernels_f73.txt), and weight_tile.py --tiles auto,64x64x4,16x64x4 on f74 for every op (tiles_f74.txt).
W=/tmp/kg68
. "$(dirname "$0")/stop_common.sh"

for p in f73 f74 f74o; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
NW="r00_tl r01_tl r02_tl r03_tl r04_tl r05_tl r06_tl r07_tl r08_tl r09_tl"

case ${1:-verify} in
  verify)
    t=$(date +%s); build $W/f73/rsweep-ops
    python3 docs/device/weight_counts.py $W/f73/rsweep-ops --tiles 64x64x4,16x64x4 > "$FINAL_OUT/counts_f73.txt" 2>&1 &
    for op in $NW; do
      n=$(python3 -c "import json; print(len([o for o in json.load(open('$W/f73/rowwise_sweep.json'))['ops'] if o['name'] == '$op'][0]['weights']))")
      [ "$n" = 0 ] && continue; echo "$op $n" >> $W/weighted.txt
      timeout 150 python3 docs/device/weight_tile.py $W/f73/rsweep-ops --op $op --weights $n --tiles auto,64x64x4,16x64x4 \
        --cols 16384 --size 16777216 > $W/tiles_warm_$op.log 2>&1 &
    done; wait; echo "compiled at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/counts_f73.txt"
    while read -r op n; do
      timeout 60 python3 docs/device/weight_tile.py $W/f73/rsweep-ops --op $op --weights $n --tiles auto,64x64x4,16x64x4 \
        --cols 16384 2>&1 | grep -v Warn >> "$FINAL_OUT/tiles_f73.txt"
    done < $W/weighted.txt; echo "timed at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/tiles_f73.txt"
    K="cuda and backward" suites v73 f73 $(echo $NW | tr ' ' ',') 200 5
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 python3 docs/device/sanitize_backward.py \
      $W/f73/rsweep-ops --ops r00_tl,r03_tl,r05_tl,r08_tl --dtypes float32,bfloat16 > "$FINAL_OUT/backward_memcheck.log" 2>&1
    echo "backward memcheck: rc=$? $(grep 'ERROR SUMMARY' "$FINAL_OUT/backward_memcheck.log" | tail -1) at $(( $(date +%s) - t )) s" ;;
  examples)
    examples "" ;;
  fused)
    # Template version 53 (a long row's inputs' gradients in the weights' kernel, the long kernel writing the
    # per-row values only) against version 52 on seed 74, drawn for it (every one of its ten ops has weights):
    # carry .device/f74 (version 53) and .device/f74o (version 52, generated from a worktree of 5634918 with
    # PYTHONPATH pointing at it). The CUDA backward suites of version 53, both packages timed at the long rows,
    # then each one's kernels at 16384, and memcheck over version 53's backward launches of two ops.
    ALL=r00_tl,r01_tl,r02_tl,r03_tl,r04_tl,r05_tl,r06_tl,r07_tl,r08_tl,r09_tl
    K="cuda and backward" TB=120 small_ab fab f74o f74 $ALL float32,bfloat16 16384,65536 180 50
    t=$(date +%s)
    timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 python3 docs/device/sanitize_backward.py \
      $W/f74/rsweep-ops --ops r00_tl,r07_tl --dtypes float32,bfloat16 > "$FINAL_OUT/fused_memcheck.log" 2>&1
    echo "fused memcheck: rc=$? $(grep 'ERROR SUMMARY' "$FINAL_OUT/fused_memcheck.log" | tail -1) at $(( $(date +%s) - t )) s"
    for p in f74o f74; do
      timeout 40 python3 docs/device/backward_kernels.py $W/$p/rsweep-ops --ops r04_tl,r07_tl --dtypes bfloat16 \
        --cols 16384 > "$FINAL_OUT/kernels_$p.txt" 2>&1; echo "kernels $p rc=$? at $(( $(date +%s) - t )) s"
    done; grep -h -E "^==|weight_grad|long_kernel" "$FINAL_OUT"/kernels_f74*.txt | cut -c1-120 ;;
esac
