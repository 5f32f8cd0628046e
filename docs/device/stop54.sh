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
#   bash docs/device/stop54.sh div  # version 32 (one reciprocal where it serves several quotients, -(p - q) shares
#                                   # p - q) against version 31 on eleven ops whose gradients divide most: seed 52's
#                                   # r00, r14, r15, seed 53's r01, r03, r04, r13 (t..), seed 50's r12, r16, r20 (q..)
#                                   # and softmax; version 32's backward suites; two rounds
#     (.device/x54/div.json = docs/results/stop54/div.json; .device/j54 generated from it at 5b0e7c9 (version 31),
#      .device/k54 at version 32, both --only $ODIV --backends cuda --backward fused)
#   bash docs/device/stop54.sh verify  # the rmsnorm example built and its CUDA suites; memcheck and racecheck of
#                                      # version 32's backward kernels (k54: t03, q16, softmax)
#   bash docs/device/stop54.sh s54  # a fresh draw in version 32: seed 54's first eight random rowwise ops, their
#                                   # backward suites, forward+backward against compile (float32/bfloat16, rows of
#                                   # 4096 and 16384, one round)
#     (python docs/device/rowwise_sweep.py generate .device/s54 --seed 54 --count 31 --only r00,...,r07 \
#        --backends cuda --backward fused)
W=/tmp/kg54
. "$(dirname "$0")/stop_common.sh"

OPX=r00,r02,r09,r14,r15,t03,t11,softmax,layernorm,resln
ODIV=r00,r14,r15,t01,t03,t04,t13,q12,q16,q20,softmax
for p in g54 h54 i54 j54 k54 s54; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done

case ${1:-px} in
  px)
    TB=${TB:-150} small_ab px g54 h54 $OPX float32,bfloat16 1024,4096,16384,65536 150 90 ;;
  pxc)  # the cells px found slower, and some it found faster, timed again: old, new, old, new
    rounds pxc "g54 h54" resln,layernorm,t11,t03 float32,bfloat16 1024,16384 ;;
  pxi)  # version 30, the patch, and the patch with each reduction's warp fold right after its fold (i54)
    rounds pxi "g54 h54 i54" resln,layernorm,t11,t03,r14,r15 float32,bfloat16 1024,4096,16384 ;;
  div)
    TB=${TB:-100} small_ab div j54 k54 $ODIV float32,bfloat16 1024,4096,16384 150 70
    second_round div j54 k54 $ODIV float32,bfloat16 1024,4096,16384 ;;
  s54)
    t=$(date +%s); O=r00,r01,r02,r03,r04,r05,r06,r07; build $W/s54/rsweep-ops
    for ((i = 0; i < 4; i++)); do
      python3 docs/device/backward_bench.py $W/s54/rsweep-ops --ops $O --dtypes float32,bfloat16 --cols 4096,16384 \
        --prewarm --part $i/4 > $W/prewarm_s54_$i.log 2>&1 &
    done
    echo "${O//,/ }" | tr ' ' '\n' | timeout ${T:-120} xargs -P 4 -I{} sh -c \
      'cd '"$W"'/s54/rsweep-ops && python3 -m pytest -q -p no:cacheprovider -rfE tests/test_{}.py -m "not large" \
         -k "cuda and (backward or gradcheck)" > '"$W"'/test_s54_{}.log 2>&1; echo "s54 {}: $(tail -1 '"$W"'/test_s54_{}.log)"' \
      | tee "$FINAL_OUT/s54_tests.txt"
    wait; echo "tests and prewarm at $(( $(date +%s) - t )) s"
    timeout ${TB:-90} python3 docs/device/backward_bench.py $W/s54/rsweep-ops --ops $O --dtypes float32,bfloat16 \
      --cols 4096,16384 --rounds 1 --against compile --json "$FINAL_OUT/s54.json" > "$FINAL_OUT/s54.txt" 2>&1
    echo "bench rc=$? at $(( $(date +%s) - t )) s"; tail -14 "$FINAL_OUT/s54.txt" ;;
  verify)
    t=$(date +%s); build $W/k54/rsweep-ops &
    PKG=$W/rmsnorm; [ -d $PKG ] || cp -r examples/rmsnorm $PKG
    (cd $PKG && MAX_JOBS=12 KERNELGEN_REQUIRE_CUDA=1 python3 setup.py build_ext --inplace > $W/rmsnorm_build.log 2>&1
     echo "rmsnorm example build rc=$? at $(( $(date +%s) - t )) s"
     timeout ${TE:-150} python3 -m pytest -q -p no:cacheprovider -rfE tests -m "not large" -k cuda 2>&1 | tail -3 \
       | sed "s/^/rmsnorm example: /")
    wait; echo "example and k54 at $(( $(date +%s) - t )) s"
    timeout ${TS:-100} compute-sanitizer --tool memcheck python3 docs/device/sanitize_backward.py $W/k54/rsweep-ops \
      --ops t03,q16,softmax --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/memcheck: /"
    timeout ${TR:-100} compute-sanitizer --tool racecheck python3 docs/device/sanitize_backward.py $W/k54/rsweep-ops \
      --ops t03,softmax --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/racecheck: /"
    echo "verify done in $(( $(date +%s) - t )) s" ;;
esac
