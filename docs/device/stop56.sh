#!/usr/bin/env bash
# Prepared in stop 55, run in stop 56 (docs/results/stop56/).
#   bash docs/device/stop56.sh v35   # docs/wip/v35-chain.patch (the chain rule through nested shared subtrees; the
#                                    # elementwise backward's shared adjoints and reciprocals) against HEAD on the
#                                    # elementwise sweep's (seed 13) multi-input ops whose estimated backward cost
#                                    # falls most (docs/device/elementwise_backward_cost.py): e10, e33, e09, e24, e39,
#                                    # e32, e26, e38; v35's backward suites; two rounds of both
#     (.device/a56: python docs/device/sweep.py generate .device/a56 --seed 13 --count 40 --min-inputs 2 \
#        --only e10,e33,e09,e24,e39,e32,e26,e38      at HEAD;
#      .device/b56: the same from a worktree with docs/wip/v35-chain.patch applied, PYTHONPATH=<worktree>)
#   bash docs/device/stop56.sh f32c  # float32 rows of 16384 and 65536: the backward's cluster build (HEAD, c56)
#                                    # against the multi-pass kernel (f32-no-cluster.patch: no float32
#                                    # cluster build, d56) on ten ops of 2-6 backward reductions, to give float32
#                                    # its own cluster rule (stop 55: seed 53's r04 at 16384 ran 1.24x slower in
#                                    # the cluster build; stop 53: seed 52's r02 and r09 faster)
#     (.device/c56: python docs/device/rowwise_sweep.py generate .device/c56 --manifest docs/results/stop55/f32c.json \
#        --only t04,r14,q20,t00,t07,p02,p09,v02,v00,v01 --backends cuda --backward fused     at HEAD;
#      .device/d56: the same from a worktree with f32-no-cluster.patch applied: kHasCluster for sizeof(scalar_t) == 2,
#      as version 36 landed it; the patch is gone from docs/wip)
#   bash docs/device/stop56.sh f32L  # f32c compared two builds with no float32 cluster launch: version 34 already
#                                    # leaves it out of cluster_shape too (rows longer than a block). f32L: version 34
#                                    # (c56) against docs/wip/f32-long-cluster.patch (d57: float32 rows that no block
#                                    # holds take the cluster build again), rows of 8192, 16384 and 65536
#     (.device/d57: as c56, from a worktree of e9a5446 (version 35) with docs/wip/f32-long-cluster.patch applied)
#   bash docs/device/stop56.sh s56   # a fresh draw in version 36: seed 56's first six random rowwise ops (CUDA) and
#                                    # seed 56's first ten random multi-input elementwise ops; their backward suites,
#                                    # forward+backward against compile (rowwise float32/bfloat16 at rows of 4096 and
#                                    # 16384; elementwise float32/float16/bfloat16 at 2^26), one round; memcheck of
#                                    # the backward of r01 and r04 (float32, bfloat16, every launch shape)
#     (.device/s56: python docs/device/rowwise_sweep.py generate .device/s56 --seed 56 --count 31 \
#        --only r00,r01,r02,r03,r04,r05 --backends cuda --backward fused;
#      .device/e56: python docs/device/sweep.py generate .device/e56 --seed 56 --count 40 --min-inputs 2 \
#        --only e15,e16,e17,e18,e19,e20,e21,e23,e24,e25)
#   bash docs/device/stop56.sh grouped  # the multi-pass backward kernel adding up the weights' contributions of 8 rows
#                                    # in registers before it writes its partial sums (g37), and the same with
#                                    # __launch_bounds__(512, 2) (h37: 64 registers, two blocks an SM; landed as
#                                    # version 37) against version 36 (g36), float32/bfloat16 at rows of 16384 and
#                                    # 65536, two rounds; g37's and h37's weight-gradient suites first
#     (.device/g36: python docs/device/rowwise_sweep.py generate .device/g36 --manifest docs/results/stop56/grouped.json \
#        --backends cuda --backward fused, at version 36 (d8187db); .device/h37: the same at version 37, whose
#      launch bounds are (kMaxThreads, 2) with weights (all five ops have weights); .device/g37: h37 with
#      grad_long_rows_kernel's bounds back to __launch_bounds__(kMaxThreads))
# The elementwise packages are named sweep-ops, the rowwise ones rsweep-ops: EW below picks the folder.
W=/tmp/kg56
. "$(dirname "$0")/stop_common.sh"

