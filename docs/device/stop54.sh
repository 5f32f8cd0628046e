#!/usr/bin/env bash
# Stop 54's device time.
#   bash docs/device/stop54.sh px   # docs/wip/pass-exchange.patch (as of c2ca69d; version 31 since) alone (the
#                                   # backward's register and cluster kernels complete a pass's reductions with
#                                   # one barrier; the cluster build's rule unchanged) against version 30, on ten ops: seed 52's r00, r02, r09, r14,
#                                   # r15 (7-11 backward reductions), seed 53's r03 and r11 (t03, t11: a 2-block
#                                   # cluster at rows of 16384 and a weak float16 cell at 1024), and seed 50's
#                                   # softmax, layernorm and resln; the patched package's backward suites
#     (.device/x54/mix.json = docs/results/stop54/mix.json: those ten ops' manifest entries, renamed where two
#      seeds share an id;
#      .device/g54 (c2ca69d): python docs/device/rowwise_sweep.py generate .device/g54 --manifest .device/x54/mix.json \
#        --only $OPX --backends cuda --backward fused            (c2ca69d, version 30)
#      .device/h54: the same from a worktree of c2ca69d with docs/wip/pass-exchange.patch applied, PYTHONPATH=<worktree>;
#      since then, the same at HEAD)
#   bash docs/device/stop54.sh pxc  # px's five slower cells and some faster ones again, two interleaved rounds
#   bash docs/device/stop54.sh pxi  # version 30, the patch, and the patch with each reduction's warp fold and
#                                   # slot written right after its fold (.device/i54: generated as h54, from a
#                                   # worktree with that change too, --only resln,layernorm,t11,t03,r14,r15)
W=/tmp/kg54
. "$(dirname "$0")/stop_common.sh"

OPX=r00,r02,r09,r14,r15,t03,t11,softmax,layernorm,resln
for p in g54 h54 i54; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done

# rounds TAG "PKGS" OPS DTYPES COLS: the packages built side by side, compile's references prewarmed, then two
# rounds of the packages in turn (forward+backward and the backward alone), each package's table against the first's.
rounds() {
  local tag=$1 pkgs=$2 ops=$3 dtypes=$4 cols=$5 t i p r; t=$(date +%s)
  for p in $pkgs; do (build $W/$p/rsweep-ops 2>&1 | sed "s|^|$p: |") & done; wait
  for ((i = 0; i < 4; i++)); do
    python3 docs/device/backward_bench.py $W/${pkgs%% *}/rsweep-ops --ops $ops --dtypes $dtypes --cols $cols \
      --prewarm --part $i/4 > $W/prewarm_${tag}_$i.log 2>&1 &
  done
  wait; echo "built and prewarmed in $(( $(date +%s) - t )) s"
  for r in 1 2; do for p in $pkgs; do
    timeout ${TB:-80} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $ops --dtypes $dtypes \
      --cols $cols --rounds 1 > "$FINAL_OUT/${tag}_${p}_$r.txt" 2>&1
    echo "$p round $r rc=$? at $(( $(date +%s) - t )) s"
  done; done
  for r in 1 2; do for p in ${pkgs#* }; do
    echo "round $r: ${pkgs%% *} -> $p"
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/${tag}_${pkgs%% *}_$r.txt" "$FINAL_OUT/${tag}_${p}_$r.txt" | tail -1
  done; done
}

case ${1:-px} in
  px)
    TB=${TB:-150} small_ab px g54 h54 $OPX float32,bfloat16 1024,4096,16384,65536 150 90 ;;
  pxc)  # the cells px found slower, and some it found faster, timed again: old, new, old, new
    rounds pxc "g54 h54" resln,layernorm,t11,t03 float32,bfloat16 1024,16384 ;;
  pxi)  # version 30, the patch, and the patch with each reduction's warp fold right after its fold (i54)
    rounds pxi "g54 h54 i54" resln,layernorm,t11,t03,r14,r15 float32,bfloat16 1024,4096,16384 ;;
esac
