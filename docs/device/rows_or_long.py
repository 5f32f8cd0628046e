"""Stop 45 (issue 28): at rows of 16384, a Triton rowwise op whose rows kernel holds the row in registers but
leaves room for one program an SM (at 16 warps; and spills at 32) against the same op's long kernel, which
streams the row in chunks, one pass per group of reductions (re-read from L2 at this length), with many
programs an SM. Both kernels of each op, in one process, interleaved, with a copy:

    python docs/device/rows_or_long.py PACKAGE_DIR --ops r19_tl,csilu_tl [--dtypes float16,bfloat16,float32] [--cols 16384]

The long kernel is taken by lowering the op module's _MAX_BLOCK below the row length for its calls (the launch
reads it at every call), the rows kernel by answering the launch's _rows_warps with its warps (16 where it
picks the long kernel). Each line also says what the launch takes by itself. Prints per op and dtype: microseconds and % of a copy for each kernel, and the ratio.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import rowwise_sweep as sweep


def measure(op: dict, fn, ops_module, dtype, rows: int, args) -> dict:
    import torch
    from triton.testing import do_bench

    tensors = sweep._tensors(op, dtype, rows, args.cols, args.n)
    dst = torch.empty_like(tensors[0])
    copy = min(do_bench(lambda: dst.copy_(tensors[0]), warmup=10, rep=60, return_mode="median") for _ in range(2))

    def long_call():
        saved = ops_module._MAX_BLOCK
        ops_module._MAX_BLOCK = args.cols // 2
        try:
            return fn(*tensors)
        finally:
            ops_module._MAX_BLOCK = saved

    # What the launch decides at this length (_triton_rowwise.rows_warps, for the 2-byte types), and the rows
    # kernel timed at the warps it would take (16 where the rule picks the long kernel).
    import triton.language as tl

    pick = None
    rule = ops_module._rows_warps
    if dtype.itemsize == 2 and args.cols == 16384:
        kernel = getattr(ops_module, f"_{op['name']}_kernel")
        pick = rule(kernel, [t.dtype for t in tensors] + [dtype, args.cols],
                    dict(BLOCK=args.cols, ACC=tl.float32, num_warps=16), tensors[0].device, 32)

    def rows_call():
        ops_module._rows_warps = lambda *_: pick if pick is not None else 16
        try:
            return fn(*tensors)
        finally:
            ops_module._rows_warps = rule

    a, b = rows_call(), long_call()
    diff = float((a.float() - b.float()).abs().nan_to_num(float("inf")).max())
    times: dict[str, list[float]] = {"rows": [], "long": []}
    for _ in range(args.rounds):
        times["rows"].append(do_bench(rows_call, warmup=10, rep=60, return_mode="median"))
        times["long"].append(do_bench(long_call, warmup=10, rep=60, return_mode="median"))
    size = dtype.itemsize
    moved = (len(op["inputs"]) + 1) * args.n * size + len(op["weights"]) * args.cols * size
    rate = 2 * args.n * size / copy
    return {"op": op["name"], "dtype": str(dtype).removeprefix("torch."), "cols": args.cols,
            "rows_us": min(times["rows"]) * 1e3, "long_us": min(times["long"]) * 1e3,
            "rows_pct": 100 * moved / min(times["rows"]) / rate, "long_pct": 100 * moved / min(times["long"]) / rate,
            "max_abs_diff": diff, "pick": "long" if pick is None and dtype.itemsize == 2 and args.cols == 16384 else
            f"rows at {pick} warps" if pick else "rows"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", required=True)
    parser.add_argument("--dtypes", default="float16,bfloat16,float32")
    parser.add_argument("--cols", type=int, default=16384)
    parser.add_argument("--n", type=int, default=2**26)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args()

    import torch

    manifest = json.loads((args.package.parent / sweep.MANIFEST).read_text())
    by_name = {op["name"]: op for op in manifest["ops"]}
    sys.path.insert(0, str(args.package))
    module = importlib.import_module(sweep.MODULE)
    rows = args.n // args.cols
    results = []
    for name in args.ops.split(","):
        for dtype_name in args.dtypes.split(","):
            row = measure(by_name[name], getattr(module, name), importlib.import_module(f"{sweep.MODULE}.ops.{name}"),
                          getattr(torch, dtype_name), rows, args)
            results.append(row)
            print(f"{name} {dtype_name} {rows}x{args.cols}: rows kernel {row['rows_us']:.0f} us ({row['rows_pct']:.0f}% of copy), "
                  f"long kernel {row['long_us']:.0f} us ({row['long_pct']:.0f}%), long/rows speed {row['rows_us'] / row['long_us']:.2f}x, "
                  f"outputs differ by {row['max_abs_diff']:.2g}; the launch takes: {row['pick']}", flush=True)
            torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
