#!/usr/bin/env bash
# Stop 46 (issues 28 and 29): the CUDA rowwise launch reads the compiled register kernels' local memory
# (cudaFuncGetAttributes' localSizeBytes) and takes the narrow build, the row in half the registers, where the
# dense build spills and the narrow one spills less; the backward does the same. Fresh seed 47, both template
# versions in one machine:
#   python docs/device/rowwise_sweep.py generate .device/s47new --seed 47 --count 40 --backends cuda
#   git worktree add /tmp/wt eb291d6; (cd /tmp/wt && PYTHONPATH=/tmp/wt python docs/device/rowwise_sweep.py \
#       generate /work/main/.device/s47old --seed 47 --count 40 --backends cuda)      (the templates before)
# Phases (one device call each, back to back: the machine is given back after 30 s idle; carry .device/s47new
# and .device/s47old in every call: a call's carry replaces the carried folders, builds included):
#   bash docs/device/stop46.sh build   # both packages (sm_90, ptxas -v); which ops' launch changes
#   bash docs/device/stop46.sh ab      # forward (rowwise_sweep.py) and forward+backward (backward_bench.py) of
#                                      # the changed ops, the packages one after the other (FWD=..., BWD=...)
#   bash docs/device/stop46.sh sweep   # the new package at rows of 1024-16384 (TAG=s47 ONLY=...)
#   bash docs/device/stop46.sh tests   # the GPU suites of the changed ops (SUITES=ids), memcheck, racecheck
# NEW and OLD name other packages: the ops whose builds spill, from docs/results/stop46/spill_ops_manifest.json
# (seed 45's r16 and r06, seed 36's r02 as q02, seed 47's resln and r22), with their generated backward:
#   python docs/device/rowwise_sweep.py generate .device/m46new --manifest docs/results/stop46/spill_ops_manifest.json \
#     --backends cuda --backward fused          (and .device/m46old from the worktree, as above)
set -uo pipefail
L=$OUT; export PYTHONUNBUFFERED=1
NEW=${NEW:-.device/s47new/rsweep-ops}
OLD=${OLD:-.device/s47old/rsweep-ops}
case ${1:-build} in
  build)
    nvidia-smi --query-gpu=name --format=csv,noheader
    for p in $NEW $OLD; do
      RSWEEP_PKG=$p bash docs/device/rowwise_sweep.sh build | sed "s|^|$(basename $(dirname $p)): |"
      cp "$L/rsweep_build.log.gz" "$L/build_$(basename $(dirname $p)).log.gz"
    done
    python3 docs/device/spill_choices.py $(dirname $NEW)/rsweep_build.log $(dirname $NEW)/rowwise_sweep.json \
      --json "$L/spill_choices.json" > "$L/spill_choices.txt"; tail -2 "$L/spill_choices.txt" ;;
  ab)
    nvidia-smi --query-gpu=name --format=csv,noheader
    for p in $NEW $OLD; do
      [ -n "${FWD:-}" ] && RSWEEP_PKG=$p BACKENDS=cuda COLS=${COLS:-1024,4096,16384} DTYPES=${DTYPES:-float32,float16,bfloat16} \
        ROUNDS=2 PARTS=12 ONLY=$FWD timeout ${T:-250} bash docs/device/rowwise_sweep.sh run "fwd_$(basename $(dirname $p))" 2>&1 | tail -4
      [ -n "${BWD:-}" ] && { timeout ${TB:-200} python3 docs/device/backward_bench.py $p --ops "$BWD" \
        --dtypes ${BDTYPES:-float32,bfloat16} --cols ${BCOLS:-1024,4096,16384} --rounds 2 \
        --json "$L/bwd_$(basename $(dirname $p)).json" > "$L/bwd_$(basename $(dirname $p)).txt" 2>&1; echo "bwd rc=$?"; }
    done ;;
  sweep)
    nvidia-smi --query-gpu=name --format=csv,noheader
    RSWEEP_PKG=$NEW BACKENDS=cuda COLS=1024,4096,16384 ROUNDS=2 PARTS=14 ${ONLY:+ONLY=$ONLY} \
      timeout ${T:-560} bash docs/device/rowwise_sweep.sh run ${TAG:-s47} 2>&1 | tail -30 ;;
  tests)
    echo "${SUITES//,/ }" | tr ' ' '\n' | timeout ${T:-400} xargs -P 16 -I{} sh -c \
      'cd '"$NEW"' && python3 -m pytest -q -p no:cacheprovider -rfE tests/test_{}.py -m "not large" -k "not cpu" > '"$L"'/test_{}.log 2>&1; echo "{}: $(tail -1 '"$L"'/test_{}.log)"' | tee "$L/tests_summary.txt"
    cat $L/test_*.log | grep -E "^(FAILED|ERROR)|^E  " | head -60 > "$L/tests_failures.txt"; rm -f $L/test_*.log
    for tool in memcheck racecheck; do
      for s in sanitize_rows sanitize_backward; do
        timeout 120 compute-sanitizer --tool $tool python3 docs/device/$s.py $NEW --ops ${SAN:-$SUITES} \
          --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|MISS|Error" | head -8 | sed "s/^/$tool $s: /"
      done
    done ;;
esac
