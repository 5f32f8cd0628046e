#!/usr/bin/env bash
# Diagnosis of a segfault seen on the GPU machine only: an op built there (with /opt/gcc/bin/g++) crashes
# when its input check throws with a shape in the message. Builds examples/rmsnorm with each compiler
# found and calls the op with a weight of the wrong shape; then examples/muladd's shape-mismatch test.
set -uo pipefail
which -a g++ c++ gcc | head; /opt/gcc/bin/g++ --version | head -1; /usr/bin/g++ --version 2>/dev/null | head -1
python3 -c "import torch; print(torch.__version__)"
for cxx in /opt/gcc/bin/g++ /usr/bin/g++; do
  [ -x $cxx ] || continue
  rm -rf /tmp/r && cp -r examples/rmsnorm /tmp/r && rm -rf /tmp/r/build /tmp/r/rmsnorm/_C*.so
  (cd /tmp/r && CXX=$cxx CC=${cxx%++}cc python3 setup.py build_ext --inplace > /tmp/b.log 2>&1; echo "build with $cxx rc=$?"; grep -m1 -o "^\[.*\] [^ ]*g++" /tmp/b.log)
  for case in "torch.randn(9)" "torch.randn(8, dtype=torch.float64)"; do
    (cd /tmp/r && PYTHONPATH=. timeout 60 python3 -X faulthandler -c "
import torch, rmsnorm
x = torch.randn(2, 8); w = $case
try:
    torch.ops.rmsnorm.rmsnorm.default(x, w); print('no error')
except RuntimeError as err:
    print('RuntimeError:', str(err)[:100])
" 2>&1 | grep -v "^  File\|^Thread\|^$\|Extension modules" | head -2 | sed "s|^|[$cxx $case] |")
  done
  ldd /tmp/r/rmsnorm/_C.abi3.so | grep -E "stdc|gcc_s"
done
python3 -c "import torch, os; print(open('/proc/self/maps').read().count('libstdc'))"
python3 -c "import torch; import subprocess,os; [print(l.split()[-1]) for l in open('/proc/self/maps') if 'libstdc++' in l][:1]" | sort -u
(cd examples/muladd && python3 setup.py build_ext --inplace > /tmp/bm.log 2>&1; echo "muladd build rc=$?"; PYTHONPATH=. timeout 120 python3 -m pytest -q -x -p no:cacheprovider -k "error_shape_mismatch or error_dtype_mismatch" tests 2>&1 | tail -2)
