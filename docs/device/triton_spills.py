"""Registers and spills of a generated package's Triton kernels, on a machine without a GPU.

    python docs/device/triton_spills.py PACKAGE_DIR [--kernels backward_kernel] [--blocks 4096,8192,16384]

triton.compile with a GPUTarget needs no GPU; ptxas -v (from $CUDA_HOME, default /usr/local/cuda) on the
PTX it makes reports what the H100 would load: registers per thread and bytes spilled. For every op of
the package, each kernel whose name ends with --kernels is compiled at each BLOCK of --blocks with the
op's own warps for that BLOCK (its _num_warps), for float32 and bfloat16, and one line per op printed.
The op's _MAX_BACKWARD_BLOCK, if it has one, is printed beside it.

    python docs/device/triton_spills.py PACKAGE_DIR --backward-choice [--blocks 1024,4096,16384]

prints instead, for every op with a generated backward, the kernel its backward launch takes at each row length
(BLOCK) and dtype under template version 48's rule, from the same counts: the rows kernel (the weights' sums on
chip) where it spills nothing, else the kernel of one program a row at its warps or twice as many where it spills
at most the package's SPILL_TOLERATED bytes a thread (_triton_rowwise.one_row_warps), else the long kernel; rows longer
than _MAX_BACKWARD_BLOCK take the long one.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def ptxas(ptx: str, cuda_home: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
        name = f.name
    try:
        done = subprocess.run([f"{cuda_home}/bin/ptxas", "-arch=sm_90a", "-v", name, "-o", os.devnull],
                              capture_output=True, text=True, check=False)
    finally:
        os.unlink(name)
    regs = re.search(r"Used (\d+) registers", done.stderr)
    spilled = re.search(r"(\d+) bytes spill stores", done.stderr)
    return f"{regs.group(1) if regs else '?'} regs, {spilled.group(1) if spilled else '?'} B spilled"


def compile_counts(triton, tl, kernel, block: int, dtype: str, warps: int, cuda_home: str) -> tuple[int, int]:
    """(registers, bytes spilled) of ``kernel`` compiled for sm_90 at BLOCK ``block``, tensors of ``dtype`` (the
    per-row values and the weights' partial sums in float32), ``warps`` warps."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = {a: "constexpr" if a in ("BLOCK", "ACC") else "*fp32" if a == "_stats_ptr" or re.fullmatch(r"_p\d+_ptr", a)
                 else f"*{dtype}" if a.endswith("_ptr") else "i32" for a in kernel.arg_names}
    compiled = triton.compile(ASTSource(kernel, signature=signature, constexprs={"BLOCK": block, "ACC": tl.float32}),
                              target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    text = ptxas(compiled.asm["ptx"], cuda_home)
    found = re.match(r"(\d+) regs, (\d+) B spilled", text)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 1)


def backward_choice(triton, tl, module, name: str, block: int, dtype: str, cuda_home: str) -> str:
    """The kernel version 48's backward launch takes for rows of ``block`` elements of ``dtype``."""
    if block > module._MAX_BACKWARD_BLOCK:
        return "long (row length)"
    warps = module._num_warps(block)
    rows_kernel = getattr(module, f"_{name}_backward_rows_kernel", None)
    if rows_kernel is not None:
        regs, spilled = compile_counts(triton, tl, rows_kernel, block, dtype, warps, cuda_home)
        if spilled == 0:
            return f"rows {warps}w {regs}r"
    one_row = getattr(module, f"_{name}_backward_kernel")
    regs, spilled = compile_counts(triton, tl, one_row, block, dtype, warps, cuda_home)
    tolerated = importlib.import_module(module.__name__.rsplit(".", 2)[0] + "._triton_rowwise").SPILL_TOLERATED
    if spilled <= tolerated:
        return f"one-row {warps}w {regs}r" + (f" {spilled} B spilled" if spilled else "")
    wider = min(32, 2 * warps)
    if wider > warps:
        wide_regs, wide_spilled = compile_counts(triton, tl, one_row, block, dtype, wider, cuda_home)
        if wide_spilled <= tolerated:
            return f"one-row {wider}w {wide_regs}r" + (f" {wide_spilled} B spilled" if wide_spilled else "")
    return f"long ({spilled} B spilled at {warps}w)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--kernels", default="backward_kernel")
    parser.add_argument("--blocks", default="4096,8192,16384")
    parser.add_argument("--backward-choice", action="store_true",
                        help="the kernel each backward launch takes (version 48's rule), instead of the counts")
    args = parser.parse_args()
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    sys.path.insert(0, str(args.package))
    name = next(line.split(":", 1)[1].strip() for line in (args.package / ".copier-answers.yml").read_text().splitlines()
                if line.startswith("package:"))
    ops = importlib.import_module(f"{name}.ops")
    for info in pkgutil.iter_modules(ops.__path__):
        module = importlib.import_module(f"{name}.ops.{info.name}")
        if args.backward_choice:
            if hasattr(module, f"_{info.name}_backward_kernel"):
                cells = [f"{block} {dtype}: {backward_choice(triton, tl, module, info.name, block, dtype, cuda_home)}"
                         for block in map(int, args.blocks.split(",")) for dtype in ("fp32", "bf16")]
                print(f"{info.name}: " + "; ".join(cells), flush=True)
            continue
        kernels = [(k, v) for k, v in vars(module).items()
                   if isinstance(v, triton.runtime.jit.JITFunction) and k.endswith(args.kernels)]
        # a rowwise op's warps grow with BLOCK (_num_warps); an elementwise op's are fixed (_NUM_WARPS)
        warps = getattr(module, "_num_warps", None) or (lambda block, module=module: module._NUM_WARPS)
        for kernel_name, kernel in kernels:
            cells = []
            for block in map(int, args.blocks.split(",")):
                for dtype in ("fp32", "bf16"):
                    signature = {a: "constexpr" if a in ("BLOCK", "ACC") else "*fp32" if a == "_stats_ptr"
                                 else f"*{dtype}" if a.endswith("_ptr") else "i32" for a in kernel.arg_names}
                    compiled = triton.compile(ASTSource(kernel, signature=signature,
                                                        constexprs={"BLOCK": block, "ACC": tl.float32}),
                                              target=GPUTarget("cuda", 90, 32),
                                              options={"num_warps": warps(block)})
                    cells.append(f"{block} {dtype}: {ptxas(compiled.asm['ptx'], cuda_home)}")
            limit = getattr(module, "_MAX_BACKWARD_BLOCK", None)
            print(f"{kernel_name}" + (f" (_MAX_BACKWARD_BLOCK {limit})" if limit else "") + ": " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
