"""How many warps should a Triton rowwise program use? Times a built sweep package's Triton ops
(rowwise_sweep.py generate) with their own kernels at several num_warps, on the GPU machine (issue 28:
which launch fits the compiled kernel).

    python docs/device/triton_warps.py PACKAGE_DIR [--ops csilu_tl,...] [--cols 16384] [--dtypes float32,bfloat16]
                                      [--warps 8,16,32] [--size 67108864]

For each op, dtype and row length it launches the op's register kernel (_<op>_kernel: the whole row in
one program, BLOCK the next power of two) over 2**26 elements at each num_warps, checks the output
against the op's own launch (bitwise: the same kernel, only the warps differ, so any difference is a
reduction order and is reported, not failed), and prints the kernel's registers, spills, the programs
an SM holds (65536 registers / (registers x threads)) and the time (CUDA-graph replays, median), with
the bandwidth as a share of a device copy of the same bytes.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", default="")
    parser.add_argument("--cols", default="16384")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--warps", default="8,16,32")
    parser.add_argument("--size", type=int, default=2**26)
    args = parser.parse_args(argv)

    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench_cudagraph

    manifest = json.loads((args.package.parent / "rowwise_sweep.json").read_text())
    sys.path.insert(0, str(args.package.resolve()))
    importlib.import_module("rsweep_ops")
    wanted = [n for n in args.ops.split(",") if n] or [o["name"] for o in manifest["ops"] if o["backend"] == "triton"]
    ops = {o["name"]: o for o in manifest["ops"]}
    print(f"{'op':12s} {'dtype':9s} {'cols':>6s} {'warps':>5s} {'regs':>4s} {'spill':>5s} {'prog/SM':>7s} {'us':>8s} {'%copy':>6s}")
    for name in wanted:
        spec = ops[name]
        module = importlib.import_module(f"rsweep_ops.ops.{name}")
        kernel = getattr(module, f"_{name}_kernel")
        for dtype_name in args.dtypes.split(","):
            dtype = getattr(torch, dtype_name)
            for cols in [int(c) for c in args.cols.split(",")]:
                rows = args.size // cols
                gen = torch.Generator("cuda").manual_seed(cols)
                xs = [torch.randn((rows, cols), generator=gen, device="cuda", dtype=torch.float32).to(dtype) for _ in spec["inputs"]]
                ws = [(torch.rand((cols,), generator=gen, device="cuda") + 0.5).to(dtype) for _ in spec["weights"]]
                want = getattr(module, name)(*xs, *ws)
                nbytes = (len(xs) + 1) * rows * cols * xs[0].element_size() + len(ws) * cols * xs[0].element_size()
                src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
                dst = torch.empty_like(src)
                copy_us = do_bench_cudagraph(lambda: dst.copy_(src)) * 1e3
                acc = tl.float64 if dtype == torch.float64 else tl.float32
                block = triton.next_power_of_2(cols)
                for warps in [int(w) for w in args.warps.split(",")]:
                    out = torch.empty_like(xs[0])
                    compiled = kernel[(rows,)](*xs, *ws, out, cols, BLOCK=block, ACC=acc, num_warps=warps)
                    same = torch.equal(out, want)
                    us = do_bench_cudagraph(lambda: kernel[(rows,)](*xs, *ws, out, cols, BLOCK=block, ACC=acc, num_warps=warps)) * 1e3
                    compiled._init_handles()  # loads the module: n_regs and n_spills are read from it
                    regs, spills = compiled.n_regs, compiled.n_spills
                    per_sm = 65536 // max(1, regs * 32 * warps)
                    note = "" if same else "  (differs from the op's launch: reduction order)"
                    print(f"{name:12s} {dtype_name:9s} {cols:6d} {warps:5d} {regs:4d} {spills:5d} {per_sm:7d} {us:8.1f} {100 * copy_us / us:5.0f}%{note}", flush=True)


if __name__ == "__main__":
    main()
