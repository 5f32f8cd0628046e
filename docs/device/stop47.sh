#!/usr/bin/env bash
# Stop 47 (issues 28 and 29), for the next session's device time:
#  * template version 20 (on main): the rowwise backward's scalar path (misaligned rows) stops at 512
#    threads, longer misaligned rows take the multi-pass kernel (docs/backward.md, "Stop 47"); its GPU check
#    is every package's suite (the backward case (2, 16385) runs the new path) and the examples';
#  * version 21 (docs/wip/level-barriers.patch): the CUDA register kernel completes a level of independent
#    reductions with one barrier, against version 20.
# Prepared on the dev machine (copier is not on the GPU machine), all ignored. The ops with levels of seed
# 47, less r02, r09 and r21 (their kernel files take 100-312 s of ptxas: docs/benchmarks.md, "Builds"):
#   OPS=xbyy,range4,r03,r04,r07,r13,r15,r19,r20,r22,resln,softmax,layernorm
#   git worktree add /tmp/wtlv HEAD; (cd /tmp/wtlv && git am /work/main/docs/wip/level-barriers.patch && \
#     python docs/device/rowwise_sweep.py generate /work/main/.device/lvnew --seed 47 --count 40 \
#       --backends cuda --backward fused --only $OPS)                     (version 21)
#   python docs/device/rowwise_sweep.py generate .device/lvold ...same...  (this tree: version 20)
#   pip download --no-deps nvidia-cutlass==4.2.0.0 -d .whl     (the examples' Hopper matmul path)
# Carry .device/lvnew, .device/lvold and .whl in every call. The packages are copied once to /tmp/kg47 on
# the machine, so their builds outlive a call while it stays warm (a call's carry replaces the carried
# folders, builds included); a phase builds what is missing itself.
# Phases, one device call each, back to back (the machine goes back after 30 s idle):
#   bash docs/device/stop47.sh build     # both packages built one after the other (16 jobs, ptxas -v):
#                                        # about 2 minutes each (r20's file is the longest)
#   bash docs/device/stop47.sh ab        # the forward A/B of the ops with levels (FWD=...)
#   bash docs/device/stop47.sh tests     # both packages' GPU suites (SUITES=...), memcheck and racecheck
#                                        # (PKGS=/tmp/kg47/lvold/rsweep-ops: one of them)
#   bash docs/device/stop47.sh examples  # the examples built (CUTLASS path included), every suite once
# Nothing runs in the background past its phase: a process left behind by `timeout` keeps building into
# the same folder as the next call's build, and both crawl (stop 47's first calls spent its device time so,
# docs/device/README.md).
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"; export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0
export CXX=/usr/bin/g++ CC=/usr/bin/gcc
W=/tmp/kg47; mkdir -p $W
for p in lvnew lvold; do [ -d $W/$p ] || cp -r .device/$p $W/$p; done
NEW=$W/lvnew/rsweep-ops; OLD=$W/lvold/rsweep-ops

build_pkgs() {  # each package unless built, one at a time with every core (ninja resumes a cut-off build)
  for p in $NEW $OLD; do
    ls "$p"/rsweep_ops/_C*.so > /dev/null 2>&1 && continue
    RSWEEP_PKG=$p MAX_JOBS=16 OUT=$W/out_$(basename $(dirname $p)) bash docs/device/rowwise_sweep.sh build \
      | sed "s|^|$(basename $(dirname $p)): |"
    python3 docs/device/spill_choices.py $(dirname $p)/rsweep_build.log $(dirname $p)/rowwise_sweep.json \
      > "$FINAL_OUT/spill_choices_$(basename $(dirname $p)).txt" 2>&1
  done
}

nvidia-smi --query-gpu=name --format=csv,noheader
case ${1:-build} in
  build)
    build_pkgs
    cat "$FINAL_OUT"/spill_choices_*.txt | tail -4 ;;
  ab)
    build_pkgs
    NEW=$NEW OLD=$OLD FWD=${FWD:-range4,r15,r22,r07,r03,r20,xbyy,softmax,layernorm} \
      T=${T:-200} bash docs/device/stop46.sh ab ;;
  tests)
    build_pkgs
    for p in ${PKGS:-$NEW $OLD}; do
      t=$W/tests_$(basename $(dirname $p)); mkdir -p $t
      echo "== $(basename $(dirname $p))"
      NEW=$p OUT=$t SUITES=${SUITES:-range4,r15,r20,r22,r07,resln,softmax,layernorm} \
        SAN=${SAN:-range4,r15,r20} T=${T:-200} bash docs/device/stop46.sh tests
      cp $t/tests_failures.txt $FINAL_OUT/tests_failures_$(basename $(dirname $p)).txt
    done ;;
  examples)
    [ -d /tmp/cutlass ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
    export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
    OUT=$W/examples python3 docs/device/error_model.py run examples --cutlass --repeat 1 --jobs 8 \
      --time-limit ${T:-420} --pytest "-m 'not large'" > $FINAL_OUT/examples_run.txt 2>&1
    echo "examples rc=$?"; sed -n '/^== examples: per suite/,$p' $FINAL_OUT/examples_run.txt | tail -20
    grep -hE "sm90|Hopper|CUTLASS" $W/examples/build_examples_matmul.log 2>/dev/null | head -3
    (cd $W/examples && tar czf $FINAL_OUT/examples_logs.tgz . 2>/dev/null) ;;
esac
