#!/usr/bin/env bash
# Prepared in stop 55 for the next session's device time (not run yet).
#   bash docs/device/stop56.sh v35   # docs/wip/v35-chain.patch (the chain rule through nested shared subtrees; the
#                                    # elementwise backward's shared adjoints and reciprocals) against HEAD on the
#                                    # elementwise sweep's (seed 13) multi-input ops whose estimated backward cost
#                                    # falls most (docs/device/elementwise_backward_cost.py): e10, e33, e09, e24, e39,
#                                    # e32, e26, e38; v35's backward suites; two rounds of both
#     (.device/a56: python docs/device/sweep.py generate .device/a56 --seed 13 --count 40 --min-inputs 2 \
#        --only e10,e33,e09,e24,e39,e32,e26,e38      at HEAD;
#      .device/b56: the same from a worktree with docs/wip/v35-chain.patch applied, PYTHONPATH=<worktree>)
#   bash docs/device/stop56.sh f32c  # float32 rows of 16384 and 65536: the backward's cluster build (HEAD, c56)
#                                    # against the multi-pass kernel (docs/wip/f32-no-cluster.patch: no float32
#                                    # cluster build, d56) on ten ops of 2-6 backward reductions, to give float32
#                                    # its own cluster rule (stop 55: seed 53's r04 at 16384 ran 1.24x slower in
#                                    # the cluster build; stop 53: seed 52's r02 and r09 faster)
#     (.device/c56: python docs/device/rowwise_sweep.py generate .device/c56 --manifest docs/results/stop55/f32c.json \
#        --only t04,r14,q20,t00,t07,p02,p09,v02,v00,v01 --backends cuda --backward fused     at HEAD;
#      .device/d56: the same from a worktree with docs/wip/f32-no-cluster.patch applied)
# The elementwise packages are named sweep-ops, the rowwise ones rsweep-ops: EW below picks the folder.
W=/tmp/kg56
. "$(dirname "$0")/stop_common.sh"

for p in a56 b56 c56 d56; do [ -d .device/$p ] && [ ! -d $W/$p ] && cp -r .device/$p $W/$p; done
# small_ab and rounds read $W/<pkg>/rsweep-ops: the elementwise packages get that name too.
for p in a56 b56; do [ -d $W/$p/sweep-ops ] && [ ! -e $W/$p/rsweep-ops ] && ln -s sweep-ops $W/$p/rsweep-ops; done

case ${1:-v35} in
  v35)
    EO=e10,e33,e09,e24,e39,e32,e26,e38
    TB=${TB:-100} small_ab v35 a56 b56 $EO float32,bfloat16 1024 150 40
    ORDER="b56 a56" second_round v35 a56 b56 $EO float32,bfloat16 1024 ;;
  f32c)
    rounds f32c "c56 d56" t04,r14,q20,t00,t07,p02,p09,v02,v00,v01 float32 16384,65536
    python3 docs/device/ab_compare_bwd.py "$FINAL_OUT/f32c_c56_2.txt" "$FINAL_OUT/f32c_d56_2.txt" ;;
esac
