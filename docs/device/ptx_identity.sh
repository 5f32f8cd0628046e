#!/usr/bin/env bash
# Whether two versions of an op's CUDA kernel file compile to the same PTX, entry by entry (on the dev machine:
# no GPU needed). A template change that should leave some ops' kernels alone is checked this way before any
# device time is spent on them (stop 49: the examples' rmsnorm, softmax, log_softmax and layernorm, versions 21
# and 22, every entry identical).
#   bash docs/device/ptx_identity.sh OLD_CSRC NEW_CSRC OP     (CSRC: a package's csrc folder)
# The flags follow the packages' CUDA flags (_build.py) at sm_90; the anonymous namespaces' hashes and the
# basic-block labels are normalised before comparing.
set -euo pipefail
old=$1; new=$2; op=$3
include=$(python3 -c "import torch.utils.cpp_extension as c; print(' '.join('-I' + p for p in c.include_paths()))")
flags="-std=c++17 -O3 -DUSE_CUDA -arch=sm_90 --expt-relaxed-constexpr -D__CUDA_NO_HALF_OPERATORS__ \
  -D__CUDA_NO_HALF_CONVERSIONS__ -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__ \
  -DTORCH_TARGET_VERSION=0x020a000000000000"
work=$(mktemp -d)
for side in old new; do
  dir=$old; [ $side = new ] && dir=$new
  # shellcheck disable=SC2086
  (cd "$dir" && "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" $flags $include -I. -ptx "$op/cuda/${op}_kernel.cu" -o "$work/$side.ptx") &
done
wait
python3 - "$work" "$op" <<'PY'
import re
import sys

work, op = sys.argv[1], sys.argv[2]


def entries(path):
    text = open(path).read()
    text = re.sub(r"(_GLOBAL__N__|_INTERNAL_)[0-9a-f]+_[0-9]+_\w+?_kernel_cu_[0-9a-f]+(_[0-9]+)?", "ANON", text)
    text = re.sub(r"\$L__BB\d+_", "$L__BB", text)
    parts = re.split(r"(?m)^(?=\.(?:visible|weak|extern)?\s*\.entry|\.entry)", text)
    return {re.search(r"\.entry\s+(\S+)\(", part).group(1): part for part in parts[1:]}


old, new = entries(f"{work}/old.ptx"), entries(f"{work}/new.ptx")
same = [name for name in old if new.get(name) == old[name]]
print(f"{op}: {len(same)} of {len(old)} entries identical; {len(new)} in the new file")
for name in old:
    if name in new and new[name] != old[name]:
        print("  differs:", name[:120])
print("  only in the old:", len([n for n in old if n not in new]), "only in the new:", len([n for n in new if n not in old]))
PY
rm -rf "$work"
