# Sourced by the stop scripts (stop51.sh to stop61.sh) after they set W (their scratch folder): the device
# machine's setup they share, and build DIR (the generated package under DIR, built in place on every core,
# ptxas's report in $W/build_<name>.log; nothing to do where it is built already), suites, prepared, small_ab,
# second_round, rounds, toggled, forward_rounds and examples (below).
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"; export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0
export CXX=/usr/bin/g++ CC=/usr/bin/gcc
mkdir -p "$W"
nvidia-smi --query-gpu=name --format=csv,noheader

build() {
  local pkg=$1 t; t=$(date +%s)
  ls "$pkg"/rsweep_ops/_C*.so > /dev/null 2>&1 && return
  (cd "$pkg" && MAX_JOBS=16 KERNELGEN_REQUIRE_CUDA=1 NVCC_APPEND_FLAGS="-Xptxas -v" python3 setup.py build_ext --inplace \
     > "$W/build_$(basename "$(dirname "$pkg")").log" 2>&1; echo "build $pkg rc=$? in $(( $(date +%s) - t )) s")
}

# suites TAG PKG OPS TIMEOUT PARALLEL: the CUDA backward and gradcheck tests (or pytest -k "$K") of OPS in package PKG (under $W),
# PARALLEL suites side by side; a line an op, then the failures, in $OUT/TAG_tests.txt (logs $W/test_TAG_<op>.log).
suites() {
  local tag=$1 pkg=$2 ops=$3
  echo "${ops//,/ }" | tr ' ' '\n' | timeout $4 xargs -P $5 -I{} sh -c \
    'cd '"$W/$pkg"'/rsweep-ops && python3 -m pytest -q -p no:cacheprovider -rfE tests/test_{}.py -m "not large" \
       -k "${K:-cuda and (backward or gradcheck)}" > '"$W/test_${tag}"'_{}.log 2>&1; echo "'"$pkg"' {}: $(tail -1 '"$W/test_${tag}"'_{}.log)"' \
    | tee "$FINAL_OUT/${tag}_tests.txt"
  grep -h -E "^(FAILED|ERROR)" $W/test_${tag}_*.log | cut -c1-240 | head -10 | tee -a "$FINAL_OUT/${tag}_tests.txt"
}

# A small A/B: packages OLD and NEW (under $W) built side by side; NEW's backward and gradcheck suites of OPS
# (5 side by side) while compile's references are prewarmed; then both timed, and the table of the two. With GRAPHS
# set (here and in second_round), forward+backward is also timed replayed from CUDA graphs (backward_bench --graphs).
#   small_ab TAG OLD NEW OPS DTYPES COLS TEST_TIMEOUT TABLE_LINES   (files in $OUT named TAG_...)
small_ab() {
  local tag=$1 old=$2 new=$3 ops=$4 dtypes=$5 cols=$6 t i p; t=$(date +%s)
  (build $W/$new/rsweep-ops 2>&1 | sed "s|^|$new: |") &
  (build $W/$old/rsweep-ops 2>&1 | sed "s|^|$old: |") &
  wait; echo "built in $(( $(date +%s) - t )) s"
  for ((i = 0; i < 5; i++)); do
    python3 docs/device/backward_bench.py $W/$new/rsweep-ops --ops $ops --dtypes $dtypes \
      --cols $cols --prewarm --part $i/5 > $W/prewarm_${tag}_$i.log 2>&1 &
  done
  suites $tag $new $ops ${T:-$7} 5
  wait; echo "tests and prewarm at $(( $(date +%s) - t )) s"
  for p in $old $new; do
    timeout ${TB:-60} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $ops --dtypes $dtypes \
      --cols $cols --rounds 1 --against compile ${GRAPHS:+--graphs} --json "$FINAL_OUT/${tag}_$p.json" > "$FINAL_OUT/${tag}_$p.txt" 2>&1
    echo "$p rc=$? at $(( $(date +%s) - t )) s"
  done
  python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/${tag}_$old.txt" "$FINAL_OUT/${tag}_$new.txt" | tail -$8
}

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

# second_round TAG OLD NEW OPS DTYPES COLS: after small_ab, both packages timed once more (the backward alone and
# forward+backward, no compile table) in the order ORDER (default "OLD NEW"), into $OUT/TAG_<pkg>_2.txt, and the
# summary line of the two.
second_round() {
  local tag=$1 old=$2 new=$3 ops=$4 dtypes=$5 cols=$6 t p; t=$(date +%s)
  for p in ${ORDER:-$old $new}; do
    timeout ${TB:-100} python3 docs/device/backward_bench.py $W/$p/rsweep-ops --ops $ops --dtypes $dtypes \
      --cols $cols --rounds 1 ${GRAPHS:+--graphs} > "$FINAL_OUT/${tag}_${p}_2.txt" 2>&1
    echo "$p round 2 rc=$? at $(( $(date +%s) - t )) s"
  done
  python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/${tag}_${old}_2.txt" "$FINAL_OUT/${tag}_${new}_2.txt" | tail -$(( ${GRAPHS:+1} + 1 ))
}

