"""The rowwise CUDA backward's builds in a package's build log (ptxas -v at sm_90): per op and dtype, each 16-byte
register build (grad_rows_kernel) and cluster build (grad_cluster_rows_kernel), with its block threads, elements a
thread, registers, stack frame and spill stores and loads.

    python docs/device/grad_builds.py BUILD_LOG [--ops r01,r06] [--dtypes float32,bfloat16] [--threads 1024]

The launch's rules read the stack frame (cudaFuncGetAttributes' localSizeBytes: GradLaunch::takes_narrow,
cluster_over_wide); the spill loads, which told the 1024-thread builds with weights apart in stops 59-60
(docs/backward.md "Stop 60"), only ptxas reports. BUILD_LOG: a build with `-Xptxas -v`, as the stop scripts'
`build` writes it (build_<pkg>.log); gzip is read too. --threads keeps the register builds of that block size.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from pathlib import Path

_DTYPES = {"f": "float32", "d": "float64", "N3c104HalfE": "float16", "N3c108BFloat16E": "bfloat16"}
_BYTES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
_KERNEL = re.compile(r"(grad_rows|grad_cluster_rows)_kernelIN(\d+)")
# The template arguments after the dtype: the register builds' ints then kWeightGrads; the cluster build's kVec,
# kPerThread (and, in docs/wip/cluster64-v46.patch's build, kMinBlocks), with no kWeightGrads since version 44.
_PARAMS = re.compile(r"6GradOpE(f|d|N3c104HalfE|N3c108BFloat16E)((?:Li-?\d+E)+)(?:Lb([01])E)?")


def read_log(text: str) -> list[dict[str, object]]:
    """Every backward build ptxas reports: op, dtype, kind (rows or cluster), its template arguments and facts. A
    cluster build's name does not say whether the backward has weights (since version 44): it is taken from the
    op's register builds (None where the log has none)."""
    builds: list[dict[str, object]] = []
    current: dict[str, object] | None = None
    for line in text.splitlines():
        entry = re.search(r"Compiling entry function '(\w+)' for 'sm_90a?'", line)
        if entry:
            current = None
            name = entry.group(1)
            kernel = _KERNEL.search(name)
            params = _PARAMS.search(name)
            if kernel and params:
                op = name[kernel.end():kernel.end() + int(kernel.group(2))]
                args = [int(v) for v in re.findall(r"Li(-?\d+)E", params.group(2))]
                weights = None if params.group(3) is None else params.group(3) == "1"
                current = {"op": op, "dtype": _DTYPES[params.group(1)], "weights": weights,
                           "kind": "rows" if kernel.group(1) == "grad_rows" else "cluster", "vec": args[0],
                           "per_thread": args[1]}
                if current["kind"] == "rows":  # kVec, kPerThread, kFixedThreads, kBlockThreads, kMinBlocks
                    current.update(fixed=args[2], threads=args[3], min_blocks=args[4])
                else:  # a block of kMaxThreads (512), one an SM unless the build names its minimum
                    current.update(fixed=0, threads=512, min_blocks=args[2] if len(args) > 2 else 1)
            continue
        if current is None:
            continue
        spills = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if spills:
            current.update(stack=int(spills.group(1)), stores=int(spills.group(2)), loads=int(spills.group(3)))
        registers = re.search(r"Used (\d+) registers", line)
        if registers:
            current["registers"] = int(registers.group(1))
            builds.append(current)
            current = None
    weights = {b["op"]: b["weights"] for b in builds if b["weights"] is not None}
    for build in builds:
        if build["weights"] is None:
            build["weights"] = weights.get(build["op"])
    return builds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build_log", type=Path)
    parser.add_argument("--ops", default="", help="comma-separated op names (default: every op in the log)")
    parser.add_argument("--dtypes", default="float32,float16,bfloat16")
    parser.add_argument("--threads", type=int, default=0, help="only the register builds of this many block threads")
    args = parser.parse_args()
    if not args.build_log.is_file():
        print(f"grad_builds.py: no such file: {args.build_log}", file=sys.stderr)
        return 2
    data = args.build_log.read_bytes()
    text = (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode(errors="replace")
    ops = [op for op in args.ops.split(",") if op]
    seen = set()
    for build in read_log(text):
        dtype = str(build["dtype"])
        if dtype not in args.dtypes.split(",") or (ops and build["op"] not in ops):
            continue
        if build["vec"] != 16 // _BYTES[dtype]:  # the misaligned rows' scalar builds
            continue
        if args.threads and (build["kind"] != "rows" or build["threads"] != args.threads):
            continue
        kind = {True: "weights", False: "none", None: "?"}[build["weights"]]  # type: ignore[index]
        line = (f"{build['op']:12s} {dtype:9s} {kind:7s} {build['kind']:7s} "
                f"{build['threads']:4d} threads {build['per_thread']:2d} a thread (fixed {build['fixed']:4d}, "
                f"min {build['min_blocks']})  {build['registers']:3d} regs  stack {build['stack']:4d}  "
                f"spill stores {build['stores']:4d}  loads {build['loads']:4d}")
        if line not in seen:  # a build is reported once per compilation unit that instantiates it
            seen.add(line)
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
