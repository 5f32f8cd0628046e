"""PTX instructions an element of a generated package's Triton rowwise kernels, on a machine without a GPU.

    python docs/device/triton_ptx_count.py PACKAGE_DIR [--ops r00_tl,r07_tl] [--block 4096] [--dtypes fp32,bf16]

For every Triton rowwise op with a generated backward, the forward's register kernel (_<op>_kernel) and the
backward's kernel of one program a row (_<op>_backward_kernel) are compiled for sm_90 at BLOCK --block with the
op's own warps for it (triton_spills.compile_sm90: no GPU needed), and their PTX instructions are counted, all of
them and the arithmetic alone (add, sub, mul, fma, div, rcp, sqrt, rsqrt, ex2, lg2, sin, cos, tanh, min, max, abs,
neg, setp, selp, cvt), each divided by the elements a thread holds (BLOCK / (32 * warps)). A static count: each
kernel's code once, the per-row reductions and libdevice's branches included, loops not unrolled by the count.

What it is for: the backward computes the forward's reductions again from the row (it saves nothing but the
arguments), so the forward's arithmetic an element is about what saved per-row statistics would spare the
backward's. The column "fwd/bwd" is the forward's arithmetic over the backward's. It asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paths_common import package_on_path
from triton_spills import compile_sm90

ARITHMETIC = ("add", "sub", "mul", "fma", "div", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "min",
              "max", "abs", "neg", "setp", "selp", "cvt")
INSTRUCTION = re.compile(r"^\s+(?:@!?%p\d+\s+)?([a-z][a-z0-9_]*)[.\s]", re.M)


def count(ptx: str) -> tuple[int, int]:
    """(every instruction, the arithmetic ones) of a kernel's PTX."""
    names = INSTRUCTION.findall(ptx)
    return len(names), sum(name in ARITHMETIC for name in names)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", default="", help="comma-separated op names (default: every op with a backward)")
    parser.add_argument("--block", type=int, default=4096)
    parser.add_argument("--dtypes", default="fp32,bf16")
    args = parser.parse_args(argv)
    import triton
    import triton.language as tl

    package = package_on_path(args.package)
    ops_module = importlib.import_module(f"{package}.ops")
    wanted = [name for name in args.ops.split(",") if name]
    names = wanted or sorted(m.name for m in pkgutil.iter_modules(ops_module.__path__))
    print(f"{'op':10s} {'dtype':5s} {'warps':>5s} {'fwd all':>8s} {'fwd arith':>9s} {'bwd all':>8s} {'bwd arith':>9s}"
          f" {'fwd/bwd':>7s}   (PTX instructions an element, BLOCK {args.block})")
    for name in names:
        module = importlib.import_module(f"{package}.ops.{name}")
        forward = getattr(module, f"_{name}_kernel", None)
        backward = getattr(module, f"_{name}_backward_kernel", None)
        if forward is None or backward is None or not hasattr(module, "_num_warps"):
            continue
        if args.block > getattr(module, "_MAX_BACKWARD_BLOCK", args.block):
            print(f"{name:10s} rows of {args.block} take the long backward (_MAX_BACKWARD_BLOCK "
                  f"{module._MAX_BACKWARD_BLOCK})")
            continue
        warps = module._num_warps(args.block)
        per_thread = max(1, args.block // (32 * warps))
        for dtype in args.dtypes.split(","):
            fwd = count(compile_sm90(triton, tl, forward, args.block, dtype, warps).asm["ptx"])
            bwd = count(compile_sm90(triton, tl, backward, args.block, dtype, warps).asm["ptx"])
            print(f"{name:10s} {dtype:5s} {warps:5d} {fwd[0] / per_thread:8.0f} {fwd[1] / per_thread:9.0f}"
                  f" {bwd[0] / per_thread:8.0f} {bwd[1] / per_thread:9.0f} {fwd[1] / max(bwd[1], 1):7.2f}", flush=True)


if __name__ == "__main__":
    main()
