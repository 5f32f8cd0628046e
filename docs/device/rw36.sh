#!/usr/bin/env bash
# The 7 rowwise ops stop 36 wrote to exercise the generated backward (docs/device/stop36.sh carries them):
# softmax (a stabilizing max), LayerNorm (two weights), a residual RMSNorm (two inputs), a sum of a row
# constant (the row length), max/min masks, a weight inside two reductions, the centred SiLU.
#   PATH=<kernelgen on PATH> bash docs/device/rw36.sh [.device/rw36]
set -euo pipefail
out=${1:-.device/rw36}
rm -rf "$out"
kernelgen new softmax --kind rowwise --inputs x --expr "exp(x - max(x)) / sum(exp(x - max(x)))" --defaults --output "$out" > /dev/null
p="$out/softmax"
kernelgen add lnorm --kind rowwise --inputs x --weights w,b --expr "(x - mean(x)) * rsqrt(mean((x - mean(x)) * (x - mean(x))) + 1e-5) * w + b" --package "$p" > /dev/null
kernelgen add resrms --kind rowwise --inputs x,res --weights w --expr "(x + res) * rsqrt(mean((x + res) * (x + res)) + 1e-6) * w" --package "$p" > /dev/null
kernelgen add rowlen --kind rowwise --inputs x --expr "x * sum(x - sum(x))" --package "$p" > /dev/null
kernelgen add maxsub --kind rowwise --inputs x,y --expr "x * y - max(x * y) + min(y)" --package "$p" > /dev/null
kernelgen add winside --kind rowwise --inputs x --weights w --expr "x * w - mean(x * w) + tanh(x) * sum(sigmoid(x * w))" --package "$p" > /dev/null
kernelgen add csilu --kind rowwise --inputs x --expr "x * sigmoid(x) - mean(x * sigmoid(x))" --package "$p" > /dev/null
echo "wrote $p"