# prepared PKG OPS DTYPES COLS: package PKG (under $W) built, its ptxas log copied to $OUT, then its CUDA backward and
# gradcheck suites of OPS (suites: K selects, 5 side by side, timeout T, default 300) while compile's references for
# DTYPES and COLS are prewarmed in four processes.
prepared() {
  local pkg=$1 ops=$2 dtypes=$3 cols=$4 t i; t=$(date +%s)
  build $W/$pkg/rsweep-ops; echo "built at $(( $(date +%s) - t )) s"; cp $W/build_$pkg.log "$FINAL_OUT/"
  for ((i = 0; i < 4; i++)); do
    python3 docs/device/backward_bench.py $W/$pkg/rsweep-ops --ops $ops --dtypes $dtypes --cols $cols \
      --prewarm --part $i/4 > $W/prewarm_${pkg}_$i.log 2>&1 &
  done
  suites $pkg $pkg $ops ${T:-300} 5
  wait; echo "suites and prewarm at $(( $(date +%s) - t )) s"
}

# toggled TAG PKG OPS COLS VAR UNSET SET OLD: rounds RS (default "1 2") of PKG's backward_bench in dtypes DT (default
# float32,bfloat16), each timing the build with VAR unset (files $OUT/TAG_UNSET_<r>.txt) and then with VAR=1
# (TAG_SET_<r>.txt): one build, two launches (an experiment's environment toggle). After each round, the table of
# the other mode against OLD (UNSET or SET).
toggled() {
  local tag=$1 pkg=$2 ops=$3 cols=$4 var=$5 unset_name=$6 set_name=$7 old=$8 r mode
  local new=$unset_name; [ "$old" = "$unset_name" ] && new=$set_name
  for r in ${RS:-1 2}; do for mode in $unset_name $set_name; do
    if [ $mode = $set_name ]; then export $var=1; else unset $var; fi
    timeout ${TB:-150} python3 docs/device/backward_bench.py $W/$pkg/rsweep-ops --ops $ops --dtypes ${DT:-float32,bfloat16} \
      --cols $cols --rounds 1 > "$FINAL_OUT/${tag}_${mode}_$r.txt" 2>&1
    echo "$mode round $r rc=$?"
  done; unset $var
  python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/${tag}_${old}_$r.txt" "$FINAL_OUT/${tag}_${new}_$r.txt"; done
}

# forward_rounds TAG OLD NEW OPS COLS: the forward of packages OLD and NEW (under $W, built) against each other:
# compile's references prewarmed (six processes, from OLD), then two rounds of rowwise_sweep.py run in opposite
# order (CUDA, float32/float16/bfloat16), $OUT/TAG_<pkg>_<round>.json and .log, and fwd_ab.py's summary a round.
forward_rounds() {
  local tag=$1 old=$2 new=$3 ops=$4 cols=$5 t i r p; t=$(date +%s)
  for ((i = 0; i < 6; i++)); do
    python3 docs/device/rowwise_sweep.py prewarm $W/$old/rsweep-ops --only $ops --cols $cols --backends cuda \
      --part $i/6 > $W/prewarm_${tag}_$i.log 2>&1 &
  done
  wait; echo "prewarmed at $(( $(date +%s) - t )) s"
  for r in 1 2; do
    [ $r = 1 ] && ORDER="$old $new" || ORDER="$new $old"
    for p in $ORDER; do
      timeout ${TT:-150} python3 docs/device/rowwise_sweep.py run $W/$p/rsweep-ops --only $ops --cols $cols --backends cuda \
        --rounds 1 --json "$FINAL_OUT/${tag}_${p}_$r.json" --build-log $W/build_$p.log > "$FINAL_OUT/${tag}_${p}_$r.log" 2>&1
      echo "$p round $r rc=$? at $(( $(date +%s) - t )) s"
    done
    python3 docs/device/fwd_ab.py "$FINAL_OUT/${tag}_${old}_$r.json" "$FINAL_OUT/${tag}_${new}_$r.json" | tail -1
  done
}

