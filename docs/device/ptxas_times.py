"""Where ptxas spends a package's build: per op and per kernel, from a build log made with ptxas -v.

    NVCC_APPEND_FLAGS="-Xptxas -v" python setup.py build_ext --inplace > build.log 2>&1
    python docs/device/ptxas_times.py build.log [--top 12]

ptxas compiles one kernel file's kernels one after the other, and a heavy expression's backward kernels
(every held value's derivative unrolled) take tens of seconds each: a package builds no faster than its
slowest file. The log may be gzipped.
"""
from __future__ import annotations

import argparse
import gzip
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rowwise_sweep import ptxas_entries


def op_and_kernel(name: str) -> tuple[str, str]:
    """The op (from the kernel file's name in the anonymous namespace) and the kernel template's name."""
    op = re.search(r"_\d+_(\w+?)_kernel_cu_", name)
    # The mangled name's last component before the template arguments: <length><name>I...
    kernel = re.search(r"_\d+?(\d{1,2})([a-z_]+_kernel)I", name)
    if kernel and int(kernel.group(1)) != len(kernel.group(2)):
        kernel = None
    return (op.group(1) if op else "?"), (kernel.group(2) if kernel else name[:40])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--top", type=int, default=10, help="the slowest kernels to list")
    args = parser.parse_args()
    raw = args.log.read_bytes()
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode(errors="replace")
    entries = ptxas_entries(text)
    if not entries:
        sys.exit(f"error: {args.log} has no ptxas -v report (build with NVCC_APPEND_FLAGS='-Xptxas -v')")
    per_op: dict[str, list[int]] = defaultdict(list)
    for name, facts in entries:
        per_op[op_and_kernel(name)[0]].append(facts["compile_us"])
    total = sum(sum(v) for v in per_op.values())
    print(f"{len(entries)} kernels, {total / 1e6:.1f} s of ptxas in all")
    print(f"{'op':16s} {'kernels':>7s} {'ptxas s':>8s} {'slowest s':>9s}")
    for op, times in sorted(per_op.items(), key=lambda item: -sum(item[1])):
        print(f"{op:16s} {len(times):7d} {sum(times) / 1e6:8.1f} {max(times) / 1e6:9.1f}")
    print(f"\nthe {args.top} slowest kernels:")
    for name, facts in sorted(entries, key=lambda e: -e[1]["compile_us"])[: args.top]:
        op, kernel = op_and_kernel(name)
        print(f"{facts['compile_us'] / 1e6:7.1f} s  {op:10s} {kernel:24s} {facts['registers']:4d} registers, "
              f"{facts['spill_bytes']:5d} B spilled  {name[:90]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
