#!/usr/bin/env bash
# Stop 80's device phases (docs/backward.md "Stop 80"). Packages, generated on the dev machine and carried:
#   .device/f85   --seed 85 --only softmax,layernorm,r00,...,r09 --backends triton --backward fused (version 68)
#   .device/c85   --seed 85 --only r00,...,r09 --backends cuda --backward fused (version 69)
#   .device/f84   --seed 84 (stop 78's draw, version 68), for version 67's checks
# Wrap each call so that $OUT returns what the phase wrote even when it is cut short, in one file:
#   OUT=$OUT timeout 570 bash docs/device/stop80.sh PHASE 2>&1 | tee $OUT/log.txt; cd $OUT && tar czf /tmp/x.tgz * \
#     && rm -rf $OUT/* && mv /tmp/x.tgz $OUT/
#   fresh85   carry .device/f85: the fresh draw on the GPU. Its backward, gradcheck and training suites while compile's
#             references are prewarmed, then forward+backward against compile (graphed), rows of 1024-16384,
#             float32 and bfloat16
#   cuda85    carry .device/c85: the same for the CUDA backend
#   check     carry .whl and .device/c85: the three examples built and their whole suites (versions 69 and 70), beside
#             the fresh draw's CUDA ops built and their GPU suites
# Do not name a shell variable T, TB, TK, K, ORDER or TS for anything but what stop_common.sh reads them as.
# Stop 80 ran check, then (warm, T=1: the suites had passed in check) cuda85, then fresh85 (T=150 TB=200) and
# the three suites that fresh85's 150 s cut short.
W=${W:-/tmp/kg80}
. "$(dirname "$0")/stop_common.sh"
ALL=r00,r01,r02,r03,r04,r05,r06,r07,r08,r09

timed() {  # timed PKG OPS: forward+backward against compile, graphed, into $OUT/PKG.txt and PKG.json
  timeout ${TB:-300} python3 docs/device/backward_bench.py $W/$1/rsweep-ops --ops $2 --dtypes float32,bfloat16 \
    --cols ${COLS:-1024,4096,16384} --rounds 1 --against compile --graphs --json "$FINAL_OUT/$1.json" \
    > "$FINAL_OUT/$1.txt" 2>&1; echo "bench $1 rc=$?"
  tail -26 "$FINAL_OUT/$1.txt" | cut -c1-200
}

case ${1:-fresh85} in
  fresh85)
    [ -d $W/f85 ] || cp -r .device/f85 $W/f85
    OPS85=${OPS:-softmax_tl,layernorm_tl,${ALL//,/_tl,}_tl}
    K="(cuda and (backward or gradcheck)) or training" prepared f85 $OPS85 float32,bfloat16 ${COLS:-1024,4096,16384}
    timed f85 $OPS85 ;;
  cuda85)
    [ -d $W/c85 ] || cp -r .device/c85 $W/c85
    K="(cuda and (backward or gradcheck)) or training" prepared c85 ${OPS:-$ALL} float32,bfloat16 ${COLS:-1024,4096,16384}
    timed c85 ${OPS:-$ALL} ;;
  check)
    # The three examples built and their whole suites (versions 69 and 70: the CUDA rowwise ops' CPU and CUDA
    # tensor code, one copy a package), beside the fresh draw's CUDA ops built and their GPU suites.
    [ -d $W/c85 ] || cp -r .device/c85 $W/c85
    (build $W/c85/rsweep-ops; K="cuda and not large" suites c85 c85 ${OPS:-$ALL} ${T:-300} 5 > /dev/null) \
      > $FINAL_OUT/c85_log.txt 2>&1 &
    examples ""
    wait; cat $FINAL_OUT/c85_log.txt $FINAL_OUT/c85_tests.txt ;;
esac
