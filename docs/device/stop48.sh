#!/usr/bin/env bash
# Stop 48 (issue 29): the rowwise CUDA backward's shared terms (template version 21): a costly per-element
# term several of the backward's steps read, and a masked max's or min's argument (exact arithmetic), computed
# once per element (docs/backward.md, "Stop 48"). Against version 20, both packages in one machine:
#   six heavy backwards: seed 47's r03, r04, r15, r19, r20 and seed 36's r02 (q02),
#   docs/results/stop48/backward_shared_manifest.json:
#   python docs/device/rowwise_sweep.py generate .device/bwnew --manifest docs/results/stop48/backward_shared_manifest.json \
#     --backends cuda --backward fused                                          (this tree: version 21)
#   git worktree add /tmp/wtold d9f2b87; (cd /tmp/wtold && PYTHONPATH=/tmp/wtold python docs/device/rowwise_sweep.py \
#     generate /work/main/.device/bwold ...same...)                             (version 20)
# Carry .device/bwnew and .device/bwold. Phases, back to back (docs/device/README.md):
#   bash docs/device/stop48.sh build   # both packages, one after the other (16 jobs, ptxas -v)
#   bash docs/device/stop48.sh bwd     # forward+backward and backward alone (backward_bench.py), old then new
#   bash docs/device/stop48.sh tests   # the new package's GPU suites, memcheck and racecheck of its backward
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"; export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0
export CXX=/usr/bin/g++ CC=/usr/bin/gcc
W=/tmp/kg48; mkdir -p $W
for p in bwnew bwold; do [ -d $W/$p ] || cp -r .device/$p $W/$p; done
NEW=$W/bwnew/rsweep-ops; OLD=$W/bwold/rsweep-ops
OPS=${OPS:-r03,r04,r15,r19,r20,q02,r07}

build_pkgs() {  # each package unless built, one at a time with every core
  for p in $NEW $OLD; do
    ls "$p"/rsweep_ops/_C*.so > /dev/null 2>&1 && continue
    RSWEEP_PKG=$p MAX_JOBS=16 OUT=$W/out_$(basename $(dirname $p)) bash docs/device/rowwise_sweep.sh build \
      | sed "s|^|$(basename $(dirname $p)): |"
    cp $W/out_$(basename $(dirname $p))/rsweep_build.log.gz "$FINAL_OUT/build_$(basename $(dirname $p)).log.gz" 2>/dev/null
  done
}

nvidia-smi --query-gpu=name --format=csv,noheader
case ${1:-build} in
  build)
    build_pkgs ;;
  bwd)
    build_pkgs
    for p in $OLD $NEW; do
      tag=$(basename $(dirname $p))
      timeout ${T:-200} python3 docs/device/backward_bench.py $p --ops "$OPS" --dtypes ${DTYPES:-float32,bfloat16} \
        --cols ${COLS:-1024,4096,16384} --rounds ${ROUNDS:-2} --json "$FINAL_OUT/bwd_$tag.json" > "$FINAL_OUT/bwd_$tag.txt" 2>&1
      echo "$tag bwd rc=$?"; tail -3 "$FINAL_OUT/bwd_$tag.txt"
    done ;;
  tests)
    build_pkgs
    echo "${OPS//,/ }" | tr ' ' '\n' | timeout ${T:-240} xargs -P 6 -I{} sh -c \
      'cd '"$NEW"' && python3 -m pytest -q -p no:cacheprovider -rfE tests/test_{}.py -m "not large" > '"$FINAL_OUT"'/test_{}.log 2>&1; echo "{}: $(tail -1 '"$FINAL_OUT"'/test_{}.log)"' | tee "$FINAL_OUT/tests_summary.txt"
    cat $FINAL_OUT/test_*.log | grep -E "^(FAILED|ERROR)|^E  " | head -60 > "$FINAL_OUT/tests_failures.txt"; rm -f $FINAL_OUT/test_*.log
    for tool in memcheck racecheck; do
      timeout ${TS:-100} compute-sanitizer --tool $tool python3 docs/device/sanitize_backward.py $NEW --ops ${SAN:-r20,q02,r07} \
        --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|MISS|Error" | head -8 | sed "s/^/$tool: /"
    done ;;
esac
