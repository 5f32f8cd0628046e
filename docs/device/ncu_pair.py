"""Run under Nsight Compute: one generated rowwise op and torch.compile of its reference, a cell at a time,
each called once inside cudaProfilerStart/Stop, so that `ncu --profile-from-start off` sees exactly the
kernels the sweep times (compile's references are compiled and both are called once before that).

    ncu --profile-from-start off --csv --metrics <list> python docs/device/ncu_pair.py PKG \\
        --cells r00:float16:4096,r09:float16:1024 > ncu.csv

A cell is op:dtype:cols, at 2^26 elements like the sweep. Before each profiled pair it prints a line
"CELL op dtype cols n" to stderr, so that the kernels in the CSV can be told apart (ncu_pair_table.py
below reads both). No GPU on the dev machine: this runs only on the device.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rowwise_sweep import MANIFEST, MODULE, _tensors


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--cells", required=True, help="op:dtype:cols,... (2^26 elements each)")
    parser.add_argument("--n", type=int, default=2**26)
    args = parser.parse_args(argv)

    import torch

    manifest = json.loads((args.package.parent / MANIFEST).read_text())
    sys.path.insert(0, str(args.package))
    module = importlib.import_module(MODULE)
    by_id = {op["id"]: op for op in manifest["ops"] if op["backend"] == "cuda"}
    cells = [c.split(":") for c in args.cells.split(",")]
    prepared = []
    for ident, dtype_name, cols in cells:
        op = by_id[ident]
        tensors = _tensors(op, getattr(torch, dtype_name), args.n // int(cols), int(cols), args.n)
        reference = importlib.import_module(f"{MODULE}.ops.{op['name']}").reference
        theirs = torch.compile(reference, dynamic=False)
        ours = getattr(module, op["name"])
        diff = (ours(*tensors).float() - theirs(*tensors).float()).abs().max().item()
        print(f"warm {ident} {dtype_name} {cols}: max |ours - compile's| {diff:.3g}", file=sys.stderr, flush=True)
        prepared.append((ident, dtype_name, cols, tensors, ours, theirs))
    torch.cuda.synchronize()
    for ident, dtype_name, cols, tensors, ours, theirs in prepared:
        print(f"CELL {ident} {dtype_name} {cols} {args.n}", file=sys.stderr, flush=True)
        torch.cuda.cudart().cudaProfilerStart()
        ours(*tensors)
        theirs(*tensors)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
