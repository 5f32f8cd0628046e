"""Which register-kernel builds of a rowwise sweep package spill, and where the launch takes the narrow build
instead (stop 46: the CUDA launch compares the builds' local memory, cudaFuncGetAttributes' localSizeBytes,
which ptxas reports as the stack frame).

    python docs/device/spill_choices.py BUILD_LOG MANIFEST [--cols 1024,4096,16384] [--json out.json]

BUILD_LOG: the package's build with `-Xptxas -v` (docs/device/rowwise_sweep.sh build writes it beside the
package); MANIFEST: the sweep's rowwise_sweep.json. For each op and dtype it names the forward's and the
backward's dense build at 16-byte vectors (the most elements a thread) and the narrow one, with registers,
spill bytes and stack, and marks the ones the launch takes narrow ("narrow" if the narrow build's stack is
smaller). Prints one line per op and dtype where either differs, and the ops to compare (--ops lists for
rowwise_sweep.py and backward_bench.py).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from rowwise_sweep import ptxas_entries, resources

_DTYPES = {"f": "float32", "d": "float64", "N3c104HalfE": "float16", "N3c108BFloat16E": "bfloat16"}
_BYTES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
_KERNEL = re.compile(r"(?<=\d)(grad_rows|rows)_kernelIN(\d+)")  # not cluster_rows_kernel, long_rows_kernel
_PARAMS = re.compile(r"(?:2Op|6GradOp)E(f|d|N3c104HalfE|N3c108BFloat16E)((?:Li-?\d+E)+)")


def read_log(text: str) -> dict[tuple[str, str, str], dict[tuple[int, ...], dict[str, int]]]:
    """(op, forward|backward, dtype) -> (vec, per thread, fixed threads, block threads[, min blocks]) -> facts."""
    found: dict[tuple[str, str, str], dict[tuple[int, ...], dict[str, int]]] = {}
    for name, facts in ptxas_entries(text):
        k = _KERNEL.search(name)
        p = _PARAMS.search(name)
        if k is None or p is None:
            continue
        start = k.end()
        op = name[start:start + int(k.group(2))]
        params = tuple(int(v) for v in re.findall(r"Li(-?\d+)E", p.group(2)))
        key = (op, "backward" if k.group(1) == "grad_rows" else "forward", _DTYPES[p.group(1)])
        found.setdefault(key, {})[params] = resources(facts)
    return found


def choices(found, dtypes: list[str], weighted: set[str]) -> list[dict[str, object]]:
    """Per op, direction and dtype: the dense and the narrow build at 16-byte vectors in blocks of 512 (the
    builds the launch compares for rows that fit 512 threads at the narrow count), and whether the launch
    compares them: the backward of a float32 or float64 op with weights (in `weighted`) takes the narrow
    build wherever it fits, spills or not, as before stop 46."""
    rows = []
    for (op, direction, dtype), kernels in sorted(found.items()):
        if dtype not in dtypes:
            continue
        vec = 16 // _BYTES[dtype]
        built = {params: facts for params, facts in kernels.items() if params[0] == vec and params[3] == 512}
        counts = sorted({params[1] for params in built})
        if len(counts) < 2:
            continue
        narrow_count, dense_count = counts[0], counts[-1]
        dense = max((facts for params, facts in built.items() if params[1] == dense_count), key=lambda f: f["stack"])
        narrow = max((facts for params, facts in built.items() if params[1] == narrow_count), key=lambda f: f["stack"])
        always = direction == "backward" and _BYTES[dtype] > 2 and op in weighted
        rows.append({"op": op, "direction": direction, "dtype": dtype, "dense_per_thread": dense_count,
                     "narrow_per_thread": narrow_count, "dense": dense, "narrow": narrow, "always_narrow": always,
                     "takes_narrow": not always and narrow["stack"] < dense["stack"]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build_log", type=Path)
    parser.add_argument("manifest", type=Path)
    parser.add_argument("--dtypes", default="float32,float16,bfloat16")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    ops = json.loads(args.manifest.read_text())["ops"]
    ids = [op["id"] for op in ops]
    weighted = {op["id"] for op in ops if op.get("weights")}
    rows = [row for row in choices(read_log(args.build_log.read_text()), args.dtypes.split(","), weighted) if row["op"] in ids]
    for row in rows:
        d, n = row["dense"], row["narrow"]
        print(f"{row['op']:10s} {row['direction']:8s} {row['dtype']:9s} dense {row['dense_per_thread']:2d}/thread "
              f"{d['registers']:3d} regs {d['spill_bytes']:4d} B spilled {d['stack']:4d} B stack | narrow "
              f"{row['narrow_per_thread']:2d}/thread {n['registers']:3d} regs {n['spill_bytes']:4d} B spilled "
              f"{n['stack']:4d} B stack{'  -> narrow' if row['takes_narrow'] else ''}{'  (always narrow)' if row['always_narrow'] else ''}")
    for direction in ("forward", "backward"):
        ops = sorted({str(row["op"]) for row in rows if row["direction"] == direction and row["takes_narrow"]}, key=ids.index)
        print(f"{direction} ops that take the narrow build somewhere: {','.join(ops) or '(none)'}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