# example DIR NAME JOBS: the package at DIR built in $W/NAME on JOBS cores (nothing to do where it is built already).
example() {
  local t; t=$(date +%s)
  [ -d $W/$2 ] || cp -r $1 $W/$2
  (cd $W/$2 && ls ./*/_C*.so > /dev/null 2>&1 || MAX_JOBS=$3 KERNELGEN_REQUIRE_CUDA=1 python3 setup.py build_ext \
     --inplace > $W/build_$2.log 2>&1; echo "$2 built (rc=$?) in $(( $(date +%s) - t )) s")
}

# examples "PKGS": the three examples that include rowwise.cuh or per_device.cuh (rmsnorm, muladd, myteam-ops, whose
# Hopper matmul takes CUTLASS's headers from the wheel carried in .whl) built side by side, then their whole suites
# (not large; TT seconds at most, default 420) side by side while the packages PKGS (under $W) build on the cores
# left; their ptxas logs are copied to $OUT.
examples() {
  local t n p; t=$(date +%s)
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/cutlass .whl/nvidia_cutlass-*.whl
  export KERNELGEN_CUTLASS_DIR=/tmp/cutlass/cutlass_library/source
  example examples/rmsnorm ex_rms 5 & example examples/muladd ex_mul 3 & example examples/myteam-ops ex_team 8 & wait
  echo "examples built at $(( $(date +%s) - t )) s"
  (for p in $1; do build $W/$p/rsweep-ops; done) > $W/examples_build_rc.txt 2>&1 &
  for n in ex_rms ex_mul ex_team; do
    (cd $W/$n && timeout ${TT:-420} python3 -m pytest -q -p no:cacheprovider -rfEs tests -m "not large" > $W/test_$n.log 2>&1
     echo "$n: $(tail -1 $W/test_$n.log) at $(( $(date +%s) - t )) s") &
  done
  wait; cat $W/examples_build_rc.txt
  for p in $1; do cp $W/build_$p.log "$FINAL_OUT/" 2>/dev/null; done
  for n in ex_rms ex_mul ex_team; do grep -h -E "^(FAILED|ERROR)" $W/test_$n.log | cut -c1-200 | head -5; done
  grep -h -E "^SKIPPED" $W/test_ex_*.log | cut -c1-160 | sort | uniq -c | sort -rn | head -8
}

# whole_suites PKG: the whole GPU suites (not large) of package PKG (under $W, built), twelve files side by side, one
# CPU thread a process (stops 62 and 64 stalled with twelve processes of sixteen threads on sixteen cores) and
# faulthandler's stack for any test past 120 s; logs $OUT/PKG_test_<file>.log, a line a file in $OUT/PKG_tests.txt.
whole_suites() {
  local pkg=$1 t; t=$(date +%s)
  (cd $W/$pkg/rsweep-ops && ls tests/test_*.py | OMP_NUM_THREADS=1 timeout ${TS:-480} xargs -P 12 -I{} sh -c \
     'python3 -m pytest -q -p no:cacheprovider -rfE -o faulthandler_timeout=120 {} -m "not large" \
        > '"$FINAL_OUT/$pkg"'_$(basename {} .py).log 2>&1; echo "{}: $(tail -1 '"$FINAL_OUT/$pkg"'_$(basename {} .py).log)"' \
     | sort > "$FINAL_OUT/${pkg}_tests.txt")
  echo "suites at $(( $(date +%s) - t )) s"; cat "$FINAL_OUT/${pkg}_tests.txt"
  grep -h -E "^(FAILED|ERROR)" "$FINAL_OUT/$pkg"_test_*.log | cut -c1-240 | head -12
  grep -h -A3 "Timeout (0:02:00)" "$FINAL_OUT/$pkg"_test_*.log | head -20
}

# sanitize PKG OPS: compute-sanitizer memcheck and racecheck over package PKG's (under $W, built) long-row forward
# kernels (sanitize_long.py) and every backward launch shape (sanitize_backward.py) of OPS, float32 and bfloat16;
# logs $OUT/{long,backward}_{memcheck,racecheck}.log, a line each with the sanitizer's summary.
sanitize() {
  local pkg=$1 ops=$2 t tool script; t=$(date +%s)
  for tool in memcheck racecheck; do
    for script in long backward; do
      timeout ${TZ:-120} compute-sanitizer --tool $tool --error-exitcode 9 python3 docs/device/sanitize_$script.py \
        $W/$pkg/rsweep-ops --ops $ops $([ $script = backward ] && echo --dtypes float32,bfloat16) \
        > "$FINAL_OUT/${script}_$tool.log" 2>&1
      echo "$script $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$FINAL_OUT/${script}_$tool.log" | tail -1) at $(( $(date +%s) - t )) s"
    done
  done
}