for p in a56 b56 c56 d56 d57 s56 e56 g36 g37 h37; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
# small_ab and rounds read $W/<pkg>/rsweep-ops: the elementwise packages get that name too.
for p in a56 b56 e56; do [ -d $W/$p/sweep-ops ] && [ ! -e $W/$p/rsweep-ops ] && ln -s sweep-ops $W/$p/rsweep-ops; done

case ${1:-v35} in
  v35)
    EO=e10,e33,e09,e24,e39,e32,e26,e38
    TB=${TB:-100} small_ab v35 a56 b56 $EO float32,bfloat16 1024 150 40
    ORDER="b56 a56" second_round v35 a56 b56 $EO float32,bfloat16 1024 ;;
  f32c)
    rounds f32c "c56 d56" t04,r14,q20,t00,t07,p02,p09,v02,v00,v01 float32 16384,65536
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/f32c_c56_2.txt" "$FINAL_OUT/f32c_d56_2.txt" ;;
  f32L)
    rounds f32L "c56 d57" t04,r14,q20,t00,t07,p02,p09,v02,v00,v01 float32 8192,16384,65536
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/f32L_c56_2.txt" "$FINAL_OUT/f32L_d57_2.txt" ;;
  s56)
    t=$(date +%s); R=r00,r01,r02,r03,r04,r05; E=e15,e16,e17,e18,e19,e20,e21,e23,e24,e25
    build $W/s56/rsweep-ops & build $W/e56/rsweep-ops & wait
    echo "built at $(( $(date +%s) - t )) s"
    for ((i = 0; i < 3; i++)); do
      python3 docs/device/backward_bench.py $W/s56/rsweep-ops --ops $R --dtypes float32,bfloat16 --cols 4096,16384 \
        --prewarm --part $i/3 > $W/prewarm_s56_$i.log 2>&1 &
      python3 docs/device/backward_bench.py $W/e56/rsweep-ops --ops $E --dtypes float32,float16,bfloat16 \
        --prewarm --part $i/3 > $W/prewarm_e56_$i.log 2>&1 &
    done
    suites s56 s56 $R ${T:-150} 6
    suites e56 e56 $E ${T:-150} 5
    timeout ${TS:-120} compute-sanitizer --tool memcheck python3 docs/device/sanitize_backward.py $W/s56/rsweep-ops \
      --ops r01,r04 --dtypes float32,bfloat16 2>&1 | grep -E "SUMMARY|RAISED|Error" | head -6 | sed "s/^/memcheck: /"
    wait; echo "tests, memcheck and prewarm at $(( $(date +%s) - t )) s"
    timeout ${TB:-100} python3 docs/device/backward_bench.py $W/s56/rsweep-ops --ops $R --dtypes float32,bfloat16 \
      --cols 4096,16384 --rounds 1 --against compile --json "$FINAL_OUT/s56.json" > "$FINAL_OUT/s56.txt" 2>&1
    echo "rowwise bench rc=$? at $(( $(date +%s) - t )) s"
    timeout ${TB:-100} python3 docs/device/backward_bench.py $W/e56/rsweep-ops --ops $E --dtypes float32,float16,bfloat16 \
      --rounds 1 --against compile --json "$FINAL_OUT/e56.json" > "$FINAL_OUT/e56.txt" 2>&1
    echo "elementwise bench rc=$? at $(( $(date +%s) - t )) s" ;;
  grouped)
    t=$(date +%s); O=r04,r05,v00,layernorm,resrms
    for p in g36 g37 h37; do (build $W/$p/rsweep-ops 2>&1 | sed "s|^|$p: |") & done; wait
    echo "built at $(( $(date +%s) - t )) s"
    for ((i = 0; i < 4; i++)); do
      python3 docs/device/backward_bench.py $W/g36/rsweep-ops --ops $O --dtypes float32,bfloat16 --cols 16384,65536 \
        --prewarm --part $i/4 > $W/prewarm_grouped_$i.log 2>&1 &
    done
    K="cuda and backward_op and (many_rows or exact or deterministic or asked)" suites g37 g37 $O ${T:-100} 5 &
    K="cuda and backward_op and (many_rows or exact or deterministic or asked)" suites h37 h37 $O ${T:-100} 5 &
    wait; echo "suites and prewarm at $(( $(date +%s) - t )) s"
    TB=${TB:-70} rounds grouped "g36 g37 h37" $O float32,bfloat16 16384,65536 ;;
esac
