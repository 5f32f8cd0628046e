#!/usr/bin/env bash
# The recorded commands that produce examples/. tests/test_golden.py replays every `kernelgen new`
# and `kernelgen add` line below, in order, in a temporary directory and compares the result with
# examples/ byte for byte. After changing templates/, run this script from the repository root and
# commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
# Start from empty directories, so that files a template no longer produces do not linger (this
# also removes local builds of the examples). A user's package is brought forward with `kernelgen update`.
rm -rf examples/muladd examples/matmul examples/rmsnorm examples/myteam-ops
kernelgen new muladd --kind elementwise --inputs a,b,c --expr "a*b+c" --defaults --output examples --force
kernelgen new matmul --kind matmul --defaults --output examples --force
kernelgen new rmsnorm --kind rowwise --inputs x --weights w --expr "x * rsqrt(mean(x * x) + 1e-6) * w" --defaults --output examples --force
# A library: one package, one build, one namespace (torch.ops.myteam), several ops.
kernelgen new myteam-ops --op muladd --inputs a,b,c --expr "a*b+c" --namespace myteam --defaults --output examples --force
kernelgen add matmul --kind matmul --defaults --package examples/myteam-ops
kernelgen add silu_mul --inputs x,y --expr "x*sigmoid(x)*y" --defaults --package examples/myteam-ops
# Backends mix in one library: the same formulas in Triton beside CUDA C++, raced by the benchmarks.
kernelgen add gelu --inputs x --expr "x * sigmoid(1.702 * x)" --defaults --package examples/myteam-ops
kernelgen add gelu_tl --backend triton --inputs x --expr "x * sigmoid(1.702 * x)" --defaults --package examples/myteam-ops
kernelgen add muladd_tl --backend triton --inputs a,b,c --expr "a*b+c" --defaults --package examples/myteam-ops
# Rowwise ops (row reductions): the softmax family and LayerNorm, in CUDA C++ and in Triton.
kernelgen add softmax --kind rowwise --inputs x --expr "exp(x - max(x)) / sum(exp(x - max(x)))" --defaults --package examples/myteam-ops
kernelgen add log_softmax --kind rowwise --inputs x --expr "x - max(x) - log(sum(exp(x - max(x))))" --defaults --package examples/myteam-ops
kernelgen add layernorm --kind rowwise --inputs x --weights w,b --expr "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b" --defaults --package examples/myteam-ops
kernelgen add softmax_tl --kind rowwise --backend triton --inputs x --expr "exp(x - max(x)) / sum(exp(x - max(x)))" --defaults --package examples/myteam-ops
kernelgen add layernorm_tl --kind rowwise --backend triton --inputs x --weights w,b --expr "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b" --defaults --package examples/myteam-ops
# A matmul with a fused bias + GELU epilogue (issue 11): the product and the activation in one kernel.
kernelgen add linear_gelu --kind matmul --bias --epilogue "(acc + bias) * sigmoid(1.702 * (acc + bias))" --defaults --package examples/myteam-ops
